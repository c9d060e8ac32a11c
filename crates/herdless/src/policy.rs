//! The retry policy: how long to wait, how often to try, and when to stop.
//!
//! A [`Policy`] is an immutable, validated value. It is built only through
//! [`PolicyBuilder`], which rejects every configuration that would make the
//! documented bounds false (a NaN multiplier, a cap below the base, zero attempts,
//! …) with a typed [`PolicyError`] naming the field and the reason. Because a
//! `Policy` can only exist in a valid state, nothing downstream (the jitter math,
//! the budget, the executors) has to re-check it or can panic on it.
//!
//! # Design notes
//!
//! * **Two budgets.** A policy always bounds both the number of attempts and the
//!   total elapsed time (monotonic clock). The first seed's "amplifier" is a retry
//!   loop with only one of the two.
//! * **Delays are nanoseconds in a `u64`.** Every delay-like field (base, cap,
//!   maximum server delay) must fit in `u64` nanoseconds (about 584 years), so the
//!   jitter math works in integers with saturating arithmetic and never overflows,
//!   for every attempt number up to `u32::MAX`.
//! * **The saturation attempt is precomputed.** `base · mᴺ` reaches the cap after
//!   a fixed number of retries `N`; from then on the ceiling is the cap and no
//!   floating point is evaluated at all, which keeps a delay computation in the
//!   nanoseconds and makes huge attempt numbers trivially exact.

use std::fmt;
use std::time::Duration;

use crate::jitter::Jitter;

/// The largest duration a delay-like policy field may hold: `u64::MAX` nanoseconds
/// (about 584 years).
///
/// ```
/// assert_eq!(herdless::MAX_DURATION.as_nanos(), u64::MAX as u128);
/// ```
pub const MAX_DURATION: Duration = Duration::from_nanos(u64::MAX);

/// A validated retry policy. Build one with [`Policy::builder`].
///
/// The defaults are the first seed's: base 0.5 s, multiplier 2, cap 30 s,
/// 6 attempts (1 initial call + 5 retries), 120 s total budget, full jitter.
/// Server-supplied delays (Retry-After) are honored but clamped to 60 s and
/// spread by up to +10 % so a fleet told "retry in 5 s" does not come back in
/// one wave.
///
/// ```
/// use std::time::Duration;
/// use herdless::{Jitter, Policy};
///
/// let policy = Policy::builder()
///     .base(Duration::from_millis(100))
///     .cap(Duration::from_secs(10))
///     .max_attempts(5)
///     .max_elapsed(Duration::from_secs(30))
///     .jitter(Jitter::Equal)
///     .build()?;
/// assert_eq!(policy.max_attempts(), 5);
/// assert_eq!(Policy::default().cap(), Duration::from_secs(30));
/// # Ok::<(), herdless::PolicyError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Policy {
    pub(crate) base_ns: u64,
    pub(crate) cap_ns: u64,
    pub(crate) multiplier: f64,
    pub(crate) max_attempts: u32,
    pub(crate) max_elapsed: Duration,
    pub(crate) jitter: Jitter,
    pub(crate) max_retry_after_ns: u64,
    pub(crate) retry_after_spread: f64,
    /// The smallest retry index `n` with `base · mⁿ ≥ cap`; `NEVER` (beyond
    /// every `u32`) when the ceiling never reaches the cap.
    pub(crate) saturation: u64,
}

impl Default for Policy {
    fn default() -> Self {
        PolicyBuilder::new()
            .build()
            .expect("the default policy is valid")
    }
}

impl Policy {
    /// Default base delay: 500 ms.
    pub const DEFAULT_BASE: Duration = Duration::from_millis(500);
    /// Default multiplier: 2.0.
    pub const DEFAULT_MULTIPLIER: f64 = 2.0;
    /// Default cap on a single computed delay: 30 s.
    pub const DEFAULT_CAP: Duration = Duration::from_secs(30);
    /// Default maximum number of attempts, counting the first call: 6.
    pub const DEFAULT_MAX_ATTEMPTS: u32 = 6;
    /// Default total budget across all attempts: 120 s.
    pub const DEFAULT_MAX_ELAPSED: Duration = Duration::from_secs(120);
    /// Default clamp on a server-supplied delay: 60 s.
    pub const DEFAULT_MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
    /// Default positive spread added to a server-supplied delay: up to 10 %.
    pub const DEFAULT_RETRY_AFTER_SPREAD: f64 = 0.1;

    /// Starts a builder holding the defaults.
    ///
    /// ```
    /// let p = herdless::Policy::builder().max_attempts(3).build()?;
    /// assert_eq!(p.max_attempts(), 3);
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn builder() -> PolicyBuilder {
        PolicyBuilder::new()
    }

