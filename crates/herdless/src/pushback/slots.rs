//! [`SlotAllocator`]: the static allocator, told its capacity (see the
//! [module documentation](super) for how slots are booked).

use std::fmt;
use std::time::Duration;

use crate::pushback::Allotment;
use crate::pushback::allowance::{Allowance, grantable};

/// The golden ratio's fractional part, for evenly offset overbooking passes.
pub(crate) const GOLDEN: f64 = 0.618_033_988_749_894_9;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Normal,
    /// Shed everything until `until` (`None`: until [`SlotAllocator::recover`]).
    Outage {
        /// Nanoseconds since the epoch.
        until: Option<u64>,
    },
}

/// Admits up to a capacity and books rejected callers into the capacity to
/// come. See the [module documentation](crate::pushback).
///
/// ```
/// use std::time::Duration;
/// use herdless::pushback::SlotAllocator;
/// // 10 000 requests/s, the first 5 s an outage: 40 000 callers are booked
/// // between 5 s and 9 s, the physical limit.
/// let mut alloc = SlotAllocator::new(10_000.0, Duration::from_secs(60))?
///     .outage_until(Duration::from_secs(5));
/// let last = (0..40_000).map(|_| alloc.decide(Duration::ZERO).retry_after().unwrap()).last().unwrap();
/// assert!(last <= Duration::from_secs(9));
/// # Ok::<(), herdless::pushback::PushbackError>(())
/// ```
#[derive(Clone)]
pub struct SlotAllocator {
    interval_ns: u64,
    capacity: f64,
    burst: u32,
    horizon_ns: u64,
    mode: Mode,
    /// GCRA theoretical arrival time of the next admission.
    admit_tat: u64,
    /// The last booked slot (0: none yet).
    last_slot: u64,
    /// Overbooking: the pass number and the last slot of the current pass.
    pass: u64,
    last_overbooked: u64,
    admitted: u64,
    rejected: u64,
    /// Bumped by every change of mode: an allowance granted before is not
    /// returned after.
    generation: u64,
}

impl fmt::Debug for SlotAllocator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlotAllocator")
            .field("capacity", &self.capacity)
            .field("burst", &self.burst)
            .field("horizon", &Duration::from_nanos(self.horizon_ns))
            .field("mode", &self.mode)
            .field("admitted", &self.admitted)
            .field("rejected", &self.rejected)
            .finish_non_exhaustive()
    }
}

pub(crate) fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The slot interval: the smallest whole number of nanoseconds `i` with
/// `i · capacity ≥ 10⁹` (for `capacity` in `(0, 10⁹]`), so that at most
/// `capacity` slots fit in a second.
pub(crate) fn slot_interval_ns(capacity: f64) -> u64 {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2⁵³: every integer below is an f64
    let mut i = (1e9 / capacity).ceil();
    if i < EXACT {
        // The division rounds, possibly down onto a whole number: correct with
        // an exact sign test (a fused multiply-add rounds once and keeps the
        // sign of `i · capacity − 10⁹`).
        while i.mul_add(capacity, -1e9) < 0.0 {
            i += 1.0;
        }
    } else {
        // Above 2⁵³ ns (104 days) step past the division's rounding error.
        i = (i * (1.0 + f64::EPSILON)).ceil();
    }
    (i as u64).max(1)
}

