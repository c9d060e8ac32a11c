//! The event queue: a timing wheel of `(time, payload)` events.
//!
//! # Why a timing wheel
//!
//! A discrete-event simulation only ever schedules events at or after the
//! current virtual time (the queue is *monotone*), and the events of a retry
//! storm are dense: tens of thousands of clients within a few seconds. A
//! timing wheel exploits both. Time is cut into slots of 2²¹ ns (about
//! 2.1 ms); a ring of 2¹⁴ slots covers the next 35 s (more than the default
//! 30 s cap). A push appends the event
//! to its slot's `Vec` (one write, no comparison); when the clock reaches a
//! slot, its events are moved into one batch, sorted once by time, and pops
//! take from the batch's end. Events beyond the ring's horizon wait in an overflow list that
//! is folded into the ring every half turn. Times stay exact to the
//! nanosecond: slots only batch the sorting.
//!
//! The first version was a byte-wise radix heap: every event moved through
//! three or four levels of 256 buckets, and that movement was a third of the
//! run time. The bench (`cargo bench -p herdless-sim --bench sim -- queue`)
//! compares this queue with `std::collections::BinaryHeap` on the same hold
//! workload.
//!
//! * **Memory follows the pending events.** Slots are `Vec`s; a slot reached
//!   by the clock is copied into the sorted batch and keeps room for at most
//!   64 events, so a slot that once held a synchronized wave of a million
//!   clients does not keep that memory. Small slots never reallocate; a large
//!   wave costs a few `Vec` doublings per slot, not an allocation per event.
//! * **The event carries its client.** An entry is a `u64` time and a payload
//!   `T`. The fleet loop stores each client's whole state (32 bytes) in its one
//!   pending event, so handling an event touches no per-client array: a random
//!   access into megabytes of client state costs a cache miss per call. The
//!   queue never holds more entries than clients.
//! * **Deterministic.** Ties (equal times) pop in an order fixed by the
//!   sequence of pushes and pops alone (the sort is deterministic), so a run
//!   is reproducible bit for bit.

/// One pending event: a virtual time in nanoseconds and what it wakes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event<T = u32> {
    /// Virtual time of the event, in nanoseconds since the start of the run.
    pub at_ns: u64,
    /// What the event wakes (a client index, or a client's whole state).
    pub client: T,
}

const SLOT_BITS: u32 = 21;
const SLOTS: u64 = 1 << 14;
const MASK: u64 = SLOTS - 1;
/// The most events a drained slot keeps room for.
const KEEP: usize = 64;

/// A monotone priority queue of [`Event`]s (timing wheel). See the [module
/// documentation](self).
///
/// Pushing an event earlier than the last one popped is a logic error; the
/// queue then clamps it to that time (it never panics and never reorders the
/// past).
///
/// ```
/// use herdless_sim::queue::{Event, EventQueue};
/// let mut q = EventQueue::new();
/// q.push(30, 0);
/// q.push(10, 1);
/// q.push(20, 2);
/// assert_eq!(q.pop(), Some(Event { at_ns: 10, client: 1 }));
/// q.push(15, 3); // later than the last pop: fine
/// let order: Vec<u32> = std::iter::from_fn(|| q.pop()).map(|e| e.client).collect();
/// assert_eq!(order, vec![3, 2, 0]);
/// ```
#[derive(Debug, Clone)]
pub struct EventQueue<T = u32> {
    /// Time of the last event popped.
    last: u64,
    /// Absolute index (`time >> SLOT_BITS`) of the current slot.
    current: u64,
    len: usize,
    /// Events in the ring (not counting `ready` and `overflow`).
    in_ring: usize,
    /// The current slot's events, sorted by time, latest first.
    ready: Vec<Event<T>>,
    ring: Vec<Vec<Event<T>>>,
    /// Events at or beyond `current + SLOTS` when pushed.
    overflow: Vec<Event<T>>,
}

