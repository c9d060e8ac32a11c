//! The event queue: a timing wheel of `(time, payload)` events.
//!
//! # Why a timing wheel
//!
//! A discrete-event simulation only ever schedules events at or after the
//! current virtual time (the queue is *monotone*), and the events of a retry
//! storm are dense: tens of thousands of clients within a few seconds. A
//! timing wheel exploits both. Time is cut into slots of 2²¹ ns (about
//! 2.1 ms); the queue covers the next 2¹⁵ slots (69 s: more than the default
//! 30 s cap and the pushback allocator's 60 s horizon, so that the delays
//! those hand out never reach the overflow list below, where an event is
//! 40 bytes, unpacked, in one growing vector: with 2¹⁴ slots, a
//! 10,000,000-client `full+pushback` run peaked at 649 MB instead of 414).
//! A push appends the event to its slot (one write, no
//! comparison); when the clock reaches a slot, its events are sorted once by
//! time (8-byte keys, not the entries: `queue/batch.rs`), and pops follow the keys. Events
//! beyond the horizon wait in an overflow list that is folded in every half
//! turn. Times stay exact to the nanosecond: slots only batch the sorting.
//!
//! The first version was a byte-wise radix heap: every event moved through
//! three or four levels of 256 buckets, and that movement was a third of the
//! run time. The bench (`cargo bench -p herdless-sim --bench sim -- queue`)
//! compares this queue with `std::collections::BinaryHeap` on the same hold
//! workload.
//!
//! * **Two levels, so that a push writes where the cache is.** The slots of
//!   the current *period* (64 slots, 134 ms) take their events directly; a
//!   later event is appended to its period's bucket (512 periods ahead at
//!   most), and a bucket is spread over the period's 64 slots when the clock
//!   enters it (a period of a 4,000,000-client storm, about 20,000 events,
//!   then fits in a core's cache). With 2¹⁴ flat slots, a fleet of millions appended each retry to
//!   one of 16,384 scattered slot ends, a cache miss per push once the pending
//!   events outgrow the cache; here the appends go to a few hundred ends that
//!   stay cached, and every event is written and read back in sequence. The
//!   order in which a slot receives its events is unchanged (the order of the
//!   pushes), so is every pop.
//! * **Memory follows the pending events, to the byte.** A slot or bucket is
//!   a list of chunks of [`CHUNK`] entries taken from a shared pool and given
//!   back when drained, so each wastes at most one partly filled chunk (a
//!   `Vec` per slot would waste up to half its capacity after each doubling:
//!   a third more memory on average), and a slot that once held a synchronized
//!   wave of a million clients keeps nothing of it.
//! * **An entry is packed.** Its period gives the time's high bits, so an
//!   entry stores only the 27-bit offset within the period, packed into the
//!   payload's spare bits ([`Payload`]): the fleet's client (the engine's 24
//!   bytes, its index and a flag) is 32 bytes in the queue, not 40.
//! * **The event carries its client.** The fleet loop stores each client's
//!   whole state in its one pending event, so handling an event touches no
//!   per-client array: a random access into megabytes of client state costs a
//!   cache miss per call. The queue never holds more entries than clients.
//! * **A push into the slot being drained costs no shift of the slot.** Such
//!   an event (a retry due within the same 2 ms) goes to a small sorted side
//!   list (`late`), and pops take the earlier of the two heads. Inserting it
//!   into the sorted slot instead moved half the slot per push: with a
//!   synchronized wave of 80,000 clients per slot that was a third of a
//!   4,000,000-client run.
//! * **Deterministic.** Ties (equal times) pop in an order fixed by the
//!   sequence of pushes and pops alone (the sort is deterministic; on a tie
//!   the sorted slot goes before the side list, and the side list is first in,
//!   first out), so a run is reproducible bit for bit.

/// One pending event: a virtual time in nanoseconds and what it wakes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event<T = u32> {
    /// Virtual time of the event, in nanoseconds since the start of the run.
    pub at_ns: u64,
    /// What the event wakes (a client index, or a client's whole state).
    pub client: T,
}

