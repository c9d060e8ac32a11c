//! Held requests (`--hold-max`, `--hold-for`): a request the pushback
//! allocator keeps open instead of answering waits here, its connection
//! open, until the allocator releases it.
//!
//! The allocator is sans-IO: it says when it next has something to do
//! ([`Rule::next_release`]) and hands out what is due ([`Rule::release`]).
//! One driver task per stub sleeps until then (or until a new request is
//! held), asks, and answers each released request through its channel: let
//! through, the rules behind the allocator decide it (a refusal parks it
//! again, its client sees nothing); its hold run out, a slot. A client that
//! hangs up while held is taken out of the allocator's queue.
//!
//! Lock order, everywhere: the arrivals' book, then the waiting map, then
//! the rules' own locks. A request is parked under the waiting map's lock,
//! taken before the allocator decides it, so the driver cannot release a
//! ticket before its request waits for it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use herdless::pushback::Ticket;
use tokio::sync::{Notify, oneshot};

use super::admission::{Arrival, Rule, Verdict};

/// A held request: what the rules behind the hold see of it when it is let
/// through, and where its answer goes (with the time it was decided).
pub(super) struct Waiting {
    pub(super) worker: Option<String>,
    pub(super) nth: u64,
    pub(super) answer: oneshot::Sender<(Verdict, Duration)>,
}

/// The held requests by ticket id, and the driver's wake-up.
#[derive(Default)]
pub(super) struct Hold {
    waiting: Mutex<HashMap<u64, Waiting>>,
    wake: Notify,
}

impl Hold {
    pub(super) fn lock(&self) -> MutexGuard<'_, HashMap<u64, Waiting>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A request was parked: the driver's next turn may be sooner.
    pub(super) fn parked(&self) {
        self.wake.notify_one();
    }

    /// The client of `ticket` hung up: out of the map and the allocator's
    /// queue, unless it was answered already.
    pub(super) fn hung_up(&self, rules: &dyn Rule, ticket: Ticket) {
        let mut waiting = self.lock();
        if waiting.remove(&ticket.id()).is_some() {
            rules.cancel(ticket);
        }
    }

    /// Requests held now.
    pub(super) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Answers every held request whose turn has come at `now`.
    fn release_due(&self, rules: &dyn Rule, now: Duration) {
        let mut waiting = self.lock();
        while let Some((ticket, verdict)) = rules.release(now) {
            let verdict = match verdict {
                Some(slot) => slot,
                None => {
                    let Some(w) = waiting.get(&ticket.id()) else {
                        // Not waiting (cannot happen: a hang-up leaves the
                        // queue under this lock); nothing to answer.
                        continue;
                    };
                    let arrival = Arrival {
                        since_start: now,
                        worker: w.worker.as_deref(),
                        nth_for_worker: w.nth,
                    };
                    rules.admit_released(&arrival, ticket)
                }
            };
            if matches!(verdict, Verdict::Hold { .. }) {
                continue; // refused by the service: parked again
            }
            if let Some(w) = waiting.remove(&ticket.id()) {
                let _ = w.answer.send((verdict, now));
            }
        }
    }
}

/// The driver: sleeps until the allocator's next turn or a new hold, then
/// releases what is due. `elapsed` is the stub's clock (time since start).
/// Runs until aborted (when the server stops).
pub(super) async fn drive(
    hold: Arc<Hold>,
    rules: Arc<dyn Rule>,
    start: tokio::time::Instant,
    elapsed: impl Fn() -> Duration,
) {
    loop {
        let woken = hold.wake.notified();
        match rules.next_release() {
            None => woken.await,
            Some(at) => {
                tokio::select! {
                    () = tokio::time::sleep_until(start + at) => {}
                    () = woken => {}
                }
            }
        }
        hold.release_due(rules.as_ref(), elapsed());
    }
}
