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
//!   total elapsed time (monotonic clock). A retry loop with only one of the two
//!   is an amplifier: bounded attempts with slow calls can run for hours, a
//!   bounded time with fast failures can hammer the resource thousands of times.
//! * **Delays are nanoseconds in a `u64`.** Every delay-like field (base, cap,
//!   maximum server delay) must fit in `u64` nanoseconds (about 584 years), so the
//!   jitter math works in integers with saturating arithmetic and never overflows,
//!   for every attempt number up to `u32::MAX`.
//! * **The saturation attempt is precomputed.** `base · mᴺ` reaches the cap after
//!   a fixed number of retries `N`; from then on the ceiling is the cap and no
//!   floating point is evaluated at all, which keeps a delay computation in the
//!   nanoseconds and makes huge attempt numbers trivially exact.
//! * **The growth is computed in double-double arithmetic.** Below the cap,
//!   `base · mⁿ` is evaluated by binary powering on pairs of `f64` (106
//!   significant bits), within a relative 2⁻⁷¹ of the true value for every
//!   `n ≤ u32::MAX`. That keeps [`Policy::ceiling`] non-decreasing in `n` for
//!   every multiplier (even within 2⁻⁵² of 1) and exact to the nanosecond except
//!   within 2⁻⁷ ns of a whole nanosecond.

use std::fmt;
use std::time::Duration;

mod builder;
pub mod envelope;
mod error;
mod growth;
pub mod jitter;
#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
pub mod serde;
pub mod server_delay;

pub use builder::PolicyBuilder;
pub use envelope::{Envelope, EnvelopeRow, QuantileSource};
pub use error::{PolicyError, PolicyField, UnknownPolicyField};
pub use jitter::{Jitter, ParseJitterError, Schedule};

/// The largest duration a delay-like policy field may hold: `u64::MAX` nanoseconds
/// (about 584 years).
///
/// ```
/// assert_eq!(herdless::policy::MAX_DURATION.as_nanos(), u64::MAX as u128);
/// ```
pub const MAX_DURATION: Duration = Duration::from_nanos(u64::MAX);

/// A validated retry policy. Build one with [`Policy::builder`].
///
/// The defaults: base 0.5 s, multiplier 2, cap 30 s,
/// 6 attempts (1 initial call + 5 retries), 120 s total budget, full jitter.
/// Server-supplied delays (Retry-After) are honored but clamped to 60 s, then
/// spread by +0 to 10 % so a fleet told "retry in 5 s" does not come back in
/// one wave (the longest server-guided sleep is thus 66 s).
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
#[derive(Clone, Copy, PartialEq)]
pub struct Policy {
    pub(crate) base_ns: u64,
    pub(crate) cap_ns: u64,
    pub(crate) multiplier: f64,
    pub(crate) max_attempts: u32,
    pub(crate) max_elapsed: Duration,
    /// `max_elapsed` in nanoseconds (saturating): what the engine compares.
    pub(crate) max_elapsed_ns: u64,
    pub(crate) jitter: Jitter,
    pub(crate) max_retry_after_ns: u64,
    pub(crate) retry_after_spread: f64,
    /// The longest one attempt may take, in nanoseconds; 0 when unset (an
    /// attempt is then bounded by what is left of the elapsed limit only).
    pub(crate) attempt_timeout_ns: u64,
    /// Requeue answers one call takes before a requeue counts as an attempt.
    pub(crate) max_requeues: u8,
    /// The smallest retry index `n` with `base · mⁿ ≥ cap`; `NEVER` (beyond
    /// every `u32`) when the ceiling never reaches the cap.
    pub(crate) saturation: u64,
}

