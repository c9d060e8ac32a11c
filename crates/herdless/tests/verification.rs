//! Validation and verification, against the blocking
//! executor with an injected clock: the budget is bounded by attempts and by
//! elapsed time, terminal errors are not retried, server delays are honored,
//! clamped and fall back on bad values, and every call ends in exactly one of
//! success, terminal error or exhausted budget.

mod support;

use std::cell::Cell;
use std::time::Duration;

use herdless::{
    AlwaysRetry, Classification, GiveUp, Jitter, ManualTimer, Policy, Retry, RetryBuilder,
    RetryEvent,
};
use support::capture;

fn s(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

#[test]
fn perpetual_transient_errors_stop_at_max_attempts() {
    let policy = Policy::builder().max_attempts(6).build().unwrap();
    let timer = ManualTimer::new();
    let calls = Cell::new(0u32);
    let (out, cap) = capture(|| {
        Retry::builder()
            .policy(policy)
            .classifier(AlwaysRetry)
            .task_id("perpetual")
            .timer(timer.clone())
            .build()
            .call(|_| {
                calls.set(calls.get() + 1);
                Err::<(), _>("timeout")
            })
    });
    let err = out.unwrap_err();
    assert_eq!(err.reason(), GiveUp::MaxAttempts);
    assert_eq!(err.attempts(), 6);
    assert_eq!(calls.get(), 6, "at most max_attempts tries");
    assert_eq!(timer.sleeps().len(), 5);
    assert!(timer.elapsed() <= policy.max_elapsed());
    let exhausted = cap.named("retry_budget_exhausted");
    assert_eq!(exhausted.len(), 1);
    assert_eq!(exhausted[0].get("reason"), "max_attempts");
    assert_eq!(exhausted[0].get("attempt"), "6");
    assert_eq!(exhausted[0].get("task_id"), "perpetual");
    assert_eq!(cap.named("retry_scheduled").len(), 5);
}

#[test]
fn perpetual_transient_errors_stop_within_max_elapsed() {
    // Each attempt itself takes 700 ms; the budget is 10 s; attempts are unlimited.
    let op_time = Duration::from_millis(700);
    let policy = Policy::builder()
        .base(s(1))
        .cap(s(4))
        .jitter(Jitter::None)
        .max_attempts(u32::MAX)
        .max_elapsed(s(10))
        .build()
        .unwrap();
    let timer = ManualTimer::new();
    let (out, cap) = capture(|| {
        Retry::builder()
            .policy(policy)
            .classifier(AlwaysRetry)
            .timer(timer.clone())
            .build()
            .call(|_| {
                timer.advance(op_time);
                Err::<(), _>("timeout")
            })
    });
    let err = out.unwrap_err();
    assert_eq!(err.reason(), GiveUp::MaxElapsed);
    // Gave up before sleeping past the budget: total time is within the budget
    // plus at most one operation's own duration.
    assert!(
        timer.elapsed() <= policy.max_elapsed() + op_time,
        "{:?}",
        timer.elapsed()
    );
    let slept: Duration = timer.sleeps().iter().sum();
    assert!(slept + op_time * err.attempts() <= policy.max_elapsed() + op_time);
    // Schedule: 0.7 +1 +0.7 +2 +0.7 +4 +0.7 = 9.8 s; the next 4 s sleep would pass 10 s.
    assert_eq!(timer.sleeps(), vec![s(1), s(2), s(4)]);
    assert_eq!(err.attempts(), 4);
    let ev = &cap.named("retry_budget_exhausted")[0];
    assert_eq!(ev.get("reason"), "max_elapsed");
    assert!((ev.f64("elapsed_s") - 9.8).abs() < 1e-9);
}

#[test]
fn terminal_error_makes_exactly_one_attempt() {
    let calls = Cell::new(0u32);
    let timer = ManualTimer::new();
    let (out, cap) = capture(|| {
        Retry::builder()
            .policy(Policy::default())
            .classifier(|_: &u16| Classification::terminal())
            .task_id("scan-401")
            .timer(timer.clone())
            .build()
            .call(|_| {
                calls.set(calls.get() + 1);
                Err::<(), u16>(401)
            })
    });
    let err = out.unwrap_err();
    assert_eq!(calls.get(), 1);
    assert_eq!(err.attempts(), 1);
    assert!(err.is_terminal());
    assert_eq!(*err.last_error(), 401);
    assert!(timer.sleeps().is_empty());
    let events = cap.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].name(), "retry_abandoned_terminal");
    assert_eq!(events[0].level, "WARN");
    assert_eq!(events[0].get("task_id"), "scan-401");
    assert_eq!(events[0].get("attempt"), "1");
}

