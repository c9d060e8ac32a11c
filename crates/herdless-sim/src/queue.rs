//! The event queue: a monotone radix heap of `(time, client)` events.
//!
//! # Why a radix heap
//!
//! A discrete-event simulation only ever schedules events at or after the
//! current virtual time, so its priority queue is *monotone*: the key popped
//! never decreases. A radix heap exploits that: it never compares two events.
//! This one works on bytes. An event is filed under the highest byte `L` in
//! which its time differs from the last time popped (its *level*) and the value
//! `d` of that byte (its *digit*): 8 levels × 256 buckets. Then:
//!
//! * the level-0 buckets hold times equal to the last one but for the lowest
//!   byte, so each holds one distinct time and pops directly;
//! * when level 0 is empty, the lowest non-empty bucket of the lowest level
//!   holds the minimum; it becomes the new "last" and that bucket's events are
//!   re-filed, each to a strictly lower level.
//!
//! An event therefore moves at most once per level below the one it was filed
//! at: at most 7 times, and 3 or 4 times for the delays of these scenarios
//! (milliseconds to a minute span bytes 2 to 4 of a nanosecond count); a
//! bitmap per level finds the next non-empty bucket with a few
//! `trailing_zeros`. The bench
//! (`cargo bench -p herdless-sim --bench sim -- queue`) compares it with
//! `std::collections::BinaryHeap` on the same workload.
//!
//! * **No per-event allocation.** Buckets are `Vec`s that keep their capacity;
//!   after warm-up the queue allocates nothing.
//! * **Compact entries.** An entry is a `u64` time in nanoseconds and a `u32`
//!   client index (16 bytes with padding). Each simulated client has at most
//!   one pending event, so the queue never holds more entries than clients.
//! * **Deterministic.** Ties (equal times) pop in an order fixed by the
//!   sequence of pushes and pops alone, so a run is reproducible bit for bit.

/// One pending event: a virtual time in nanoseconds and the client it wakes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// Virtual time of the event, in nanoseconds since the start of the run.
    pub at_ns: u64,
    /// Index of the client (or worker) the event belongs to.
    pub client: u32,
}

const LEVELS: usize = 8;
const DIGITS: usize = 256;

/// A monotone priority queue of [`Event`]s (byte-wise radix heap). See the
/// [module documentation](self).
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
pub struct EventQueue {
    last: u64,
    len: usize,
    buckets: Vec<Vec<Event>>,
    /// One bit per non-empty bucket, 4 words per level.
    nonempty: [[u64; 4]; LEVELS],
}

impl Default for EventQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl EventQueue {
    /// An empty queue at time 0.
    ///
    /// ```
    /// assert!(herdless_sim::queue::EventQueue::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self {
            last: 0,
            len: 0,
            buckets: (0..LEVELS * DIGITS).map(|_| Vec::new()).collect(),
            nonempty: [[0; 4]; LEVELS],
        }
    }

    /// An empty queue (`n` is a hint of how many events will be pending; the
    /// buckets grow on demand either way).
    ///
    /// ```
    /// let q = herdless_sim::queue::EventQueue::with_capacity(1_000);
    /// assert_eq!(q.len(), 0);
    /// ```
    pub fn with_capacity(n: usize) -> Self {
        let mut q = Self::new();
        // Initial events typically share the top bytes: reserve where the
        // first refill will put them.
        for b in q.buckets[DIGITS..2 * DIGITS].iter_mut() {
            b.reserve(n / DIGITS);
        }
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

    #[inline]
    fn slot(&self, at_ns: u64) -> (usize, usize) {
        let diff = at_ns ^ self.last;
        let level = if diff == 0 {
            0
        } else {
            (63 - diff.leading_zeros() as usize) / 8
        };
        let digit = ((at_ns >> (8 * level)) & 0xFF) as usize;
        (level, digit)
    }

    #[inline]
    fn file(&mut self, e: Event) {
        let (level, digit) = self.slot(e.at_ns);
        self.buckets[level * DIGITS + digit].push(e);
        self.nonempty[level][digit / 64] |= 1 << (digit % 64);
    }

    /// The lowest non-empty digit of `level`.
    #[inline]
    fn lowest(&self, level: usize) -> Option<usize> {
        let words = &self.nonempty[level];
        (0..4)
            .find(|&w| words[w] != 0)
            .map(|w| w * 64 + words[w].trailing_zeros() as usize)
    }

    /// Schedules `client` at `at_ns` (clamped to the last popped time).
    ///
    /// ```
    /// let mut q = herdless_sim::queue::EventQueue::new();
    /// q.push(u64::MAX, 7);
    /// assert_eq!(q.pop().unwrap().at_ns, u64::MAX);
    /// ```
    #[inline]
    pub fn push(&mut self, at_ns: u64, client: u32) {
        let at_ns = at_ns.max(self.last);
        self.file(Event { at_ns, client });
        self.len += 1;
    }

    /// Removes and returns the earliest event, or `None` when empty.
    ///
    /// ```
    /// let mut q = herdless_sim::queue::EventQueue::new();
    /// assert_eq!(q.pop(), None);
    /// ```
    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        if self.len == 0 {
            return None;
        }
        let digit = match self.lowest(0) {
            Some(d) => d,
            None => self.refill(),
        };
        let bucket = &mut self.buckets[digit];
        let e = bucket.pop()?;
        if bucket.is_empty() {
            self.nonempty[0][digit / 64] &= !(1 << (digit % 64));
        }
        self.last = e.at_ns;
        self.len -= 1;
        Some(e)
    }

    /// Level 0 is empty: re-files the lowest non-empty bucket around its
    /// minimum and returns the level-0 digit now holding the minimum.
    #[cold]
    fn refill(&mut self) -> usize {
        let Some((level, digit)) = (1..LEVELS).find_map(|l| self.lowest(l).map(|d| (l, d))) else {
            return 0; // unreachable while len > 0
        };
        let index = level * DIGITS + digit;
        let mut moving = std::mem::take(&mut self.buckets[index]);
        self.nonempty[level][digit / 64] &= !(1 << (digit % 64));
        self.last = moving.iter().map(|e| e.at_ns).min().unwrap_or(self.last);
        for e in moving.drain(..) {
            // Every event of this bucket shares bytes >= level with the new
            // minimum, so it lands on a strictly lower level.
            self.file(e);
        }
        self.buckets[index] = moving;
        (self.last & 0xFF) as usize
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
