//! The adaptive allocator's book: admissions (a GCRA whose rate may change
//! between calls) and bookings (a cursor of promised slots, overbooked in
//! golden-ratio passes once the horizon is full).
//!
//! Every time is whole nanoseconds since the caller's epoch. The rate is
//! passed in as the slot interval on each call, so a capacity estimate that
//! changes only changes the spacing of what is admitted or booked next; what
//! was promised stays promised.

use crate::fleet::pushback::GOLDEN;

/// Admission state and the booking cursor.
#[derive(Debug, Clone, Default)]
pub(crate) struct Schedule {
    /// GCRA theoretical arrival time of the next admission.
    admit_tat: u64,
    /// The last booked slot (0: none yet).
    last_slot: u64,
    /// Overbooking: the pass number and the last slot of the current pass.
    pass: u64,
    last_overbooked: u64,
}

impl Schedule {
    /// GCRA: admits when the capacity promised so far is within `tolerance`
    /// of `now`, and promises one more `interval`.
    pub(crate) fn try_admit(&mut self, now: u64, interval: u64, tolerance: u64) -> bool {
        if self.admit_tat <= now.saturating_add(tolerance) {
            self.admit_tat = self.admit_tat.max(now).saturating_add(interval);
            true
        } else {
            false
        }
    }

    /// Empties the admission bucket at `at` (a recovering service has no
    /// slack saved up): the next admission is one `tolerance` of credit away
    /// from `at`, so from `at` on admissions come at most at the rate.
    pub(crate) fn empty_at(&mut self, at: u64, tolerance: u64) {
        self.admit_tat = self.admit_tat.max(at.saturating_add(tolerance));
    }

    /// The capacity promised to admissions so far (the GCRA's theoretical
    /// arrival time).
    pub(crate) fn promised(&self) -> u64 {
        self.admit_tat
    }

    /// The slot [`book`](Self::book) would hand out, without booking it.
    pub(crate) fn peek(&self, now: u64, earliest: u64, interval: u64, horizon: u64) -> u64 {
        let limit = now.saturating_add(horizon);
        let slot = self.last_slot.saturating_add(interval).max(earliest);
        if slot <= limit {
            slot
        } else {
            earliest.min(limit)
        }
    }

    /// Books the next free slot at or after `earliest`, `interval` after the
    /// previous booking, never past `now + horizon`; past a full horizon,
    /// overbooks in evenly offset passes over `[earliest, now + horizon]`.
    pub(crate) fn book(&mut self, now: u64, earliest: u64, interval: u64, horizon: u64) -> u64 {
        let limit = now.saturating_add(horizon);
        let slot = self.last_slot.saturating_add(interval).max(earliest);
        if slot <= limit {
            self.last_slot = slot;
            return slot;
        }
        let lo = earliest.min(limit);
        let mut next = self.last_overbooked.saturating_add(interval);
        if next > limit || next < lo {
            self.pass += 1;
            let offset = ((self.pass as f64 * GOLDEN).fract() * interval as f64) as u64;
            next = lo.saturating_add(offset).min(limit);
        }
        self.last_overbooked = next;
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bookings_follow_the_interval_given_at_each_call() {
        let mut s = Schedule::default();
        assert_eq!(s.book(0, 100, 10, 1_000), 100);
        assert_eq!(s.book(0, 100, 10, 1_000), 110);
        // The rate halves: the next booking is twice as far.
        assert_eq!(s.book(0, 100, 20, 1_000), 130);
        assert_eq!(s.peek(0, 100, 20, 1_000), 150);
        assert_eq!(s.book(0, 100, 20, 1_000), 150, "peek did not book");
    }

    #[test]
    fn a_full_horizon_overbooks_within_it() {
        let mut s = Schedule::default();
        for _ in 0..200 {
            let slot = s.book(0, 10, 10, 1_000);
            assert!((10..=1_000).contains(&slot), "{slot}");
        }
    }

    #[test]
    fn an_emptied_bucket_admits_at_the_rate_only() {
        let mut s = Schedule::default();
        s.empty_at(1_000, 50);
        assert!(s.try_admit(1_000, 10, 50));
        assert!(!s.try_admit(1_000, 10, 50), "no saved-up burst");
        assert!(s.try_admit(1_010, 10, 50));
        assert!(
            !s.try_admit(1_010, 10, 0),
            "no tolerance: not before its time"
        );
    }
}
