//! The validating builder behind [`Policy::builder`].

use std::time::Duration;

use super::error::{PolicyError, PolicyField, Reason};
use super::{Jitter, Policy};

/// Builds a [`Policy`], validating every field. See [`Policy`] for the defaults.
///
/// ```
/// use std::time::Duration;
/// use herdless::Policy;
/// use herdless::policy::PolicyField;
///
/// let err = Policy::builder()
///     .base(Duration::from_secs(5))
///     .cap(Duration::from_secs(1))
///     .build()
///     .unwrap_err();
/// assert_eq!(err.field(), PolicyField::Cap);
/// println!("{err}"); // "invalid cap: 1s is below base 5s"
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PolicyBuilder {
    pub(super) base: Duration,
    pub(super) multiplier: f64,
    pub(super) cap: Duration,
    pub(super) max_attempts: u32,
    pub(super) max_elapsed: Duration,
    pub(super) jitter: Jitter,
    pub(super) max_retry_after: Duration,
    pub(super) retry_after_spread: f64,
    pub(super) attempt_timeout: Option<Duration>,
    pub(super) max_requeues: u32,
}

impl Default for PolicyBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl PolicyBuilder {
    /// A builder holding the defaults (see [`Policy`]).
    ///
    /// ```
    /// assert_eq!(herdless::PolicyBuilder::new().build()?, herdless::Policy::default());
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn new() -> Self {
        Self {
            base: Policy::DEFAULT_BASE,
            multiplier: Policy::DEFAULT_MULTIPLIER,
            cap: Policy::DEFAULT_CAP,
            max_attempts: Policy::DEFAULT_MAX_ATTEMPTS,
            max_elapsed: Policy::DEFAULT_MAX_ELAPSED,
            jitter: Jitter::Full,
            max_retry_after: Policy::DEFAULT_MAX_RETRY_AFTER,
            retry_after_spread: Policy::DEFAULT_RETRY_AFTER_SPREAD,
            attempt_timeout: None,
            max_requeues: Policy::DEFAULT_MAX_REQUEUES,
        }
    }

    /// Sets the base delay (must be positive and at most the cap).
    ///
    /// ```
    /// let p = herdless::Policy::builder().base(std::time::Duration::from_millis(50)).build()?;
    /// assert_eq!(p.base().as_millis(), 50);
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn base(mut self, base: Duration) -> Self {
        self.base = base;
        self
    }

    /// Sets the multiplier (finite, at least 1.0).
    ///
    /// ```
    /// let p = herdless::Policy::builder().multiplier(1.5).build()?;
    /// assert_eq!(p.multiplier(), 1.5);
    /// assert!(herdless::Policy::builder().multiplier(f64::NAN).build().is_err());
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn multiplier(mut self, multiplier: f64) -> Self {
        self.multiplier = multiplier;
        self
    }

    /// Sets the cap on a single computed delay (at least the base). Size it above
    /// the worst-case recovery time of the slowest shared resource.
    ///
    /// ```
    /// let p = herdless::Policy::builder().cap(std::time::Duration::from_secs(60)).build()?;
    /// assert_eq!(p.cap().as_secs(), 60);
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn cap(mut self, cap: Duration) -> Self {
        self.cap = cap;
        self
    }

