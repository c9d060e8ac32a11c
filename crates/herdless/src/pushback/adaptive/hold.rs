//! The hold's queue: the requests the allocator keeps open, first in, first
//! out, bounded.
//!
//! A held request is a [`Ticket`] (24 bytes: its id, when its hold began and
//! its caller's key) in a `VecDeque`: new holds go to the back, a released
//! request the service refused goes back to the front with its original
//! start. The queue never holds more than `max` live tickets. What it costs
//! the allocator is those 24 bytes per held request (up to twice that while
//! the deque grows); what it costs the driver (a parked future, an open
//! connection) is the driver's, and is measured in `docs/fleet-protection.md`.
//!
//! **Cancellation** (the caller hung up while held) is lazy: the id goes
//! into a set and the ticket is skipped when it reaches the front; once the
//! set holds more than a quarter of the queue (and at least 16), the queue
//! is compacted in one pass, so a cancellation costs O(1) amortized however
//! many requests are held, and the set never outgrows the queue by much.

use std::collections::{HashSet, VecDeque};

use crate::pushback::Ticket;

/// The held requests and the hold's settings.
#[derive(Debug, Clone)]
pub(crate) struct Hold {
    /// The most requests held at once.
    pub(crate) max: usize,
    /// The longest a request is held (ns), from its first arrival.
    pub(crate) for_ns: u64,
    queue: VecDeque<Ticket>,
    cancelled: HashSet<u64>,
    next_id: u64,
    max_held: usize,
    /// Callers told, before a known end too far away to hold them, to come
    /// back shortly before it (to be held then); reset at recovery.
    pub(crate) prebooked: usize,
}

impl Hold {
    pub(crate) fn new(max: usize, for_ns: u64) -> Self {
        Hold {
            max,
            for_ns,
            queue: VecDeque::new(),
            cancelled: HashSet::new(),
            next_id: 0,
            max_held: 0,
            prebooked: 0,
        }
    }

    /// Requests held now (cancelled ones not counted).
    pub(crate) fn len(&self) -> usize {
        self.queue.len().saturating_sub(self.cancelled.len())
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

    /// Holds a new request arriving at `now` from `key`, at the back.
    pub(crate) fn push_back(&mut self, now: u64, key: Option<u64>) -> Ticket {
        let ticket = Ticket::new(self.next_id, now, key);
        self.next_id += 1;
        self.queue.push_back(ticket);
        self.note_len();
        ticket
    }

    /// Holds a new request at the front (one the service just refused).
    pub(crate) fn push_new_front(&mut self, now: u64, key: Option<u64>) -> Ticket {
        let ticket = Ticket::new(self.next_id, now, key);
        self.next_id += 1;
        self.push_front(ticket);
        ticket
    }

    /// Puts a released ticket back at the front.
    pub(crate) fn push_front(&mut self, ticket: Ticket) {
        self.queue.push_front(ticket);
        self.note_len();
    }

    /// The first live ticket, dropping cancelled ones at the front.
    pub(crate) fn front(&mut self) -> Option<Ticket> {
        while let Some(t) = self.queue.front() {
            if self.cancelled.remove(&t.id()) {
                self.queue.pop_front();
                continue;
            }
            return Some(*t);
        }
        None
    }

    /// The first live ticket, without dropping anything.
    pub(crate) fn peek(&self) -> Option<&Ticket> {
        self.queue
            .iter()
            .find(|t| self.cancelled.is_empty() || !self.cancelled.contains(&t.id()))
    }

    /// Removes and returns the first live ticket.
    pub(crate) fn pop_front(&mut self) -> Option<Ticket> {
        let t = self.front()?;
        self.queue.pop_front();
        Some(t)
    }

    /// Forgets a held ticket (its request is gone).
    pub(crate) fn cancel(&mut self, id: u64) {
        self.cancelled.insert(id);
        if self.cancelled.len() > self.queue.len() / 4 + 16 {
            let cancelled = std::mem::take(&mut self.cancelled);
            self.queue.retain(|t| !cancelled.contains(&t.id()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_in_first_out_with_refused_ones_back_in_front() {
        let mut h = Hold::new(3, 1_000);
        let a = h.push_back(1, None);
        let b = h.push_back(2, Some(9));
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
        let mut h = Hold::new(2, 1_000);
        let a = h.push_back(1, None);
        h.push_back(2, None);
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
        let mut h = Hold::new(10_000, 1_000);
        let tickets: Vec<Ticket> = (0..1_000).map(|i| h.push_back(i, None)).collect();
        for t in &tickets[..900] {
            h.cancel(t.id());
        }
        assert_eq!(h.len(), 100);
        assert!(h.queue.len() < 400, "compacted: {}", h.queue.len());
        assert!(h.cancelled.len() <= h.queue.len() / 4 + 16);
        assert_eq!(h.pop_front(), Some(tickets[900]));
    }
}
