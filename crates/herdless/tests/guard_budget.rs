//! The shared retry budget: concurrency (no overdraw, no lost refunds) and its
//! wiring into the executors (denial → `GiveUp::RetryBudget` + event).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;

use herdless::classify::WithTimeouts;
use herdless::{
    AlwaysRetry, Classification, GiveUp, ManualTimer, Policy, Retry, RetryBudget, RetryCause,
    RetryEvent,
};

const THREADS: usize = 8;

/// Starts `THREADS` threads at once on `f(thread_index)`, returns their results.
fn hammer<R: Send + 'static>(f: impl Fn(usize) -> R + Send + Sync + 'static) -> Vec<R> {
    let f = Arc::new(f);
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|i| {
            let (f, barrier) = (f.clone(), barrier.clone());
            thread::spawn(move || {
                barrier.wait();
                f(i)
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

#[test]
fn concurrent_withdrawals_never_overdraw() {
    // 1000 tokens, a retry costs 1, threshold 0: exactly 1000 retries can be
    // admitted, however the 8 × 1000 requests interleave.
    let budget = Arc::new(
        RetryBudget::builder()
            .aws()
            .max_tokens(1000.0)
            .retry_cost(1.0)
            .spread(0.0)
            .build()
            .unwrap(),
    );
    let b = budget.clone();
    let admitted: usize = hammer(move |_| {
        (0..1000)
            .filter(|_| b.try_retry(RetryCause::Error, 0.0).is_ok())
            .count()
    })
    .into_iter()
    .sum();
    assert_eq!(admitted, 1000);
    assert_eq!(budget.tokens(), 0.0);
}

#[test]
fn concurrent_refunds_are_never_lost() {
    // From empty, 8 threads × 10_000 refunds of 0.001 token: exactly 80 tokens.
    let budget = Arc::new(
        RetryBudget::builder()
            .grpc(1000.0, 0.001)
            .initial_tokens(0.0)
            .build()
            .unwrap(),
    );
    let b = budget.clone();
    hammer(move |_| {
        for _ in 0..10_000 {
            b.record_success(None);
        }
    });
    assert_eq!(budget.tokens(), 80.0);
}

#[test]
fn mixed_withdrawals_and_refunds_balance_exactly() {
    // Every admitted retry is refunded: the level must end where it started,
    // and no thread may ever be admitted more than the bucket holds at once.
    let budget = Arc::new(
        RetryBudget::builder()
            .aws()
            .max_tokens(50.0)
            .spread(10.0)
            .build()
            .unwrap(),
    );
    let outstanding = Arc::new(AtomicU64::new(0));
    let peak = Arc::new(AtomicU64::new(0));
    let (b, out, pk) = (budget.clone(), outstanding.clone(), peak.clone());
    let admitted: u64 = hammer(move |i| {
        let mut rng = herdless::Rng::with_seed(i as u64);
        let mut n = 0;
        for k in 0..20_000u64 {
            let cause = if k % 3 == 0 {
                RetryCause::Timeout
            } else {
                RetryCause::Error
            };
            if let Ok(spent) = b.try_retry(cause, rng.unit_f64()) {
                n += 1;
                let now =
                    out.fetch_add(spent.tokens() as u64, Ordering::SeqCst) + spent.tokens() as u64;
                pk.fetch_max(now, Ordering::SeqCst);
                out.fetch_sub(spent.tokens() as u64, Ordering::SeqCst);
                b.record_success(Some(spent)); // AWS: returns exactly what it spent
            }
        }
        n
    })
    .into_iter()
    .sum();
    assert!(admitted > 1000, "the bucket did admit retries ({admitted})");
    assert_eq!(budget.tokens(), 50.0, "every refund landed");
    assert!(
        peak.load(Ordering::SeqCst) <= 50,
        "at most the capacity was ever withdrawn at once: {}",
        peak.load(Ordering::SeqCst)
    );
}

#[test]
fn denied_retry_ends_the_call_with_retry_budget_and_the_event() {
    let budget = Arc::new(
        RetryBudget::builder()
            .grpc(4.0, 0.1)
            .spread(0.0)
            .build()
            .unwrap(),
    );
    let events = Mutex::new(Vec::new());
    let hook = |e: &RetryEvent<'_>| {
        if let RetryEvent::BudgetExhausted {
            reason, attempt, ..
        } = e
        {
            events.lock().unwrap().push((*reason, *attempt));
        }
    };
    let timer = ManualTimer::new();
    let err = Retry::builder()
        .policy(Policy::default())
        .classifier(AlwaysRetry)
        .timer(timer.clone())
        .budget(budget.clone())
        .notify(&hook)
        .task_id("t")
        .build()
        .call(|_| Err::<(), _>("503"))
        .unwrap_err();
    assert_eq!(err.reason(), GiveUp::RetryBudget);
    assert_eq!(err.reason().as_str(), "retry_budget");
    assert_eq!(err.attempts(), 2);
    assert_eq!(timer.sleeps().len(), 1, "no sleep after the denial");
    assert_eq!(
        events.lock().unwrap().as_slice(),
        &[(GiveUp::RetryBudget, 2)]
    );
    assert_eq!(budget.tokens(), 2.0);
}

#[test]
fn successes_refund_and_a_healthy_endpoint_is_never_denied() {
    // gRPC 10 / 0.1: one failure in ten calls keeps the bucket full, so the
    // budget never denies while the endpoint is healthy.
    let budget = Arc::new(RetryBudget::grpc(10.0, 0.1).unwrap());
    let retry = Retry::builder()
        .policy(Policy::default())
        .classifier(AlwaysRetry)
        .timer(ManualTimer::new())
        .budget(budget.clone())
        .build();
    for call in 0..10_000u32 {
        let out = retry.call(|a| {
            if call % 10 == 0 && a.number() == 1 {
                Err("503")
            } else {
                Ok(())
            }
        });
        assert_eq!(out, Ok(()), "call {call}");
    }
    assert!(budget.tokens() >= 9.0, "{}", budget.tokens());
}

#[test]
fn aws_quota_returns_the_retry_cost_on_success() {
    let budget = Arc::new(RetryBudget::builder().aws().spread(0.0).build().unwrap());
    let retry = Retry::builder()
        .policy(Policy::default())
        .classifier(AlwaysRetry)
        .timer(ManualTimer::new())
        .budget(budget.clone())
        .build();
    let out = retry.call(|a| if a.number() < 3 { Err("503") } else { Ok(()) });
    assert_eq!(out, Ok(()));
    // two retries at 5, the success returns the last one's 5
    assert_eq!(budget.tokens(), 495.0);
}

#[test]
fn timeouts_cost_more_through_the_classifier() {
    #[derive(Debug)]
    enum E {
        Timeout,
        Busy,
    }
    let budget = Arc::new(RetryBudget::builder().aws().spread(0.0).build().unwrap());
    let classifier = WithTimeouts::new(
        |_: &E| Classification::retryable(),
        |e: &E| matches!(e, E::Timeout),
    );
    let retry = Retry::builder()
        .policy(Policy::builder().max_attempts(3).build().unwrap())
        .classifier(classifier)
        .timer(ManualTimer::new())
        .budget(budget.clone())
        .build();
    let _ = retry.call(|a| Err::<(), _>(if a.number() == 1 { E::Timeout } else { E::Busy }));
    assert_eq!(budget.tokens(), 500.0 - 10.0 - 5.0);
    // io::Error timeouts are detected by ByTrait
    let retry = Retry::builder()
        .policy(Policy::builder().max_attempts(2).build().unwrap())
        .classifier(herdless::ByTrait)
        .timer(ManualTimer::new())
        .budget(budget.clone())
        .build();
    let _ = retry.call(|_| Err::<(), _>(std::io::Error::from(std::io::ErrorKind::TimedOut)));
    assert_eq!(budget.tokens(), 500.0 - 10.0 - 5.0 - 10.0);
}

/// 100 calls in flight retry round-robin (one failure per call per round)
/// against one gRPC bucket of 1000 tokens (threshold 500) until the budget
/// denies each; returns how many calls gave up in each round.
fn give_ups_per_round(spread: f64) -> Vec<usize> {
    let budget = RetryBudget::builder()
        .grpc(1000.0, 0.1)
        .spread(spread)
        .build()
        .unwrap();
    let mut rng = herdless::Rng::with_seed(42);
    let mut live: Vec<f64> = (0..100).map(|_| rng.unit_f64()).collect();
    let mut per_round = Vec::new();
    while !live.is_empty() {
        let before = live.len();
        live.retain(|&level| match budget.try_retry(RetryCause::Error, level) {
            Ok(_) => {
                assert!(budget.tokens() > 500.0, "admitted at {}", budget.tokens());
                true
            }
            Err(_) => false,
        });
        per_round.push(before - live.len());
    }
    per_round
}

#[test]
fn give_ups_are_spread_across_calls_not_a_cliff() {
    // A plain threshold (spread 0) is a cliff: every call gives up within two
    // rounds of each other. The default spread (a quarter of the headroom, 125
    // tokens here) makes calls drop out one by one over several rounds.
    let cliff = give_ups_per_round(0.0);
    let ramp = give_ups_per_round(250.0);
    let rounds_with_give_ups = |v: &[usize]| v.iter().filter(|&&n| n > 0).count();
    assert!(rounds_with_give_ups(&cliff) <= 2, "{cliff:?}");
    assert!(*cliff.iter().max().unwrap() >= 50, "{cliff:?}");
    assert!(rounds_with_give_ups(&ramp) >= 3, "{ramp:?}");
    assert!(
        *ramp.iter().max().unwrap() <= 50,
        "no round holds half: {ramp:?}"
    );
    assert_eq!(ramp.iter().sum::<usize>(), 100);
}

#[test]
fn each_call_draws_its_own_level() {
    // Two retriers with different seeds share a bucket drained into the
    // spread band: one call is still admitted where the other is denied.
    let outcomes: Vec<GiveUp> = (0..64u64)
        .map(|seed| {
            let budget = Arc::new(
                RetryBudget::builder()
                    .grpc(100.0, 0.1)
                    .spread(40.0)
                    .initial_tokens(71.0)
                    .build()
                    .unwrap(),
            );
            Retry::builder()
                .policy(Policy::builder().max_attempts(2).build().unwrap())
                .classifier(AlwaysRetry)
                .seed(seed)
                .timer(ManualTimer::new())
                .budget(budget)
                .build()
                .call(|_| Err::<(), _>("503"))
                .unwrap_err()
                .reason()
        })
        .collect();
    // Level 70 after the failure: admitted iff 50 + 40·u < 70, i.e. u < 0.5.
    let denied = outcomes
        .iter()
        .filter(|r| **r == GiveUp::RetryBudget)
        .count();
    let admitted = outcomes
        .iter()
        .filter(|r| **r == GiveUp::MaxAttempts)
        .count();
    assert_eq!(denied + admitted, 64);
    assert!(
        denied > 10 && admitted > 10,
        "{denied} denied, {admitted} admitted"
    );
}

#[test]
fn an_admitted_retry_that_never_runs_is_refunded() {
    // The budget admits the retry, then the call gives up waiting behind a
    // breaker probe: the withdrawn tokens come back.
    let budget = Arc::new(RetryBudget::builder().aws().spread(0.0).build().unwrap());
    let breaker = Arc::new(herdless::Breaker::new(1));
    breaker.record_failure();
    let held = breaker.admit();
    assert!(matches!(
        held,
        herdless::guard::breaker::Admission::Probe(_)
    ));
    let err = Retry::builder()
        .policy(
            Policy::builder()
                .max_elapsed(std::time::Duration::from_secs(5))
                .build()
                .unwrap(),
        )
        .classifier(AlwaysRetry)
        .timer(ManualTimer::new())
        .budget(budget.clone())
        .breaker(breaker)
        .build()
        .call(|_| Err::<(), _>("503"))
        .unwrap_err();
    assert_eq!(err.reason(), GiveUp::MaxElapsed);
    assert_eq!(err.attempts(), 1);
    assert_eq!(budget.tokens(), 500.0);
    drop(held);
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_call_returns_its_unused_retry() {
    #[derive(Debug, Clone, Copy)]
    struct Tokio;
    impl herdless::Clock for Tokio {
        fn now(&self) -> std::time::Instant {
            tokio::time::Instant::now().into_std()
        }
    }
    impl herdless::AsyncSleep for Tokio {
        type Sleep = tokio::time::Sleep;
        fn sleep(&self, d: std::time::Duration) -> Self::Sleep {
            tokio::time::sleep(d)
        }
    }
    let budget = Arc::new(RetryBudget::builder().aws().spread(0.0).build().unwrap());
    let policy = Policy::builder()
        .base(std::time::Duration::from_secs(10))
        .jitter(herdless::Jitter::None)
        .build()
        .unwrap();
    let retry = Retry::builder()
        .policy(policy)
        .classifier(AlwaysRetry)
        .timer(Tokio)
        .budget(budget.clone())
        .build();
    let call = retry.call_async(|_| async { Err::<(), _>("503") });
    // Cancelled during the 10 s backoff sleep, after the retry was admitted.
    let out = tokio::time::timeout(std::time::Duration::from_secs(1), call).await;
    assert!(out.is_err(), "timed out");
    assert_eq!(budget.tokens(), 500.0);
}

mod model {
    //! The bucket against a sequential reference model, in exact thousandths.
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        Retry { timeout: bool, level: f64 },
        Failure,
        Success { refund_last: bool },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (any::<bool>(), 0.0f64..1.0).prop_map(|(timeout, level)| Op::Retry { timeout, level }),
            Just(Op::Failure),
            any::<bool>().prop_map(|refund_last| Op::Success { refund_last }),
        ]
    }

    proptest! {
        #[test]
        fn matches_the_reference_model(
            max in 1u64..2_000,          // tokens
            initial_pct in 0u64..=100,
            failure_cost in 0u64..3_000, // thousandths
            retry_cost in 0u64..10_000,
            timeout_cost in 0u64..20_000,
            refund in 0u64..2_000,
            refund_retry_cost: bool,
            threshold_pct in 0u64..100,
            spread_pct in 0u64..100,
            ops in prop::collection::vec(op(), 1..200),
        ) {
            let max_m = max * 1000;
            let initial = max_m * initial_pct / 100;
            let threshold = max_m * threshold_pct / 100;
            let spread = (max_m - threshold) * spread_pct / 100;
            let t = |m: u64| m as f64 / 1000.0;
            let b = RetryBudget::builder()
                .max_tokens(t(max_m))
                .initial_tokens(t(initial))
                .failure_cost(t(failure_cost))
                .retry_cost(t(retry_cost))
                .timeout_cost(t(timeout_cost))
                .success_refund(t(refund))
                .refund_retry_cost(refund_retry_cost)
                .threshold(t(threshold))
                .spread(t(spread))
                .build()
                .unwrap();
            let mut level = initial;
            let mut last: Option<(herdless::guard::Spent, u64)> = None;
            for op in ops {
                match op {
                    Op::Retry { timeout, level: u } => {
                        let cost = if timeout { timeout_cost } else { retry_cost };
                        let after = level.saturating_sub(failure_cost);
                        let floor = threshold + (spread as f64 * u) as u64;
                        let admit = after > floor && after >= cost;
                        level = if admit { after - cost } else { after };
                        let cause = if timeout { RetryCause::Timeout } else { RetryCause::Error };
                        let got = b.try_retry(cause, u);
                        prop_assert_eq!(got.is_ok(), admit);
                        if let Ok(s) = got {
                            prop_assert_eq!(s.tokens(), t(cost));
                            last = Some((s, cost));
                        }
                    }
                    Op::Failure => {
                        level = level.saturating_sub(failure_cost);
                        b.record_failure();
                    }
                    Op::Success { refund_last } => {
                        let spent = if refund_last { last.take() } else { None };
                        let amount = match spent {
                            Some((_, cost)) if refund_retry_cost => cost,
                            _ => refund,
                        };
                        level = (level + amount).min(max_m);
                        b.record_success(spent.map(|(s, _)| s));
                    }
                }
                prop_assert_eq!(b.tokens(), t(level));
                prop_assert!(level <= max_m);
            }
        }
    }
}