    /// Returns a builder pre-filled with this policy's values, to derive a variant.
    ///
    /// ```
    /// use herdless::{Jitter, Policy};
    /// let lone_cron = Policy::default().to_builder().jitter(Jitter::Equal).build()?;
    /// assert_eq!(lone_cron.jitter(), Jitter::Equal);
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn to_builder(&self) -> PolicyBuilder {
        PolicyBuilder {
            base: self.base(),
            multiplier: self.multiplier,
            cap: self.cap(),
            max_attempts: self.max_attempts,
            max_elapsed: self.max_elapsed,
            jitter: self.jitter,
            max_retry_after: self.max_retry_after(),
            retry_after_spread: self.retry_after_spread,
        }
    }

    /// The base delay: the ceiling of the first retry's delay.
    ///
    /// ```
    /// assert_eq!(herdless::Policy::default().base().as_millis(), 500);
    /// ```
    pub fn base(&self) -> Duration {
        Duration::from_nanos(self.base_ns)
    }

    /// The growth factor of the delay ceiling per retry (ignored by the
    /// decorrelated modes, whose window grows by a factor of 3 by definition).
    ///
    /// ```
    /// assert_eq!(herdless::Policy::default().multiplier(), 2.0);
    /// ```
    pub fn multiplier(&self) -> f64 {
        self.multiplier
    }

    /// The cap: no computed delay is ever longer, in any jitter mode.
    ///
    /// ```
    /// assert_eq!(herdless::Policy::default().cap().as_secs(), 30);
    /// ```
    pub fn cap(&self) -> Duration {
        Duration::from_nanos(self.cap_ns)
    }

    /// The maximum number of attempts, counting the first call.
    ///
    /// ```
    /// assert_eq!(herdless::Policy::default().max_attempts(), 6);
    /// ```
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The total budget across all attempts, including the operations' own time.
    ///
    /// ```
    /// assert_eq!(herdless::Policy::default().max_elapsed().as_secs(), 120);
    /// ```
    pub fn max_elapsed(&self) -> Duration {
        self.max_elapsed
    }

    /// The jitter mode.
    ///
    /// ```
    /// assert_eq!(herdless::Policy::default().jitter(), herdless::Jitter::Full);
    /// ```
    pub fn jitter(&self) -> Jitter {
        self.jitter
    }

    /// The clamp applied to a server-supplied delay (Retry-After).
    ///
    /// ```
    /// assert_eq!(herdless::Policy::default().max_retry_after().as_secs(), 60);
    /// ```
    pub fn max_retry_after(&self) -> Duration {
        Duration::from_nanos(self.max_retry_after_ns)
    }

    /// The relative positive spread applied to a server-supplied delay: a server
    /// delay `r` becomes a uniform draw in `[r, r · (1 + spread)]` (never past
    /// [`max_retry_after`](Self::max_retry_after)).
    ///
    /// ```
    /// assert_eq!(herdless::Policy::default().retry_after_spread(), 0.1);
    /// ```
    pub fn retry_after_spread(&self) -> f64 {
        self.retry_after_spread
    }

    /// The ceiling `c = min(cap, base · multiplierⁿ)` for the retry with
    /// zero-based index `n` (the first retry has `n = 0`, so its ceiling is the
    /// base). Exact and overflow-free for every `n` up to `u32::MAX`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = herdless::Policy::default();
    /// assert_eq!(p.ceiling(0), Duration::from_millis(500));
    /// assert_eq!(p.ceiling(3), Duration::from_secs(4));
    /// assert_eq!(p.ceiling(u32::MAX), Duration::from_secs(30));
    /// ```
    pub fn ceiling(&self, n: u32) -> Duration {
        Duration::from_nanos(self.ceiling_ns(n))
    }

    #[inline]
    pub(crate) fn ceiling_ns(&self, n: u32) -> u64 {
        if u64::from(n) >= self.saturation {
            return self.cap_ns;
        }
        // n < saturation: base · mⁿ < cap, finite and positive.
        let growth = if n <= i32::MAX as u32 {
            self.multiplier.powi(n as i32)
        } else {
            self.multiplier.powf(f64::from(n))
        };
        let c = self.base_ns as f64 * growth;
        // `as` saturates; the clamp guards the rounding of base_ns and cap_ns
        // through f64 (above 2⁵³ ns, about 104 days, f64 cannot hold every integer).
        (c as u64).clamp(self.base_ns, self.cap_ns)
    }
}

/// Builds a [`Policy`], validating every field. See [`Policy`] for the defaults.
///
/// ```
/// use std::time::Duration;
/// use herdless::{Policy, PolicyError, PolicyField};
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
    base: Duration,
    multiplier: f64,
    cap: Duration,
    max_attempts: u32,
    max_elapsed: Duration,
    jitter: Jitter,
    max_retry_after: Duration,
    retry_after_spread: f64,
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

    /// Sets the clamp on server-supplied delays (positive).
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
        Ok(Policy {
            base_ns,
            cap_ns,
            multiplier: self.multiplier,
            max_attempts: self.max_attempts,
            max_elapsed: self.max_elapsed,
            jitter: self.jitter,
            max_retry_after_ns,
            retry_after_spread: self.retry_after_spread,
            saturation: saturation(base_ns, cap_ns, self.multiplier),
        })
    }
}