impl<T> Default for EventQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> EventQueue<T> {
    /// An empty queue at time 0.
    ///
    /// ```
    /// assert!(herdless_sim::queue::EventQueue::<u32>::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self {
            last: 0,
            current: 0,
            len: 0,
            in_ring: 0,
            ready: Vec::new(),
            ring: (0..SLOTS).map(|_| Vec::new()).collect(),
            overflow: Vec::new(),
        }
    }

    /// An empty queue (`n`, the number of events expected to be pending at
    /// once, sizes the sorted batch).
    ///
    /// ```
    /// let q = herdless_sim::queue::EventQueue::<u32>::with_capacity(1_000);
    /// assert_eq!(q.len(), 0);
    /// ```
    pub fn with_capacity(n: usize) -> Self {
        let mut q = Self::new();
        q.ready.reserve(n.min(1 << 16));
        q
    }

    /// The number of pending events.
    ///
    /// ```
    /// let mut q = herdless_sim::queue::EventQueue::new();
    /// q.push(5, 0);
    /// assert_eq!(q.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no event is pending.
    ///
    /// ```
    /// let mut q = herdless_sim::queue::EventQueue::new();
    /// q.push(5, 0);
    /// q.pop();
    /// assert!(q.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Schedules `client` at `at_ns` (clamped to the last popped time).
    ///
    /// ```
    /// let mut q = herdless_sim::queue::EventQueue::new();
    /// q.push(u64::MAX, 7);
    /// q.push(3, 8);
    /// assert_eq!(q.pop().unwrap().client, 8);
    /// assert_eq!(q.pop().unwrap().at_ns, u64::MAX);
    /// ```
    #[inline]
    pub fn push(&mut self, at_ns: u64, client: T) {
        let at_ns = at_ns.max(self.last);
        let e = Event { at_ns, client };
        self.len += 1;
        let slot = at_ns >> SLOT_BITS;
        if slot == self.current {
            // Into the sorted batch (latest first), after every later event.
            let i = self.ready.partition_point(|x| x.at_ns > at_ns);
            self.ready.insert(i, e);
        } else if slot - self.current < SLOTS {
            self.ring[(slot & MASK) as usize].push(e);
            self.in_ring += 1;
        } else {
            self.overflow.push(e);
        }
    }

    /// Removes and returns the earliest event, or `None` when empty.
    ///
    /// ```
    /// let mut q = herdless_sim::queue::EventQueue::<u32>::new();
    /// assert_eq!(q.pop(), None);
    /// ```
    #[inline]
    pub fn pop(&mut self) -> Option<Event<T>> {
        loop {
            if let Some(e) = self.ready.pop() {
                self.last = e.at_ns;
                self.len -= 1;
                return Some(e);
            }
            if self.len == 0 {
                return None;
            }
            self.advance();
        }
    }

    /// Moves the clock to the next slot (or straight to the earliest overflow
    /// event when the ring is empty) and sorts that slot into `ready`.
    #[cold]
    fn advance(&mut self) {
        if self.in_ring == 0 {
            let Some(first) = self.overflow.iter().map(|e| e.at_ns >> SLOT_BITS).min() else {
                return;
            };
            self.current = first;
            self.fold_overflow();
        } else {
            self.current += 1;
            if self.current % (SLOTS / 2) == 0 {
                self.fold_overflow();
            }
        }
        let slot = &mut self.ring[(self.current & MASK) as usize];
        if !slot.is_empty() {
            // Copy rather than swap the `Vec`s, and let a slot keep only a
            // small capacity: otherwise every slot a large wave ever passed
            // through would keep that wave's memory (gigabytes at a million
            // synchronized clients).
            self.in_ring -= slot.len();
            self.ready.append(slot);
            if slot.capacity() > KEEP {
                *slot = Vec::new();
            }
            self.ready
                .sort_unstable_by_key(|e| std::cmp::Reverse(e.at_ns));
        }
    }

    /// Moves the overflow events now within the ring's horizon into the ring.
    fn fold_overflow(&mut self) {
        let horizon = self.current + SLOTS;
        let mut i = 0;
        while i < self.overflow.len() {
            let slot = self.overflow[i].at_ns >> SLOT_BITS;
            if slot < horizon {
                let e = self.overflow.swap_remove(i);
                self.ring[(slot & MASK) as usize].push(e);
                self.in_ring += 1;
            } else {
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Interleaved pushes (never into the past) and pops come out in time
        /// order, every event exactly once.
        #[test]
        fn pops_in_nondecreasing_order(ops in proptest::collection::vec((0u64..1 << 40, any::<bool>()), 1..500)) {
            let mut q = EventQueue::new();
            let mut now = 0u64;
            let mut pushed = 0usize;
            let mut popped = 0usize;
            for (i, (delta, pop)) in ops.iter().enumerate() {
                if *pop {
                    if let Some(e) = q.pop() {
                        prop_assert!(e.at_ns >= now);
                        now = e.at_ns;
                        popped += 1;
                    }
                } else {
                    q.push(now + delta, i as u32);
                    pushed += 1;
                }
            }
            while let Some(e) = q.pop() {
                prop_assert!(e.at_ns >= now);
                now = e.at_ns;
                popped += 1;
            }
            prop_assert_eq!(pushed, popped);
            prop_assert!(q.is_empty());
        }
    }

    #[test]
    fn matches_a_sorted_reference() {
        let mut rng = herdless::Rng::with_seed(4);
        let mut q = EventQueue::new();
        let mut reference = Vec::new();
        for c in 0..10_000u32 {
            let t = rng.next_u64() >> 20;
            q.push(t, c);
            reference.push(t);
        }
        reference.sort_unstable();
        let got: Vec<u64> = std::iter::from_fn(|| q.pop()).map(|e| e.at_ns).collect();
        assert_eq!(got, reference);
    }

    #[test]
    fn a_push_into_the_past_is_clamped_not_reordered() {
        let mut q = EventQueue::new();
        q.push(100, 0);
        assert_eq!(q.pop().unwrap().at_ns, 100);
        q.push(50, 1);
        assert_eq!(
            q.pop(),
            Some(Event {
                at_ns: 100,
                client: 1
            })
        );
    }
}
