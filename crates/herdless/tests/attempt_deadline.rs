//! Attempt deadlines: the policy's `attempt_timeout`, `Attempt::deadline` and
//! `Attempt::remaining`, over a real socket on 127.0.0.1 that never answers,
//! under tokio's paused clock (the cut, the retries and the elapsed limit in
//! virtual time, exactly).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use herdless::classify::TimedOut;
use herdless::{
    ByTrait, Classification, GiveUp, Jitter, ManualTimer, Policy, Retry, RetryBudget, RetryEvent,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

const MS: fn(u64) -> Duration = Duration::from_millis;

/// A server on 127.0.0.1 that accepts every connection, reports it, and
/// never answers (it keeps the sockets open).
async fn silent_server() -> (std::net::SocketAddr, mpsc::UnboundedReceiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
            let _ = tx.send(());
        }
    });
    (addr, rx)
}

/// `call` within a minute of virtual time: a call that is not cut fails the
/// test instead of hanging it.
async fn within_a_minute<F: std::future::Future>(call: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), call)
        .await
        .expect("the call was not cut: it outlived a minute")
}

/// One request over a fresh connection: what hangs when the server is silent.
async fn ask(addr: std::net::SocketAddr) -> std::io::Result<Vec<u8>> {
    let mut s = TcpStream::connect(addr).await?;
    s.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n").await?;
    let mut buf = vec![0; 64];
    let n = s.read(&mut buf).await?;
    buf.truncate(n);
    Ok(buf)
}

