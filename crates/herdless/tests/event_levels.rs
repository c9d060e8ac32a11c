//! Event levels: the defaults (a first-attempt terminal is WARN, not ERROR),
//! levels set on a `Retry` and on an engine `Context`, and the tower policy
//! carrying them, all seen by a capturing `tracing` subscriber.

mod support;

use std::convert::Infallible;
use std::time::Duration;

use herdless::adapters::tower::RetryPolicy;
use herdless::engine::{Context, Decision, Engine};
use herdless::events::EventLevels;
use herdless::{
    AlwaysRetry, Classification, ManualTimer, Policy, Retry, RetryBudget, RetryCause, Rng,
};
use support::{Capture, capture};
use tracing::Level;

/// (name, level) of every captured event, in order.
fn levels(cap: &Capture) -> Vec<(String, String)> {
    cap.events()
        .iter()
        .map(|e| (e.name().to_owned(), e.level.clone()))
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// Fails until attempt `ok_at`, then succeeds (`ok_at` 0: never).
fn flaky(ok_at: u32) -> impl FnMut(herdless::Attempt) -> Result<u32, &'static str> {
    move |a| {
        if ok_at != 0 && a.number() >= ok_at {
            Ok(a.number())
        } else {
            Err("503")
        }
    }
}

#[test]
fn defaults_warn_on_retries_info_on_success() {
    let (out, cap) = capture(|| {
        Retry::builder()
            .policy(Policy::default())
            .classifier(AlwaysRetry)
            .timer(ManualTimer::new())
            .build()
            .call(flaky(3))
    });
    assert_eq!(out, Ok(3));
    assert_eq!(
        levels(&cap),
        pairs(&[
            ("retry_scheduled", "WARN"),
            ("retry_scheduled", "WARN"),
            ("retry_succeeded", "INFO"),
        ])
    );
}

#[test]
fn a_terminal_on_the_first_attempt_is_warn_after_a_retry_error() {
    let classify = |e: &&str| match *e {
        "503" => Classification::retryable(),
        _ => Classification::terminal(),
    };
    let retry = Retry::builder()
        .policy(Policy::default())
        .classifier(classify)
        .timer(ManualTimer::new())
        .build();
    let (_, first) = capture(|| retry.call(|_| Err::<(), _>("404")));
    assert_eq!(
        levels(&first),
        pairs(&[("retry_abandoned_terminal", "WARN")])
    );
    let (_, later) =
        capture(|| retry.call(|a| Err::<(), _>(if a.number() == 1 { "503" } else { "404" })));
    assert_eq!(
        levels(&later),
        pairs(&[
            ("retry_scheduled", "WARN"),
            ("retry_abandoned_terminal", "ERROR"),
        ])
    );
}

#[test]
fn an_exhausted_budget_is_error() {
    let policy = Policy::builder().max_attempts(2).build().unwrap();
    let (_, cap) = capture(|| {
        Retry::builder()
            .policy(policy)
            .classifier(AlwaysRetry)
            .timer(ManualTimer::new())
            .build()
            .call(flaky(0))
    });
    assert_eq!(
        levels(&cap),
        pairs(&[
            ("retry_scheduled", "WARN"),
            ("retry_budget_exhausted", "ERROR"),
        ])
    );
}

#[test]
fn levels_set_on_a_retry_are_used() {
    let custom = EventLevels::default()
        .retry_scheduled(Level::DEBUG)
        .retry_succeeded(Level::TRACE)
        .set("retry_budget_exhausted", Level::WARN)
        .unwrap();
    let retry = Retry::builder()
        .policy(Policy::builder().max_attempts(3).build().unwrap())
        .classifier(AlwaysRetry)
        .timer(ManualTimer::new())
        .event_levels(custom)
        .build();
    let (_, ok) = capture(|| retry.call(flaky(2)));
    assert_eq!(
        levels(&ok),
        pairs(&[("retry_scheduled", "DEBUG"), ("retry_succeeded", "TRACE")])
    );
    let (_, gave_up) = capture(|| retry.call(flaky(0)));
    assert_eq!(
        gave_up.events().last().map(|e| e.level.clone()),
        Some("WARN".into())
    );
    // With a shared budget that denies: still the configured level.
    let budget = RetryBudget::builder()
        .aws()
        .max_tokens(1.0)
        .spread(0.0)
        .build()
        .unwrap();
    let retry = retry.into_builder().budget(budget).build();
    let (_, denied) = capture(|| retry.call(flaky(0)));
    let last = denied.events().pop().unwrap();
    assert_eq!(
        (last.name(), last.get("reason"), last.level.as_str()),
        ("retry_budget_exhausted", "retry_budget", "WARN")
    );
}

#[test]
fn a_hand_written_driver_uses_the_context_levels() {
    let policy = Policy::default();
    let terminal_info = EventLevels::default().first_attempt_terminal(Level::INFO);
    let (decision, cap) = capture(|| {
        let cx = Context::new(&policy).event_levels(terminal_info);
        let mut call = Engine::new(Duration::ZERO);
        call.begin();
        call.failed(
            &cx,
            Duration::ZERO,
            Classification::terminal(),
            RetryCause::Error,
            &mut Rng::with_seed(1),
        )
    });
    assert!(matches!(decision, Decision::GiveUp(_)));
    assert_eq!(levels(&cap), pairs(&[("retry_abandoned_terminal", "INFO")]));
}

#[test]
fn trace_off_emits_nothing_whatever_the_levels() {
    let policy = Policy::default();
    let (_, cap) = capture(|| {
        let cx = Context::new(&policy)
            .event_levels(EventLevels::default().retry_scheduled(Level::ERROR))
            .trace(false);
        let mut call = Engine::new(Duration::ZERO);
        call.begin();
        call.failed(
            &cx,
            Duration::ZERO,
            Classification::retryable(),
            RetryCause::Error,
            &mut Rng::with_seed(1),
        )
    });
    assert!(cap.events().is_empty());
}

#[test]
fn the_tower_policy_carries_the_levels() {
    use tower::{Service, ServiceBuilder, ServiceExt};
    let classify = |r: &Result<u16, Infallible>| match r {
        Ok(200) => None,
        Ok(503) => Some(Classification::retryable()),
        _ => Some(Classification::terminal()),
    };
    let retry = Retry::builder()
        .policy(Policy::default())
        .classifier(classify)
        .timer(ManualTimer::new())
        .event_levels(EventLevels::default().retry_scheduled(Level::INFO))
        .build();
    let layer = tower::retry::RetryLayer::new(RetryPolicy::new(retry));
    let (status, cap) = capture(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(async {
            let hits = std::sync::atomic::AtomicU32::new(0);
            let mut svc = ServiceBuilder::new().layer(layer).service_fn(|_: ()| {
                let n = hits.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                async move { Ok::<u16, Infallible>(if n < 1 { 503 } else { 200 }) }
            });
            svc.ready().await.unwrap().call(()).await.unwrap()
        })
    });
    assert_eq!(status, 200);
    assert_eq!(
        levels(&cap),
        pairs(&[("retry_scheduled", "INFO"), ("retry_succeeded", "INFO")])
    );
}