#[test]
fn unknown_classification_fails_closed() {
    let calls = Cell::new(0u32);
    let (out, cap) = capture(|| {
        Retry::builder()
            .policy(Policy::default())
            .classifier(|_: &&str| Classification::Unknown)
            .timer(ManualTimer::new())
            .build()
            .call(|_| {
                calls.set(calls.get() + 1);
                Err::<(), _>("novel error")
            })
    });
    assert!(out.unwrap_err().is_terminal());
    assert_eq!(calls.get(), 1);
    let ev = &cap.named("retry_abandoned_terminal")[0];
    assert_eq!(ev.get("classification"), "unknown");
}

#[test]
fn retry_succeeds_and_logs_each_decision() {
    let timer = ManualTimer::new();
    let (out, cap) = capture(|| {
        Retry::builder()
            .policy(Policy::default())
            .classifier(AlwaysRetry)
            .task_id("t")
            .timer(timer.clone())
            .build()
            .call(|a| {
                if a.number() < 3 {
                    Err("busy")
                } else {
                    Ok(a.number())
                }
            })
    });
    assert_eq!(out, Ok(3));
    let names: Vec<_> = cap.events().iter().map(|e| e.name().to_string()).collect();
    assert_eq!(
        names,
        ["retry_scheduled", "retry_scheduled", "retry_succeeded"]
    );
    let sched = &cap.named("retry_scheduled")[1];
    for key in [
        "task_id",
        "attempt",
        "computed_jitter_s",
        "sleep_s",
        "honored_retry_after",
        "elapsed_s",
    ] {
        sched.get(key);
    }
    assert_eq!(sched.get("attempt"), "2");
    assert_eq!(sched.get("honored_retry_after"), "false");
    assert_eq!(sched.f64("sleep_s"), sched.f64("computed_jitter_s"));
    assert_eq!(sched.f64("sleep_s"), timer.sleeps()[1].as_secs_f64());
    let ok = &cap.named("retry_succeeded")[0];
    assert_eq!(ok.get("attempt"), "3");
    assert_eq!(ok.level, "INFO");
}

#[test]
fn first_try_success_logs_nothing() {
    let (out, cap) =
        capture(|| Retry::new(Policy::default(), AlwaysRetry).call(|_| Ok::<_, ()>(1)));
    assert_eq!(out, Ok(1));
    assert!(cap.events().is_empty());
}

/// Runs one failing attempt whose error carries `after`, then a success, and
/// returns (sleep, honored, computed).
fn one_server_delay(policy: Policy, after: Classification) -> (Duration, bool, Duration) {
    let timer = ManualTimer::new();
    let seen = std::sync::Mutex::new(None);
    let hook = |e: &RetryEvent<'_>| {
        if let RetryEvent::Scheduled {
            sleep,
            honored_retry_after,
            computed_jitter,
            ..
        } = *e
        {
            *seen.lock().unwrap() = Some((sleep, honored_retry_after, computed_jitter));
        }
    };
    let out = Retry::builder()
        .policy(policy)
        .classifier(move |_: &()| after)
        .timer(timer.clone())
        .notify(hook)
        .build()
        .call(|a| if a.number() == 1 { Err(()) } else { Ok(()) });
    assert!(out.is_ok());
    let got = seen.lock().unwrap().expect("a retry was scheduled");
    assert_eq!(timer.sleeps(), vec![got.0]);
    got
}

#[test]
fn server_delay_is_honored_with_a_small_positive_spread() {
    let policy = Policy::default(); // spread 10 %, clamp 60 s
    for _ in 0..200 {
        let (sleep, honored, computed) =
            one_server_delay(policy, Classification::retry_after(s(2)));
        assert!(honored);
        assert!(
            sleep >= s(2) && sleep <= Duration::from_millis(2200),
            "{sleep:?}"
        );
        assert!(computed <= policy.base());
    }
}

#[test]
fn hostile_server_delay_is_clamped() {
    let policy = Policy::builder().max_retry_after(s(5)).build().unwrap();
    for hostile in [
        Classification::retry_after(Duration::MAX),
        Classification::retry_after(s(3600)),
        Classification::retry_after_secs(1e300),
        Classification::retry_after_secs(99_999_999_999_999_999_999.0),
    ] {
        let (sleep, honored, _) = one_server_delay(policy, hostile);
        assert!(honored);
        // Clamped to 5 s, then spread by +0 to 10 %: never below the clamp.
        assert!(
            sleep >= s(5) && sleep <= Duration::from_millis(5500),
            "{sleep:?}"
        );
    }
}