impl SlotAllocator {
    /// An allocator admitting `capacity` requests per second and never telling
    /// a caller to wait longer than `horizon`.
    ///
    /// # Errors
    ///
    /// [`PushbackError`] when the capacity is not a positive finite number of
    /// requests per second (at most 10⁹), or the horizon is shorter than one
    /// slot (`1 / capacity`, rounded up to a whole nanosecond).
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::pushback::SlotAllocator;
    /// assert!(SlotAllocator::new(0.0, Duration::from_secs(1)).is_err());
    /// assert!(SlotAllocator::new(1.0, Duration::from_millis(10)).is_err());
    /// assert!(SlotAllocator::new(0.5, Duration::from_secs(60)).is_ok());
    /// ```
    pub fn new(capacity: f64, horizon: Duration) -> Result<Self, PushbackError> {
        if !(capacity.is_finite() && capacity > 0.0 && capacity <= 1e9) {
            return Err(PushbackError::Capacity);
        }
        let interval_ns = slot_interval_ns(capacity);
        let horizon_ns = ns(horizon);
        if horizon_ns < interval_ns {
            return Err(PushbackError::Horizon);
        }
        Ok(SlotAllocator {
            interval_ns,
            capacity,
            burst: ((capacity * 0.1) as u32).max(1),
            horizon_ns,
            mode: Mode::Normal,
            admit_tat: 0,
            last_slot: 0,
            pass: 0,
            last_overbooked: 0,
            admitted: 0,
            rejected: 0,
            generation: 0,
        })
    }

    /// How many requests may be admitted back to back (at least 1). Default:
    /// 100 ms worth of capacity.
    ///
    /// ```
    /// use std::time::Duration;
    /// let a = herdless::pushback::SlotAllocator::new(100.0, Duration::from_secs(9))?.burst(0);
    /// assert_eq!(a.burst_size(), 1);
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn burst(mut self, burst: u32) -> Self {
        self.burst = burst.max(1);
        self
    }

    /// Starts in outage mode until `until` (since the epoch): everything is
    /// shed, slots start at `until`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::pushback::SlotAllocator;
    /// let mut a = SlotAllocator::new(10.0, Duration::from_secs(60))?.outage_until(Duration::from_secs(5));
    /// assert_eq!(a.decide(Duration::from_secs(1)).retry_after(), Some(Duration::from_secs(4)));
    /// assert!(a.decide(Duration::from_secs(6)).is_admit()); // the outage ended
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn outage_until(mut self, until: Duration) -> Self {
        self.start_outage(Some(until));
        self
    }

    /// Starts in outage mode with an unknown end (until [`recover`](Self::recover)).
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut a = herdless::pushback::SlotAllocator::new(10.0, Duration::from_secs(60))?.outage();
    /// assert!(!a.decide(Duration::ZERO).is_admit());
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn outage(mut self) -> Self {
        self.start_outage(None);
        self
    }

