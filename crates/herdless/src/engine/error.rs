//! The error a retried call returns: why it stopped, after how much, and the last error.

use std::fmt;
use std::time::Duration;

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
    /// The server asked not to be retried
    /// ([`Classification::ServerPushback`](crate::Classification::ServerPushback):
    /// gRPC's negative or unparseable `grpc-retry-pushback-ms`). Counted as
    /// exhaustion, not as a terminal error: the server's capacity, not the
    /// request, ended the call.
    ///
    /// ```
    /// assert_eq!(herdless::GiveUp::ServerPushback.as_str(), "server_pushback");
    /// assert!(herdless::GiveUp::ServerPushback.is_exhausted());
    /// ```
    ServerPushback,
}

impl GiveUp {
    /// The reason's name as used in events and JSON: `terminal`, `max_attempts`,
    /// `max_elapsed`, `retry_budget`, `server_pushback`.
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
            GiveUp::ServerPushback => "server_pushback",
        }
    }

    /// Whether a budget (not the error) ended the call: every reason but
    /// [`Terminal`](Self::Terminal), the server's pushback included.
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

/// A retried call that did not succeed: terminal error or exhausted budget.
///
/// Every started call ends in exactly one of success (`Ok`), a terminal error
/// ([`GiveUp::Terminal`]) or an exhausted budget (the other reasons, a server's
/// pushback included), and this
/// error says which, how many attempts were made, how long it took, and carries
/// the operation's last error.
///
/// ```
/// use herdless::{AlwaysRetry, GiveUp, ManualTimer, Policy, Retry};
/// let policy = Policy::builder().max_attempts(3).build()?;
/// let err = Retry::builder()
///     .policy(policy)
///     .classifier(AlwaysRetry)
///     .timer(ManualTimer::new())
///     .build()
///     .call(|_| Err::<(), _>("still busy"))
///     .unwrap_err();
/// assert_eq!(err.reason(), GiveUp::MaxAttempts);
/// assert_eq!(err.attempts(), 3);
/// assert_eq!(*err.last_error(), "still busy");
/// assert!(err.to_string().starts_with("gave up after 3 attempts"));
/// # Ok::<(), herdless::PolicyError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct RetryError<E> {
    pub(crate) reason: GiveUp,
    pub(crate) attempts: u32,
    pub(crate) elapsed: Duration,
    pub(crate) last: E,
}

impl<E> RetryError<E> {
    /// Why the call stopped.
    ///
    /// ```
    /// # use herdless::{GiveUp, ManualTimer, Policy, Retry, Classification};
    /// let err = Retry::builder()
    ///     .policy(Policy::default())
    ///     .classifier(|_: &&str| Classification::terminal())
    ///     .timer(ManualTimer::new())
    ///     .build()
    ///     .call(|_| Err::<(), _>("401"))
    ///     .unwrap_err();
    /// assert_eq!(err.reason(), GiveUp::Terminal);
    /// ```
    pub fn reason(&self) -> GiveUp {
        self.reason
    }

    /// How many attempts were made: at least 1, except for a call whose time
    /// ran out while its first attempt waited for its turn at a
    /// [throttle](crate::fleet::Throttle) (0, reason
    /// [`GiveUp::MaxElapsed`], and the classifier's
    /// [`unstarted`](crate::Classify::unstarted) error as the last).
    ///
    /// ```
    /// # use herdless::{ManualTimer, Policy, Retry, Classification};
    /// let err = Retry::builder()
    ///     .policy(Policy::default())
    ///     .classifier(|_: &&str| Classification::terminal())
    ///     .timer(ManualTimer::new())
    ///     .build()
    ///     .call(|_| Err::<(), _>("401"))
    ///     .unwrap_err();
    /// assert_eq!(err.attempts(), 1);
    /// ```
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Time from the first attempt's start to giving up (monotonic clock).
    ///
    /// ```
    /// # use herdless::{ManualTimer, Policy, Retry, Classification};
    /// let err = Retry::builder()
    ///     .policy(Policy::default())
    ///     .classifier(|_: &&str| Classification::terminal())
    ///     .timer(ManualTimer::new())
    ///     .build()
    ///     .call(|_| Err::<(), _>("401"))
    ///     .unwrap_err();
    /// assert!(err.elapsed().is_zero()); // virtual time
    /// ```
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// The operation's last error (for a call that made no attempt, the
    /// classifier's [`unstarted`](crate::Classify::unstarted) error).
    ///
    /// ```
    /// # use herdless::{ManualTimer, Policy, Retry, Classification};
    /// let err = Retry::builder()
    ///     .policy(Policy::default())
    ///     .classifier(|_: &&str| Classification::terminal())
    ///     .timer(ManualTimer::new())
    ///     .build()
    ///     .call(|_| Err::<(), _>("401"))
    ///     .unwrap_err();
    /// assert_eq!(*err.last_error(), "401");
    /// ```
    pub fn last_error(&self) -> &E {
        &self.last
    }

    /// Consumes the error, returning the operation's last error.
    ///
    /// ```
    /// # use herdless::{ManualTimer, Policy, Retry, Classification};
    /// let err = Retry::builder()
    ///     .policy(Policy::default())
    ///     .classifier(|_: &String| Classification::terminal())
    ///     .timer(ManualTimer::new())
    ///     .build()
    ///     .call(|_| Err::<(), _>("401".to_string()))
    ///     .unwrap_err();
    /// assert_eq!(err.into_last_error(), "401");
    /// ```
    pub fn into_last_error(self) -> E {
        self.last
    }

    /// Whether a terminal (or unknown) error ended the call.
    ///
    /// ```
    /// # use herdless::{ManualTimer, Policy, Retry, Classification};
    /// let err = Retry::builder()
    ///     .policy(Policy::default())
    ///     .classifier(|_: &&str| Classification::Unknown)
    ///     .timer(ManualTimer::new())
    ///     .build()
    ///     .call(|_| Err::<(), _>("?"))
    ///     .unwrap_err();
    /// assert!(err.is_terminal()); // fails closed
    /// ```
    pub fn is_terminal(&self) -> bool {
        self.reason == GiveUp::Terminal
    }

    /// Whether a budget (attempts, elapsed time, a shared retry budget or the
    /// server's pushback) ended the call.
    ///
    /// ```
    /// # use herdless::{AlwaysRetry, ManualTimer, Policy, Retry};
    /// let err = Retry::builder()
    ///     .policy(Policy::builder().max_attempts(2).build()?)
    ///     .classifier(AlwaysRetry)
    ///     .timer(ManualTimer::new())
    ///     .build()
    ///     .call(|_| Err::<(), _>("busy"))
    ///     .unwrap_err();
    /// assert!(err.is_exhausted());
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn is_exhausted(&self) -> bool {
        self.reason.is_exhausted()
    }
}

impl<E: fmt::Debug> fmt::Debug for RetryError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryError")
            .field("reason", &self.reason)
            .field("attempts", &self.attempts)
            .field("elapsed", &self.elapsed)
            .field("last", &self.last)
            .finish()
    }
}

impl<E: fmt::Display> fmt::Display for RetryError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = if self.attempts == 1 { "" } else { "s" };
        write!(
            f,
            "gave up after {} attempt{plural} in {:.3} s ({}): {}",
            self.attempts,
            self.elapsed.as_secs_f64(),
            self.reason,
            self.last
        )
    }
}

impl<E> std::error::Error for RetryError<E>
where
    E: std::error::Error + 'static,
{
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.last)
    }
}
