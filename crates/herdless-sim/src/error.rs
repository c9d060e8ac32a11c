//! Errors: invalid scenario parameters, runs that would not end.

use std::fmt;

/// Why a simulation could not run. Every variant says what to change.
///
/// ```
/// let e = herdless_sim::SimError::Invalid("clients must be at least 1".into());
/// assert_eq!(e.to_string(), "invalid parameters: clients must be at least 1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SimError {
    /// A parameter is out of range (the message names it and the range).
    Invalid(String),
    /// More clients than a `u32` index can address.
    TooManyClients,
    /// A run made more calls than the guard allows.
    TooManyCalls(u64),
    /// The run was stopped by its [`Progress`](crate::Progress)
    /// (`cancelled`), before it ended.
    Cancelled,
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Invalid(msg) => write!(f, "invalid parameters: {msg}"),
            SimError::TooManyClients => f.write_str("too many clients (at most 4294967295)"),
            SimError::TooManyCalls(n) => write!(
                f,
                "the run exceeded {n} simulated calls; use fewer clients, a shorter outage \
                 or a larger base delay"
            ),
            SimError::Cancelled => f.write_str("the run was cancelled before it ended"),
        }
    }
}

impl std::error::Error for SimError {}
