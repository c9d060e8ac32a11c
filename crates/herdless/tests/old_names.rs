//! The names and paths renamed or moved this release still work, as
//! deprecated aliases, until the next one: a caller's code compiles and
//! means the same (each alias is the new item, not a copy).

#![allow(deprecated)]

use herdless::{Classification, GiveUp};

#[test]
fn server_pushback_is_do_not_retry() {
    assert_eq!(Classification::ServerPushback, Classification::DoNotRetry);
    assert_eq!(GiveUp::ServerPushback, GiveUp::DoNotRetry);
    // As a pattern too.
    assert!(matches!(
        Classification::DoNotRetry,
        Classification::ServerPushback
    ));
    assert!(matches!(GiveUp::DoNotRetry, GiveUp::ServerPushback));
    // The names written down (events, metrics, headers) did not change.
    assert_eq!(GiveUp::DoNotRetry.as_str(), "server_pushback");
}

#[test]
fn the_guards_old_paths_are_the_new_items() {
    fn budget(b: herdless::guard::RetryBudget) -> herdless::fleet::RetryBudget {
        b
    }
    fn urgent(u: herdless::guard::Urgent) -> herdless::fleet::escape_lane::Urgent {
        u
    }
    let b = budget(herdless::fleet::RetryBudget::grpc(50.0, 0.1).unwrap());
    assert_eq!(b.max_tokens(), 50.0);
    let _ = urgent(herdless::guard::Urgent::new(
        std::time::Duration::from_secs(1),
    ));
    let _: herdless::fleet::Throttle = herdless::guard::Throttle::new();
}

#[test]
fn the_executors_and_events_old_paths_are_the_new_items() {
    fn retry(r: herdless::retry::RetryBuilder) -> herdless::engine::RetryBuilder {
        r
    }
    let _ = retry(herdless::Retry::builder());
    let e: herdless::engine::GiveUp = herdless::events::GiveUp::MaxAttempts;
    assert_eq!(e, GiveUp::MaxAttempts);
    let t: herdless::engine::TimedOut =
        herdless::classify::TimedOut::new(1, std::time::Duration::from_secs(1));
    assert_eq!(t.attempt(), 1);
    assert_eq!(
        herdless::engine::metrics::ATTEMPTS,
        herdless::events::metrics::ATTEMPTS
    );
    let _: herdless::engine::events::NoNotify = herdless::events::NoNotify;
}
