//! [`TaskState`]: the engine's per-call state as one message header, and its
//! decoder, which refuses anything it does not fully understand.

use std::fmt;
use std::time::Duration;

use crate::rng::IdempotencyKey;

/// The header that carries a task's [`TaskState`].
pub const STATE_HEADER: &str = "Herdless-State";

/// The format version this build writes and reads.
pub const STATE_VERSION: u32 = 1;

/// The longest state header accepted, in bytes (a full state is about 100).
pub const MAX_STATE_LEN: usize = 256;

/// What a task's message says about its retry chain. Every field is optional:
/// a publisher stamps what it knows, a worker fills in the rest from the
/// broker (see the [module documentation](crate::redelivery)).
///
/// Wire form, version 1: `1;a=ATTEMPTS;t=FIRST_ATTEMPT_MS;k=KEY;s=SEED`, the
/// version first, then any of the fields once each, in any order:
///
/// | field | value | meaning |
/// |---|---|---|
/// | `a` | decimal `u32` | attempts made before this message was published |
/// | `t` | decimal `u64` | when the first attempt started: milliseconds since the Unix epoch, wall clock |
/// | `k` | UUID, `8-4-4-4-12` hex | the task's idempotency key |
/// | `s` | 1–16 hex digits | the seed of the task's generators |
///
/// ```
/// use std::time::Duration;
/// use herdless::redelivery::TaskState;
/// use herdless::IdempotencyKey;
/// let state = TaskState {
///     attempts: 1,
///     first_attempt: Some(Duration::from_millis(1_700_000_000_123)),
///     key: Some(IdempotencyKey::from_bits(7)),
///     seed: Some(0xfeed),
/// };
/// let header = state.encode();
/// assert_eq!(header, "1;a=1;t=1700000000123;k=00000000-0000-4000-8000-000000000007;s=feed");
/// assert_eq!(TaskState::decode(&header)?, state);
/// # Ok::<(), herdless::redelivery::StateError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TaskState {
    /// Attempts made before this message was published (by a publisher that
    /// tried once inline, or the chain a dead-lettered task had run).
    pub attempts: u32,
    /// When the first attempt started, since the Unix epoch (wall clock,
    /// millisecond precision on the wire).
    pub first_attempt: Option<Duration>,
    /// The task's idempotency key.
    pub key: Option<IdempotencyKey>,
    /// The seed of the task's generators.
    pub seed: Option<u64>,
}

/// Why a state header was refused.
///
/// ```
/// use herdless::redelivery::{StateError, TaskState};
/// assert_eq!(TaskState::decode("2;a=1"), Err(StateError::UnknownVersion));
/// assert_eq!(TaskState::decode("1;a=-1").unwrap_err().reason(), "garbled");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateError {
    /// Longer than [`MAX_STATE_LEN`].
    TooLong,
    /// A version this build does not read.
    UnknownVersion,
    /// Not the format: a bad field, value, separator or a repeated field.
    Garbled,
}

impl StateError {
    /// The reason as the `retry_state_invalid` event names it: `too_long`,
    /// `unknown_version`, `garbled`.
    ///
    /// ```
    /// assert_eq!(herdless::redelivery::StateError::TooLong.reason(), "too_long");
    /// ```
    pub const fn reason(self) -> &'static str {
        match self {
            StateError::TooLong => "too_long",
            StateError::UnknownVersion => "unknown_version",
            StateError::Garbled => "garbled",
        }
    }
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self {
            StateError::TooLong => "longer than 256 bytes",
            StateError::UnknownVersion => "a version this build does not read",
            StateError::Garbled => "not the Herdless-State format",
        };
        write!(f, "invalid {STATE_HEADER} header: {what}")
    }
}

impl std::error::Error for StateError {}

