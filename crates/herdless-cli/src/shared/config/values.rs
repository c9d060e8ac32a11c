//! The policy file's value kinds beyond the library's policy keys: strings,
//! durations, bounded integers, exit statuses.

use std::time::Duration;

use herdless::policy::serde::duration as human;
use toml::Value;

use crate::shared::statuses::ExitStatuses;
use crate::shared::values::duration_in_range;

fn kind(v: &Value) -> &'static str {
    v.type_str()
}

pub(super) fn string(v: &Value) -> Result<&str, String> {
    v.as_str()
        .ok_or_else(|| format!("expected a string, found {}", kind(v)))
}

/// A duration: a string in human form (`"500ms"`, `"2m"`) or a number of
/// seconds, by the library's rules (the same as the policy keys'), within
/// the range of every duration ([`duration_in_range`]).
pub(super) fn duration(v: &Value) -> Result<Duration, String> {
    let d = human::deserialize(v.clone()).map_err(|e| e.message().trim().to_owned())?;
    duration_in_range(d).map_err(|e| format!("{v} {e}"))
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

/// How a seed may be written, for messages.
pub(super) const SEED_FORMS: &str = "a seed is a whole number 0 to 18446744073709551615: an \
    integer up to 9223372036854775807 (TOML's own limit), or a string for any of them, decimal \
    or hex: \"18446744073709551615\", \"0xffffffffffffffff\"";

/// `seed`: the full `u64` range of `--seed`, as a TOML integer (TOML's are
/// `i64`) or a string read as `--seed` reads it
/// ([`parse_seed`](crate::shared::values::parse_seed)).
pub(super) fn seed(v: &Value) -> Result<u64, String> {
    match v {
        Value::Integer(i) => {
            u64::try_from(*i).map_err(|_| format!("{i} is out of range ({SEED_FORMS})"))
        }
        Value::String(s) => crate::shared::values::parse_seed(s),
        other => Err(format!(
            "expected a seed, found {} ({SEED_FORMS})",
            kind(other)
        )),
    }
}

/// Exit statuses: `"75,111,200-210"` or `[75, 111]`.
pub(super) fn codes(v: &Value) -> Result<ExitStatuses, String> {
    match v {
        Value::String(s) => s.parse::<ExitStatuses>().map_err(|e| e.to_string()),
        Value::Array(items) => {
            let mut set = ExitStatuses::empty();
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
