//! The policy file's value kinds beyond the library's policy keys: strings,
//! durations, bounded integers, exit statuses.

use std::time::Duration;

use herdless::policy::serde::duration as human;
use toml::Value;

use crate::codes::CodeSet;

fn kind(v: &Value) -> &'static str {
    v.type_str()
}

pub(super) fn string(v: &Value) -> Result<&str, String> {
    v.as_str()
        .ok_or_else(|| format!("expected a string, found {}", kind(v)))
}

/// A duration: a string in human form (`"500ms"`, `"2m"`) or a number of
/// seconds, by the library's rules (the same as the policy keys').
pub(super) fn duration(v: &Value) -> Result<Duration, String> {
    human::deserialize(v.clone()).map_err(|e| e.message().trim().to_owned())
}

pub(super) fn integer(v: &Value, min: u64, max: u64) -> Result<u64, String> {
    match v {
        Value::Integer(i) => u64::try_from(*i)
            .ok()
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| format!("{i} is out of range (expected {min} to {max})")),
        other => Err(format!("expected a whole number, found {}", kind(other))),
    }
}

/// Exit statuses: `"75,111,200-210"` or `[75, 111]`.
pub(super) fn codes(v: &Value) -> Result<CodeSet, String> {
    match v {
        Value::String(s) => s.parse::<CodeSet>().map_err(|e| e.to_string()),
        Value::Array(items) => {
            let mut set = CodeSet::empty();
            for item in items {
                let c = integer(item, 0, 255)?;
                set.insert(c as u8);
            }
            Ok(set)
        }
        other => Err(format!(
            "expected exit statuses such as \"75,111,200-210\" or [75, 111], found {}",
            kind(other)
        )),
    }
}
