//! The budget: stop at whichever comes first, attempts or elapsed time.
//!
//! After a failed attempt the executor asks, in this order:
//!
//! 1. Is the error retryable? If not, give up with [`GiveUp::Terminal`] after this
//!    one attempt.
//! 2. Have `max_attempts` attempts been made? Then [`GiveUp::MaxAttempts`].
//! 3. Would `elapsed + next delay` pass `max_elapsed`? Then give up **before
//!    sleeping** with [`GiveUp::MaxElapsed`] (the first seed's rule). A call
//!    therefore returns within `max_elapsed` plus at most one operation's own
//!    duration: it never sleeps past the budget, and the only overrun is an
//!    attempt that was started inside it.
//!
//! Elapsed time is read from a monotonic clock ([`Clock`](crate::Clock)), never
//! the wall clock: an NTP step or DST change during a long chain cannot make the
//! budget expire early or never (retry-policies measures with the wall clock).

use std::fmt;
use std::time::Duration;

use crate::policy::Policy;

/// Why a call stopped retrying.
///
/// ```
/// use herdless::GiveUp;
/// assert_eq!(GiveUp::MaxElapsed.as_str(), "max_elapsed");
/// assert_eq!(GiveUp::Terminal.to_string(), "terminal");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GiveUp {
    /// The error was terminal (or unknown: the classifier fails closed).
    Terminal,
    /// `max_attempts` attempts were made.
    MaxAttempts,
    /// The next sleep would have passed `max_elapsed`.
    MaxElapsed,
    /// A shared retry budget denied the retry.
    RetryBudget,
}

impl GiveUp {
    /// The reason's name as used in events and JSON: `terminal`, `max_attempts`,
    /// `max_elapsed`, `retry_budget`.
    ///
    /// ```
    /// assert_eq!(herdless::GiveUp::MaxAttempts.as_str(), "max_attempts");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            GiveUp::Terminal => "terminal",
            GiveUp::MaxAttempts => "max_attempts",
            GiveUp::MaxElapsed => "max_elapsed",
            GiveUp::RetryBudget => "retry_budget",
        }
    }

    /// Whether the budget (not the error) ended the call.
    ///
    /// ```
    /// assert!(herdless::GiveUp::MaxElapsed.is_exhausted());
    /// assert!(!herdless::GiveUp::Terminal.is_exhausted());
    /// ```
    pub const fn is_exhausted(self) -> bool {
        !matches!(self, GiveUp::Terminal)
    }
}

impl fmt::Display for GiveUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Policy {
    /// Whether a call that has made `attempts` attempts over `elapsed` may make
    /// another after sleeping `next_delay`. See the [module
    /// documentation](crate::budget).
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::{GiveUp, Policy};
    /// let p = Policy::builder().max_attempts(3).max_elapsed(Duration::from_secs(10)).build()?;
    /// let s = Duration::from_secs;
    /// assert_eq!(p.may_retry(1, s(1), s(2)), Ok(()));
    /// assert_eq!(p.may_retry(3, s(1), s(2)), Err(GiveUp::MaxAttempts));
    /// assert_eq!(p.may_retry(2, s(9), s(2)), Err(GiveUp::MaxElapsed));
    /// assert_eq!(p.may_retry(2, s(8), s(2)), Ok(())); // exactly at the budget is allowed
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn may_retry(
        &self,
        attempts: u32,
        elapsed: Duration,
        next_delay: Duration,
    ) -> Result<(), GiveUp> {
        if attempts >= self.max_attempts {
            return Err(GiveUp::MaxAttempts);
        }
        if elapsed.saturating_add(next_delay) > self.max_elapsed {
            return Err(GiveUp::MaxElapsed);
        }
        Ok(())
    }
}
