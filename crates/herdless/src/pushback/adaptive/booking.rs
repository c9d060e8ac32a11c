//! The adaptive allocator's book: admissions (a GCRA whose rate may change
//! between calls) and bookings (a cursor of promised slots, overbooked in
//! golden-ratio passes once the horizon is full).
//!
//! Every time is whole nanoseconds since the caller's epoch. The rate is
//! passed in as the slot interval on each call, so a capacity estimate that
//! changes only changes the spacing of what is admitted or booked next; what
//! was promised stays promised.
//!
//! ## Booking by expected arrival
//!
//! Callers that honor a slot come back a little after it: herdless clients
//! add up to 10 % of the delay (`Policy::retry_after_spread`), others their
//! own share. A caller told `d` is expected at `slot + spread / 2 · d`, and
//! its arrival is smeared over `spread · d`. Slots booked at different times
//! carry different delays, so if the *slots* were evenly spaced, a stretch
//! booked long ago (long delays, wide smear, late mean) would slide into the
//! stretch booked after it (short delays) and the two would arrive on top of
//! each other. The cursor therefore spaces the callers' **expected
//! arrivals** one interval apart: the slot is the time whose expected
//! arrival is the next free one. With `spread = 0` this is plain slot
//! spacing.

use crate::pushback::GOLDEN;

/// Admission state and the booking cursor.
#[derive(Debug, Clone, Default)]
pub(crate) struct Booking {
    /// GCRA theoretical arrival time of the next admission.
    admit_tat: u64,
    /// The expected arrival of the last booking (0: none yet).
    last_arrival: u64,
    /// Half the callers' spread: a caller told `d` is expected `shift · d`
    /// after its slot.
    shift: f64,
    /// Overbooking: the pass number and the last slot of the current pass.
    pass: u64,
    last_overbooked: u64,
}

impl Booking {
    /// A schedule for callers that come back up to `spread` (a share of the
    /// delay) after their slot.
    pub(crate) fn new(spread: f64) -> Self {
        Booking {
            shift: spread / 2.0,
            ..Booking::default()
        }
    }

    /// The slot whose expected arrival is `arrival`, told at `now`.
    fn slot_for(&self, now: u64, arrival: u64) -> u64 {
        if arrival <= now {
            return arrival;
        }
        let d = (arrival - now) as f64 / (1.0 + self.shift);
        now.saturating_add(d as u64)
    }

    fn arrival_of(&self, now: u64, slot: u64) -> u64 {
        let d = slot.saturating_sub(now) as f64 * self.shift;
        slot.saturating_add(d as u64)
    }

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

    /// Promises `n` admissions at once at `now` (an allowance).
    pub(crate) fn promise(&mut self, now: u64, n: u32, interval: u64) {
        self.admit_tat = self
            .admit_tat
            .max(now)
            .saturating_add(u64::from(n).saturating_mul(interval));
    }

    /// Takes back `span` ns of promised capacity (an allowance's unspent part).
    pub(crate) fn give_back(&mut self, span: u64) {
        self.admit_tat = self.admit_tat.saturating_sub(span);
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

    /// The next free slot at or after `earliest`: the one whose expected
    /// arrival is `interval` after the previous booking's.
    fn next(&self, now: u64, earliest: u64, interval: u64) -> u64 {
        let arrival = self.last_arrival.saturating_add(interval);
        self.slot_for(now, arrival).max(earliest)
    }

    /// The slot [`book`](Self::book) would hand out, without booking it.
    pub(crate) fn peek(&self, now: u64, earliest: u64, interval: u64, horizon: u64) -> u64 {
        let limit = now.saturating_add(horizon);
        let slot = self.next(now, earliest, interval);
        if slot <= limit {
            slot
        } else {
            earliest.min(limit)
        }
    }

    /// Books the next free slot at or after `earliest` (expected arrivals
    /// `interval` apart), never past `now + horizon`; past a full horizon,
    /// overbooks in evenly offset passes over `[earliest, now + horizon]`.
    pub(crate) fn book(&mut self, now: u64, earliest: u64, interval: u64, horizon: u64) -> u64 {
        let limit = now.saturating_add(horizon);
        let slot = self.next(now, earliest, interval);
        if slot <= limit {
            self.last_arrival = self.arrival_of(now, slot);
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
        let mut s = Booking::default();
        assert_eq!(s.book(0, 100, 10, 1_000), 100);
        assert_eq!(s.book(0, 100, 10, 1_000), 110);
        // The rate halves: the next booking is twice as far.
        assert_eq!(s.book(0, 100, 20, 1_000), 130);
        assert_eq!(s.peek(0, 100, 20, 1_000), 150);
        assert_eq!(s.book(0, 100, 20, 1_000), 150, "peek did not book");
    }

    #[test]
    fn expected_arrivals_are_spaced_whatever_the_delays() {
        // Callers come back up to 10 % late: expected 5 % of the delay after.
        let mut s = Booking::new(0.1);
        let a = s.book(0, 1_000_000, 1_000, u64::MAX / 4);
        assert_eq!(a, 1_000_000);
        // Booked later with a shorter delay: its slot is placed so that its
        // expected arrival is one interval after the first's (1,050,000).
        let b = s.book(900_000, 0, 1_000, u64::MAX / 4);
        let expected_b = b + (b - 900_000) / 20;
        assert!(
            (1_050_999..=1_051_001).contains(&expected_b),
            "{b} {expected_b}"
        );
    }

    #[test]
    fn a_full_horizon_overbooks_within_it() {
        let mut s = Booking::default();
        for _ in 0..200 {
            let slot = s.book(0, 10, 10, 1_000);
            assert!((10..=1_000).contains(&slot), "{slot}");
        }
    }

    #[test]
    fn an_emptied_bucket_admits_at_the_rate_only() {
        let mut s = Booking::default();
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
