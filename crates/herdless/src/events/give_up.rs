//! [`GiveUp`]: why a call stopped retrying, in its error and in its last
//! event (the `reason` of `retry_budget_exhausted`).

use std::fmt;

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
