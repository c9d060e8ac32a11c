//! The hold's queue: the requests the allocator keeps open, first in, first
//! out, bounded, in two classes by how long each may be kept.
//!
//! A held request is a [`Ticket`] (24 bytes: its id, when its hold began and
//! its caller's key). A request whose caller said nothing of its patience
//! may be kept `hold_for` (below common clients' per-attempt timeouts); one
//! whose caller said it waits longer (`Prefer: wait=N`, see
//! [`http::queue`](crate::http::queue)) may be kept `hold_for_max`. Each
//! class is its own `VecDeque`, so within a class the first held is the
//! first to run out of time, and both expiries are read at the heads.
//!
//! **Release order** is one first-in-first-out order across both classes:
//! ids are drawn upward for requests held at the back and downward (from
//! below every back id) for a refused request put at the front, so the
//! smaller id at the two heads is the next to release. A released request
//! the service refused goes back to the front of its class with its id and
//! its original start.
//!
//! **Cancellation** (the caller hung up while held) is lazy: the id goes
//! into a set and the ticket is skipped when it reaches the front of its
//! class; once the set holds more than a quarter of the queue (and at least
//! 16), both classes are compacted in one pass, so a cancellation costs O(1)
//! amortized however many requests are held.
//!
//! What it costs the allocator is those 24 bytes per held request (up to
//! twice that while a deque grows); what it costs the driver (a parked
//! future, an open connection) is the driver's, and is measured in
//! `docs/fleet-protection.md`.

use std::collections::{HashSet, VecDeque};

use crate::pushback::Ticket;

/// A caller's patience beyond a hold's length that lets it be held that
/// long: the answer's way back (1 s).
pub(crate) const MARGIN_NS: u64 = 1_000_000_000;

/// The first id drawn for requests held at the back; front ids count down
/// from just below it.
const MIDDLE: u64 = 1 << 61;

/// The held requests and the hold's settings.
#[derive(Debug, Clone)]
pub(crate) struct Hold {
    /// The most requests held at once.
    pub(crate) max: usize,
    /// The longest a request is held (ns) when its caller said nothing of
    /// its patience, from its first arrival.
    pub(crate) for_ns: u64,
    /// The longest a request is held (ns) when its caller waits longer.
    pub(crate) patient_ns: u64,
    short: VecDeque<Ticket>,
    long: VecDeque<Ticket>,
    cancelled: HashSet<u64>,
    next_back: u64,
    next_front: u64,
    max_held: usize,
    /// Callers told, before a known end too far away to hold them, to come
    /// back shortly before it (to be held then); reset at recovery.
    pub(crate) prebooked: usize,
}

impl Hold {
    pub(crate) fn new(max: usize, for_ns: u64, patient_ns: u64) -> Self {
        Hold {
            max,
            for_ns,
            patient_ns: patient_ns.max(for_ns),
            short: VecDeque::new(),
            long: VecDeque::new(),
            cancelled: HashSet::new(),
            next_back: MIDDLE,
            next_front: MIDDLE - 1,
            max_held: 0,
            prebooked: 0,
        }
    }

    /// How long a request whose caller waits `wait` (ns; `None`: said
    /// nothing) may be held, if at all: `hold_for_max` when it waits that
    /// long and a margin more, `hold_for` when it says nothing or waits
    /// that long and a margin more; else it is not held (`None`).
    pub(crate) fn class_of(&self, wait: Option<u64>) -> Option<bool> {
        match wait {
            None => Some(false),
            Some(w)
                if self.patient_ns > self.for_ns
                    && w >= self.patient_ns.saturating_add(MARGIN_NS) =>
            {
                Some(true)
            }
            Some(w) if w >= self.for_ns.saturating_add(MARGIN_NS) => Some(false),
            Some(_) => None,
        }
    }

    /// How long `ticket` may be held in all.
    pub(crate) fn length(&self, ticket: &Ticket) -> u64 {
        if ticket.is_patient() {
            self.patient_ns
        } else {
            self.for_ns
        }
    }

