//! `Retry::call_async_mut` under `tokio::time::pause`: attempts borrow the
//! caller's state mutably, and the budgets hold in virtual time.

#![cfg(feature = "tokio")]

use std::time::Duration;

use herdless::{AlwaysRetry, GiveUp, Jitter, Policy, Retry};
use tokio::time::Instant;

/// A `&mut self` resource reused by every attempt.
struct Conn {
    opened: u32,
    log: Vec<(u32, Duration)>,
}

impl Conn {
    async fn send(&mut self, attempt: u32, start: Instant) -> Result<u32, &'static str> {
        tokio::time::sleep(Duration::from_millis(100)).await; // the call's own time
        self.log.push((attempt, start.elapsed()));
        if attempt < 4 {
            self.opened += 1; // reconnect for the next attempt
            Err("reset")
        } else {
            Ok(self.opened)
        }
    }
}

#[tokio::test(start_paused = true)]
async fn attempts_borrow_state_mutably_in_virtual_time() {
    let policy = Policy::builder()
        .base(Duration::from_secs(1))
        .jitter(Jitter::None)
        .build()
        .unwrap();
    let retry = Retry::new(policy, AlwaysRetry);
    let start = Instant::now();
    let mut conn = Conn {
        opened: 1,
        log: Vec::new(),
    };
    let out = retry
        .call_async_mut(async |a| conn.send(a.number(), start).await)
        .await;
    assert_eq!(out, Ok(4));
    // 0.1 s per call, then 1 s, 2 s, 4 s of backoff.
    let at: Vec<u128> = conn.log.iter().map(|(_, t)| t.as_millis()).collect();
    assert_eq!(at, [100, 1_200, 3_300, 7_400]);
    assert_eq!(start.elapsed(), Duration::from_millis(7_400));
}

#[tokio::test(start_paused = true)]
async fn the_elapsed_budget_holds() {
    let policy = Policy::builder()
        .base(Duration::from_secs(1))
        .cap(Duration::from_secs(8))
        .jitter(Jitter::None)
        .max_attempts(u32::MAX)
        .max_elapsed(Duration::from_secs(20))
        .build()
        .unwrap();
    let mut attempts = Vec::new();
    let err = Retry::new(policy, AlwaysRetry)
        .call_async_mut(async |a| {
            tokio::time::sleep(Duration::from_millis(500)).await;
            attempts.push(a.number());
            Err::<(), _>("timeout")
        })
        .await
        .unwrap_err();
    assert_eq!(err.reason(), GiveUp::MaxElapsed);
    assert_eq!(err.elapsed(), Duration::from_millis(17_500));
    assert_eq!(attempts, [1, 2, 3, 4, 5]);
}
