//! Retry events on stderr: `--log-format text|json`, `--quiet`, `RUST_LOG`.
//!
//! With `json`, each retry event is one JSON object per line with the key
//! `event` (`retry_scheduled`, `retry_succeeded`, `retry_abandoned_terminal`,
//! `retry_budget_exhausted`) and the event's fields as the library names them,
//! seconds as numbers, after a `timestamp`: the wall clock when the line was
//! written, RFC 3339 in UTC ([`timestamp`]).
//!
//! Which events are written is an [`EventFilter`]: none with `--quiet`;
//! otherwise, when `RUST_LOG` is set, those whose level (the library's
//! default [`EventLevels`]) `RUST_LOG` enables for the target `herdless`, read
//! as `tracing-subscriber`'s `EnvFilter` reads it (`off`, `error`,
//! `herdless=warn`, `info,hyper=debug`, …). Without `RUST_LOG` every event is
//! written.
use std::io::Write;

use clap::ValueEnum;
use herdless::events::{EventLevels, EventValue};
use herdless::{Notify, RetryEvent};
use herdless_sim::report::units::seconds_value;
use serde_json::{Map, Value};
use tracing::Level;

mod rust_log;

/// How retry events are written to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per line, with the key `event`.
    Json,
}

/// Which retry events reach stderr: `--quiet` and `RUST_LOG`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventFilter {
    /// Whether each level is written: ERROR, WARN, INFO, DEBUG, TRACE.
    enabled: [bool; 5],
    levels: EventLevels,
}

const LEVELS: [Level; 5] = [
    Level::ERROR,
    Level::WARN,
    Level::INFO,
    Level::DEBUG,
    Level::TRACE,
];

fn index(level: Level) -> usize {
    LEVELS.iter().position(|l| *l == level).unwrap_or(4)
}

impl EventFilter {
    /// Every event written (no `--quiet`, no `RUST_LOG`).
    pub(crate) const ALL: EventFilter = EventFilter {
        enabled: [true; 5],
        levels: EventLevels::DEFAULT,
    };

    /// No event written (`--quiet`).
    pub(crate) const NONE: EventFilter = EventFilter {
        enabled: [false; 5],
        levels: EventLevels::DEFAULT,
    };

    /// The filter for `--quiet` and the `RUST_LOG` of this process.
    pub(crate) fn from_env(quiet: bool) -> Self {
        Self::new(quiet, std::env::var("RUST_LOG").ok().as_deref())
    }

    /// The filter for `--quiet` and a `RUST_LOG` value (`None` or blank: unset).
    /// Invalid directives are ignored, as `EnvFilter` does when parsing lossily
    /// (reported on stderr as it reports them).
    pub(crate) fn new(quiet: bool, rust_log: Option<&str>) -> Self {
        match rust_log.map(str::trim) {
            _ if quiet => Self::NONE,
            None | Some("") => Self::ALL,
            Some(spec) => EventFilter {
                enabled: rust_log::enabled_for_herdless(spec),
                levels: EventLevels::DEFAULT,
            },
        }
    }

    /// Whether `event` is written.
    pub(crate) fn admits(&self, event: &RetryEvent<'_>) -> bool {
        self.enabled[index(self.levels.level(event))]
    }
}

/// A [`Notify`] hook writing each event the filter admits to stderr in the
/// chosen format.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StderrEvents {
    /// Text or JSON, one line per event.
    pub(crate) format: LogFormat,
    /// Which events are written.
    pub(crate) filter: EventFilter,
}

/// The event as a JSON object (the `--log-format json` line): `event` plus the
/// event's fields as the library names them, seconds as numbers.
pub(crate) fn to_json(event: &RetryEvent<'_>) -> Value {
    let mut map = Map::new();
    map.insert("event".into(), Value::from(event.name()));
    event.visit(|name, value| {
        let v = match value {
            EventValue::Str(s) => Value::from(s),
            EventValue::U32(n) => Value::from(n),
            EventValue::Seconds(d) => Value::from(d.as_secs_f64()),
            EventValue::Bool(b) => Value::from(b),
            _ => Value::from(value.to_string()),
        };
        map.insert(name.into(), v);
    });
    Value::Object(map)
}

/// The wall clock now, RFC 3339 in UTC with microseconds
/// (`2026-12-01T23:58:34.123456Z`): the `timestamp` of every JSON event
/// herdless writes, the field name and form of `tracing-subscriber`'s JSON
/// layer, so `herdless analyze` reads both alike.
pub(crate) fn timestamp() -> String {
    humantime::format_rfc3339_micros(std::time::SystemTime::now()).to_string()
}

/// A JSON event object as its `--log-format json` line: `timestamp` (the
/// wall clock now, [`timestamp`]) first, then the object's fields.
pub(crate) fn json_line(event: Value) -> String {
    let mut map = Map::new();
    map.insert("timestamp".into(), Value::from(timestamp()));
    if let Value::Object(fields) = event {
        for (k, v) in fields {
            if k != "timestamp" {
                map.insert(k, v);
            }
        }
    }
    Value::Object(map).to_string()
}

