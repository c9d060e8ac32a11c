//! The summary `herdless worker` prints when it stops: one line of text, or
//! one JSON object (`--log-format json`, key `event` = `worker_summary`).

use std::time::Duration;

use herdless::adapters::nats::Summary;
use serde_json::{Value, json};

use crate::shared::events_out::LogFormat;

/// The summary as a JSON object: `event`, `stopped_by` (`SIGINT`, `SIGTERM`,
/// `idle`), `elapsed_s`, and the counts of [`Summary`] (`deliveries`,
/// `undecodable`, `acked`, `already_completed`, `held_elsewhere`, `retried`, `deferred`,
/// `dead_lettered`, `by_reason`, `handed_back`, `lease_lost`, `unsettled`).
pub(crate) fn to_json(s: &Summary, stopped_by: &str, elapsed: Duration) -> Value {
    json!({
        "event": "worker_summary",
        "stopped_by": stopped_by,
        "elapsed_s": elapsed.as_secs_f64(),
        "deliveries": s.deliveries,
        "undecodable": s.undecodable,
        "acked": s.acked,
        "already_completed": s.already_completed,
        "held_elsewhere": s.held_elsewhere,
        "retried": s.retried,
        "deferred": s.deferred,
        "dead_lettered": s.dead_lettered,
        "by_reason": s.by_reason,
        "handed_back": s.handed_back,
        "lease_lost": s.lease_lost,
        "unsettled": s.unsettled,
    })
}

/// The summary line(s) to print on stdout.
pub(crate) fn summary(s: &Summary, stopped_by: &str, elapsed: Duration, f: LogFormat) -> String {
    match f {
        LogFormat::Json => format!(
            "{}\n",
            crate::shared::events_out::json_line(to_json(s, stopped_by, elapsed))
        ),
        LogFormat::Text => {
            let reasons = if s.by_reason.is_empty() {
                String::new()
            } else {
                let parts: Vec<String> = s
                    .by_reason
                    .iter()
                    .map(|(r, n)| format!("{r} {n}"))
                    .collect();
                format!(" ({})", parts.join(", "))
            };
            let undecodable = if s.undecodable == 0 {
                String::new()
            } else {
                format!(" (+{} undecodable)", s.undecodable)
            };
            let already = if s.already_completed == 0 {
                String::new()
            } else {
                format!(" (+{} already completed)", s.already_completed)
            };
            let elsewhere = if s.held_elsewhere == 0 {
                String::new()
            } else {
                format!(", {} left to another holder", s.held_elsewhere)
            };
            let lost = if s.lease_lost == 0 {
                String::new()
            } else {
                format!(", {} stopped with their claim lost", s.lease_lost)
            };
            format!(
                "herdless worker: stopped ({stopped_by}) after {:.1}s: {} deliveries{undecodable}: \
                 {} acked{already}{elsewhere}, {} retried, {} deferred, {} dead-lettered{reasons}, \
                 {} handed back{lost}, {} unsettled\n",
                elapsed.as_secs_f64(),
                s.deliveries,
                s.acked,
                s.retried,
                s.deferred,
                s.dead_lettered,
                s.handed_back,
                s.unsettled
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_summary_is_an_event_with_a_timestamp() {
        let line = summary(
            &Summary::default(),
            "idle",
            Duration::from_secs(2),
            LogFormat::Json,
        );
        let v: Value = serde_json::from_str(line.trim_end()).unwrap();
        let ts = v["timestamp"].as_str().unwrap();
        assert!(humantime::parse_rfc3339(ts).is_ok(), "{ts}");
        assert_eq!(v["event"], "worker_summary");
        assert_eq!(v["elapsed_s"], 2.0);
        assert!(line.starts_with("{\"timestamp\":"), "{line}");
    }
}

/// The examples that were this file's doc tests (its items are private to
/// the crate, where doc tests cannot reach).
#[cfg(test)]
mod examples {
    #[allow(unused_imports)]
    use super::*;

    #[test]
    fn to_json_example() -> Result<(), Box<dyn std::error::Error>> {
        use herdless::adapters::nats::Summary;
        let v = crate::cmd::worker::render::to_json(
            &Summary::default(),
            "idle",
            std::time::Duration::ZERO,
        );
        assert_eq!(v["event"], "worker_summary");
        assert_eq!(v["acked"], 0);
        Ok(())
    }
}
