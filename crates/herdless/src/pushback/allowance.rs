//! Allowances: admissions an allocator hands a front end ahead of time, so a
//! server on several threads need not take the allocator's lock for every
//! request it admits.
//!
//! ## Why
//!
//! An allocator is one piece of state (its admission bucket, its counts,
//! its estimate) that every request of a server reads and writes. Behind
//! one lock, two threads deciding at once are *slower* than one: each
//! decision moves the lock's cache line from one core to the other. When
//! the service is passing requests through with room to spare, though,
//! the allocator's answer for the next few requests is known: admit. An
//! allowance hands those answers out in advance, a few at a time, to one
//! thread, which spends them on its own (a lock nobody else takes) and
//! settles the tally with the allocator when the allowance is used up or runs
//! out. The allocator still makes every decision: granting an allowance *is*
//! deciding to admit that many requests now.
//!
//! ## The bounds
//!
//! * **Only with room to spare.** An allowance is granted only while the
//!   allocator would admit anyway: not in an outage, nothing held, no
//!   caller it tracks (a caller told to come back later), and its
//!   admission bucket (the GCRA) at most *half* full once the allowance is
//!   counted in it. So an allowance never takes the last half of the burst:
//!   near capacity there are no allowances and every request is decided one by
//!   one, exactly as without them; an allowance never makes the allocator turn
//!   away a request it would have admitted.
//! * **Counted when granted.** An allowance of `n` promises the bucket `n`
//!   admissions at once, as `n` requests arriving together would. Spent
//!   over its life ([`ALLOWANCE_LIFE`], 1 ms), the admissions in any window are
//!   at most the capacity's over the window and its burst, plus one
//!   allowance's life of capacity (a thousandth of a second's worth).
//! * **Returned when not spent.** What an allowance did not spend goes back to
//!   the bucket when it is settled, as far as it is still ahead (the
//!   bucket refills as time passes, allowance or not: time already past is not
//!   credited twice), and unless the allocator changed since it was granted
//!   (an outage began or ended, its rate moved): then it is dropped, never
//!   credited into a bucket that was emptied on purpose.
//! * **At most [`ALLOWANCE_MAX`] admissions** (64) per allowance; the front end
//!   asks for what its thread used of its last one (doubling while it uses
//!   all of it), so a quiet thread holds one or two.
//! * **Counted exactly.** The admissions spent and the requests served
//!   under an allowance reach the allocator's counts when it is settled (at the
//!   latest an allowance's life later, or when the front end reads its counts),
//!   each once.
//!
//! Granted and settled under the allocator's lock, by
//! [`Allocator::allowance`](crate::pushback::Allocator::allowance) and
//! [`Allocator::settle`](crate::pushback::Allocator::settle); the tower
//! layer (`PushbackLayer`) keeps one allowance per thread.

use std::time::Duration;

/// The longest an allowance lasts: admissions not spent by then are settled.
pub const ALLOWANCE_LIFE: Duration = Duration::from_millis(1);

/// The most admissions one allowance holds.
pub const ALLOWANCE_MAX: u32 = 64;

/// Admissions granted ahead of time (see the [module documentation](self)).
///
/// ```
/// use std::time::Duration;
/// use herdless::pushback::{Allocator, SlotAllocator};
/// let mut a = SlotAllocator::new(1_000.0, Duration::from_secs(60))?;
/// let allowance = Allocator::allowance(&mut a, Duration::ZERO, 8);
/// assert_eq!(allowance.count(), 8);
/// assert_eq!(allowance.until(), Duration::from_millis(1));
/// // Three spent: counted as admitted, the other five back in the bucket.
/// Allocator::settle(&mut a, Duration::from_micros(500), allowance, 3, 0);
/// assert_eq!(a.counts(), (3, 0));
/// # Ok::<(), herdless::pushback::PushbackError>(())
/// ```
///
/// Settling takes it: an allowance is counted once (it is neither `Copy`
/// nor `Clone`), so settling it again does not compile:
///
/// ```compile_fail,E0382
/// use std::time::Duration;
/// use herdless::pushback::{Allocator, SlotAllocator};
/// let mut a = SlotAllocator::new(1_000.0, Duration::from_secs(60)).unwrap();
/// let allowance = Allocator::allowance(&mut a, Duration::ZERO, 8);
/// Allocator::settle(&mut a, Duration::ZERO, allowance, 8, 0);
/// Allocator::settle(&mut a, Duration::ZERO, allowance, 8, 0);
/// ```
#[derive(Debug, PartialEq, Eq, Default)]
pub struct Allowance {
    count: u32,
    /// Since the epoch.
    until: Duration,
    keyed: bool,
    /// The bucket's interval when granted (ns).
    interval_ns: u64,
    /// The bucket's promised time once granted (ns since the epoch).
    end_ns: u64,
    /// The allocator's generation when granted.
    generation: u64,
}

