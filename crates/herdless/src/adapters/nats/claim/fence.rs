//! The holder's fence, as the attempt sees it: when the attempt must have
//! stopped unless the claim is renewed, moved at each confirmed renewal.
//!
//! The worker enforces its fence itself (it drops the attempt's future:
//! `hold.rs`), but only while it runs. An attempt that starts processes
//! of its own can hand [`Fence::left`] on to something that outlives a
//! frozen or dead worker (the CLI's attempt supervisor kills the command
//! when the last time it was given runs out), so that a takeover, which
//! waits the lease and a margin after the last renewal, finds the
//! attempt ended whatever became of its worker.

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

/// When the attempt of a claimed task must have stopped: the send time of
/// the claim's last confirmed write plus the lease (the worker's monotonic
/// clock). Moves later at each confirmed renewal; an attempt without a
/// claim (no completion bucket) has none.
///
/// ```
/// use herdless::adapters::nats::Fence;
/// let unclaimed = Fence::none();
/// assert_eq!(unclaimed.left(), None);
/// ```
#[derive(Debug, Clone)]
pub struct Fence(Option<watch::Receiver<Instant>>);

impl Fence {
    /// No fence: the attempt runs without a claim.
    #[must_use]
    pub fn none() -> Fence {
        Fence(None)
    }

    /// The time left before the fence (zero once passed); `None` without
    /// a claim.
    #[must_use]
    pub fn left(&self) -> Option<Duration> {
        self.0
            .as_ref()
            .map(|rx| rx.borrow().saturating_duration_since(Instant::now()))
    }

    /// Waits until the fence moves (a renewal was confirmed). Never returns
    /// when there is no fence or it can no longer move (the attempt's claim
    /// is over).
    pub async fn moved(&mut self) {
        if let Some(rx) = self.0.as_mut()
            && rx.changed().await.is_ok()
        {
            return;
        }
        std::future::pending::<()>().await;
    }
}

/// The holder's side: moves the fence.
#[derive(Debug)]
pub(super) struct FenceSender(watch::Sender<Instant>);

impl FenceSender {
    pub(super) fn new(at: Instant) -> FenceSender {
        FenceSender(watch::channel(at).0)
    }

    /// Moves the fence to `at` (later only).
    pub(super) fn move_to(&self, at: Instant) {
        self.0.send_if_modified(|now| {
            let later = at > *now;
            if later {
                *now = at;
            }
            later
        });
    }

    /// The attempt's view of it.
    pub(super) fn fence(&self) -> Fence {
        Fence(Some(self.0.subscribe()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_fence_moves_later_only_and_says_what_is_left() {
        let start = Instant::now();
        let tx = FenceSender::new(start + Duration::from_secs(3));
        let mut fence = tx.fence();
        assert_eq!(fence.left(), Some(Duration::from_secs(3)));
        tx.move_to(start + Duration::from_secs(2));
        assert_eq!(fence.left(), Some(Duration::from_secs(3)));
        tx.move_to(start + Duration::from_secs(5));
        fence.moved().await;
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(fence.left(), Some(Duration::from_secs(4)));
        tokio::time::advance(Duration::from_secs(9)).await;
        assert_eq!(fence.left(), Some(Duration::ZERO));
    }
}