fn delay_ns(field: PolicyField, d: Duration) -> Result<u64, PolicyError> {
    u64::try_from(d.as_nanos()).map_err(|_| PolicyError::new(field, Reason::TooLarge(d)))
}

/// A saturation index beyond every `u32` retry index: the cap is never reached.
const NEVER: u64 = u32::MAX as u64 + 1;

/// The smallest `n` with `base · mⁿ ≥ cap`, or [`NEVER`] when the ceiling does
/// not reach the cap within `u32` retries (including `m = 1`).
fn saturation(base_ns: u64, cap_ns: u64, m: f64) -> u64 {
    if base_ns >= cap_ns {
        return 0;
    }
    if m <= 1.0 {
        return NEVER;
    }
    let ratio = cap_ns as f64 / base_ns as f64;
    let estimate = (ratio.ln() / m.ln()).ceil();
    if estimate.is_nan() || estimate >= f64::from(u32::MAX) {
        return NEVER;
    }
    // Correct the floating-point estimate by at most a step either way, using the
    // same arithmetic `ceiling_ns` uses so the two agree exactly.
    let reaches = |n: u32| base_ns as f64 * m.powf(f64::from(n)) >= cap_ns as f64;
    let mut n = estimate.max(0.0) as u32;
    while n > 0 && reaches(n - 1) {
        n -= 1;
    }
    while n < u32::MAX && !reaches(n) {
        n += 1;
    }
    if reaches(n) {
        u64::from(n)
    } else {
        NEVER
    }
}

/// Names a [`Policy`] field, as used in [`PolicyError`] and in configuration files.
///
/// ```
/// assert_eq!(herdless::PolicyField::MaxElapsed.as_str(), "max_elapsed");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PolicyField {
    /// `base`
    Base,
    /// `multiplier`
    Multiplier,
    /// `cap`
    Cap,
    /// `max_attempts`
    MaxAttempts,
    /// `max_elapsed`
    MaxElapsed,
    /// `max_retry_after`
    MaxRetryAfter,
    /// `retry_after_spread`
    RetryAfterSpread,
}

impl PolicyField {
    /// The field's name in `snake_case`, as in configuration files.
    ///
    /// ```
    /// assert_eq!(herdless::PolicyField::Cap.as_str(), "cap");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyField::Base => "base",
            PolicyField::Multiplier => "multiplier",
            PolicyField::Cap => "cap",
            PolicyField::MaxAttempts => "max_attempts",
            PolicyField::MaxElapsed => "max_elapsed",
            PolicyField::MaxRetryAfter => "max_retry_after",
            PolicyField::RetryAfterSpread => "retry_after_spread",
        }
    }
}

impl fmt::Display for PolicyField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Reason {
    Zero,
    ZeroAttempts,
    TooLarge(Duration),
    Multiplier(f64),
    Spread(f64),
    Below {
        value: Duration,
        other: &'static str,
        bound: Duration,
    },
}

/// Why a [`PolicyBuilder`] refused to build: which field, and why.
///
/// ```
/// use herdless::{Policy, PolicyField};
/// let err = Policy::builder().multiplier(0.5).build().unwrap_err();
/// assert_eq!(err.field(), PolicyField::Multiplier);
/// assert!(err.to_string().contains("at least 1"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PolicyError {
    field: PolicyField,
    reason: Reason,
}

impl PolicyError {
    fn new(field: PolicyField, reason: Reason) -> Self {
        Self { field, reason }
    }

    /// The offending field.
    ///
    /// ```
    /// let err = herdless::Policy::builder().max_elapsed(std::time::Duration::ZERO).build().unwrap_err();
    /// assert_eq!(err.field(), herdless::PolicyField::MaxElapsed);
    /// ```
    pub fn field(&self) -> PolicyField {
        self.field
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {}: ", self.field)?;
        match self.reason {
            Reason::Zero => f.write_str("must be greater than zero"),
            Reason::ZeroAttempts => f.write_str("must be at least 1 (it counts the first call)"),
            Reason::TooLarge(d) => write!(
                f,
                "{} s is too large (at most {} s, u64 nanoseconds)",
                d.as_secs(),
                MAX_DURATION.as_secs()
            ),
            Reason::Multiplier(m) => {
                write!(f, "{m} must be a finite number of at least 1.0")
            }
            Reason::Spread(s) => write!(f, "{s} must be a number in [0, 1]"),
            Reason::Below {
                value,
                other,
                bound,
            } => write!(f, "{value:?} is below {other} {bound:?}"),
        }
    }
}

impl std::error::Error for PolicyError {}

#[cfg(test)]
mod tests {
    use super::*;

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
            .build()
            .unwrap();
        assert_eq!(p.to_builder().build().unwrap(), p);
    }
}
