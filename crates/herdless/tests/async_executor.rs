//! The async executor under `tokio::time::pause`: budgets hold in virtual time,
//! the future is `Send`, dropping it cancels with no further attempt, and server
//! delays are slept for real (virtual) time.

#![cfg(feature = "tokio")]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use herdless::{AlwaysRetry, Classification, GiveUp, Jitter, Policy, Retry};
use tokio::time::Instant;

fn assert_send<T: Send>(_: &T) {}

#[tokio::test(start_paused = true)]
async fn elapsed_budget_holds_in_paused_time() {
    let policy = Policy::builder()
        .base(Duration::from_secs(1))
        .cap(Duration::from_secs(8))
        .jitter(Jitter::None)
        .max_attempts(u32::MAX)
        .max_elapsed(Duration::from_secs(20))
        .build()
        .unwrap();
    let start = Instant::now();
    let err = Retry::new(policy, AlwaysRetry)
        .call_async(|_| async {
            tokio::time::sleep(Duration::from_millis(500)).await; // the operation's own time
            Err::<(), _>("timeout")
        })
        .await
        .unwrap_err();
    assert_eq!(err.reason(), GiveUp::MaxElapsed);
    // 0.5 +1 +0.5 +2 +0.5 +4 +0.5 +8 +0.5 = 17.5 s; the next 8 s sleep would pass 20 s.
    assert_eq!(err.attempts(), 5);
    assert_eq!(err.elapsed(), Duration::from_millis(17_500));
    assert_eq!(start.elapsed(), Duration::from_millis(17_500));
}

#[tokio::test(start_paused = true)]
async fn server_delay_is_slept_in_virtual_time() {
    let policy = Policy::builder().retry_after_spread(0.0).build().unwrap();
    let start = Instant::now();
    let out = Retry::new(policy, |_: &()| {
        Classification::retry_after(Duration::from_secs(2))
    })
    .call_async(|a| async move {
        if a.number() == 1 {
            Err(())
        } else {
            Ok(a.elapsed())
        }
    })
    .await
    .unwrap();
    assert_eq!(out, Duration::from_secs(2));
    assert_eq!(start.elapsed(), Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn the_future_is_send_and_can_be_spawned() {
    let retry = Arc::new(Retry::new(Policy::default(), AlwaysRetry));
    let r = retry.clone();
    let fut = async move {
        r.call_async(|a| async move {
            if a.number() < 3 {
                Err("busy")
            } else {
                Ok(a.number())
            }
        })
        .await
    };
    assert_send(&fut);
    assert_eq!(tokio::spawn(fut).await.unwrap(), Ok(3));
}

#[tokio::test(start_paused = true)]
async fn dropping_the_future_cancels_with_no_further_attempt() {
    let attempts = Arc::new(AtomicU32::new(0));
    let counted = attempts.clone();
    let policy = Policy::builder()
        .base(Duration::from_secs(10))
        .cap(Duration::from_secs(10))
        .jitter(Jitter::None)
        .build()
        .unwrap();
    let retry = Retry::new(policy, AlwaysRetry);
    let call = retry.call_async(|_| {
        counted.fetch_add(1, Ordering::SeqCst);
        async { Err::<(), _>("down") }
    });
    // The first attempt fails at once; the call then sleeps 10 s. Stop it after 5 s.
    let timed_out = tokio::time::timeout(Duration::from_secs(5), call).await;
    assert!(timed_out.is_err());
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(
        attempts.load(Ordering::SeqCst),
        1,
        "no attempt after the drop"
    );
}