#[test]
fn bad_server_delays_fall_back_to_the_computed_jitter() {
    let policy = Policy::default();
    for bad in [
        Classification::retry_after(Duration::ZERO),
        Classification::retry_after_secs(0.0),
        Classification::retry_after_secs(-5.0),
        Classification::retry_after_secs(f64::NAN),
        Classification::retry_after_secs(f64::INFINITY),
        Classification::retryable(),
    ] {
        let (sleep, honored, computed) = one_server_delay(policy, bad);
        assert!(!honored, "{bad:?}");
        assert_eq!(sleep, computed);
        assert!(sleep <= policy.base());
    }
}

#[test]
fn server_delay_counts_against_the_elapsed_budget() {
    let policy = Policy::builder().max_elapsed(s(10)).build().unwrap();
    let timer = ManualTimer::new();
    let (out, cap) = capture(|| {
        Retry::builder()
            .policy(policy)
            .classifier(|_: &()| Classification::retry_after(s(30)))
            .timer(timer.clone())
            .build()
            .call(|_| Err::<(), _>(()))
    });
    let err = out.unwrap_err();
    assert_eq!(err.reason(), GiveUp::MaxElapsed);
    assert_eq!(err.attempts(), 1);
    assert!(timer.sleeps().is_empty(), "gave up before sleeping");
    assert_eq!(
        cap.named("retry_budget_exhausted")[0].get("reason"),
        "max_elapsed"
    );
}

#[test]
fn default_seeding_differs_and_an_explicit_seed_reproduces() {
    let sleeps = |retry: RetryBuilder<AlwaysRetry>| {
        let t = ManualTimer::new();
        let _ = retry.timer(t.clone()).build().call(|_| Err::<(), _>(()));
        t.sleeps()
    };
    let policy = Policy::default();
    let a = sleeps(Retry::builder().policy(policy).classifier(AlwaysRetry));
    let b = sleeps(Retry::builder().policy(policy).classifier(AlwaysRetry));
    assert_eq!(a.len(), 5);
    assert_ne!(a, b, "two retriers with default seeding share no sequence");
    let c = sleeps(
        Retry::builder()
            .policy(policy)
            .classifier(AlwaysRetry)
            .seed(42),
    );
    let d = sleeps(
        Retry::builder()
            .policy(policy)
            .classifier(AlwaysRetry)
            .seed(42),
    );
    assert_eq!(c, d);
    // Successive calls of one seeded retrier differ from each other, reproducibly.
    let t1 = ManualTimer::new();
    let seeded = Retry::builder()
        .policy(policy)
        .classifier(AlwaysRetry)
        .seed(42)
        .timer(t1.clone())
        .build();
    let _ = seeded.call(|_| Err::<(), _>(()));
    let first = t1.sleeps();
    let _ = seeded.call(|_| Err::<(), _>(()));
    let second = t1.sleeps()[5..].to_vec();
    assert_ne!(first, second);
    assert_eq!(first, c);
}

#[test]
fn idempotency_key_is_stable_within_a_call_and_differs_between_calls() {
    let retry = Retry::builder()
        .policy(Policy::default())
        .classifier(AlwaysRetry)
        .timer(ManualTimer::new())
        .build();
    let mut keys = vec![];
    let _ = retry.call(|a| {
        keys.push(a.idempotency_key());
        Err::<(), _>(())
    });
    assert_eq!(keys.len(), 6);
    assert!(keys.iter().all(|k| *k == keys[0]));
    let other = retry.call(|a| Ok::<_, ()>(a.idempotency_key())).unwrap();
    assert_ne!(other, keys[0]);
}

#[test]
fn every_call_ends_in_exactly_one_outcome() {
    // 300 calls with random error patterns: each ends as success, terminal or
    // exhausted, and the counts add up.
    let policy = Policy::builder().max_attempts(4).build().unwrap();
    let mut rng = herdless::Rng::with_seed(9);
    let (mut ok, mut terminal, mut exhausted) = (0, 0, 0);
    for _ in 0..300 {
        let plan: Vec<u64> = (0..5).map(|_| rng.next_u64() % 3).collect();
        let out = Retry::builder()
            .policy(policy)
            .classifier(|e: &u64| {
                if *e == 1 {
                    Classification::retryable()
                } else {
                    Classification::terminal()
                }
            })
            .timer(ManualTimer::new())
            .build()
            .call(|a| match plan[a.number() as usize - 1] {
                0 => Ok(()),
                code => Err(code),
            });
        match out {
            Ok(()) => ok += 1,
            Err(e) if e.is_terminal() => terminal += 1,
            Err(e) => {
                assert!(e.is_exhausted());
                exhausted += 1
            }
        }
    }
    assert_eq!(ok + terminal + exhausted, 300);
    assert!(ok > 0 && terminal > 0 && exhausted > 0);
}
