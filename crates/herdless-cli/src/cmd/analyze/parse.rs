//! One JSON line into the few fields analyze reads, without building a tree.
//!
//! serde_json drives a visitor over the object: keys are compared in place
//! with the configured field names, the values of the fields read are taken
//! (strings borrowed from the line when they have no escapes), every other
//! value is skipped ([`IgnoredAny`]). A field is found at the top level, or
//! inside an object `fields` (the layout of `tracing-subscriber`'s JSON
//! layer), or at a dotted name one level deep (`--task-field extra.task_id`).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::time::{from_epoch_seconds, parse_rfc3339};

/// The fields read, by slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fields {
    /// Each slot's name, split at the first dot: time, event, task, attempt,
    /// sleep, status, honored, reason.
    names: [(String, Option<String>); SLOTS],
}

const SLOTS: usize = 8;
const TIME: usize = 0;
const EVENT: usize = 1;
const TASK: usize = 2;
const ATTEMPT: usize = 3;
const SLEEP: usize = 4;
const STATUS: usize = 5;
const HONORED: usize = 6;
const REASON: usize = 7;

impl Fields {
    /// The names of the time, event, task, attempt, sleep and status fields
    /// (`honored_retry_after` and `reason` are herdless's own names).
    pub(crate) fn new(
        time: &str,
        event: &str,
        task: &str,
        attempt: &str,
        sleep: &str,
        status: &str,
    ) -> Fields {
        let split = |s: &str| match s.split_once('.') {
            Some((a, b)) => (a.to_string(), Some(b.to_string())),
            None => (s.to_string(), None),
        };
        Fields {
            names: [
                split(time),
                split(event),
                split(task),
                split(attempt),
                split(sleep),
                split(status),
                split("honored_retry_after"),
                split("reason"),
            ],
        }
    }
}

/// What one line holds of the fields read.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Record<'a> {
    /// Nanoseconds since the epoch.
    pub(crate) time_ns: Option<i64>,
    /// The event's name.
    pub(crate) event: Option<Cow<'a, str>>,
    /// The task id (a number is read as its digits).
    pub(crate) task: Option<Cow<'a, str>>,
    /// The attempt number.
    pub(crate) attempt: Option<u32>,
    /// The sleep before the next attempt, seconds.
    pub(crate) sleep_s: Option<f64>,
    /// The failed attempt's status (HTTP).
    pub(crate) status: Option<i64>,
    /// Whether a server's delay was honored.
    pub(crate) honored: Option<bool>,
    /// Why the budget ended the call.
    pub(crate) reason: Option<Cow<'a, str>>,
}

/// Parses one line; `None` when it is not a JSON object. A UTF-8 byte
/// order mark before it (a file's first line, as PowerShell and Notepad
/// write them) is not part of the line.
pub(crate) fn parse_line<'a>(line: &'a [u8], fields: &Fields) -> Option<Record<'a>> {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let mut de = serde_json::Deserializer::from_slice(line);
    let rec = de
        .deserialize_map(Level {
            fields,
            parent: None,
        })
        .ok()?;
    de.end().ok()?;
    Some(rec)
}

/// A value of any JSON type, kept only when it is a scalar.
enum Scalar<'a> {
    Str(Cow<'a, str>),
    U(u64),
    I(i64),
    F(f64),
    B(bool),
    Other,
}

impl<'de> de::Deserialize<'de> for Scalar<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Scalar::U(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Scalar::I(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Scalar::F(v))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Scalar::B(v))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }
}

impl<'a> Scalar<'a> {
    fn number(&self) -> Option<f64> {
        match self {
            Scalar::U(v) => Some(*v as f64),
            Scalar::I(v) => Some(*v as f64),
            Scalar::F(v) => Some(*v),
            Scalar::Str(s) => s.trim().parse().ok(),
            _ => None,
        }
    }
    fn into_text(self) -> Option<Cow<'a, str>> {
        match self {
            Scalar::Str(s) => Some(s),
            Scalar::U(v) => Some(Cow::Owned(v.to_string())),
            Scalar::I(v) => Some(Cow::Owned(v.to_string())),
            _ => None,
        }
    }
}

fn store<'a>(rec: &mut Record<'a>, slot: usize, v: Scalar<'a>) {
    match slot {
        TIME if rec.time_ns.is_none() => {
            rec.time_ns = match &v {
                Scalar::Str(s) => parse_rfc3339(s),
                other => other.number().and_then(from_epoch_seconds),
            }
        }
        EVENT if rec.event.is_none() => rec.event = v.into_text(),
        TASK if rec.task.is_none() => rec.task = v.into_text(),
        ATTEMPT if rec.attempt.is_none() => {
            rec.attempt = v
                .number()
                .filter(|n| *n >= 0.0 && *n <= f64::from(u32::MAX))
                .map(|n| n as u32)
        }
        SLEEP if rec.sleep_s.is_none() => {
            rec.sleep_s = v.number().filter(|s| s.is_finite() && *s >= 0.0)
        }
        STATUS if rec.status.is_none() => {
            rec.status = v.number().filter(|s| s.fract() == 0.0).map(|s| s as i64)
        }
        HONORED if rec.honored.is_none() => {
            rec.honored = if let Scalar::B(b) = v { Some(b) } else { None }
        }
        REASON if rec.reason.is_none() => rec.reason = v.into_text(),
        _ => {}
    }
}

