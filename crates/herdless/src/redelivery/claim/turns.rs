//! The decisions about a task's turns, sans-IO: what a delivery does next
//! with what it read of the bucket ([`Contender`]), and how long the holder
//! of a turn may go on running without a renewal ([`Lease`]). Time is
//! passed in, as the time since an origin on the deciding worker's own
//! monotonic clock.
//!
//! # Which clock, and why
//!
//! A lease written as a wall-clock deadline and judged by another machine
//! is only as safe as the two machines' clocks agree: a contender whose
//! clock runs a minute ahead takes a live claim over. So no lease here is
//! judged across machines. The holder counts its lease from the moment it
//! *sent* its last confirmed write, on its own monotonic clock (the write
//! was stored after it was sent, so this errs early). A contender counts
//! from the moment it first *saw* that write's revision, on its own
//! monotonic clock (it saw it after it was stored, so this errs late), and
//! takes the next turn only when the same revision has stood for the lease
//! and a [`margin`] more. Between the holder's end of lease and the
//! earliest takeover there is therefore at least the margin, whatever the
//! clocks read; it covers the two clocks' rates (parts per million), the
//! holder's timer waking late on a busy machine, and the time to end the
//! attempt's process. The cost: a takeover waits a whole lease after the
//! contender first looks, not after the holder's last renewal; and time
//! during which the bucket did not answer the contender does not count
//! (the holder most likely could not write then either).

use std::time::Duration;

use super::record::{Seen, State};

/// The least margin a contender adds to a lease.
pub(crate) const MIN_MARGIN: Duration = Duration::from_secs(1);

/// What a contender adds to the lease before it takes the next turn: a
/// quarter of the lease, at least [`MIN_MARGIN`].
///
/// ```text
/// lease 8 s -> margin 2 s; lease 500 ms -> margin 1 s
/// ```
pub(crate) fn margin(lease: Duration) -> Duration {
    (lease / 4).max(MIN_MARGIN)
}

/// How long a contender that finds no record waits to find none again
/// before it creates a turn: a task whose records expired (a retry delay
/// longer than the bucket's TTL) starts again at turn 1, but an empty
/// answer can also come from a server that lost its leadership and does not
/// know it yet (it learns within about a second), and turn 1 created beside
/// a live later turn would be a second holder.
pub(crate) const EMPTY_TWICE: Duration = Duration::from_secs(1);

/// What a contender does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Read the task's latest record (any turn).
    ReadLatest,
    /// Read turn `n`'s record.
    ReadTurn(u32),
    /// Create turn `n` (a write that fails if the turn exists).
    Create(u32),
    /// This delivery holds turn `n`: run the task.
    Hold(u32),
    /// Read again after a pause; the watched claim lapses at `lapses_at`
    /// (the pause ends no later).
    Wait {
        /// When the watched claim may be taken over.
        lapses_at: Duration,
    },
    /// The task succeeded: acknowledge this delivery without running it.
    Completed,
    /// Another delivery holds the task, or has handed it back to the
    /// broker: leave this copy to it (no acknowledgement of any kind).
    Leave,
}

/// The running claim a contender watches.
#[derive(Debug, Clone, Copy)]
struct Watched {
    turn: u32,
    revision: u64,
    /// When this contender first saw `revision`.
    since: Duration,
    lease: Duration,
}

/// A delivery that does not hold its task yet.
#[derive(Debug)]
pub(crate) struct Contender {
    token: u64,
    /// The lease of a claim whose record names none: this worker's.
    own_lease: Duration,
    /// The highest turn known to exist.
    floor: u32,
    watched: Option<Watched>,
    /// When a read first found no record at all.
    empty_since: Option<Duration>,
    /// A request went unanswered since the last read: the watch starts
    /// again at the next answer (see [`Contender::unanswered`]).
    blind: bool,
}

impl Contender {
    /// A contender with claim token `token`, and its first step: a first
    /// delivery creates turn 1 at once (nothing to read, in the common
    /// case), a redelivery reads first.
    pub(crate) fn new(token: u64, own_lease: Duration, first_delivery: bool) -> (Self, Step) {
        let c = Contender {
            token,
            own_lease,
            floor: 0,
            watched: None,
            empty_since: None,
            blind: false,
        };
        let first = if first_delivery {
            Step::Create(1)
        } else {
            Step::ReadLatest
        };
        (c, first)
    }

    /// A create of turn `n` failed: the turn exists.
    pub(crate) fn exists(&mut self, n: u32) -> Step {
        self.floor = self.floor.max(n);
        Step::ReadLatest
    }

    /// A request to the bucket went unanswered or failed. The time until
    /// the next answer does not count towards a watched claim's lapse: a
    /// bucket without a leader answers nobody, so the holder could not
    /// renew or record its success either, and its silence says nothing
    /// about it. (A watch that counted through an outage of the bucket's
    /// leader took over, at its first answer, from a holder whose `done`
    /// was waiting for that same leader.)
    pub(crate) fn unanswered(&mut self) {
        self.blind = true;
    }

