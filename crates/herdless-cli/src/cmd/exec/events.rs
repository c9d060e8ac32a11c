//! `exec`'s retry events on stderr, as `--log-format` asks: the engine's
//! events with the failed attempt's exit status added.

use std::io::{self, Write};
use std::rc::Rc;

use herdless::{Notify, RetryEvent};
use herdless_sim::report::units::seconds_value;
use serde_json::Value;

use super::State;
use crate::shared::events_out::{EventFilter, LogFormat, json_line, to_json};

/// The retry events of `--log-format`, with the failed attempt's `exit_status`
/// (and `timed_out`) added to `retry_scheduled`, `retry_abandoned_terminal` and
/// `retry_budget_exhausted`.
#[derive(Debug)]
pub(super) struct ExecEvents {
    pub(super) format: LogFormat,
    pub(super) filter: EventFilter,
    pub(super) state: Rc<State>,
}

impl Notify for ExecEvents {
    fn notify(&self, event: &RetryEvent<'_>) {
        if !self.filter.admits(event) {
            return;
        }
        let mut v = to_json(event);
        if let (Some((status, timed_out)), Value::Object(map)) = (self.state.last.get(), &mut v) {
            if event.name() != "retry_succeeded" {
                map.insert("exit_status".into(), status.into());
                map.insert("timed_out".into(), timed_out.into());
            }
        }
        let line = match self.format {
            LogFormat::Json => json_line(v),
            LogFormat::Text => text_line(&v),
        };
        let _ = writeln!(io::stderr().lock(), "{line}");
    }
}

fn text_line(v: &Value) -> String {
    let mut line = format!("herdless: {}", v["event"].as_str().unwrap_or("event"));
    if let Value::Object(map) = v {
        for (k, val) in map.iter().filter(|(k, _)| k.as_str() != "event") {
            match val {
                Value::String(s) if s.is_empty() => {}
                Value::Bool(false) if k == "timed_out" => {}
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
