//! `Retry::hedge_async`: the engine's hedging decisions, on tokio's paused
//! clock (each copy's time is a `tokio::time::sleep`, so every figure is
//! exact): the first success wins, the budget and the breaker bound the
//! hedges, a server's pushback stops them, a terminal answer ends the call.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use herdless::hedge::Hedge;
use herdless::{Breaker, Classification, GiveUp, Jitter, Policy, Retry, RetryBudget, RetryEvent};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// A copy's scripted outcome: after how long, and what.
#[derive(Clone, Copy, Debug)]
enum Answer {
    Ok(u64),
    Busy(u64),
    /// A 503 with "retry in 1 s".
    BusyFor(u64),
    Refused(u64),
    Denied(u64),
}

fn classify(e: &&'static str) -> Classification {
    match *e {
        "busy" => Classification::retryable(),
        "busy-for-1s" => Classification::retry_after(Duration::from_secs(1)),
        "refused" => Classification::DoNotRetry,
        _ => Classification::terminal(),
    }
}

type Log = Arc<Mutex<Vec<String>>>;
type Classifier = fn(&&'static str) -> Classification;

fn retry(
    policy: Policy,
) -> (
    Retry<Classifier, herdless::SystemTimer, impl herdless::Notify>,
    Log,
) {
    let log: Log = Arc::default();
    let events = Arc::clone(&log);
    let hook = move |e: &RetryEvent<'_>| {
        let mut line = e.name().to_string();
        e.visit(|k, v| {
            if k == "attempt" || k == "hedges" {
                line.push_str(&format!(" {k}={v}"));
            }
        });
        events.lock().unwrap().push(line);
    };
    let c: Classifier = classify;
    let r = Retry::builder()
        .policy(policy)
        .classifier(c)
        .notify(hook)
        .build();
    (r, log)
}

fn policy() -> Policy {
    Policy::builder()
        .base(MS(100))
        .cap(MS(100))
        .multiplier(1.0)
        .jitter(Jitter::None)
        .max_attempts(6)
        .build()
        .unwrap()
}