fn events() -> (
    Arc<Mutex<Vec<String>>>,
    impl Fn(&RetryEvent<'_>) + Send + Sync,
) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let hook = move |e: &RetryEvent<'_>| {
        let mut timed_out = None;
        e.visit(|name, v| {
            if name == "timed_out" {
                timed_out = Some(v.to_string());
            }
        });
        log.lock().unwrap().push(format!(
            "{} timed_out={}",
            e.name(),
            timed_out.unwrap_or_default()
        ));
    };
    (seen, hook)
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_attempt_that_never_answers_is_cut_retried_and_the_call_ends_within_max_elapsed() {
    let (addr, mut accepted) = silent_server().await;
    let policy = Policy::builder()
        .attempt_timeout(MS(300))
        .max_elapsed(MS(900))
        .base(MS(50))
        .cap(MS(50))
        .multiplier(1.0)
        .jitter(Jitter::None)
        .max_attempts(10)
        .build()
        .unwrap();
    let (seen, hook) = events();
    let retry = Retry::builder()
        .policy(policy)
        .classifier(ByTrait)
        .notify(hook)
        .build();
    let attempts = Mutex::new(Vec::new());
    let started = tokio::time::Instant::now();
    let err = within_a_minute(retry.call_async(|a| {
        attempts.lock().unwrap().push((a.elapsed(), a.remaining()));
        ask(addr)
    }))
    .await
    .unwrap_err();
    let took = started.elapsed();
    // Cut at 300 ms, retried after 50 ms: attempts at 0, 350 and 700 ms, the
    // last one given only what is left of 900 ms.
    assert_eq!(
        *attempts.lock().unwrap(),
        [(MS(0), MS(300)), (MS(350), MS(300)), (MS(700), MS(200))]
    );
    assert_eq!(err.reason(), GiveUp::MaxElapsed);
    assert_eq!(err.attempts(), 3);
    assert_eq!(err.last_error().kind(), std::io::ErrorKind::TimedOut);
    let cut = err
        .last_error()
        .get_ref()
        .unwrap()
        .downcast_ref::<TimedOut>();
    assert_eq!(cut, Some(&TimedOut::new(3, MS(200))));
    // Within max_elapsed, not "plus one attempt" (which would be forever).
    assert!(took <= MS(900) + MS(1), "{took:?}");
    assert!(err.elapsed() <= MS(900), "{:?}", err.elapsed());
    // Each attempt reached the server: three connections.
    for _ in 0..3 {
        accepted.recv().await.unwrap();
    }
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "retry_scheduled timed_out=true",
            "retry_scheduled timed_out=true",
            "retry_budget_exhausted timed_out=true",
        ]
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_cut_attempt_is_a_timeout_for_the_budget() {
    let (addr, _accepted) = silent_server().await;
    let policy = Policy::builder()
        .attempt_timeout(MS(100))
        .base(MS(10))
        .max_attempts(2)
        .build()
        .unwrap();
    let budget = Arc::new(RetryBudget::builder().aws().spread(0.0).build().unwrap());
    let retry = Retry::builder()
        .policy(policy)
        .classifier(ByTrait)
        .budget(Arc::clone(&budget))
        .build();
    let err = within_a_minute(retry.call_async(|_| ask(addr)))
        .await
        .unwrap_err();
    assert_eq!(err.reason(), GiveUp::MaxAttempts);
    // AWS: a retry after a timeout costs 10 tokens (after an error, 5).
    assert_eq!(budget.tokens(), 490.0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_classifier_decides_whether_a_cut_attempt_is_retried() {
    let (addr, _accepted) = silent_server().await;
    let policy = Policy::builder().attempt_timeout(MS(100)).build().unwrap();
    let (seen, hook) = events();
    let retry = Retry::builder()
        .policy(policy)
        .classify(|e: &String| match e.as_str() {
            "timed out" => Classification::terminal(),
            _ => Classification::retryable(),
        })
        .on_timeout(|_: TimedOut| "timed out".to_string())
        .notify(hook)
        .build();
    let err = within_a_minute(
        retry.call_async(|_| async move { ask(addr).await.map_err(|e| e.to_string()) }),
    )
    .await
    .unwrap_err();
    assert_eq!((err.reason(), err.attempts()), (GiveUp::Terminal, 1));
    assert_eq!(err.last_error(), "timed out");
    assert_eq!(
        *seen.lock().unwrap(),
        ["retry_abandoned_terminal timed_out=true"]
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_error_type_that_cannot_say_timed_out_is_not_cut() {
    let policy = Policy::builder().attempt_timeout(MS(100)).build().unwrap();
    let retry = Retry::builder()
        .policy(policy)
        .classify(|_: &u16| Classification::retryable())
        .build();
    let started = tokio::time::Instant::now();
    let out = retry
        .call_async(|a| async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok::<_, u16>(a.number())
        })
        .await;
    // No `u16` says "timed out": the attempt ran to its end.
    assert_eq!(out, Ok(1));
    assert_eq!(started.elapsed(), Duration::from_secs(1));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn without_an_attempt_timeout_nothing_is_cut() {
    let retry = Retry::builder().classifier(ByTrait).build();
    let started = tokio::time::Instant::now();
    let out = retry
        .call_async(|a| async move {
            assert_eq!(a.remaining(), Policy::DEFAULT_MAX_ELAPSED);
            tokio::time::sleep(Duration::from_secs(200)).await;
            Ok::<_, std::io::Error>(())
        })
        .await;
    assert!(out.is_ok());
    assert_eq!(started.elapsed(), Duration::from_secs(200));
}

#[test]
fn the_blocking_executor_passes_the_deadline_and_does_not_preempt() {
    let timer = ManualTimer::new();
    let policy = Policy::builder()
        .attempt_timeout(MS(300))
        .max_elapsed(MS(1000))
        .base(MS(100))
        .jitter(Jitter::None)
        .build()
        .unwrap();
    let retry = Retry::builder()
        .policy(policy)
        .classifier(ByTrait)
        .timer(timer.clone())
        .build();
    let mut seen = Vec::new();
    let out = retry.call(|a| {
        seen.push((a.number(), a.elapsed(), a.deadline()));
        // The attempt overruns its deadline: the blocking executor cannot
        // interrupt it, and a late success is a success.
        timer.advance(a.remaining() + MS(50));
        if a.number() == 1 {
            Err(std::io::Error::from(std::io::ErrorKind::TimedOut))
        } else {
            Ok("late")
        }
    });
    assert_eq!(out.unwrap(), "late");
    // Attempt 1 at 0 (deadline 300 ms), failed at 350 ms; retry after 100 ms.
    assert_eq!(seen, [(1, MS(0), MS(300)), (2, MS(450), MS(750))]);
}