    /// Switches to outage mode now: shed everything until `until` (since the
    /// epoch) or, with `None`, until [`recover`](Self::recover).
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut a = herdless::pushback::SlotAllocator::new(10.0, Duration::from_secs(60))?;
    /// a.start_outage(None);
    /// assert!(a.in_outage(Duration::from_secs(100)));
    /// a.recover();
    /// assert!(!a.in_outage(Duration::from_secs(100)));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn start_outage(&mut self, until: Option<Duration>) {
        self.mode = Mode::Outage {
            until: until.map(ns),
        };
        self.generation += 1;
    }

    /// Leaves outage mode.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut a = herdless::pushback::SlotAllocator::new(10.0, Duration::from_secs(60))?.outage();
    /// a.recover();
    /// assert!(a.decide(Duration::ZERO).is_admit());
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn recover(&mut self) {
        self.mode = Mode::Normal;
        self.generation += 1;
    }

    /// Whether the allocator sheds everything at `now`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let a = herdless::pushback::SlotAllocator::new(10.0, Duration::from_secs(60))?
    ///     .outage_until(Duration::from_secs(2));
    /// assert!(a.in_outage(Duration::from_secs(1)));
    /// assert!(!a.in_outage(Duration::from_secs(2)));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn in_outage(&self, now: Duration) -> bool {
        match self.mode {
            Mode::Normal => false,
            Mode::Outage { until: None } => true,
            Mode::Outage { until: Some(u) } => ns(now) < u,
        }
    }

    /// The capacity, in requests per second.
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(herdless::pushback::SlotAllocator::new(250.0, Duration::from_secs(1))?.capacity(), 250.0);
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn capacity(&self) -> f64 {
        self.capacity
    }

    /// The burst of back-to-back admissions.
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(herdless::pushback::SlotAllocator::new(250.0, Duration::from_secs(1))?.burst_size(), 25);
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn burst_size(&self) -> u32 {
        self.burst
    }

    /// The longest delay ever handed out.
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(herdless::pushback::SlotAllocator::new(1.0, Duration::from_secs(7))?.horizon().as_secs(), 7);
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn horizon(&self) -> Duration {
        Duration::from_nanos(self.horizon_ns)
    }

    /// Requests admitted and rejected so far.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut a = herdless::pushback::SlotAllocator::new(1.0, Duration::from_secs(7))?;
    /// let _ = a.decide(Duration::ZERO);
    /// let _ = a.decide(Duration::ZERO);
    /// assert_eq!(a.counts(), (1, 1));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn counts(&self) -> (u64, u64) {
        (self.admitted, self.rejected)
    }

    fn tolerance(&self) -> u64 {
        self.interval_ns
            .saturating_mul(u64::from(self.burst.saturating_sub(1)))
    }

    /// In an outage at `now_ns`: its end (`now_ns` itself while the end is
    /// unknown); `None` when not, leaving an outage whose end has passed.
    fn outage_end(&mut self, now_ns: u64) -> Option<u64> {
        match self.mode {
            Mode::Normal => None,
            Mode::Outage { until: None } => Some(now_ns),
            Mode::Outage { until: Some(u) } if now_ns < u => Some(u),
            Mode::Outage { until: Some(_) } => {
                self.mode = Mode::Normal;
                self.generation += 1;
                None
            }
        }
    }

    /// Up to `want` admissions at `now`, while not in an outage and with
    /// half the burst to spare (see [`allowance`](crate::pushback::allowance)).
    pub(crate) fn allowance(&mut self, now: Duration, want: u32) -> Allowance {
        let now_ns = ns(now);
        if self.outage_end(now_ns).is_some() {
            return Allowance::default();
        }
        let i = self.interval_ns;
        let n = grantable(self.admit_tat, now_ns, self.tolerance(), i, want);
        if n == 0 {
            return Allowance::default();
        }
        self.admit_tat = self
            .admit_tat
            .max(now_ns)
            .saturating_add(u64::from(n).saturating_mul(i));
        Allowance::new(n, now, true, (i, self.admit_tat), self.generation)
    }

    /// `used` of `allowance` spent: counted, the rest back in the bucket.
    pub(crate) fn settle(&mut self, now: Duration, allowance: Allowance, used: u32) {
        let used = used.min(allowance.count());
        self.admitted += u64::from(used);
        let back = allowance.unspent_ns(used, ns(now), self.interval_ns, self.generation);
        self.admit_tat = self.admit_tat.saturating_sub(back);
    }

    /// Decides one request arriving at `now` (since the epoch). Times should
    /// not decrease from call to call; an earlier `now` still gets a valid
    /// answer (an admission, or a positive delay within the horizon).
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut a = herdless::pushback::SlotAllocator::new(2.0, Duration::from_secs(10))?.burst(1);
    /// assert!(a.decide(Duration::ZERO).is_admit());
    /// assert_eq!(a.decide(Duration::ZERO).retry_after(), Some(Duration::from_millis(500)));
    /// assert_eq!(a.decide(Duration::ZERO).retry_after(), Some(Duration::from_millis(1000)));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn decide(&mut self, now: Duration) -> Allotment {
        let now_ns = ns(now);
        let i = self.interval_ns;
        let outage_end = self.outage_end(now_ns);
        if outage_end.is_none() {
            // GCRA: admit while the promised capacity is within `burst` slots of now.
            let tolerance = self.tolerance();
            if self.admit_tat <= now_ns.saturating_add(tolerance) {
                self.admit_tat = self.admit_tat.max(now_ns).saturating_add(i);
                self.admitted += 1;
                return Allotment::Admit;
            }
        }
        self.rejected += 1;
        // The earliest a rejected caller may come back: after the capacity
        // already promised (admissions and earlier bookings) and, in an
        // outage, not before its end (or a slot from now when the end is
        // unknown).
        let earliest = match outage_end {
            Some(end) if end > now_ns => end,
            Some(_) => now_ns.saturating_add(i),
            None => self.admit_tat.max(now_ns.saturating_add(i)),
        };
        let limit = now_ns.saturating_add(self.horizon_ns);
        let slot = self.last_slot.saturating_add(i).max(earliest);
        if slot <= limit {
            self.last_slot = slot;
            return Allotment::Reject {
                retry_after: Duration::from_nanos(slot - now_ns),
            };
        }
        // The horizon is full: overbook, one evenly offset pass at a time.
        let lo = earliest.min(limit);
        let mut next = self.last_overbooked.saturating_add(i);
        if next > limit || next < lo {
            self.pass += 1;
            let offset = ((self.pass as f64 * GOLDEN).fract() * i as f64) as u64;
            next = lo.saturating_add(offset).min(limit);
        }
        self.last_overbooked = next;
        Allotment::Reject {
            retry_after: Duration::from_nanos(next.saturating_sub(now_ns).max(1)),
        }
    }
}

