//! The value syntax: human durations, numbers, whole numbers, jitter names.

use std::fmt;
use std::time::Duration;

use ::serde::de::{self, Visitor};

use crate::policy::Jitter;

/// Parses a duration in human form: `500ms`, `2s`, `1m`, `1h 30m`,
/// `1s 500ms`; a bare number is seconds (`1.5`).
///
/// ```
/// use std::time::Duration;
/// use herdless::policy::serde::parse_duration;
/// assert_eq!(parse_duration("500ms")?, Duration::from_millis(500));
/// assert_eq!(parse_duration("1m 30s")?, Duration::from_secs(90));
/// assert_eq!(parse_duration("1.5")?, Duration::from_millis(1500));
/// assert!(parse_duration("soon").unwrap_err().to_string().starts_with("\"soon\": "));
/// # Ok::<(), herdless::policy::serde::ParseDurationError>(())
/// ```
///
/// # Errors
///
/// Empty, negative, out of range, or not a duration.
pub fn parse_duration(s: &str) -> Result<Duration, ParseDurationError> {
    let t = s.trim();
    let message = if t.is_empty() {
        "empty duration".to_owned()
    } else if let Ok(secs) = t.parse::<f64>() {
        match Duration::try_from_secs_f64(secs) {
            Ok(d) => return Ok(d),
            Err(_) => format!("{t:?} is not a non-negative number of seconds within range"),
        }
    } else {
        match humantime::parse_duration(t) {
            Ok(d) => return Ok(d),
            Err(e) => format!("{t:?}: {e} (examples: 500ms, 2s, 1m)"),
        }
    };
    Err(ParseDurationError { message })
}

/// Formats a duration in the human form [`parse_duration`] reads back
/// exactly (`"500ms"`, `"1m 30s"`, `"1s 3ns"`).
///
/// ```
/// use std::time::Duration;
/// use herdless::policy::serde::format_duration;
/// assert_eq!(format_duration(Duration::from_millis(90_500)), "1m 30s 500ms");
/// ```
pub fn format_duration(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// A string [`parse_duration`] refused; the message quotes it.
///
/// ```
/// let err = herdless::policy::serde::parse_duration("").unwrap_err();
/// assert_eq!(err.to_string(), "empty duration");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseDurationError {
    message: String,
}

impl fmt::Display for ParseDurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ParseDurationError {}

/// A `Duration` field in human form, for `#[serde(with = "herdless::policy::serde::duration")]`:
/// serialized as [`format_duration`], deserialized from a string
/// ([`parse_duration`]) or a non-negative number of seconds.
///
/// ```
/// use std::time::Duration;
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Job {
///     #[serde(with = "herdless::policy::serde::duration")]
///     timeout: Duration,
/// }
/// let job: Job = serde_json::from_str(r#"{"timeout": "2m"}"#)?;
/// assert_eq!(job.timeout, Duration::from_secs(120));
/// assert_eq!(serde_json::to_string(&job)?, r#"{"timeout":"2m"}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub mod duration {
    use std::time::Duration;

    use ::serde::{Deserializer, Serializer};

    /// Serializes `d` as [`format_duration`](super::format_duration).
    ///
    /// ```
    /// let json = herdless::policy::serde::duration::serialize(
    ///     &std::time::Duration::from_secs(30), serde_json::value::Serializer)?;
    /// assert_eq!(json, "30s");
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The serializer's.
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_duration(*d))
    }

    /// Deserializes a human duration string or a number of seconds.
    ///
    /// ```
    /// let d = herdless::policy::serde::duration::deserialize(serde_json::json!(1.5))?;
    /// assert_eq!(d.as_millis(), 1500);
    /// let err = herdless::policy::serde::duration::deserialize(serde_json::json!(true));
    /// assert!(err.unwrap_err().to_string().starts_with("expected a duration"));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Not a duration (the message says what was found instead).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        d.deserialize_any(super::Human(""))
    }
}

/// Refuses a value of the wrong kind with `expected WHAT, found KIND`.
macro_rules! wrong_kinds {
    ($what:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Err(found(self.0, $what, "boolean"))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Err(found(self.0, $what, "nothing"))
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
            Err(found(self.0, $what, "array"))
        }
        fn visit_map<A: de::MapAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
            Err(found(self.0, $what, "table"))
        }
    };
}

pub(crate) fn found<E: de::Error>(field: &str, what: &str, kind: &str) -> E {
    err(field, format_args!("expected {what}, found {kind}"))
}

/// `invalid FIELD: MESSAGE`, or the message alone without a field.
pub(crate) fn err<E: de::Error>(field: &str, message: impl fmt::Display) -> E {
    if field.is_empty() {
        E::custom(message)
    } else {
        E::custom(format_args!("invalid {field}: {message}"))
    }
}

const A_DURATION: &str = "a duration such as \"500ms\", \"2s\" or a number of seconds";

