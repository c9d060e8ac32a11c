//! Why a policy was refused: the field and the reason.

use std::fmt;
use std::time::Duration;

#[allow(unused_imports)] // doc links
use super::{MAX_DURATION, Policy, PolicyBuilder};

/// Names a [`Policy`] field, as used in [`PolicyError`] and in configuration files.
///
/// ```
/// assert_eq!(herdless::policy::PolicyField::MaxElapsed.as_str(), "max_elapsed");
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
    /// `jitter` (named by configuration errors: an unknown mode name)
    Jitter,
    /// `attempt_timeout`
    AttemptTimeout,
    /// `max_requeues`
    MaxRequeues,
}

impl PolicyField {
    /// Every field, in documentation order.
    ///
    /// ```
    /// assert_eq!(herdless::policy::PolicyField::ALL.len(), 10);
    /// ```
    pub const ALL: [PolicyField; 10] = [
        PolicyField::Jitter,
        PolicyField::Base,
        PolicyField::Multiplier,
        PolicyField::Cap,
        PolicyField::MaxAttempts,
        PolicyField::MaxElapsed,
        PolicyField::MaxRetryAfter,
        PolicyField::RetryAfterSpread,
        PolicyField::AttemptTimeout,
        PolicyField::MaxRequeues,
    ];

    /// The field's name in `snake_case`, as in configuration files.
    ///
    /// ```
    /// assert_eq!(herdless::policy::PolicyField::Cap.as_str(), "cap");
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
            PolicyField::Jitter => "jitter",
            PolicyField::AttemptTimeout => "attempt_timeout",
            PolicyField::MaxRequeues => "max_requeues",
        }
    }
}

impl std::str::FromStr for PolicyField {
    type Err = UnknownPolicyField;

    /// A field by its `snake_case` name.
    ///
    /// ```
    /// use herdless::policy::PolicyField;
    /// assert_eq!("max_elapsed".parse(), Ok(PolicyField::MaxElapsed));
    /// assert!("capp".parse::<PolicyField>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PolicyField::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or(UnknownPolicyField)
    }
}

/// A name that is not a [`PolicyField`].
///
/// ```
/// let err = "capp".parse::<herdless::policy::PolicyField>().unwrap_err();
/// assert_eq!(err.to_string(), "unknown policy field");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownPolicyField;

impl fmt::Display for UnknownPolicyField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("unknown policy field")
    }
}

impl std::error::Error for UnknownPolicyField {}

impl fmt::Display for PolicyField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Reason {
    Zero,
    ZeroAttempts,
    TooLarge(Duration),
    Multiplier(f64),
    Spread(f64),
    Count(u32, u32),
    Below {
        value: Duration,
        other: &'static str,
        bound: Duration,
    },
}

/// Why a [`PolicyBuilder`] refused to build: which field, and why.
///
/// ```
/// use herdless::Policy;
/// use herdless::policy::PolicyField;
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
    pub(super) fn new(field: PolicyField, reason: Reason) -> Self {
        Self { field, reason }
    }

    /// The offending field.
    ///
    /// ```
    /// let err = herdless::Policy::builder().max_elapsed(std::time::Duration::ZERO).build().unwrap_err();
    /// assert_eq!(err.field(), herdless::policy::PolicyField::MaxElapsed);
    /// ```
    pub fn field(&self) -> PolicyField {
        self.field
    }

    /// Whether this is the one rule across fields (a cap below the base).
    #[cfg(feature = "serde")]
    pub(super) fn is_across_fields(&self) -> bool {
        matches!(self.reason, Reason::Below { .. })
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
            Reason::Count(n, max) => write!(f, "{n} is more than {max}"),
            Reason::Below {
                value,
                other,
                bound,
            } => write!(f, "{value:?} is below {other} {bound:?}"),
        }
    }
}

impl std::error::Error for PolicyError {}
