//! Retry events on stderr: `--log-format text|json`.
//!
//! With `json`, each retry event is one JSON object per line with the key
//! `event` (`retry_scheduled`, `retry_succeeded`, `retry_abandoned_terminal`,
//! `retry_budget_exhausted`) and the event's fields as the library names them,
//! seconds as numbers.

use std::io::Write;

use herdless::{EventValue, Notify, RetryEvent};
use serde_json::{Map, Value};

use crate::policy_args::LogFormat;

/// A [`Notify`] hook writing each event to stderr in the chosen format.
#[derive(Debug, Clone, Copy)]
pub struct StderrEvents {
    /// Text or JSON, one line per event.
    pub format: LogFormat,
}

/// The event as a JSON object (the `--log-format json` line): `event` plus the
/// event's fields as the library names them, seconds as numbers.
pub fn to_json(event: &RetryEvent<'_>) -> Value {
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

/// The event as one human-readable line (the `--log-format text` line).
pub fn to_text(event: &RetryEvent<'_>) -> String {
    let v = to_json(event);
    let mut line = format!("herdless: {}", event.name());
    if let Value::Object(map) = v {
        for (k, val) in map.iter().filter(|(k, _)| k.as_str() != "event") {
            match val {
                Value::String(s) if s.is_empty() => continue,
                Value::String(s) => line.push_str(&format!(" {k}={s}")),
                Value::Number(n) if k.ends_with("_s") => {
                    line.push_str(&format!(" {k}={:.3}", n.as_f64().unwrap_or(0.0)))
                }
                other => line.push_str(&format!(" {k}={other}")),
            }
        }
    }
    line
}

impl Notify for StderrEvents {
    fn notify(&self, event: &RetryEvent<'_>) {
        let line = match self.format {
            LogFormat::Json => to_json(event).to_string(),
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
            elapsed: Duration::from_millis(1500),
        };
        let v = to_json(&e);
        assert_eq!(v["event"], "retry_scheduled");
        assert_eq!(v["task_id"], "t1");
        assert_eq!(v["attempt"], 2);
        assert_eq!(v["computed_jitter_s"], 0.25);
        assert_eq!(v["sleep_s"], 2.0);
        assert_eq!(v["honored_retry_after"], true);
        assert_eq!(v["elapsed_s"], 1.5);
        let text = to_text(&e);
        assert!(text.starts_with("herdless: retry_scheduled"), "{text}");
        assert!(text.contains("sleep_s=2.000"), "{text}");
    }
}
