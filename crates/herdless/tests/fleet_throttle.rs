//! The adaptive throttle as the executors drive it: a gate before every
//! attempt, the first included, on the timer's clock (a `ManualTimer`,
//! `tokio::time::pause`, and the real clocks where two executors share one
//! throttle).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use herdless::engine::{Context, Engine, Gate};
use herdless::fleet::Throttle;
use herdless::{AlwaysRetry, ByTrait, GiveUp, Jitter, ManualTimer, Policy, Retry, Rng};

fn policy(max_attempts: u32) -> Policy {
    Policy::builder()
        .base(Duration::from_millis(10))
        .cap(Duration::from_millis(10))
        .jitter(Jitter::None)
        .max_attempts(max_attempts)
        .max_elapsed(Duration::from_secs(60))
        .build()
        .unwrap()
}

/// A throttle that probes after 3 refusals, every 100 ms doubling to 400 ms.
fn probing() -> Throttle {
    Throttle::builder()
        .probe_min(Duration::from_millis(100))
        .probe_max(Duration::from_millis(400))
        .threshold(3)
        .build()
        .unwrap()
}

#[test]
fn a_first_attempt_waits_for_the_processes_turn() {
    let timer = ManualTimer::new();
    let throttle = Arc::new(Throttle::builder().initial(1).build().unwrap());
    let retry = Retry::builder()
        .policy(policy(3))
        .classifier(AlwaysRetry)
        .timer(timer.clone())
        .throttle(throttle.clone())
        .build();
    // The one initial call goes at once.
    let first = retry.call(|a| Ok::<_, &str>(a.elapsed())).unwrap();
    assert_eq!(first, Duration::ZERO);
    assert!(timer.sleeps().is_empty());
    // The next call's first attempt waits its turn (10 per second).
    let second = retry
        .call(|a| Ok::<_, &str>((a.number(), a.elapsed())))
        .unwrap();
    assert_eq!(timer.sleeps(), [Duration::from_millis(100)]);
    assert_eq!(second, (1, Duration::from_millis(100)));
}

#[test]
fn without_a_throttle_nothing_waits_before_a_first_attempt() {
    let timer = ManualTimer::new();
    let retry = Retry::builder()
        .policy(policy(3))
        .classifier(AlwaysRetry)
        .timer(timer.clone())
        .build();
    for _ in 0..100 {
        retry.call(|_| Ok::<_, &str>(())).unwrap();
    }
    assert!(timer.sleeps().is_empty());
}

#[test]
fn a_dead_endpoint_is_probed_at_the_probe_interval_not_at_the_backoff() {
    let timer = ManualTimer::new();
    let throttle = probing();
    let retry = Retry::builder()
        .policy(policy(12))
        .classifier(AlwaysRetry)
        .timer(timer.clone())
        .throttle(throttle)
        .build();
    let mut at = Vec::new();
    let err = retry
        .call(|a| {
            at.push(a.elapsed());
            Err::<(), _>("503")
        })
        .unwrap_err();
    assert_eq!(err.reason(), GiveUp::MaxAttempts);
    assert_eq!(err.attempts(), 12);
    // Three refusals 10 ms apart (the backoff), then probes 100, 200, 400,
    // 400... ms apart (the throttle), each interval jittered in its upper
    // half.
    let gaps: Vec<u128> = at.windows(2).map(|w| (w[1] - w[0]).as_millis()).collect();
    assert_eq!(gaps[..2], [10, 10]);
    let full = [100, 200, 400, 400, 400, 400, 400, 400, 400];
    for (gap, full) in gaps[2..].iter().zip(full) {
        assert!((full / 2..=full).contains(gap), "{gaps:?}");
    }
    assert_eq!(gaps.len(), 2 + full.len());
}

/// The gate before a first attempt makes the call's generator when nothing
/// has yet: from the seed, so a seeded call's throttled waits (the probes'
/// jitter) repeat run after run.
#[test]
fn a_seeded_throttled_call_repeats_its_waits() {
    let run = || {
        let timer = ManualTimer::new();
        let throttle = probing();
        let retry = Retry::builder()
            .policy(policy(12))
            .classifier(AlwaysRetry)
            .timer(timer.clone())
            .throttle(throttle)
            .seed(42)
            .build();
        let _ = retry.call(|_| Err::<(), _>("503"));
        timer.sleeps()
    };
    let first = run();
    assert!(
        first.iter().any(|d| *d > Duration::from_millis(10)),
        "the throttle's jittered waits beside the backoff: {first:?}"
    );
    assert_eq!(first, run());
}

#[test]
fn a_shared_throttle_paces_every_retrier_holding_it() {
    let timer = ManualTimer::new();
    let throttle = Arc::new(Throttle::builder().initial(2).build().unwrap());
    let make = || {
        Retry::builder()
            .policy(policy(3))
            .classifier(AlwaysRetry)
            .timer(timer.clone())
            .throttle(throttle.clone())
            .build()
    };
    let (a, b) = (make(), make());
    a.call(|_| Ok::<_, &str>(())).unwrap();
    b.call(|_| Ok::<_, &str>(())).unwrap();
    assert!(timer.sleeps().is_empty(), "two tokens for two calls");
    a.call(|_| Ok::<_, &str>(())).unwrap();
    assert_eq!(timer.sleeps(), [Duration::from_millis(50)]); // 20 per second
}