    /// Sets the maximum number of attempts, counting the first call (at least 1).
    ///
    /// ```
    /// assert!(herdless::Policy::builder().max_attempts(0).build().is_err());
    /// ```
    pub fn max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = max_attempts;
        self
    }

    /// Sets the total budget across all attempts (positive). Keep it comfortably
    /// inside your task broker's visibility timeout.
    ///
    /// ```
    /// let p = herdless::Policy::builder().max_elapsed(std::time::Duration::from_secs(10)).build()?;
    /// assert_eq!(p.max_elapsed().as_secs(), 10);
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn max_elapsed(mut self, max_elapsed: Duration) -> Self {
        self.max_elapsed = max_elapsed;
        self
    }

    /// Sets the jitter mode.
    ///
    /// ```
    /// use herdless::{Jitter, Policy};
    /// let p = Policy::builder().jitter(Jitter::Decorrelated).build()?;
    /// assert_eq!(p.jitter(), Jitter::Decorrelated);
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn jitter(mut self, jitter: Jitter) -> Self {
        self.jitter = jitter;
        self
    }

    /// Sets the clamp on server-supplied delays (positive). It bounds the
    /// server's value; the [spread](Self::retry_after_spread) is added on top,
    /// so the longest server-guided sleep is `max × (1 + spread)`.
    ///
    /// ```
    /// let p = herdless::Policy::builder().max_retry_after(std::time::Duration::from_secs(5)).build()?;
    /// assert_eq!(p.max_retry_after().as_secs(), 5);
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn max_retry_after(mut self, max: Duration) -> Self {
        self.max_retry_after = max;
        self
    }

    /// Sets the relative positive spread on server-supplied delays, in `[0, 1]`
    /// (0 disables it).
    ///
    /// ```
    /// let p = herdless::Policy::builder().retry_after_spread(0.0).build()?;
    /// assert_eq!(p.retry_after_spread(), 0.0);
    /// assert!(herdless::Policy::builder().retry_after_spread(-0.1).build().is_err());
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn retry_after_spread(mut self, spread: f64) -> Self {
        self.retry_after_spread = spread;
        self
    }

    /// Sets the longest one attempt may take (positive, at most
    /// [`MAX_DURATION`](super::MAX_DURATION)), or `None` to leave attempts
    /// bounded by the elapsed limit only (the default). See
    /// [`Policy::attempt_timeout`].
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = herdless::Policy::builder().attempt_timeout(Duration::from_millis(800)).build()?;
    /// assert_eq!(p.attempt_timeout(), Some(Duration::from_millis(800)));
    /// assert_eq!(p.to_builder().attempt_timeout(None).build()?.attempt_timeout(), None);
    /// assert!(herdless::Policy::builder().attempt_timeout(Duration::ZERO).build().is_err());
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn attempt_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.attempt_timeout = timeout.into();
        self
    }

    /// Sets how many requeue answers one call takes without counting them as
    /// attempts (0 to [`Policy::MAX_REQUEUES`]; 0: every requeue is an
    /// attempt). See [`Policy::max_requeues`].
    ///
    /// ```
    /// let p = herdless::Policy::builder().max_requeues(0).build()?;
    /// assert_eq!(p.max_requeues(), 0);
    /// assert!(herdless::Policy::builder().max_requeues(256).build().is_err());
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn max_requeues(mut self, max_requeues: u32) -> Self {
        self.max_requeues = max_requeues;
        self
    }

    /// Validates and builds the policy.
    ///
    /// # Errors
    ///
    /// A [`PolicyError`] naming the first invalid field and why.
    ///
    /// ```
    /// let err = herdless::Policy::builder().max_attempts(0).build().unwrap_err();
    /// assert_eq!(err.to_string(), "invalid max_attempts: must be at least 1 (it counts the first call)");
    /// ```
    pub fn build(self) -> Result<Policy, PolicyError> {
        use PolicyField as F;
        let base_ns = delay_ns(F::Base, self.base)?;
        if base_ns == 0 {
            return Err(PolicyError::new(F::Base, Reason::Zero));
        }
        if !self.multiplier.is_finite() || self.multiplier < 1.0 {
            return Err(PolicyError::new(
                F::Multiplier,
                Reason::Multiplier(self.multiplier),
            ));
        }
        let cap_ns = delay_ns(F::Cap, self.cap)?;
        if cap_ns < base_ns {
            return Err(PolicyError::new(
                F::Cap,
                Reason::Below {
                    value: self.cap,
                    other: "base",
                    bound: self.base,
                },
            ));
        }
        if self.max_attempts == 0 {
            return Err(PolicyError::new(F::MaxAttempts, Reason::ZeroAttempts));
        }
        if self.max_elapsed.is_zero() {
            return Err(PolicyError::new(F::MaxElapsed, Reason::Zero));
        }
        let max_retry_after_ns = delay_ns(F::MaxRetryAfter, self.max_retry_after)?;
        if max_retry_after_ns == 0 {
            return Err(PolicyError::new(F::MaxRetryAfter, Reason::Zero));
        }
        if !(0.0..=1.0).contains(&self.retry_after_spread) {
            return Err(PolicyError::new(
                F::RetryAfterSpread,
                Reason::Spread(self.retry_after_spread),
            ));
        }
        let Ok(max_requeues) = u8::try_from(self.max_requeues) else {
            return Err(PolicyError::new(
                F::MaxRequeues,
                Reason::Count(self.max_requeues, Policy::MAX_REQUEUES),
            ));
        };
        let attempt_timeout_ns = match self.attempt_timeout {
            None => 0,
            Some(t) => match delay_ns(F::AttemptTimeout, t)? {
                0 => return Err(PolicyError::new(F::AttemptTimeout, Reason::Zero)),
                ns => ns,
            },
        };
        Ok(Policy {
            base_ns,
            cap_ns,
            multiplier: self.multiplier,
            max_attempts: self.max_attempts,
            max_elapsed: self.max_elapsed,
            max_elapsed_ns: u64::try_from(self.max_elapsed.as_nanos()).unwrap_or(u64::MAX),
            jitter: self.jitter,
            max_retry_after_ns,
            retry_after_spread: self.retry_after_spread,
            attempt_timeout_ns,
            max_requeues,
            saturation: saturation(base_ns, cap_ns, self.multiplier),
        })
    }
}