impl Allowance {
    /// `count` admissions granted at `now` by a bucket at `interval_ns`
    /// whose promised time is `end_ns` once they are counted.
    pub(crate) fn new(
        count: u32,
        now: Duration,
        keyed: bool,
        (interval_ns, end_ns): (u64, u64),
        generation: u64,
    ) -> Self {
        Allowance {
            count,
            until: now.saturating_add(ALLOWANCE_LIFE),
            keyed,
            interval_ns,
            end_ns,
            generation,
        }
    }

    /// How many admissions it holds.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// When it runs out (since the epoch): spend it only before.
    pub fn until(&self) -> Duration {
        self.until
    }

    /// Whether a request naming its caller may be admitted from it (the
    /// allocator tracked no caller when it granted it).
    pub fn keyed(&self) -> bool {
        self.keyed
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Splits off the `used` admissions spent so far: the spent part (to
    /// [`settle`](crate::pushback::Allocator::settle) now, nothing to give
    /// back) and the rest, still to spend until [`until`](Self::until).
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::pushback::{Allocator, SlotAllocator};
    /// let mut a = SlotAllocator::new(1_000.0, Duration::from_secs(60))?;
    /// let allowance = Allocator::allowance(&mut a, Duration::ZERO, 8);
    /// let (spent, rest) = allowance.split(3);
    /// assert_eq!((spent.count(), rest.count()), (3, 5));
    /// Allocator::settle(&mut a, Duration::ZERO, spent, 3, 0);
    /// assert_eq!(a.counts(), (3, 0));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn split(self, used: u32) -> (Allowance, Allowance) {
        let used = used.min(self.count);
        let spent = Allowance {
            count: used,
            ..self
        };
        let rest = Allowance {
            count: self.count - used,
            ..self
        };
        (spent, rest)
    }

    /// What goes back at `now` to a bucket at `interval_ns` in
    /// `generation` when `used` of it were spent: the bucket time not
    /// spent, but only what of it is still ahead of `now` (the bucket
    /// refills as time passes, allowance or not: giving back time already
    /// past would credit it twice), and nothing when the allocator changed
    /// since the grant.
    pub(crate) fn unspent_ns(&self, used: u32, now: u64, interval_ns: u64, generation: u64) -> u64 {
        if self.generation != generation || self.interval_ns != interval_ns {
            return 0;
        }
        let unspent = u64::from(self.count.saturating_sub(used)).saturating_mul(interval_ns);
        unspent.min(self.end_ns.saturating_sub(now))
    }
}

/// How many admissions a GCRA whose promised time is `tat` may allowance at
/// `now` (ns), with admission `tolerance` and `interval`: at most `want`,
/// and only as many as leave the bucket at most half full.
pub(crate) fn grantable(tat: u64, now: u64, tolerance: u64, interval: u64, want: u32) -> u32 {
    let base = tat.max(now);
    let room = now.saturating_add(tolerance / 2).saturating_sub(base);
    let n = room / interval.max(1);
    u32::try_from(n.min(u64::from(want.min(ALLOWANCE_MAX)))).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_allowance_leaves_half_the_burst() {
        // Burst of 10 at 1 ms: tolerance 9 ms; half of it is 4.5 ms: 4 slots.
        assert_eq!(grantable(0, 0, 9_000_000, 1_000_000, 64), 4);
        // Already 4 promised: none left to allowance.
        assert_eq!(grantable(4_000_000, 0, 9_000_000, 1_000_000, 64), 0);
        // An idle bucket (promised time in the past) counts from now.
        assert_eq!(grantable(0, 50_000_000, 9_000_000, 1_000_000, 2), 2);
    }

    #[test]
    fn an_allowance_is_at_most_its_cap() {
        assert_eq!(grantable(0, 0, u64::MAX / 2, 1, 1_000), ALLOWANCE_MAX);
        assert_eq!(grantable(0, 0, u64::MAX, 0, 3), 3);
    }

    #[test]
    fn nothing_goes_back_after_a_change() {
        let l = Allowance::new(8, Duration::ZERO, true, (100, 800), 7);
        assert_eq!(l.unspent_ns(3, 0, 100, 7), 500);
        assert_eq!(l.unspent_ns(3, 0, 100, 8), 0, "another generation");
        assert_eq!(l.unspent_ns(3, 0, 50, 7), 0, "another rate");
        assert_eq!(l.unspent_ns(9, 0, 100, 7), 0, "more used than held");
    }

    #[test]
    fn only_what_is_still_ahead_goes_back() {
        // Promised up to 800 ns: at 600 ns, 200 ns of it is still ahead.
        let l = Allowance::new(8, Duration::ZERO, true, (100, 800), 7);
        assert_eq!(l.unspent_ns(0, 600, 100, 7), 200);
        assert_eq!(l.unspent_ns(0, 800, 100, 7), 0);
        assert_eq!(l.unspent_ns(0, 5_000, 100, 7), 0);
    }
}
