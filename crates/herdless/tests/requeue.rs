//! The requeue answer (`Classification::Requeued`): a server's queue answers
//! an attempt unprocessed. It is not an attempt (the count does not move, the
//! budget, the breaker and the throttle hear nothing), it is bounded on its
//! own by `max_requeues` and, like every wait, by `max_elapsed`; each one is
//! told as `retry_requeued`.

mod support;

use std::cell::Cell;
use std::sync::Arc;
use std::time::Duration;

use herdless::{Breaker, Classification, GiveUp, Jitter, ManualTimer, Policy, Retry, RetryBudget};
use support::capture;

fn s(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

/// An operation answered "queued, come back in `after`" `requeues` times,
/// then `Ok`.
#[derive(Debug)]
enum Answer {
    Queued,
    Busy,
}

fn classify(e: &Answer) -> Classification {
    match e {
        Answer::Queued => Classification::requeued(s(2)),
        Answer::Busy => Classification::retryable(),
    }
}

#[test]
fn requeues_are_not_attempts() {
    let policy = Policy::builder().max_attempts(1).build().unwrap();
    let timer = ManualTimer::new();
    let calls = Cell::new(0u32);
    let budget = Arc::new(RetryBudget::aws());
    let breaker = Arc::new(Breaker::new(1));
    let (out, cap) = capture(|| {
        Retry::builder()
            .policy(policy)
            .classifier(classify)
            .task_id("held")
            .budget(Arc::clone(&budget))
            .breaker(Arc::clone(&breaker))
            .timer(timer.clone())
            .build()
            .call(|attempt| {
                calls.set(calls.get() + 1);
                assert_eq!(attempt.number(), 1, "a requeued attempt keeps its number");
                if calls.get() <= 5 {
                    Err(Answer::Queued)
                } else {
                    Ok(calls.get())
                }
            })
    });
    assert_eq!(
        out.unwrap(),
        6,
        "one attempt allowed, five requeues taken, then served"
    );
    assert_eq!(budget.tokens(), 500.0, "the budget heard nothing");
    assert!(!breaker.is_open(), "the breaker heard nothing");
    let requeued = cap.named("retry_requeued");
    assert_eq!(requeued.len(), 5);
    assert_eq!(requeued[4].get("requeues"), "5");
    assert_eq!(requeued[0].get("attempt"), "1");
    assert_eq!(requeued[0].get("task_id"), "held");
    assert!(cap.named("retry_scheduled").is_empty());
    // Each wait is the server's 2 s, spread by up to 10 %.
    for d in timer.sleeps() {
        assert!(d >= s(2) && d <= Duration::from_millis(2_200), "{d:?}");
    }
}

#[test]
fn past_max_requeues_a_requeue_counts_as_an_attempt() {
    let policy = Policy::builder()
        .max_attempts(3)
        .max_requeues(4)
        .build()
        .unwrap();
    let timer = ManualTimer::new();
    let calls = Cell::new(0u32);
    let (out, cap) = capture(|| {
        Retry::builder()
            .policy(policy)
            .classifier(classify)
            .timer(timer.clone())
            .build()
            .call(|_| {
                calls.set(calls.get() + 1);
                Err::<(), _>(Answer::Queued)
            })
    });
    let err = out.unwrap_err();
    assert_eq!(err.reason(), GiveUp::MaxAttempts);
    assert_eq!(err.attempts(), 3);
    assert_eq!(
        calls.get(),
        4 + 3,
        "four free requeues, then three attempts"
    );
    assert_eq!(cap.named("retry_requeued").len(), 4);
    assert_eq!(cap.named("retry_scheduled").len(), 2);
}

#[test]
fn zero_max_requeues_makes_every_requeue_an_attempt() {
    let policy = Policy::builder()
        .max_attempts(2)
        .max_requeues(0)
        .build()
        .unwrap();
    let calls = Cell::new(0u32);
    let err = Retry::builder()
        .policy(policy)
        .classifier(classify)
        .timer(ManualTimer::new())
        .build()
        .call(|_| {
            calls.set(calls.get() + 1);
            Err::<(), _>(Answer::Queued)
        })
        .unwrap_err();
    assert_eq!((err.reason(), calls.get()), (GiveUp::MaxAttempts, 2));
}

#[test]
fn requeues_end_within_max_elapsed() {
    let policy = Policy::builder()
        .max_elapsed(s(7))
        .retry_after_spread(0.0)
        .build()
        .unwrap();
    let timer = ManualTimer::new();
    let calls = Cell::new(0u32);
    let (out, cap) = capture(|| {
        Retry::builder()
            .policy(policy)
            .classifier(classify)
            .timer(timer.clone())
            .build()
            .call(|_| {
                calls.set(calls.get() + 1);
                Err::<(), _>(Answer::Queued)
            })
    });
    let err = out.unwrap_err();
    assert_eq!(err.reason(), GiveUp::MaxElapsed);
    assert_eq!(
        calls.get(),
        4,
        "waits at 2, 4, 6 s; the next would end at 8 s"
    );
    assert!(timer.elapsed() <= s(7));
    let exhausted = cap.named("retry_budget_exhausted");
    assert_eq!(exhausted.len(), 1);
    assert_eq!(exhausted[0].get("reason"), "max_elapsed");
}

#[test]
fn a_requeue_between_failures_keeps_the_backoff_where_it_was() {
    // Busy (retry 1), queued, busy (retry 2): the second retry's ceiling is
    // the second step of the schedule, not the third.
    let policy = Policy::builder()
        .jitter(Jitter::None)
        .base(s(1))
        .retry_after_spread(0.0)
        .build()
        .unwrap();
    let timer = ManualTimer::new();
    let calls = Cell::new(0u32);
    let out = Retry::builder()
        .policy(policy)
        .classifier(classify)
        .timer(timer.clone())
        .build()
        .call(|attempt| {
            calls.set(calls.get() + 1);
            match calls.get() {
                1 => Err(Answer::Busy),
                2 => Err(Answer::Queued),
                3 => Err(Answer::Busy),
                _ => Ok(attempt.number()),
            }
        });
    assert_eq!(
        out.unwrap(),
        3,
        "the requeued call was attempt 2, then 2 again, then 3"
    );
    assert_eq!(timer.sleeps(), vec![s(1), s(2), s(2)]);
}