/// An object at the top level (`parent: None`) or one level down, under the key `parent`.
struct Level<'f, 'p> {
    fields: &'f Fields,
    parent: Option<&'p str>,
}

impl<'de> DeserializeSeed<'de> for Level<'_, '_> {
    type Value = Record<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Level<'_, '_> {
    type Value = Record<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut rec = Record::default();
        while let Some(key) = map.next_key::<Scalar<'de>>()? {
            let Scalar::Str(key) = key else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            let names = &self.fields.names;
            let slot = names.iter().position(|(a, b)| match self.parent {
                None => b.is_none() && *a == *key,
                Some(p) => match b {
                    Some(b) => a == p && *b == *key,
                    None => p == "fields" && *a == *key,
                },
            });
            match slot {
                Some(slot) => store(&mut rec, slot, map.next_value::<Scalar<'de>>()?),
                None if self.parent.is_none()
                    && (&*key == "fields"
                        || names.iter().any(|(a, b)| b.is_some() && *a == *key)) =>
                {
                    let inner = map.next_value_seed(Level {
                        fields: self.fields,
                        parent: Some(&key),
                    })?;
                    merge(&mut rec, inner);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(rec)
    }
    // A nested `fields` that is not an object is skipped, not an error.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Record::default())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        match self.parent {
            Some(_) => Ok(Record::default()),
            None => Err(E::custom("not an object")),
        }
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        self.visit_str("")
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        self.visit_str("")
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        self.visit_str("")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        self.visit_str("")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.visit_str("")
    }
}

fn merge<'a>(rec: &mut Record<'a>, inner: Record<'a>) {
    rec.time_ns = rec.time_ns.or(inner.time_ns);
    rec.event = rec.event.take().or(inner.event);
    rec.task = rec.task.take().or(inner.task);
    rec.attempt = rec.attempt.or(inner.attempt);
    rec.sleep_s = rec.sleep_s.or(inner.sleep_s);
    rec.status = rec.status.or(inner.status);
    rec.honored = rec.honored.or(inner.honored);
    rec.reason = rec.reason.take().or(inner.reason);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn herdless_fields() -> Fields {
        Fields::new(
            "timestamp",
            "event",
            "task_id",
            "attempt",
            "sleep_s",
            "status",
        )
    }

    #[test]
    fn reads_herdless_lines_and_the_tracing_json_layout() {
        let f = herdless_fields();
        let line = br#"{"timestamp":"1970-01-01T00:00:01Z","event":"retry_scheduled","task_id":"w-1","attempt":2,"computed_jitter_s":0.1,"sleep_s":0.25,"honored_retry_after":false,"elapsed_s":1.5,"status":404}"#;
        let r = parse_line(line, &f).unwrap();
        assert_eq!(r.time_ns, Some(1_000_000_000));
        assert_eq!(r.event.as_deref(), Some("retry_scheduled"));
        assert_eq!(r.task.as_deref(), Some("w-1"));
        assert!(
            matches!(r.task, Some(Cow::Borrowed(_))),
            "no escape: borrowed"
        );
        assert_eq!(
            (r.attempt, r.sleep_s, r.status, r.honored),
            (Some(2), Some(0.25), Some(404), Some(false))
        );
        let tracing = br#"{"timestamp":"1970-01-01T00:00:02.5Z","level":"ERROR","fields":{"message":"retry_budget_exhausted","event":"retry_budget_exhausted","task_id":"a\"b","attempt":6,"elapsed_s":3.0,"reason":"max_attempts"},"target":"herdless"}"#;
        let r = parse_line(tracing, &f).unwrap();
        assert_eq!(r.time_ns, Some(2_500_000_000));
        assert_eq!(r.event.as_deref(), Some("retry_budget_exhausted"));
        assert_eq!(r.task.as_deref(), Some("a\"b"));
        assert_eq!(r.reason.as_deref(), Some("max_attempts"));
    }

    #[test]
    fn other_producers_by_their_field_names_and_bad_lines() {
        let f = Fields::new("ts", "msg", "extra.job", "try", "sleep_s", "status");
        let line =
            br#"{"ts":1.5,"msg":"retry_scheduled","extra":{"job":42,"x":[1,{"y":2}]},"try":"3"}"#;
        let r = parse_line(line, &f).unwrap();
        assert_eq!(r.time_ns, Some(1_500_000_000));
        assert_eq!(r.task.as_deref(), Some("42"));
        assert_eq!(r.attempt, Some(3));
        for bad in [
            &b"not json"[..],
            b"[1,2]",
            b"\"str\"",
            b"{\"a\":",
            b"{} {}",
            b"\xff\xfe{}",
        ] {
            assert_eq!(
                parse_line(bad, &f),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(
            parse_line(b"{\"fields\":3}", &herdless_fields()),
            Some(Record::default())
        );
    }
}