    /// What a read at `now` showed (`exact`: a read of one turn).
    pub(crate) fn read(&mut self, now: Duration, seen: Option<Seen>, exact: bool) -> Step {
        if std::mem::take(&mut self.blind)
            && let Some(w) = &mut self.watched
        {
            w.since = now;
        }
        let Some(s) = seen else {
            if self.floor > 0 && !exact {
                // A turn known to exist: read it by name.
                return Step::ReadTurn(self.floor);
            }
            if let Some(w) = self.watched {
                // A watched claim that vanishes is waited out all the same.
                let lapses_at = w.since + w.lease + margin(w.lease);
                return if now >= lapses_at {
                    Step::Create(self.floor + 1)
                } else {
                    Step::Wait { lapses_at }
                };
            }
            // No record, or the turn known to exist reads as absent: a task
            // whose records expired, or a stale answer. Only the same answer
            // again, EMPTY_TWICE later, creates the next turn.
            let since = *self.empty_since.get_or_insert(now);
            return if now >= since + EMPTY_TWICE {
                self.empty_since = None;
                Step::Create(self.floor + 1)
            } else {
                Step::Wait {
                    lapses_at: since + EMPTY_TWICE,
                }
            };
        };
        self.empty_since = None;
        if s.record.state == State::Done {
            return Step::Completed;
        }
        if s.turn < self.floor {
            // An older turn written late, or a stale answer.
            return Step::ReadTurn(self.floor);
        }
        self.floor = self.floor.max(s.turn);
        let own = self.token != 0 && s.record.by == self.token;
        match s.record.state {
            State::Running { .. } if own => Step::Hold(s.turn),
            State::Running { lease } => self.running(now, s, lease),
            // Released for a retry (the holder handed the task back with the
            // engine's delay): a copy that watched the claim is stale; one
            // that finds it free is the redelivery, and takes the next turn.
            _ if self.watched.is_some() => Step::Leave,
            _ => Step::Create(s.turn + 1),
        }
    }

    fn running(&mut self, now: Duration, s: Seen, lease: Option<Duration>) -> Step {
        match self.watched {
            // Another delivery took the task over: it holds a live copy.
            Some(w) if s.turn > w.turn => Step::Leave,
            Some(w) if s.turn == w.turn && s.revision == w.revision => {
                let lapses_at = w.since + w.lease + margin(w.lease);
                if now >= lapses_at {
                    Step::Create(s.turn + 1)
                } else {
                    Step::Wait { lapses_at }
                }
            }
            _ => {
                let lease = lease.unwrap_or(self.own_lease);
                self.watched = Some(Watched {
                    turn: s.turn,
                    revision: s.revision,
                    since: now,
                    lease,
                });
                Step::Wait {
                    lapses_at: now + lease + margin(lease),
                }
            }
        }
    }
}

/// The holder's lease on its turn: it may run the task until [`fence`](Self::fence),
/// the send time of its last confirmed write plus the lease.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lease {
    pub(crate) turn: u32,
    lease: Duration,
    renewed: Duration,
}

impl Lease {
    /// Turn `turn`, taken by a write sent at `sent`.
    pub(crate) fn new(turn: u32, lease: Duration, sent: Duration) -> Lease {
        Lease {
            turn,
            lease,
            renewed: sent,
        }
    }

    /// A renewal sent at `sent` was confirmed at `confirmed`: the lease
    /// runs from `sent` on, unless it had already lapsed when the
    /// confirmation came (a contender may have taken the next turn by then:
    /// a lapsed lease stays lapsed, and the holder stops). A late
    /// confirmation of an older write never moves the lease back. Returns
    /// whether the lease still holds.
    pub(crate) fn renewed(&mut self, sent: Duration, confirmed: Duration) -> bool {
        if self.lapsed(confirmed) {
            return false;
        }
        self.renewed = self.renewed.max(sent);
        true
    }

    /// When the holder must have stopped running the task.
    pub(crate) fn fence(&self) -> Duration {
        self.renewed + self.lease
    }

    /// Whether the lease has run out at `now`.
    pub(crate) fn lapsed(&self, now: Duration) -> bool {
        now >= self.fence()
    }
}

/// Where a holder records its attempt's success ([`Lease::closing`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Closing {
    /// The lease holds: write `done` over the holder's own turn `n` (no
    /// one else writes it).
    Own(u32),
    /// The lease lapsed (the holder was stopped or cut off while its
    /// attempt ended): a contender may have taken the next turn, so a
    /// write over the own turn would be read past. Create turn `n`, the
    /// next one, as `done`: the create has one winner, so either this
    /// holder's success is on record before any takeover or a takeover
    /// holds the task ([`late_success`]).
    Next(u32),
}

/// How the success of a holder past its lease ended ([`Closing::Next`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LateSuccess {
    /// The next turn is this holder's `done`: the task is completed.
    Recorded,
    /// Another delivery created the next turn first: it holds the task.
    TakenOver,
}

/// What the create of the next turn as `done` by the holder `token`
/// showed: `created`, or (the turn existed) the turn's record `found`. A
/// turn that reads as this holder's own is its create stored under a lost
/// confirmation.
pub(crate) fn late_success(token: u64, created: bool, found: Option<&Seen>) -> LateSuccess {
    let own = |s: &Seen| s.record.by == token && s.record.state == State::Done;
    if created || found.is_some_and(own) {
        LateSuccess::Recorded
    } else {
        LateSuccess::TakenOver
    }
}

impl Lease {
    /// Where a success ended at `now` is recorded.
    pub(crate) fn closing(&self, now: Duration) -> Closing {
        if self.lapsed(now) {
            Closing::Next(self.turn.saturating_add(1))
        } else {
            Closing::Own(self.turn)
        }
    }
}

#[cfg(test)]
#[path = "turns_tests.rs"]
mod tests;
