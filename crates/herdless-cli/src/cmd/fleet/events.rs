//! `fleet`'s retry events on stderr, as `--log-format` asks: the engine's
//! events with the failed attempt's HTTP `status` added, so `herdless
//! analyze` can tell a terminal status that was retried (`--retry-on`
//! listing it) from a retryable one.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use herdless::{Notify, RetryEvent};
use serde_json::Value;

use crate::shared::events_out::LogFormat;
use crate::shared::events_out::{EventFilter, json_line, to_json, to_text};

/// One worker's events: the engine's, with `status` (the last attempt's HTTP
/// status; absent after a transport error) on `retry_scheduled`,
/// `retry_abandoned_terminal` and `retry_budget_exhausted`.
#[derive(Debug, Clone)]
pub(crate) struct FleetEvents {
    /// Text or JSON, one line per event.
    pub(crate) format: LogFormat,
    /// Which events are written.
    pub(crate) filter: EventFilter,
    /// The last attempt's status (0: none), set by the attempt observer
    /// before the engine decides, so before its event.
    pub(crate) last_status: Arc<AtomicU32>,
}

impl Notify for FleetEvents {
    fn notify(&self, event: &RetryEvent<'_>) {
        if !self.filter.admits(event) {
            return;
        }
        let status = self.last_status.load(Ordering::Relaxed);
        let line = match self.format {
            LogFormat::Json => {
                let mut v = to_json(event);
                if let (true, Value::Object(map)) =
                    (status != 0 && event.name() != "retry_succeeded", &mut v)
                {
                    map.insert("status".into(), status.into());
                }
                json_line(v)
            }
            LogFormat::Text if status != 0 && event.name() != "retry_succeeded" => {
                format!("{} status={status}", to_text(event))
            }
            LogFormat::Text => to_text(event),
        };
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
}
