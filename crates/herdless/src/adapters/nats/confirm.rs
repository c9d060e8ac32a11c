//! Settling a task across a leader change: an acknowledgement, and the
//! completion record before it, are sent again until the server confirms
//! them, for a bounded time.
//!
//! # Why
//!
//! On a cluster, the request that settles a task can go unanswered: the
//! consumer's leader was killed or frozen before it answered, or the
//! worker's own server went away and the client is reconnecting to
//! another. One try and a give-up leaves the task to the ack wait: a
//! success is then redelivered and run again, a retry comes back after the
//! ack wait instead of the engine's delay. A new leader is elected within
//! seconds and takes the same request (the ack subject names the stream
//! sequence, not the server), so the worker asks again, each try bounded
//! by [`TRY`], with a short jittered pause between tries, for:
//!
//! * `+ACK` (a success, a dead letter stored): up to one ack wait. Sending
//!   it late is harmless: the task is done, and an ack of a copy the
//!   broker has meanwhile redelivered only ends that copy.
//! * `-NAK`, `+TERM`: up to a third of the ack wait. Past that the broker
//!   may have redelivered the task to another worker, which a late NAK
//!   would hand back mid-attempt.
//! * the completion record: up to [`RECORD_ACK_WAITS`] ack waits: it is
//!   what keeps a redelivered copy from running again, so it is worth
//!   waiting for the bucket's new leader.

use std::future::Future;
use std::time::Duration;

use async_nats::jetstream::{self, AckKind};

use super::NatsError;
use crate::backoff::Backoff;
use crate::policy::{Jitter, Policy};

/// The longest one try waits for the server's answer.
pub(super) const TRY: Duration = Duration::from_secs(1);

/// How many ack waits the completion record is tried for.
pub(super) const RECORD_ACK_WAITS: u32 = 4;

/// The pauses between tries: the library's backoff, 50 ms doubling to a
/// 400 ms cap, full jitter (no herd of workers asking a new leader at the
/// same instant).
pub(super) fn pauses() -> Backoff {
    let policy = Policy::builder()
        .base(Duration::from_millis(50))
        .cap(Duration::from_millis(400))
        .jitter(Jitter::Full)
        .build()
        .unwrap_or_default();
    Backoff::new(policy)
}

/// Runs `once` until it succeeds or `within` has passed (at least one try).
pub(super) async fn again<F, Fut>(within: Duration, mut once: F) -> Result<(), NatsError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), NatsError>>,
{
    let deadline = tokio::time::Instant::now() + within;
    let mut pauses = pauses();
    let mut tries = 0u32;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let error = match tokio::time::timeout(TRY.min(left).max(Duration::from_millis(10)), once())
            .await
        {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(e)) => e,
            Err(_) => NatsError::broker("waiting for the server", "no answer in time"),
        };
        let wait = pauses.next_delay();
        if tokio::time::Instant::now() + wait >= deadline {
            return Err(error);
        }
        tries += 1;
        tracing::debug!(target: "herdless", error = %error, tries, "asking the server again");
        tokio::time::sleep(wait).await;
    }
}

/// Sends `kind` until the server confirms it (see the module documentation
/// for how long).
pub(super) async fn settle_confirmed(
    message: &jetstream::Message,
    kind: AckKind,
    ack_wait: Duration,
) -> Result<(), NatsError> {
    let within = match kind {
        AckKind::Ack => ack_wait,
        _ => ack_wait / 3,
    };
    again(within, || async {
        message
            .double_ack_with(kind)
            .await
            .map_err(|e| NatsError::broker("acknowledging a message", e))
    })
    .await
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    use super::{NatsError, again};

    #[tokio::test(start_paused = true)]
    async fn a_request_is_asked_again_until_it_is_answered() {
        let calls = AtomicU32::new(0);
        let result = again(Duration::from_secs(3), || async {
            match calls.fetch_add(1, Ordering::SeqCst) {
                0 => Err(NatsError::Config("no responders".into())),
                1 => std::future::pending().await,
                _ => Ok(()),
            }
        })
        .await;
        assert!(result.is_ok());
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn asking_stops_at_its_bound() {
        let calls = AtomicU32::new(0);
        let start = tokio::time::Instant::now();
        let result = again(Duration::from_secs(2), || async {
            calls.fetch_add(1, Ordering::SeqCst);
            std::future::pending::<Result<(), NatsError>>().await
        })
        .await;
        assert!(result.is_err());
        assert!(
            start.elapsed() <= Duration::from_millis(2500),
            "{:?}",
            start.elapsed()
        );
        assert!(calls.load(Ordering::SeqCst) >= 2);
    }
}