#[test]
fn the_async_executor_gates_its_first_attempt_too() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let timer = ManualTimer::new();
    let retry = Retry::builder()
        .policy(policy(3))
        .classifier(AlwaysRetry)
        .timer(timer.clone())
        .throttle(Throttle::builder().initial(1).build().unwrap())
        .build();
    rt.block_on(async {
        retry
            .call_async(|_| async { Ok::<_, &str>(()) })
            .await
            .unwrap();
        let n = retry
            .call_async(|a| async move { Ok::<_, &str>(a.number()) })
            .await
            .unwrap();
        assert_eq!(n, 1);
    });
    assert_eq!(timer.sleeps(), [Duration::from_millis(100)]);
}

#[test]
fn the_engine_gives_up_a_first_attempt_that_would_have_no_time() {
    let p = Policy::builder()
        .max_elapsed(Duration::from_millis(30))
        .build()
        .unwrap();
    let t = Throttle::builder().initial(1).build().unwrap();
    let cx = Context::new(&p).throttle(&t);
    let mut rng = Rng::with_seed(1);
    let mut a = Engine::new(Duration::ZERO);
    assert_eq!(a.ready(&cx, Duration::ZERO, &mut rng), Gate::Go);
    // Its turn is 100 ms away, past the 30 ms limit: waiting there would
    // leave it no time, so it gives up now, with no attempt made.
    let mut b = Engine::new(Duration::ZERO);
    assert_eq!(
        b.ready(&cx, Duration::ZERO, &mut rng),
        Gate::GiveUp(GiveUp::MaxElapsed)
    );
    assert_eq!(b.attempts(), 0);
    // One whose turn is within its limit waits for it...
    let long = Policy::default();
    let mut c = Engine::new(Duration::ZERO);
    let wait = c.ready(&Context::new(&long).throttle(&t), Duration::ZERO, &mut rng);
    assert!(matches!(wait, Gate::Wait(_)), "{wait:?}");
    // ...and at the limit (a caller that overslept) it takes no token and
    // gives up.
    let mut d = Engine::new(Duration::ZERO);
    assert_eq!(
        d.ready(&cx, Duration::from_millis(30), &mut rng),
        Gate::GiveUp(GiveUp::MaxElapsed)
    );
}

/// 300 async calls share one throttle against an endpoint that refuses
/// every call: the throttle probes, the calls wait for their turn, and a
/// call whose time runs out waiting makes no attempt (it used to go at the
/// limit with no time left: 290 of 300). Every attempt the operation sees
/// has time to run.
#[tokio::test(start_paused = true)]
async fn async_calls_sharing_a_throttle_never_start_an_attempt_with_no_time() {
    let policy = Policy::builder()
        .max_elapsed(Duration::from_secs(2))
        .attempt_timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let retry = Arc::new(
        Retry::builder()
            .policy(policy)
            .classifier(ByTrait)
            .throttle(Throttle::new())
            .seed(3)
            .build(),
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..300 {
        let (retry, seen) = (retry.clone(), seen.clone());
        set.spawn(async move {
            retry
                .call_async(|a| {
                    seen.lock().unwrap().push(a.remaining());
                    async {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        Err::<(), _>(std::io::Error::from(std::io::ErrorKind::ConnectionRefused))
                    }
                })
                .await
        });
    }
    let (mut unstarted, mut attempts) = (0, 0);
    while let Some(ended) = set.join_next().await {
        let e = ended.unwrap().unwrap_err();
        assert_eq!(e.reason(), GiveUp::MaxElapsed);
        attempts += e.attempts();
        if e.attempts() == 0 {
            unstarted += 1;
            assert_eq!(e.last_error().kind(), std::io::ErrorKind::TimedOut);
            assert!(e.to_string().contains("not started"), "{e}");
        }
    }
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen.len() as u32,
        attempts,
        "every attempt counted is one made"
    );
    assert!(
        seen.iter().all(|r| !r.is_zero()),
        "{} of {} attempts started with no time left",
        seen.iter().filter(|r| r.is_zero()).count(),
        seen.len()
    );
    assert!(
        unstarted > 200,
        "the probing throttle lets few go: {unstarted} unstarted"
    );
}

/// One throttle shared by async and blocking callers reads one clock: the
/// blocking executor's own clock (the coarse one) has another epoch than
/// the async one (tokio's), and the blocking calls that came after async
/// ones waited for their whole elapsed limit (8 s for 5 calls, 4 of them
/// starting with no time left).
#[test]
fn blocking_calls_after_async_ones_read_the_throttles_clock() {
    let policy = Policy::builder()
        .max_elapsed(Duration::from_secs(2))
        .build()
        .unwrap();
    let retry = Arc::new(
        Retry::builder()
            .policy(policy)
            .classifier(ByTrait)
            .throttle(Arc::new(Throttle::new()))
            .build(),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        for _ in 0..300 {
            retry
                .call_async(|_| async { Ok::<(), std::io::Error>(()) })
                .await
                .unwrap();
        }
    });
    for _ in 0..5 {
        let left = retry
            .call(|a| Ok::<_, std::io::Error>(a.remaining()))
            .unwrap();
        // The throttle serves 100 calls a second and more: a turn is
        // milliseconds away, never most of the limit.
        assert!(
            left > Duration::from_secs(1),
            "started with {left:?} of 2 s left"
        );
    }
}
