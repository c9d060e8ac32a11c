//! [`TimedOut`]: what an attempt cut at its deadline ends with.

use std::fmt;
use std::time::Duration;

/// An attempt that the async executors dropped at its deadline (the policy's
/// [`attempt_timeout`](crate::Policy::attempt_timeout), or what was left of
/// the elapsed limit). The classifier turns it into the operation's error
/// type ([`Classify::timed_out`](crate::Classify::timed_out)); the engine
/// counts the failure as a [`RetryCause::Timeout`](crate::RetryCause) and
/// the events carry `timed_out = true`.
///
/// ```
/// use std::time::Duration;
/// use herdless::engine::TimedOut;
/// let t = TimedOut::new(2, Duration::from_millis(1500));
/// assert_eq!(t.to_string(), "attempt 2 timed out after 1.5 s");
/// let io: std::io::Error = t.into();
/// assert_eq!(io.kind(), std::io::ErrorKind::TimedOut);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimedOut {
    attempt: u32,
    after: Duration,
    started: bool,
}

impl TimedOut {
    /// Attempt `attempt` (1-based) was cut after running `after`.
    ///
    /// ```
    /// let t = herdless::engine::TimedOut::new(1, std::time::Duration::from_secs(2));
    /// assert_eq!(t.attempt(), 1);
    /// ```
    pub fn new(attempt: u32, after: Duration) -> Self {
        TimedOut {
            attempt,
            after,
            started: true,
        }
    }

    /// Attempt `attempt` (1-based) never started: its call's time ran out
    /// while it waited for its turn at a [throttle](crate::fleet::Throttle).
    /// What [`Classify::unstarted`](crate::Classify::unstarted) turns into
    /// the error a call that made no attempt ends with; it ran for no time.
    ///
    /// ```
    /// let t = herdless::engine::TimedOut::unstarted(1);
    /// assert!(!t.started());
    /// assert!(t.after().is_zero());
    /// assert_eq!(t.to_string(), "attempt 1 not started: the call's time ran out before its turn");
    /// ```
    pub fn unstarted(attempt: u32) -> Self {
        TimedOut {
            attempt,
            after: Duration::ZERO,
            started: false,
        }
    }

    /// Whether the attempt started (and was cut); `false` for
    /// [`unstarted`](Self::unstarted).
    ///
    /// ```
    /// assert!(herdless::engine::TimedOut::new(1, Default::default()).started());
    /// ```
    pub fn started(&self) -> bool {
        self.started
    }

    /// The attempt that was cut (1-based).
    ///
    /// ```
    /// assert_eq!(herdless::engine::TimedOut::new(3, Default::default()).attempt(), 3);
    /// ```
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// How long it ran: the time it was given.
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(herdless::engine::TimedOut::new(1, Duration::from_secs(4)).after(), Duration::from_secs(4));
    /// ```
    pub fn after(&self) -> Duration {
        self.after
    }
}

impl fmt::Display for TimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.started {
            return write!(
                f,
                "attempt {} not started: the call's time ran out before its turn",
                self.attempt
            );
        }
        write!(
            f,
            "attempt {} timed out after {} s",
            self.attempt,
            self.after.as_secs_f64()
        )
    }
}

impl std::error::Error for TimedOut {}

/// `ErrorKind::TimedOut`, carrying the `TimedOut` (retryable by
/// [`ByTrait`](crate::ByTrait), and a timeout for a shared budget).
impl From<TimedOut> for std::io::Error {
    fn from(t: TimedOut) -> Self {
        std::io::Error::new(std::io::ErrorKind::TimedOut, t)
    }
}