#[cfg(feature = "serde")]
impl PolicyBuilder {
    /// Checks `field` on its own, as [`build`](Self::build) would, but without
    /// the rule across fields (a cap below the base): what a configuration
    /// layer can refuse before knowing the other layers.
    pub(super) fn check_alone(self, field: PolicyField) -> Result<(), PolicyError> {
        let mut b = self;
        if field != PolicyField::Base {
            b.base = Duration::from_nanos(1);
        }
        if field != PolicyField::Cap {
            b.cap = super::MAX_DURATION;
        }
        match b.build() {
            Err(e) if e.field() == field && !e.is_across_fields() => Err(e),
            _ => Ok(()),
        }
    }
}

fn delay_ns(field: PolicyField, d: Duration) -> Result<u64, PolicyError> {
    u64::try_from(d.as_nanos()).map_err(|_| PolicyError::new(field, Reason::TooLarge(d)))
}

/// A saturation index beyond every `u32` retry index: the cap is never reached.
const NEVER: u64 = u32::MAX as u64 + 1;

/// The smallest `n` whose computed ceiling ([`growth`](super::growth)) reaches
/// the cap, or [`NEVER`] when it does not within `u32` retries (including
/// `m = 1`). The computed ceiling is non-decreasing in `n`, so this is a
/// search; the logarithm only brackets it.
fn saturation(base_ns: u64, cap_ns: u64, m: f64) -> u64 {
    if base_ns >= cap_ns {
        return 0;
    }
    if m <= 1.0 {
        return NEVER;
    }
    let reaches = |n: u32| super::growth::grown_ns(base_ns, m, n, cap_ns) >= cap_ns;
    if !reaches(u32::MAX) {
        return NEVER;
    }
    // Invariant: !reaches(lo) (reaches(0) is false: base < cap), reaches(hi).
    let (mut lo, mut hi) = (0u32, u32::MAX);
    let estimate = ((cap_ns as f64 / base_ns as f64).ln() / m.ln()).ceil();
    if estimate.is_finite() && estimate >= 2.0 && estimate < f64::from(u32::MAX) - 2.0 {
        let e = estimate as u32;
        if reaches(e + 2) {
            hi = e + 2;
        }
        if !reaches(e - 2) {
            lo = e - 2;
        }
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if reaches(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    u64::from(hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::MAX_DURATION;

    #[test]
    fn defaults_match_the_first_seed() {
        let p = Policy::default();
        assert_eq!(p.base(), Duration::from_millis(500));
        assert_eq!(p.cap(), Duration::from_secs(30));
        assert_eq!(p.max_attempts(), 6);
        assert_eq!(p.max_elapsed(), Duration::from_secs(120));
        assert_eq!(p.jitter(), Jitter::Full);
        assert_eq!(p.multiplier(), 2.0);
    }

    #[test]
    fn every_invalid_field_is_named() {
        let b = Policy::builder;
        let s = Duration::from_secs;
        let cases: Vec<(PolicyBuilder, PolicyField)> = vec![
            (b().base(Duration::ZERO), PolicyField::Base),
            (b().base(Duration::MAX), PolicyField::Base),
            (b().multiplier(f64::NAN), PolicyField::Multiplier),
            (b().multiplier(f64::INFINITY), PolicyField::Multiplier),
            (b().multiplier(0.99), PolicyField::Multiplier),
            (b().multiplier(-2.0), PolicyField::Multiplier),
            (b().cap(Duration::from_millis(1)), PolicyField::Cap),
            (b().cap(Duration::MAX), PolicyField::Cap),
            (b().max_attempts(0), PolicyField::MaxAttempts),
            (b().max_elapsed(Duration::ZERO), PolicyField::MaxElapsed),
            (
                b().max_retry_after(Duration::ZERO),
                PolicyField::MaxRetryAfter,
            ),
            (
                b().max_retry_after(Duration::MAX),
                PolicyField::MaxRetryAfter,
            ),
            (
                b().retry_after_spread(f64::NAN),
                PolicyField::RetryAfterSpread,
            ),
            (b().retry_after_spread(1.5), PolicyField::RetryAfterSpread),
            (
                b().attempt_timeout(Duration::ZERO),
                PolicyField::AttemptTimeout,
            ),
            (
                b().attempt_timeout(Duration::MAX),
                PolicyField::AttemptTimeout,
            ),
            (b().base(s(10)).cap(s(5)), PolicyField::Cap),
        ];
        for (builder, field) in cases {
            let err = builder.build().unwrap_err();
            assert_eq!(err.field(), field, "{err}");
            assert!(err.to_string().starts_with(&format!("invalid {field}: ")));
        }
    }

    #[test]
    fn extreme_but_valid_values_build() {
        let p = Policy::builder()
            .base(Duration::from_nanos(1))
            .cap(MAX_DURATION)
            .multiplier(f64::MAX)
            .max_elapsed(Duration::MAX)
            .max_attempts(u32::MAX)
            .build()
            .unwrap();
        assert_eq!(p.ceiling(0), Duration::from_nanos(1));
        assert_eq!(p.ceiling(1), MAX_DURATION);
        assert_eq!(p.ceiling(u32::MAX), MAX_DURATION);

        let flat = Policy::builder().multiplier(1.0).build().unwrap();
        assert_eq!(flat.ceiling(u32::MAX), flat.base());

        let creeping = Policy::builder()
            .base(Duration::from_nanos(1))
            .cap(MAX_DURATION)
            .multiplier(1.000_000_001)
            .build()
            .unwrap();
        let late = creeping.ceiling(u32::MAX);
        assert!(late <= MAX_DURATION && late >= Duration::from_nanos(1));
        assert!(creeping.ceiling(1_000_000_000) >= creeping.ceiling(999_999_999));
    }

    #[test]
    fn saturation_is_the_first_index_at_the_cap() {
        let p = Policy::default(); // 0.5 s · 2ⁿ: 0.5, 1, 2, 4, 8, 16, 32 → cap at n = 6
        assert_eq!(p.saturation, 6);
        assert_eq!(p.ceiling(5), Duration::from_secs(16));
        assert_eq!(p.ceiling(6), Duration::from_secs(30));
        for m in [1.01, 1.5, 2.0, 3.7, 10.0] {
            let p = Policy::builder().multiplier(m).build().unwrap();
            let n = u32::try_from(p.saturation).unwrap();
            assert!(n > 0);
            assert!(p.ceiling(n - 1) < p.cap(), "m={m}");
            assert_eq!(p.ceiling(n), p.cap());
        }
    }

    #[test]
    fn to_builder_round_trips() {
        let p = Policy::builder()
            .jitter(Jitter::DecorrelatedWindow)
            .max_attempts(9)
            .attempt_timeout(Duration::from_millis(750))
            .build()
            .unwrap();
        assert_eq!(p.to_builder().build().unwrap(), p);
        assert_eq!(p.attempt_timeout(), Some(Duration::from_millis(750)));
    }
}