    /// When `ticket`'s hold runs out.
    pub(crate) fn expiry(&self, ticket: &Ticket) -> u64 {
        ticket.since_ns().saturating_add(self.length(ticket))
    }

    /// Requests held now (cancelled ones not counted).
    pub(crate) fn len(&self) -> usize {
        (self.short.len() + self.long.len()).saturating_sub(self.cancelled.len())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn has_room(&self) -> bool {
        self.len() < self.max
    }

    /// The most requests held at once so far.
    pub(crate) fn max_held(&self) -> usize {
        self.max_held
    }

    fn note_len(&mut self) {
        self.max_held = self.max_held.max(self.len());
    }

    fn class(&mut self, patient: bool) -> &mut VecDeque<Ticket> {
        if patient {
            &mut self.long
        } else {
            &mut self.short
        }
    }

    /// Holds a new request arriving at `now` from `key`, at the back of its
    /// class (`patient`: the long one).
    pub(crate) fn push_back(&mut self, now: u64, key: Option<u64>, patient: bool) -> Ticket {
        let ticket = Ticket::held(self.next_back, now, key, patient);
        self.next_back += 1;
        self.class(patient).push_back(ticket);
        self.note_len();
        ticket
    }

    /// Holds a new request at the front (one the service just refused).
    pub(crate) fn push_new_front(&mut self, now: u64, key: Option<u64>, patient: bool) -> Ticket {
        let ticket = Ticket::held(self.next_front, now, key, patient);
        self.next_front = self.next_front.saturating_sub(1);
        self.push_front(ticket);
        ticket
    }

    /// Puts a released ticket back at the front of its class.
    pub(crate) fn push_front(&mut self, ticket: Ticket) {
        self.class(ticket.is_patient()).push_front(ticket);
        self.note_len();
    }

    /// Drops cancelled tickets at the front of both classes.
    fn skip_cancelled(&mut self) {
        for patient in [false, true] {
            while let Some(t) = self.class(patient).front().copied() {
                if !self.cancelled.remove(&t.id()) {
                    break;
                }
                self.class(patient).pop_front();
            }
        }
    }

    /// The first live ticket of a class, without dropping anything.
    fn head(&self, patient: bool) -> Option<&Ticket> {
        let q = if patient { &self.long } else { &self.short };
        q.iter()
            .find(|t| self.cancelled.is_empty() || !self.cancelled.contains(&t.id()))
    }

    /// The next ticket to release (the smaller id of the two heads), without
    /// dropping anything.
    pub(crate) fn peek(&self) -> Option<&Ticket> {
        match (self.head(false), self.head(true)) {
            (Some(a), Some(b)) => Some(if a.id() < b.id() { a } else { b }),
            (a, b) => a.or(b),
        }
    }

    /// The next ticket to release, dropping cancelled ones at the fronts.
    pub(crate) fn front(&mut self) -> Option<Ticket> {
        self.skip_cancelled();
        self.peek().copied()
    }

    /// Removes and returns the next ticket to release.
    pub(crate) fn pop_front(&mut self) -> Option<Ticket> {
        let t = self.front()?;
        self.class(t.is_patient()).pop_front();
        Some(t)
    }

    /// The earliest a held request runs out of time (ns), if any is held.
    pub(crate) fn next_expiry(&self) -> Option<u64> {
        let expiry = |p| self.head(p).map(|t| self.expiry(t));
        match (expiry(false), expiry(true)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Removes and returns a ticket whose hold has run out at `now`, if any.
    pub(crate) fn pop_expired(&mut self, now: u64) -> Option<Ticket> {
        self.skip_cancelled();
        for patient in [false, true] {
            if let Some(t) = self.class(patient).front().copied() {
                if now >= self.expiry(&t) {
                    self.class(patient).pop_front();
                    return Some(t);
                }
            }
        }
        None
    }

    /// Removes and returns any held ticket (for answering them all).
    pub(crate) fn pop_any(&mut self) -> Option<Ticket> {
        self.pop_front()
    }

    /// Forgets a held ticket (its request is gone).
    pub(crate) fn cancel(&mut self, id: u64) {
        self.cancelled.insert(id);
        if self.cancelled.len() > (self.short.len() + self.long.len()) / 4 + 16 {
            let cancelled = std::mem::take(&mut self.cancelled);
            self.short.retain(|t| !cancelled.contains(&t.id()));
            self.long.retain(|t| !cancelled.contains(&t.id()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_in_first_out_with_refused_ones_back_in_front() {
        let mut h = Hold::new(3, 1_000, 1_000);
        let a = h.push_back(1, None, false);
        let b = h.push_back(2, Some(9), false);
        assert_eq!(h.len(), 2);
        assert_eq!(h.pop_front(), Some(a));
        h.push_front(a);
        assert_eq!(h.pop_front(), Some(a), "a refused ticket is first again");
        assert_eq!(h.pop_front(), Some(b));
        assert_eq!(h.pop_front(), None);
        assert_eq!(h.max_held(), 2);
    }

    #[test]
    fn the_bound_counts_live_tickets_only() {
        let mut h = Hold::new(2, 1_000, 1_000);
        let a = h.push_back(1, None, false);
        h.push_back(2, None, false);
        assert!(!h.has_room());
        h.cancel(a.id());
        assert!(h.has_room());
        assert_eq!(
            h.peek().map(Ticket::since_ns),
            Some(2),
            "a cancelled front is skipped"
        );
        assert_eq!(h.pop_front().map(|t| t.since_ns()), Some(2));
        assert!(h.is_empty());
    }

    #[test]
    fn many_cancellations_compact_the_queue() {
        let mut h = Hold::new(10_000, 1_000, 1_000);
        let tickets: Vec<Ticket> = (0..1_000)
            .map(|i| h.push_back(i, None, i % 2 == 0))
            .collect();
        for t in &tickets[..900] {
            h.cancel(t.id());
        }
        assert_eq!(h.len(), 100);
        assert!(h.short.len() + h.long.len() < 400, "compacted");
        assert!(h.cancelled.len() <= (h.short.len() + h.long.len()) / 4 + 16);
        assert_eq!(h.pop_front(), Some(tickets[900]));
    }

    #[test]
    fn two_classes_release_in_one_order_and_expire_each_at_its_length() {
        let mut h = Hold::new(10, 10, 50);
        let a = h.push_back(0, None, true);
        let b = h.push_back(1, None, false);
        let c = h.push_back(2, None, true);
        assert_eq!(h.next_expiry(), Some(11), "the short one runs out first");
        assert_eq!(h.pop_expired(10), None);
        assert_eq!(h.pop_expired(11), Some(b));
        assert_eq!(h.next_expiry(), Some(50));
        let d = h.push_new_front(3, None, false);
        assert_eq!(h.pop_front(), Some(d), "a refused request is first");
        assert_eq!(h.pop_front(), Some(a));
        assert_eq!(h.pop_front(), Some(c));
    }

    #[test]
    fn a_callers_patience_picks_its_class() {
        let h = Hold::new(10, 10 * MARGIN_NS, 50 * MARGIN_NS);
        assert_eq!(h.class_of(None), Some(false));
        assert_eq!(h.class_of(Some(120 * MARGIN_NS)), Some(true));
        assert_eq!(h.class_of(Some(51 * MARGIN_NS)), Some(true));
        assert_eq!(h.class_of(Some(50 * MARGIN_NS)), Some(false));
        assert_eq!(h.class_of(Some(11 * MARGIN_NS)), Some(false));
        assert_eq!(h.class_of(Some(10 * MARGIN_NS)), None, "it would time out");
        let flat = Hold::new(10, 10 * MARGIN_NS, 10 * MARGIN_NS);
        assert_eq!(flat.class_of(Some(600 * MARGIN_NS)), Some(false));
    }
}