/// Runs one hedged call whose `n`-th copy (1-based) answers `script[n-1]`;
/// returns the result, the copies started (attempt numbers) and the time.
async fn call<N: herdless::Notify>(
    retry: &Retry<Classifier, herdless::SystemTimer, N>,
    hedge: &Hedge,
    script: &[Answer],
) -> (Result<u32, (GiveUp, &'static str)>, Vec<u32>, Duration) {
    let started = tokio::time::Instant::now();
    let copies = Mutex::new(Vec::new());
    let out = retry
        .hedge_async(hedge, |a| {
            copies.lock().unwrap().push(a.number());
            let answer = script[(a.number() as usize - 1).min(script.len() - 1)];
            async move {
                let (ms, result) = match answer {
                    Answer::Ok(ms) => (ms, Ok(a.number())),
                    Answer::Busy(ms) => (ms, Err("busy")),
                    Answer::BusyFor(ms) => (ms, Err("busy-for-1s")),
                    Answer::Refused(ms) => (ms, Err("refused")),
                    Answer::Denied(ms) => (ms, Err("denied")),
                };
                tokio::time::sleep(MS(ms)).await;
                result
            }
        })
        .await
        .map_err(|e| (e.reason(), *e.last_error()));
    (out, copies.into_inner().unwrap(), started.elapsed())
}

fn hedge(delay_ms: u64, max: u32) -> Hedge {
    Hedge::builder()
        .delay(MS(delay_ms))
        .max_hedges(max)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_first_success_wins_and_the_others_are_dropped() {
    let (retry, log) = retry(policy());
    let (out, copies, took) = call(
        &retry,
        &hedge(10, 2),
        &[Answer::Ok(1000), Answer::Ok(5), Answer::Ok(1)],
    )
    .await;
    // Copy 2 at 10 ms answers at 15 ms; copy 3 would have been due at 20 ms.
    assert_eq!(out, Ok(2));
    assert_eq!((copies, took), (vec![1, 2], MS(15)));
    assert_eq!(
        *log.lock().unwrap(),
        ["hedge_sent attempt=2", "hedge_won attempt=2 hedges=1"]
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_fast_answer_sends_no_hedge() {
    let (retry, log) = retry(policy());
    let (out, copies, took) = call(&retry, &hedge(10, 2), &[Answer::Ok(3)]).await;
    assert_eq!((out, copies, took), (Ok(1), vec![1], MS(3)));
    assert!(log.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_budget_bounds_the_hedges_of_every_call() {
    // 12 tokens, a hedge costs 5 (AWS), no refund in an outage: two hedges.
    let budget = Arc::new(
        RetryBudget::builder()
            .aws()
            .max_tokens(12.0)
            .spread(0.0)
            .build()
            .unwrap(),
    );
    let (retry, _) = retry(policy().to_builder().max_attempts(2).build().unwrap());
    let retry = retry.into_builder().budget(Arc::clone(&budget)).build();
    let mut sent = 0;
    for _ in 0..10 {
        // Slow failures: every call's first copy is still out at 10 ms.
        let (out, copies, _) = call(&retry, &hedge(10, 1), &[Answer::Busy(50)]).await;
        assert!(out.is_err());
        sent += copies.len() - 1;
    }
    assert_eq!(sent, 2);
    assert_eq!(budget.tokens(), 2.0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn no_hedge_while_the_breaker_is_open() {
    let breaker = Arc::new(Breaker::new(1));
    breaker.record_failure();
    let (retry, _) = retry(policy());
    let retry = retry.into_builder().breaker(Arc::clone(&breaker)).build();
    let (out, copies, took) = call(&retry, &hedge(10, 2), &[Answer::Ok(200)]).await;
    assert_eq!((out, copies, took), (Ok(1), vec![1], MS(200)));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_server_delay_stops_hedging_for_the_call() {
    let (retry, _) = retry(policy());
    // Copy 2 (at 10 ms) is told "retry in 1 s" at 12 ms: no copy 3 at 22 ms;
    // copy 1 answers at 300 ms.
    let script = [Answer::Ok(300), Answer::BusyFor(2), Answer::Ok(1)];
    let (out, copies, took) = call(&retry, &hedge(10, 3), &script).await;
    assert_eq!((out, copies, took), (Ok(1), vec![1, 2], MS(300)));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_refusal_or_a_terminal_answer_ends_the_call_at_once() {
    let (retry, _) = retry(policy());
    let (out, copies, took) = call(
        &retry,
        &hedge(10, 2),
        &[Answer::Ok(300), Answer::Refused(2)],
    )
    .await;
    assert_eq!(out, Err((GiveUp::DoNotRetry, "refused")));
    assert_eq!((copies, took), (vec![1, 2], MS(12)));
    let (out, _, took) = call(&retry, &hedge(10, 2), &[Answer::Ok(300), Answer::Denied(2)]).await;
    assert_eq!((out, took), (Err((GiveUp::Terminal, "denied")), MS(12)));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn when_every_copy_failed_the_call_retries_and_may_hedge_again() {
    let (retry, log) = retry(policy());
    // Round 1: copies 1 and 2 (hedged at 10 ms) both fail at 15 ms, before a
    // second hedge is due; after 100 ms, round 2's copy 3 (at 115 ms) is
    // slow, its hedge (copy 4, at 125 ms) wins at 130 ms.
    let script = [
        Answer::Busy(15),
        Answer::Busy(5),
        Answer::Ok(1000),
        Answer::Ok(5),
    ];
    let (out, copies, took) = call(&retry, &hedge(10, 2), &script).await;
    assert_eq!((out, copies, took), (Ok(4), vec![1, 2, 3, 4], MS(130)));
    assert_eq!(
        *log.lock().unwrap(),
        [
            "hedge_sent attempt=2",
            "retry_scheduled attempt=2",
            "hedge_sent attempt=4",
            "hedge_won attempt=4 hedges=2",
        ]
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_tracked_delay_follows_the_winners_latencies() {
    let (retry, _) = retry(policy());
    let hedge = Hedge::builder()
        .percentile(0.9)
        .window(10, 10)
        .min_delay(MS(1))
        .build()
        .unwrap();
    assert_eq!(hedge.delay(), MS(1));
    for _ in 0..10 {
        let _ = call(&retry, &hedge, &[Answer::Ok(1), Answer::Ok(1)]).await;
    }
    // The winners took 1 ms each, hedged at the 1 ms floor or not at all.
    assert_eq!(hedge.delay(), MS(1));
    for _ in 0..10 {
        let _ = call(&retry, &hedge, &[Answer::Ok(8), Answer::Ok(8)]).await;
    }
    assert!(hedge.delay() >= MS(8), "{:?}", hedge.delay());
}

/// `retry(policy())` with a throttle allowing one call per 100 ms window.
fn throttled() -> (
    Retry<Classifier, herdless::SystemTimer, impl herdless::Notify>,
    Log,
) {
    let log: Log = Arc::default();
    let throttle = herdless::guard::Throttle::builder()
        .initial(1)
        .build()
        .unwrap();
    let events = Arc::clone(&log);
    let hook = move |e: &RetryEvent<'_>| events.lock().unwrap().push(e.name().to_string());
    let c: Classifier = classify;
    let r = Retry::builder()
        .policy(policy())
        .classifier(c)
        .notify(hook)
        .throttle(throttle)
        .build();
    (r, log)
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_throttled_call_sends_no_hedge_without_a_turn() {
    let (retry, log) = throttled();
    // The copy takes the window's one turn; the hedge due at 10 ms has none
    // and does not wait for one.
    let (out, copies, took) = call(&retry, &hedge(10, 2), &[Answer::Ok(1000)]).await;
    assert_eq!((out, copies, took), (Ok(1), vec![1], MS(1000)));
    assert!(log.lock().unwrap().iter().all(|e| e != "hedge_sent"));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_throttled_hedged_call_waits_for_its_first_turn() {
    let (retry, _log) = throttled();
    let (first, _, took) = call(&retry, &hedge(10, 2), &[Answer::Ok(1)]).await;
    assert_eq!((first, took), (Ok(1), MS(1)));
    // The window's turn is spent: the next call's first copy waits until the
    // next window (100 ms after the first), then answers in 1 ms.
    let (second, copies, took) = call(&retry, &hedge(10, 2), &[Answer::Ok(1)]).await;
    assert_eq!((second, copies, took), (Ok(1), vec![1], MS(100)));
}