/// A duration, for the field named (empty: none).
pub(crate) struct Human(pub(crate) &'static str);

impl<'de> Visitor<'de> for Human {
    type Value = Duration;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(A_DURATION)
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Duration, E> {
        parse_duration(s).map_err(|e| err(self.0, e))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Duration, E> {
        Ok(Duration::from_secs(n))
    }
    fn visit_i64<E: de::Error>(self, i: i64) -> Result<Duration, E> {
        u64::try_from(i).map(Duration::from_secs).map_err(|_| {
            err(
                self.0,
                format_args!("{i} is negative (expected a duration such as \"2s\")"),
            )
        })
    }
    fn visit_f64<E: de::Error>(self, f: f64) -> Result<Duration, E> {
        Duration::try_from_secs_f64(f).map_err(|_| {
            err(
                self.0,
                format_args!("{f} is not a non-negative number of seconds within range"),
            )
        })
    }
    wrong_kinds!(A_DURATION);
}

/// A number: integer or float.
pub(crate) struct Number(pub(crate) &'static str);

impl<'de> Visitor<'de> for Number {
    type Value = f64;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number")
    }
    fn visit_f64<E: de::Error>(self, x: f64) -> Result<f64, E> {
        Ok(x)
    }
    fn visit_i64<E: de::Error>(self, i: i64) -> Result<f64, E> {
        Ok(i as f64)
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<f64, E> {
        Ok(n as f64)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<f64, E> {
        Err(found(self.0, "a number", "string"))
    }
    wrong_kinds!("a number");
}

/// A whole number in `0..=max`.
pub(crate) struct Whole(pub(crate) &'static str, pub(crate) u64);

impl<'de> Visitor<'de> for Whole {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a whole number")
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<u64, E> {
        if n <= self.1 {
            Ok(n)
        } else {
            let max = self.1;
            Err(err(
                self.0,
                format_args!("{n} is out of range (expected 0 to {max})"),
            ))
        }
    }
    fn visit_i64<E: de::Error>(self, i: i64) -> Result<u64, E> {
        match u64::try_from(i) {
            Ok(n) => self.visit_u64(n),
            Err(_) => {
                let max = self.1;
                Err(err(
                    self.0,
                    format_args!("{i} is out of range (expected 0 to {max})"),
                ))
            }
        }
    }
    fn visit_f64<E: de::Error>(self, x: f64) -> Result<u64, E> {
        Err(err(
            self.0,
            format_args!("expected a whole number, found {x}"),
        ))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<u64, E> {
        Err(found(self.0, "a whole number", "string"))
    }
    wrong_kinds!("a whole number");
}

/// `true` or `false`.
pub(crate) struct Flag(pub(crate) &'static str);

impl<'de> Visitor<'de> for Flag {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("true or false")
    }
    fn visit_bool<E: de::Error>(self, b: bool) -> Result<bool, E> {
        Ok(b)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<bool, E> {
        Err(found(self.0, "true or false", "integer"))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<bool, E> {
        Err(found(self.0, "true or false", "integer"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<bool, E> {
        Err(found(self.0, "true or false", "float"))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<bool, E> {
        Err(found(self.0, "true or false", "string"))
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Err(found(self.0, "true or false", "nothing"))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<bool, A::Error> {
        Err(found(self.0, "true or false", "array"))
    }
    fn visit_map<A: de::MapAccess<'de>>(self, _: A) -> Result<bool, A::Error> {
        Err(found(self.0, "true or false", "table"))
    }
}

/// One of a few names (a preset's): `Choice(field, names)`.
pub(crate) struct Choice(pub(crate) &'static str, pub(crate) &'static [&'static str]);

impl<'de> Visitor<'de> for Choice {
    type Value = &'static str;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "one of {}", self.1.join(", "))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<&'static str, E> {
        self.1.iter().copied().find(|n| *n == s).ok_or_else(|| {
            let names = self.1.join(", ");
            err(
                self.0,
                format_args!("unknown name {s:?} (expected one of {names})"),
            )
        })
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<&'static str, E> {
        Err(found(self.0, "a string", "integer"))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<&'static str, E> {
        Err(found(self.0, "a string", "integer"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<&'static str, E> {
        Err(found(self.0, "a string", "float"))
    }
    wrong_kinds!("a string");
}

/// A jitter mode by name.
pub(super) struct JitterName(pub(super) &'static str);

impl<'de> Visitor<'de> for JitterName {
    type Value = Jitter;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a jitter mode name")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Jitter, E> {
        s.parse::<Jitter>().map_err(|e| err(self.0, e))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Jitter, E> {
        Err(found(self.0, "a string", "integer"))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Jitter, E> {
        Err(found(self.0, "a string", "integer"))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Jitter, E> {
        Err(found(self.0, "a string", "float"))
    }
    wrong_kinds!("a string");
}