/// An invalid [`SlotAllocator`] configuration.
///
/// ```
/// use std::time::Duration;
/// let err = herdless::pushback::SlotAllocator::new(f64::NAN, Duration::from_secs(1)).unwrap_err();
/// assert_eq!(err.to_string(), "capacity must be a number of requests per second in (0, 1e9] (an adaptive allocator's estimate: in [1, 1e9])");
/// let err = herdless::pushback::AdaptiveAllocator::builder().estimate(0.5).build().unwrap_err();
/// assert!(err.to_string().contains("estimate: in [1, 1e9]"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PushbackError {
    /// The capacity is not in `(0, 1e9]` requests per second (an adaptive
    /// allocator's estimate: not in `[1, 1e9]`).
    Capacity,
    /// The horizon is shorter than one slot (an adaptive allocator's: not
    /// within 1 s ..= 1 day).
    Horizon,
    /// An adaptive allocator's setting is out of its documented range (the
    /// message names it).
    Setting(&'static str),
}

impl fmt::Display for PushbackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PushbackError::Capacity => {
                "capacity must be a number of requests per second in (0, 1e9] \
                 (an adaptive allocator's estimate: in [1, 1e9])"
            }
            PushbackError::Horizon => {
                "horizon must be at least one slot (1 / capacity) \
                 (an adaptive allocator's: within 1 s..=1 day)"
            }
            PushbackError::Setting(what) => what,
        })
    }
}

impl std::error::Error for PushbackError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slot_interval_is_rounded_up() {
        assert_eq!(slot_interval_ns(1e9), 1);
        assert_eq!(slot_interval_ns(7e8), 2); // 1.43 ns: rounding to nearest gave 1
        assert_eq!(slot_interval_ns(5e8), 2);
        assert_eq!(slot_interval_ns(1000.0), 1_000_000);
        assert_eq!(slot_interval_ns(3.0), 333_333_334);
        assert_eq!(slot_interval_ns(1.0), 1_000_000_000);
        for c in [0.3, 7.0, 123.456, 6.5e8, 999_999_999.0, 1e9] {
            let i = slot_interval_ns(c) as f64;
            assert!(i.mul_add(c, -1e9) >= 0.0, "{c}: {i}");
            assert!(
                (i - 1.0).mul_add(c, -1e9) < 0.0,
                "{c}: {i} is not the smallest"
            );
        }
        // Above 2⁵³ ns: at least 10⁹ / capacity.
        assert!(slot_interval_ns(1e-9) >= 1_000_000_000_000_000_000);
    }
}