/// What an event wakes, as the queue stores it: with the event's offset within
/// its period (below 2²⁷, [`OFFSET_MASK`]) packed in, so that an entry needs no
/// 8-byte time.
///
/// ```
/// use herdless_sim::queue::Payload;
/// let mut packed = 7u32.pack(12_345);
/// assert_eq!(u32::offset(&packed), 12_345);
/// assert_eq!(u32::unpack(u32::take(&mut packed)), (7, 12_345));
/// ```
pub trait Payload: Sized {
    /// The stored form.
    type Packed;
    /// `self` with the in-period offset `offset` (at most [`OFFSET_MASK`]).
    fn pack(self, offset: u32) -> Self::Packed;
    /// The payload and its in-period offset.
    fn unpack(packed: Self::Packed) -> (Self, u32);
    /// The in-period offset alone.
    fn offset(packed: &Self::Packed) -> u32;
    /// Moves the entry out of its place in a drained chunk (what is left
    /// there is never read again).
    fn take(packed: &mut Self::Packed) -> Self::Packed;
}

/// A client index: the in-period offset takes the place of the time (the
/// entry keeps the 16 bytes of an [`Event`], so that the sort treats a slot
/// exactly as it treats events).
impl Payload for u32 {
    type Packed = Event<u32>;

    #[inline]
    fn pack(self, offset: u32) -> Event<u32> {
        Event {
            at_ns: u64::from(offset),
            client: self,
        }
    }

    #[inline]
    fn unpack(packed: Event<u32>) -> (u32, u32) {
        (packed.client, packed.at_ns as u32)
    }

    #[inline]
    fn offset(packed: &Event<u32>) -> u32 {
        packed.at_ns as u32
    }

    #[inline]
    fn take(packed: &mut Event<u32>) -> Event<u32> {
        *packed
    }
}

/// A slot is 2²¹ ns.
const SLOT_BITS: u32 = 21;
/// A period is 2⁶ slots.
const PERIOD_SLOTS_BITS: u32 = 6;
const PERIOD_SLOTS: u64 = 1 << PERIOD_SLOTS_BITS;
const PERIOD_BITS: u32 = SLOT_BITS + PERIOD_SLOTS_BITS;
/// An entry's offset within its period: the low 27 bits of its time.
pub const OFFSET_MASK: u32 = (1 << PERIOD_BITS) - 1;
/// The horizon, in slots from the current one.
const SLOTS: u64 = 1 << 15;
/// Period buckets: the horizon spans at most 513 periods.
const BUCKETS: u64 = 1024;
/// Entries per chunk of a slot or bucket.
pub const CHUNK: usize = 128;
/// The most chunks a drained slot's or bucket's list keeps room for.
const KEEP: usize = 8;

mod batch;
use batch::Batch;

mod list;
use list::List;

/// Lists of chunks, one per slot or bucket.
type Lists<P> = Vec<List<P>>;

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
pub struct EventQueue<T: Payload = u32> {
    /// Time of the last event popped.
    last: u64,
    /// Absolute index (`time >> SLOT_BITS`) of the current slot.
    current: u64,
    /// Whether the current slot's entries were moved into `batch` (false
    /// only for slot 0 before the first pop).
    drained: bool,
    len: usize,
    /// Events in `slots` and `buckets`.
    in_ring: usize,
    /// The current slot's entries (still packed), in time order.
    batch: Batch<T::Packed>,
    /// The current period's start: an entry's time is this plus its offset.
    base: u64,
    /// Events pushed into the current slot after it was sorted, latest first.
    late: Vec<Event<T>>,
    /// The current period's slots (by slot index modulo 64).
    slots: Lists<T::Packed>,
    /// Later periods' events (by period index modulo 512).
    buckets: Lists<T::Packed>,
    /// Empty chunks, with room for [`CHUNK`] entries each.
    pool: Vec<Vec<T::Packed>>,
    /// Events at or beyond `current + SLOTS` when pushed.
    overflow: Vec<Event<T>>,
}