/// The event as one human-readable line (the `--log-format text` line);
/// `timed_out` only when true.
pub(crate) fn to_text(event: &RetryEvent<'_>) -> String {
    let v = to_json(event);
    let mut line = format!("herdless: {}", event.name());
    if let Value::Object(map) = v {
        for (k, val) in map.iter().filter(|(k, _)| k.as_str() != "event") {
            match val {
                Value::String(s) if s.is_empty() => continue,
                Value::Bool(false) if k == "timed_out" => continue,
                Value::String(s) => line.push_str(&format!(" {k}={s}")),
                Value::Number(n) if k.ends_with("_s") => line.push_str(&format!(
                    " {k}={}",
                    seconds_value(n.as_f64().unwrap_or(0.0))
                )),
                other => line.push_str(&format!(" {k}={other}")),
            }
        }
    }
    line
}

impl Notify for StderrEvents {
    fn notify(&self, event: &RetryEvent<'_>) {
        if !self.filter.admits(event) {
            return;
        }
        let line = match self.format {
            LogFormat::Json => json_line(to_json(event)),
            LogFormat::Text => to_text(event),
        };
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn json_lines_carry_the_contract_fields() {
        let e = RetryEvent::Scheduled {
            task_id: "t1",
            attempt: 2,
            computed_jitter: Duration::from_millis(250),
            sleep: Duration::from_secs(2),
            honored_retry_after: true,
            timed_out: true,
            elapsed: Duration::from_millis(1500),
        };
        let v = to_json(&e);
        assert_eq!(v["event"], "retry_scheduled");
        assert_eq!(v["task_id"], "t1");
        assert_eq!(v["attempt"], 2);
        assert_eq!(v["computed_jitter_s"], 0.25);
        assert_eq!(v["sleep_s"], 2.0);
        assert_eq!(v["honored_retry_after"], true);
        assert_eq!(v["timed_out"], true);
        assert_eq!(v["elapsed_s"], 1.5);
        let text = to_text(&e);
        assert!(text.starts_with("herdless: retry_scheduled"), "{text}");
        assert!(text.contains("sleep_s=2.000"), "{text}");
        assert!(text.contains(" timed_out=true"), "{text}");
        // A delay below a millisecond keeps its digits (`--base 1ns` was 0.000).
        let tiny = RetryEvent::Scheduled {
            task_id: "",
            attempt: 1,
            computed_jitter: Duration::from_nanos(1),
            sleep: Duration::from_nanos(1),
            honored_retry_after: false,
            timed_out: false,
            elapsed: Duration::ZERO,
        };
        let text = to_text(&tiny);
        assert!(text.contains(" sleep_s=0.000000001 "), "{text}");
        assert!(!text.contains("timed_out"), "{text}");
        assert!(text.contains(" elapsed_s=0.000"), "{text}");
    }

    #[test]
    fn rust_log_filters_by_the_events_level() {
        let scheduled = RetryEvent::Scheduled {
            task_id: "",
            attempt: 1,
            computed_jitter: Duration::ZERO,
            sleep: Duration::ZERO,
            honored_retry_after: false,
            timed_out: false,
            elapsed: Duration::ZERO,
        };
        let succeeded = RetryEvent::Succeeded {
            task_id: "",
            attempt: 2,
            elapsed: Duration::ZERO,
        };
        let exhausted = RetryEvent::BudgetExhausted {
            task_id: "",
            attempt: 6,
            timed_out: false,
            elapsed: Duration::ZERO,
            reason: herdless::GiveUp::MaxAttempts,
        };
        let admits = |quiet, log: Option<&str>| {
            let f = EventFilter::new(quiet, log);
            [&scheduled, &succeeded, &exhausted].map(|e| f.admits(e))
        };
        assert_eq!(admits(false, None), [true; 3]);
        assert_eq!(admits(false, Some("")), [true; 3]);
        assert_eq!(admits(true, None), [false; 3]);
        assert_eq!(admits(true, Some("trace")), [false; 3]);
        assert_eq!(admits(false, Some("off")), [false; 3]);
        assert_eq!(admits(false, Some("herdless=error")), [false, false, true]);
        assert_eq!(admits(false, Some("warn")), [true, false, true]);
        assert_eq!(admits(false, Some("info,hyper=off")), [true; 3]);
        assert_eq!(admits(false, Some("herdless=off,info")), [false; 3]);
        assert_eq!(admits(false, Some("hyper=debug")), [false; 3]);
    }
}

/// The examples that were this file's doc tests (its items are private to
/// the crate, where doc tests cannot reach).
#[cfg(test)]
mod examples {
    #[allow(unused_imports)]
    use super::*;

    #[test]
    fn json_line_example() -> Result<(), Box<dyn std::error::Error>> {
        let line =
            crate::shared::events_out::json_line(serde_json::json!({"event": "retry_scheduled"}));
        assert!(line.starts_with("{\"timestamp\":\""), "{line}");
        assert!(
            line.ends_with("Z\",\"event\":\"retry_scheduled\"}"),
            "{line}"
        );
        Ok(())
    }
}
