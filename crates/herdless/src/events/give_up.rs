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
    /// ([`Classification::DoNotRetry`](crate::Classification::DoNotRetry):
    /// gRPC's negative or unparseable `grpc-retry-pushback-ms`). Counted as
    /// exhaustion, not as a terminal error: the server's capacity, not the
    /// request, ended the call.
    ///
    /// ```
    /// assert_eq!(herdless::GiveUp::DoNotRetry.as_str(), "server_pushback");
    /// assert!(herdless::GiveUp::DoNotRetry.is_exhausted());
    /// ```
    DoNotRetry,
}

impl GiveUp {
    /// The reason's name as used in events and JSON: `terminal`, `max_attempts`,
    /// `max_elapsed`, `retry_budget`, `server_pushback` (for
    /// [`DoNotRetry`](Self::DoNotRetry): the name log pipelines match on, kept
    /// when the variant was renamed).
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
            GiveUp::DoNotRetry => "server_pushback",
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

    /// The old name of [`DoNotRetry`](Self::DoNotRetry): "pushback" now
    /// means only the server's "come back later" ([`pushback`](crate::pushback)).
    #[deprecated(
        since = "0.1.0",
        note = "renamed `GiveUp::DoNotRetry`; this name goes in the next release"
    )]
    #[allow(non_upper_case_globals)]
    pub const ServerPushback: GiveUp = GiveUp::DoNotRetry;
}

impl fmt::Display for GiveUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