impl<T: Payload> Default for EventQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Payload> EventQueue<T> {
    /// An empty queue at time 0.
    ///
    /// ```
    /// assert!(herdless_sim::queue::EventQueue::<u32>::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self {
            last: 0,
            current: 0,
            drained: false,
            len: 0,
            in_ring: 0,
            batch: Batch::new(),
            base: 0,
            late: Vec::new(),
            slots: (0..PERIOD_SLOTS).map(|_| List::default()).collect(),
            buckets: (0..BUCKETS).map(|_| List::default()).collect(),
            pool: Vec::new(),
            overflow: Vec::new(),
        }
    }

    /// An empty queue (`n`, the number of events expected to be pending at
    /// once, sizes the sort of a slot).
    ///
    /// ```
    /// let q = herdless_sim::queue::EventQueue::<u32>::with_capacity(1_000);
    /// assert_eq!(q.len(), 0);
    /// ```
    pub fn with_capacity(n: usize) -> Self {
        let mut q = Self::new();
        q.batch.reserve(n.min(1 << 16));
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
    #[inline(always)]
    pub fn push(&mut self, at_ns: u64, client: T) {
        let at_ns = at_ns.max(self.last);
        self.len += 1;
        let slot = at_ns >> SLOT_BITS;
        if slot == self.current && self.drained {
            // After every later event, before the equal ones (which pop first).
            let e = Event { at_ns, client };
            let i = self.late.partition_point(|x| x.at_ns > at_ns);
            self.late.insert(i, e);
        } else if slot - self.current < SLOTS {
            self.enqueue(at_ns, client);
        } else {
            self.overflow.push(Event { at_ns, client });
        }
    }

    /// Appends to the event's slot if it is in the current period, else to
    /// its period's bucket.
    #[inline(always)]
    fn enqueue(&mut self, at_ns: u64, client: T) {
        let packed = client.pack((at_ns as u32) & OFFSET_MASK);
        let list = if at_ns >> PERIOD_BITS == self.current >> PERIOD_SLOTS_BITS {
            &mut self.slots[((at_ns >> SLOT_BITS) % PERIOD_SLOTS) as usize]
        } else {
            &mut self.buckets[((at_ns >> PERIOD_BITS) % BUCKETS) as usize]
        };
        list.push(&mut self.pool, packed);
        self.in_ring += 1;
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
            let from_late = match (self.batch.peek(), self.late.last()) {
                (Some(r), Some(l)) => l.at_ns < self.base | u64::from(T::offset(r)),
                (Some(_), None) => false,
                (None, Some(_)) => true,
                (None, None) => {
                    if self.len == 0 {
                        return None;
                    }
                    self.advance();
                    continue;
                }
            };
            let e = if from_late {
                self.late.pop()
            } else {
                self.batch.pop().map(|packed| {
                    let (client, offset) = T::unpack(packed);
                    Event {
                        at_ns: self.base | u64::from(offset),
                        client,
                    }
                })
            };
            if let Some(e) = e {
                self.last = e.at_ns;
                self.len -= 1;
                return Some(e);
            }
        }
    }

    /// Moves the clock to the next slot (or straight to the earliest overflow
    /// event when nothing else is pending) and sorts that slot into `batch`.
    #[cold]
    fn advance(&mut self) {
        let first = !self.drained;
        if first {
            self.drained = true;
        } else if self.in_ring == 0 {
            let Some(first) = self.overflow.iter().map(|e| e.at_ns >> SLOT_BITS).min() else {
                return;
            };
            self.current = first;
            self.fold_overflow();
        } else {
            self.current += 1;
            if self.current % PERIOD_SLOTS == 0 {
                self.spread_bucket();
            }
            if self.current % (SLOTS / 2) == 0 {
                self.fold_overflow();
            }
        }
        self.base = self.current >> PERIOD_SLOTS_BITS << PERIOD_BITS;
        let list = &mut self.slots[(self.current % PERIOD_SLOTS) as usize];
        if list.is_empty() {
            return;
        }
        // Within a slot the offset orders the entries as their times do
        // (slot 0, filled before the first pop, pops equal times in the order
        // they were pushed).
        self.in_ring -= self.batch.load::<T>(list, &mut self.pool, first);
    }

    /// The clock entered a new period: spreads its bucket over its slots, in
    /// the order the events were pushed (before any event pushed from now on).
    ///
    /// Each entry is read in its chunk (its slot first, then the entry, moved
    /// once): drained through an iterator, it went through the stack, written
    /// there and read back across two stores, a load that waits for them.
    #[inline(never)]
    fn spread_bucket(&mut self) {
        let period = self.current >> PERIOD_SLOTS_BITS;
        let bucket = &mut self.buckets[(period % BUCKETS) as usize];
        let (slots, pool) = (&mut self.slots, &mut self.pool);
        bucket.drain(|mut chunk| {
            for packed in chunk.iter_mut() {
                let slot = (T::offset(packed) >> SLOT_BITS) as usize;
                slots[slot].push(pool, T::take(packed));
            }
            chunk.clear();
            pool.push(chunk);
        });
    }

    /// Moves the overflow events now within the horizon into the wheel.
    fn fold_overflow(&mut self) {
        let horizon = self.current + SLOTS;
        let mut i = 0;
        while i < self.overflow.len() {
            if self.overflow[i].at_ns >> SLOT_BITS < horizon {
                let e = self.overflow.swap_remove(i);
                self.enqueue(e.at_ns, e.client);
            } else {
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests;
