//! The escape lane: urgent calls bypass the shared budget within their quota
//! and never sleep past their deadline.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use herdless::guard::breaker::Admission;
use herdless::{
    AlwaysRetry, Breaker, Classification, GiveUp, ManualTimer, Policy, Retry, RetryBudget,
    RetryCause, RetryEvent, Urgent,
};

fn drained_budget() -> Arc<RetryBudget> {
    let b = RetryBudget::builder()
        .grpc(10.0, 0.1)
        .spread(0.0)
        .build()
        .unwrap();
    while b.try_retry(RetryCause::Error, 0.0).is_ok() {}
    Arc::new(b)
}

#[test]
fn urgent_calls_bypass_a_drained_budget_within_their_quota_only() {
    let budget = drained_budget();
    let policy = Policy::builder().max_attempts(10).build().unwrap();
    let bulk = Retry::builder()
        .policy(policy)
        .classifier(AlwaysRetry)
        .timer(ManualTimer::new())
        .budget(budget.clone())
        .build();
    let err = bulk.call(|_| Err::<(), _>("503")).unwrap_err();
    assert_eq!(err.reason(), GiveUp::RetryBudget);
    assert_eq!(err.attempts(), 1);

    for quota in [0u32, 1, 3] {
        let urgent = Retry::builder()
            .policy(policy)
            .classifier(AlwaysRetry)
            .timer(ManualTimer::new())
            .budget(budget.clone())
            .urgent(Urgent::new(Duration::from_secs(60)).quota(quota))
            .build();
        let err = urgent.call(|_| Err::<(), _>("503")).unwrap_err();
        // `quota` retries through the lane, then the budget denies the next one.
        assert_eq!(err.reason(), GiveUp::RetryBudget, "quota {quota}");
        assert_eq!(err.attempts(), quota + 1, "quota {quota}");
    }
}

#[test]
fn urgent_call_succeeds_where_a_bulk_call_gives_up() {
    let budget = drained_budget();
    let urgent = Retry::builder()
        .policy(Policy::default())
        .classifier(AlwaysRetry)
        .timer(ManualTimer::new())
        .budget(budget.clone())
        .urgent(Urgent::new(Duration::from_secs(5)).quota(2))
        .build();
    let out = urgent.call(|a| if a.number() < 3 { Err("503") } else { Ok("ok") });
    assert_eq!(out, Ok("ok"));
}

#[test]
fn urgent_calls_never_sleep_past_their_deadline() {
    for deadline_ms in [0u64, 150, 700, 2_000, 9_000] {
        let deadline = Duration::from_millis(deadline_ms);
        let timer = ManualTimer::new();
        let scheduled = Mutex::new(Vec::new());
        let hook = |e: &RetryEvent<'_>| {
            if let RetryEvent::Scheduled { elapsed, sleep, .. } = e {
                scheduled.lock().unwrap().push(*elapsed + *sleep);
            }
        };
        let t = timer.clone();
        let err = Retry::builder()
            .policy(Policy::builder().max_attempts(1000).build().unwrap())
            .classifier(AlwaysRetry)
            .timer(timer.clone())
            .notify(&hook)
            .seed(deadline_ms)
            .urgent(Urgent::new(deadline))
            .build()
            .call(|_| {
                t.advance(Duration::from_millis(30)); // the attempt's own time
                Err::<(), _>("503")
            })
            .unwrap_err();
        assert_eq!(err.reason(), GiveUp::MaxElapsed, "deadline {deadline:?}");
        let wakeups = scheduled.into_inner().unwrap();
        assert!(
            wakeups.iter().all(|w| *w <= deadline),
            "deadline {deadline:?}: {wakeups:?}"
        );
        // ends within the deadline plus one attempt's own time
        assert!(timer.elapsed() <= deadline + Duration::from_millis(30));
    }
}

#[test]
fn a_server_delay_past_the_deadline_ends_the_call_at_once() {
    let timer = ManualTimer::new();
    let err = Retry::builder()
        .policy(Policy::default())
        .classifier(|_: &&str| Classification::retry_after(Duration::from_secs(5)))
        .timer(timer.clone())
        .urgent(Urgent::new(Duration::from_secs(1)))
        .build()
        .call(|_| Err::<(), _>("429"))
        .unwrap_err();
    assert_eq!(err.reason(), GiveUp::MaxElapsed);
    assert_eq!(err.attempts(), 1);
    assert!(timer.sleeps().is_empty());
}

#[test]
fn urgent_retries_within_quota_do_not_wait_behind_a_probe() {
    let breaker = Arc::new(Breaker::new(1).probe_wait(Duration::from_secs(1)));
    breaker.record_failure();
    let Admission::Probe(held) = breaker.admit() else {
        panic!("probe")
    };
    let timer = ManualTimer::new();
    let policy = Policy::builder()
        .base(Duration::from_millis(10))
        .build()
        .unwrap();
    let out = Retry::builder()
        .policy(policy)
        .classifier(AlwaysRetry)
        .timer(timer.clone())
        .breaker(breaker.clone())
        .urgent(Urgent::new(Duration::from_millis(500)).quota(2))
        .build()
        .call(|a| if a.number() < 3 { Err("503") } else { Ok(()) });
    assert_eq!(out, Ok(()));
    assert_eq!(
        timer.sleeps().len(),
        2,
        "only the two backoff sleeps, no probe waits"
    );
    drop(held);
}

#[tokio::test(start_paused = true)]
async fn async_urgent_call_respects_its_deadline_on_tokio_time() {
    #[derive(Debug, Clone, Copy)]
    struct Tokio;
    impl herdless::Clock for Tokio {
        fn now(&self) -> std::time::Instant {
            tokio::time::Instant::now().into_std()
        }
    }
    impl herdless::AsyncSleep for Tokio {
        type Sleep = tokio::time::Sleep;
        fn sleep(&self, d: Duration) -> Self::Sleep {
            tokio::time::sleep(d)
        }
    }
    let start = tokio::time::Instant::now();
    let err = Retry::builder()
        .policy(Policy::builder().max_attempts(1000).build().unwrap())
        .classifier(AlwaysRetry)
        .timer(Tokio)
        .budget(drained_budget())
        .urgent(Urgent::new(Duration::from_millis(1500)).quota(1000))
        .build()
        .call_async(|_| async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            Err::<(), _>("503")
        })
        .await
        .unwrap_err();
    assert_eq!(err.reason(), GiveUp::MaxElapsed);
    assert!(err.attempts() >= 2);
    assert!(start.elapsed() <= Duration::from_millis(1520));
}
