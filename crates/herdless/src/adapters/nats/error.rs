//! [`NatsError`], and the consumer settings a worker refuses to run with.

use std::fmt;

use async_nats::jetstream::consumer::{self, AckPolicy};

use crate::policy::Policy;

/// Why the worker cannot go on: a consumer it refuses to drive, or a broker
/// operation that failed.
///
/// ```
/// use herdless::adapters::nats::NatsError;
/// let e = NatsError::Config("no".into());
/// assert_eq!(e.to_string(), "no");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum NatsError {
    /// The consumer or the dead-letter subject cannot be used as configured
    /// (the message says what to change).
    Config(String),
    /// A broker operation failed.
    Broker {
        /// What was being done (`fetching messages`, `acknowledging`, …).
        doing: &'static str,
        /// The client's error.
        source: async_nats::Error,
    },
}

impl NatsError {
    pub(crate) fn broker(doing: &'static str, source: impl Into<async_nats::Error>) -> Self {
        NatsError::Broker {
            doing,
            source: source.into(),
        }
    }
}

impl fmt::Display for NatsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NatsError::Config(message) => f.write_str(message),
            NatsError::Broker { doing, source } => write!(f, "{doing}: {source}"),
        }
    }
}

impl std::error::Error for NatsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NatsError::Config(_) => None,
            NatsError::Broker { source, .. } => Some(source.as_ref()),
        }
    }
}

/// Refuses a consumer whose settings would let a task slip past the policy:
/// acknowledgements must be explicit (a NAK must mean "redeliver"), the
/// consumer must not stop redelivering before the policy gives up
/// (`max_deliver` unlimited or at least `max_attempts`: past it the broker
/// drops the task without a dead letter), and it must have no `BackOff`
/// list (a fixed, unjittered schedule: every redelivery delay must be the
/// engine's).
pub(crate) fn check_consumer(info: &consumer::Info, policy: &Policy) -> Result<(), NatsError> {
    let name = format!("consumer {:?} of stream {:?}", info.name, info.stream_name);
    let c = &info.config;
    if c.ack_policy != AckPolicy::Explicit {
        return Err(NatsError::Config(format!(
            "{name} must acknowledge explicitly (ack_policy explicit): a retry is a NAK \
             with a delay"
        )));
    }
    if c.max_deliver > 0 && c.max_deliver < i64::from(policy.max_attempts()) {
        return Err(NatsError::Config(format!(
            "{name} stops redelivering after {} deliveries, before the policy's {} \
             attempts: the broker would drop a task without a dead letter (set max_deliver \
             to -1, or at least max_attempts)",
            c.max_deliver,
            policy.max_attempts()
        )));
    }
    if !c.backoff.is_empty() {
        return Err(NatsError::Config(format!(
            "{name} has a BackOff list: its fixed delays would replace the engine's jittered \
             ones (remove it)"
        )));
    }
    Ok(())
}