impl TaskState {
    /// The header value (version 1); fields that are `None` (and `a=0`) are
    /// left out.
    ///
    /// ```
    /// assert_eq!(herdless::redelivery::TaskState::default().encode(), "1");
    /// ```
    pub fn encode(&self) -> String {
        let mut out = STATE_VERSION.to_string();
        if self.attempts > 0 {
            out.push_str(&format!(";a={}", self.attempts));
        }
        if let Some(t) = self.first_attempt {
            let ms = u64::try_from(t.as_millis()).unwrap_or(u64::MAX);
            out.push_str(&format!(";t={ms}"));
        }
        if let Some(k) = self.key {
            out.push_str(&format!(";k={k}"));
        }
        if let Some(s) = self.seed {
            out.push_str(&format!(";s={s:x}"));
        }
        out
    }

    /// Reads a header value. Never panics; anything but the exact format
    /// (surrounding ASCII spaces aside) is an error, so the caller can fall
    /// back on what the broker vouches for.
    ///
    /// ```
    /// use herdless::redelivery::{StateError, TaskState};
    /// assert_eq!(TaskState::decode(" 1;a=2 ")?.attempts, 2);
    /// assert_eq!(TaskState::decode("1;a=2;a=3"), Err(StateError::Garbled));
    /// # Ok::<(), StateError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`StateError`]: too long, an unknown version, or garbled.
    pub fn decode(header: &str) -> Result<TaskState, StateError> {
        if header.len() > MAX_STATE_LEN {
            return Err(StateError::TooLong);
        }
        let mut fields = header.trim_matches(' ').split(';');
        let version = fields.next().unwrap_or_default();
        match digits(version, 10) {
            Some(v) if v == u64::from(STATE_VERSION) => {}
            Some(_) => return Err(StateError::UnknownVersion),
            None => return Err(StateError::Garbled),
        }
        let mut state = TaskState::default();
        let mut seen = [false; 4];
        for field in fields {
            let (name, value) = field.split_once('=').ok_or(StateError::Garbled)?;
            let slot = match name {
                "a" => {
                    state.attempts = digits(value, 10)
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or(StateError::Garbled)?;
                    0
                }
                "t" => {
                    let ms = digits(value, 10).ok_or(StateError::Garbled)?;
                    state.first_attempt = Some(Duration::from_millis(ms));
                    1
                }
                "k" => {
                    state.key = Some(value.parse().map_err(|_| StateError::Garbled)?);
                    2
                }
                "s" => {
                    state.seed = Some(digits(value, 16).ok_or(StateError::Garbled)?);
                    3
                }
                _ => return Err(StateError::Garbled),
            };
            if std::mem::replace(&mut seen[slot], true) {
                return Err(StateError::Garbled);
            }
        }
        Ok(state)
    }
}

/// A run of 1 to 20 digits in `radix` (10 or 16) that fits a `u64`; no sign,
/// no prefix, no spaces.
fn digits(s: &str, radix: u32) -> Option<u64> {
    let max = if radix == 16 { 16 } else { 20 };
    if s.is_empty() || s.len() > max || !s.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(s, radix).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_every_near_miss() {
        for bad in [
            "",
            "x",
            "1;",
            "1;a",
            "1;a=",
            "1;a=+1",
            "1;a=1;",
            "1;a=4294967296",
            "1;t=1.5",
            "1;k=nope",
            "1;s=0x1f",
            "1;s=11111111111111111",
            "1;z=1",
            "1; a=1",
            "01x",
            "1;t=99999999999999999999",
            "1,a=1",
        ] {
            assert!(TaskState::decode(bad).is_err(), "{bad:?}");
        }
        assert_eq!(TaskState::decode("7"), Err(StateError::UnknownVersion));
        assert_eq!(
            TaskState::decode(&"1".repeat(300)),
            Err(StateError::TooLong)
        );
        assert_eq!(TaskState::decode("1").unwrap(), TaskState::default());
        assert_eq!(TaskState::decode("1;s=FF").unwrap().seed, Some(255));
    }
}
