//! [`BreakerBuilder`]: a [`Breaker`]'s settings, validated.
//!
//! [`Breaker::new`] and [`Breaker::probe_wait`] are lenient (a threshold of 0
//! is taken as 1, a probe wait under 1 ms is raised to it); the builder
//! refuses such values instead, naming the setting, for settings that come
//! from outside the program (configuration files, flags).

use std::fmt;
use std::time::Duration;

use super::Breaker;
use crate::policy::MAX_DURATION;

/// A [`Breaker`]'s settings: the consecutive failures that open it
/// (`threshold`, at least 1) and the wait behind a probe (`probe_wait`, from
/// [`Breaker::MIN_PROBE_WAIT`] (1 ms) to [`MAX_DURATION`]).
///
/// ```
/// use std::time::Duration;
/// use herdless::Breaker;
/// let b = Breaker::builder().threshold(3).probe_wait(Duration::from_millis(200)).build()?;
/// assert_eq!((b.threshold(), b.probe_wait_time()), (3, Duration::from_millis(200)));
/// let err = Breaker::builder().threshold(0).build().unwrap_err();
/// assert_eq!(err.field(), "threshold");
/// # Ok::<(), herdless::guard::breaker::BreakerError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerBuilder {
    pub(crate) threshold: u32,
    pub(crate) probe_wait: Duration,
}

impl Default for BreakerBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl BreakerBuilder {
    /// The default threshold.
    ///
    /// ```
    /// assert_eq!(herdless::guard::breaker::BreakerBuilder::DEFAULT_THRESHOLD, 5);
    /// ```
    pub const DEFAULT_THRESHOLD: u32 = 5;

    /// The default probe wait.
    ///
    /// ```
    /// use herdless::guard::breaker::BreakerBuilder;
    /// assert_eq!(BreakerBuilder::DEFAULT_PROBE_WAIT, std::time::Duration::from_secs(1));
    /// ```
    pub const DEFAULT_PROBE_WAIT: Duration = Duration::from_secs(1);

    /// Threshold 5, probe wait 1 s.
    ///
    /// ```
    /// let b = herdless::guard::breaker::BreakerBuilder::new().build()?;
    /// assert_eq!(b.threshold(), 5);
    /// # Ok::<(), herdless::guard::breaker::BreakerError>(())
    /// ```
    pub fn new() -> Self {
        BreakerBuilder {
            threshold: Self::DEFAULT_THRESHOLD,
            probe_wait: Self::DEFAULT_PROBE_WAIT,
        }
    }

    /// The consecutive failures that open the breaker (at least 1).
    ///
    /// ```
    /// assert_eq!(herdless::Breaker::builder().threshold(2).build()?.threshold(), 2);
    /// # Ok::<(), herdless::guard::breaker::BreakerError>(())
    /// ```
    pub fn threshold(mut self, threshold: u32) -> Self {
        self.threshold = threshold;
        self
    }

    /// The wait behind a probe; each wait is jittered in `[wait / 2, wait]`
    /// (from 1 ms to [`MAX_DURATION`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = herdless::Breaker::builder().probe_wait(Duration::from_millis(50)).build()?;
    /// assert_eq!(b.probe_wait_time(), Duration::from_millis(50));
    /// # Ok::<(), herdless::guard::breaker::BreakerError>(())
    /// ```
    pub fn probe_wait(mut self, wait: Duration) -> Self {
        self.probe_wait = wait;
        self
    }

    /// Validates and builds.
    ///
    /// # Errors
    ///
    /// [`BreakerError`] naming the setting: a threshold of 0, a probe wait
    /// below 1 ms or above [`MAX_DURATION`].
    ///
    /// ```
    /// use std::time::Duration;
    /// let err = herdless::Breaker::builder().probe_wait(Duration::from_micros(500)).build().unwrap_err();
    /// assert_eq!(err.to_string(), "invalid breaker probe_wait: 500µs is below the minimum 1ms");
    /// ```
    pub fn build(self) -> Result<Breaker, BreakerError> {
        if self.threshold == 0 {
            return Err(BreakerError {
                field: "threshold",
                message: "must be at least 1".into(),
            });
        }
        let wait = self.probe_wait;
        if wait < Breaker::MIN_PROBE_WAIT {
            return Err(BreakerError {
                field: "probe_wait",
                message: format!("{wait:?} is below the minimum 1ms"),
            });
        }
        if wait > MAX_DURATION {
            return Err(BreakerError {
                field: "probe_wait",
                message: format!("{wait:?} is above the maximum (2^64 ns, about 584 years)"),
            });
        }
        Ok(Breaker::new(self.threshold).probe_wait(wait))
    }
}

impl From<&Breaker> for BreakerBuilder {
    /// A breaker's settings.
    ///
    /// ```
    /// use herdless::{guard::breaker::BreakerBuilder, Breaker};
    /// assert_eq!(BreakerBuilder::from(&Breaker::new(4)).build()?.threshold(), 4);
    /// # Ok::<(), herdless::guard::breaker::BreakerError>(())
    /// ```
    fn from(b: &Breaker) -> Self {
        BreakerBuilder {
            threshold: b.threshold(),
            probe_wait: b.probe_wait_time(),
        }
    }
}

/// An invalid [`BreakerBuilder`] setting.
///
/// ```
/// let err = herdless::Breaker::builder().threshold(0).build().unwrap_err();
/// assert_eq!(err.to_string(), "invalid breaker threshold: must be at least 1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakerError {
    field: &'static str,
    message: String,
}

impl BreakerError {
    /// The setting's name: `threshold` or `probe_wait`.
    ///
    /// ```
    /// let err = herdless::Breaker::builder().threshold(0).build().unwrap_err();
    /// assert_eq!(err.field(), "threshold");
    /// ```
    pub fn field(&self) -> &'static str {
        self.field
    }
}

impl fmt::Display for BreakerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid breaker {}: {}", self.field, self.message)
    }
}

impl std::error::Error for BreakerError {}