/// Reads like the policy: the settings a builder takes, durations as
/// `500ms` / `30s`, the jitter by name; `attempt_timeout` only when set.
///
/// ```
/// assert_eq!(
///     format!("{:?}", herdless::Policy::default()),
///     "Policy { jitter: full, base: 500ms, multiplier: 2.0, cap: 30s, max_attempts: 6, \
///      max_elapsed: 120s, max_retry_after: 60s, retry_after_spread: 0.1 }",
/// );
/// ```
impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Shown<T>(T);
        impl<T: fmt::Display> fmt::Debug for Shown<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }
        let mut s = f.debug_struct("Policy");
        s.field("jitter", &Shown(self.jitter))
            .field("base", &self.base())
            .field("multiplier", &self.multiplier)
            .field("cap", &self.cap())
            .field("max_attempts", &self.max_attempts)
            .field("max_elapsed", &self.max_elapsed)
            .field("max_retry_after", &self.max_retry_after())
            .field("retry_after_spread", &self.retry_after_spread);
        if let Some(t) = self.attempt_timeout() {
            s.field("attempt_timeout", &t);
        }
        if u32::from(self.max_requeues) != Self::DEFAULT_MAX_REQUEUES {
            s.field("max_requeues", &self.max_requeues);
        }
        s.finish()
    }
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
    /// Default number of requeue answers one call takes before a requeue
    /// counts as an attempt: 16.
    pub const DEFAULT_MAX_REQUEUES: u32 = 16;
    /// The most requeue answers a policy may let one call take: 255.
    pub const MAX_REQUEUES: u32 = 255;

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
            attempt_timeout: self.attempt_timeout(),
            max_requeues: self.max_requeues(),
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

    /// The clamp applied to a server-supplied delay (Retry-After) before the
    /// spread: the spread is added on top, so the longest server-guided sleep
    /// is `max_retry_after · (1 + retry_after_spread)`.
    ///
    /// ```
    /// assert_eq!(herdless::Policy::default().max_retry_after().as_secs(), 60);
    /// ```
    pub fn max_retry_after(&self) -> Duration {
        Duration::from_nanos(self.max_retry_after_ns)
    }

    /// The relative positive spread applied to a server-supplied delay: a server
    /// delay `r`, first clamped to `d = min(r, max_retry_after)`, becomes a
    /// uniform draw in `[d, d · (1 + spread)]`. The sleep is never shorter than
    /// `d`, and may exceed [`max_retry_after`](Self::max_retry_after) by up to
    /// the spread.
    ///
    /// ```
    /// assert_eq!(herdless::Policy::default().retry_after_spread(), 0.1);
    /// ```
    pub fn retry_after_spread(&self) -> f64 {
        self.retry_after_spread
    }

    /// The longest one attempt may take, if set (default: unset). An
    /// attempt's deadline is the smaller of this and what is left of
    /// [`max_elapsed`](Self::max_elapsed) (or of an urgent call's deadline):
    /// see [`Attempt::remaining`](crate::Attempt::remaining). With it, the
    /// async executors drop an attempt's future at its deadline, and a call
    /// ends within `max_elapsed`; see the
    /// [engine's order of the checks](crate::engine#the-order-of-the-checks).
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(herdless::Policy::default().attempt_timeout(), None);
    /// let p = herdless::Policy::builder().attempt_timeout(Duration::from_secs(2)).build()?;
    /// assert_eq!(p.attempt_timeout(), Some(Duration::from_secs(2)));
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn attempt_timeout(&self) -> Option<Duration> {
        (self.attempt_timeout_ns != 0).then(|| Duration::from_nanos(self.attempt_timeout_ns))
    }

    /// How many requeue answers ([`Classification::Requeued`](crate::Classification::Requeued):
    /// a server's queue answering a request unprocessed) one call takes
    /// without counting them as attempts; past it, a requeue is an ordinary
    /// failed attempt. Every requeue's wait counts toward `max_elapsed`.
    ///
    /// ```
    /// assert_eq!(herdless::Policy::default().max_requeues(), 16);
    /// ```
    pub fn max_requeues(&self) -> u32 {
        u32::from(self.max_requeues)
    }

    /// The ceiling `c = min(cap, ⌊base · multiplierⁿ⌋)` (in whole nanoseconds)
    /// for the retry with zero-based index `n` (the first retry has `n = 0`, so
    /// its ceiling is the base). Overflow-free for every `n` up to `u32::MAX`,
    /// and for every valid policy:
    ///
    /// * **non-decreasing in `n`**: `ceiling(n) ≤ ceiling(n + 1)`;
    /// * **exact to the nanosecond, with one stated exception**: `base ·
    ///   multiplierⁿ` is computed within a relative 2⁻⁷¹ of the true value
    ///   (within 2⁻⁷ ns, as every value below the cap is below 2⁶⁴ ns), so the
    ///   result is exactly `⌊base · multiplierⁿ⌋` unless that true value lies
    ///   within 2⁻⁷ ns of a whole nanosecond, where the result may be that whole
    ///   nanosecond (one above the floor) or the one below it.
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = herdless::Policy::default();
    /// assert_eq!(p.ceiling(0), Duration::from_millis(500));
    /// assert_eq!(p.ceiling(3), Duration::from_secs(4));
    /// assert_eq!(p.ceiling(u32::MAX), Duration::from_secs(30));
    ///
    /// // Multipliers just above 1 at retry indices in the millions:
    /// // 1 ns · (1 + 2⁻²⁴)^369033424 = 3 570 978 526.5… ns.
    /// let creeping = herdless::Policy::builder()
    ///     .base(Duration::from_nanos(1))
    ///     .cap(herdless::policy::MAX_DURATION)
    ///     .multiplier(1.0 + 2f64.powi(-24))
    ///     .build()?;
    /// assert_eq!(creeping.ceiling(369_033_424), Duration::from_nanos(3_570_978_526));
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn ceiling(&self, n: u32) -> Duration {
        Duration::from_nanos(self.ceiling_ns(n))
    }

    #[inline]
    pub(crate) fn ceiling_ns(&self, n: u32) -> u64 {
        if u64::from(n) >= self.saturation {
            return self.cap_ns;
        }
        // n < saturation: base · mⁿ < cap. The same computation found the
        // saturation index, so the two agree; the clamp only guards the floor.
        growth::grown_ns(self.base_ns, self.multiplier, n, self.cap_ns)
            .clamp(self.base_ns, self.cap_ns)
    }
}
