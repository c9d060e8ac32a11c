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

/// The longest stream or consumer name, in bytes (the server's limit).
pub const MAX_NAME_LEN: usize = 255;

/// The longest dead-letter subject, in bytes (well inside the protocol's
/// 4 KiB control line, which also holds the reply subject and sizes).
pub const MAX_SUBJECT_LEN: usize = 1024;

/// Checks a stream or consumer name as JetStream requires: 1 to
/// [`MAX_NAME_LEN`] bytes, no whitespace or control character, none of
/// `.` `*` `>` `/` `\`. A name the server would refuse is caught before a
/// request is sent (an over-long one makes a request line the server drops
/// the connection for, and the request waits out its timeout).
///
/// ```
/// use herdless::adapters::nats::check_name;
/// assert!(check_name("TASKS").is_ok());
/// assert!(check_name("a.b").unwrap_err().contains("'.'"));
/// assert!(check_name(&"x".repeat(10_000)).unwrap_err().contains("255"));
/// ```
///
/// # Errors
///
/// What is wrong with the name, in words.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a name cannot be empty".into());
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!(
            "a name is at most {MAX_NAME_LEN} bytes, not {}",
            name.len()
        ));
    }
    match name
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || ".*>/\\".contains(*c))
    {
        Some(c) => Err(format!(
            "a name cannot hold {c:?} (no whitespace, control characters, '.', '*', '>', '/' \
             or '\\')"
        )),
        None => Ok(()),
    }
}

/// Checks a subject to publish to: 1 to [`MAX_SUBJECT_LEN`] bytes, tokens
/// separated by `.`, none empty, none a wildcard (`*`, `>`), no whitespace
/// or control character.
///
/// ```
/// use herdless::adapters::nats::check_subject;
/// assert!(check_subject("dead.tasks").is_ok());
/// assert!(check_subject("dead.>").is_err());
/// assert!(check_subject("dead..tasks").is_err());
/// ```
///
/// # Errors
///
/// What is wrong with the subject, in words.
pub fn check_subject(subject: &str) -> Result<(), String> {
    if subject.len() > MAX_SUBJECT_LEN {
        return Err(format!(
            "a subject is at most {MAX_SUBJECT_LEN} bytes, not {}",
            subject.len()
        ));
    }
    if let Some(c) = subject
        .chars()
        .find(|c| c.is_whitespace() || c.is_control())
    {
        return Err(format!("a subject cannot hold {c:?}"));
    }
    if subject
        .split('.')
        .any(|t| t.is_empty() || t == "*" || t == ">")
    {
        return Err("a subject to publish to has no empty token and no wildcard ('*', '>')".into());
    }
    Ok(())
}
