//! The flags of `herdless analyze`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::verdict::Thresholds;
use crate::shared::values::parse_duration;

fn share(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("{t:?} is not a share (0.25 or 25%)"))?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{t:?} is not within 0..=1 (0%..=100%)"))
    }
}

fn amplification(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if (1.0..=1e9).contains(&v) => Ok(v),
        _ => Err(format!(
            "{s:?} is not a number of attempts per task within 1..=1e9"
        )),
    }
}

fn field(s: &str) -> Result<String, String> {
    if s.is_empty() || s.len() > 256 || s.split('.').count() > 2 || s.split('.').any(str::is_empty)
    {
        Err(format!(
            "{s:?}: a field name is 1 to 256 characters, with at most one dot (a.b: field b of object a)"
        ))
    } else {
        Ok(s.to_string())
    }
}

/// `herdless analyze` arguments.
#[derive(Debug, Clone, Args)]
#[command(
    about = "Read JSON-lines retry events and say whether the fleet retried in lockstep",
    long_about = "Read JSON-lines retry events (herdless exec/fleet/get/worker --log-format json, the \
library's events through tracing-subscriber's JSON layer, or any producer whose fields are named with \
--time-field, --event-field, --task-field, --attempt-field) and report tasks, attempts per task, \
amplification, retries per 100 ms, lockstep, synchronized give-ups, terminal errors that were retried, \
the Retry-After honored share and the budget-exhausted reasons, with a verdict per check.\n\n\
Exit status: 0 when every check passed (notes allowed), 1 when a check failed, 2 for usage errors or \
an input that cannot be read, 3 when the figure cannot be written (after the report), 4 when nothing \
was judged: no retry event, no task that retried, or a check --max-open-tasks left unjudged (never \
\"passed\")."
)]
pub struct AnalyzeArgs {
    /// Files of JSON lines, `-` (or none) for standard input; read in order.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The field holding the event's wall-clock time (RFC 3339, or seconds since the epoch).
    #[arg(long, value_parser = field, value_name = "NAME", default_value = "timestamp")]
    pub time_field: String,
    /// The field naming the event (retry_scheduled, retry_succeeded, retry_abandoned_terminal, retry_budget_exhausted).
    #[arg(long, value_parser = field, value_name = "NAME", default_value = "event")]
    pub event_field: String,
    /// The field naming the task.
    #[arg(long, value_parser = field, value_name = "NAME", default_value = "task_id")]
    pub task_field: String,
    /// The field holding the attempt number (the attempt that just ended).
    #[arg(long, value_parser = field, value_name = "NAME", default_value = "attempt")]
    pub attempt_field: String,
    /// The field holding the sleep before the retry, seconds (the retry goes out at time + sleep).
    #[arg(long, value_parser = field, value_name = "NAME", default_value = "sleep_s")]
    pub sleep_field: String,
    /// The field holding the failed attempt's HTTP status.
    #[arg(long, value_parser = field, value_name = "NAME", default_value = "status")]
    pub status_field: String,
    /// spread: a wave of retries (those after one attempt number) fails when more than this share of it slept the same (no jitter), or went out in one 100 ms bucket lined up by the sleeps (--follow: of the tasks retrying in the window).
    #[arg(long, value_parser = share, value_name = "SHARE", default_value = "0.25")]
    pub max_bucket_share: f64,
    /// lockstep: a spike is a 100 ms bucket holding at least this share of the retrying tasks.
    #[arg(long, value_parser = share, value_name = "SHARE", default_value = "0.1")]
    pub spike_share: f64,
    /// lockstep: this many spikes at a fixed period fail the check (at least 2).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(2..=1000))]
    pub lockstep_spikes: u32,
    /// give_up_sync: the largest 100 ms bucket of give-ups, at most this share of them.
    #[arg(long, value_parser = share, value_name = "SHARE", default_value = "0.5")]
    pub max_give_up_share: f64,
    /// terminal_retried: retries of a status the library calls terminal allowed.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub max_terminal_retries: u64,
    /// amplification: attempts per task at most (default: a note; it depends on the outage's length).
    #[arg(long, value_parser = amplification, value_name = "X")]
    pub max_amplification: Option<f64>,
    /// give_ups: the share of the tasks that exhausted their budget, at most.
    #[arg(long, value_parser = share, value_name = "SHARE", default_value = "0.05")]
    pub max_give_up_rate: f64,
    /// retry_after: the share of scheduled retries that honored a server's delay, at least (default: a note).
    #[arg(long, value_parser = share, value_name = "SHARE")]
    pub min_honored_share: Option<f64>,
    /// Fewest retrying tasks (or give-ups) for a share to be judged (below: a note).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub min_tasks: u64,
    /// Open tasks held at most (1..=100000000); past it they are counted as unfinished.
    #[arg(long, value_name = "N", default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub max_open_tasks: u64,
    /// Tail the (one) file as it grows; print a line when a storm forms in the rolling --window.
    #[arg(long)]
    pub follow: bool,
    /// With --follow: the rolling window (1s..=1d).
    #[arg(long, value_parser = parse_duration, value_name = "DUR", default_value = "60s")]
    pub window: Duration,
    /// One JSON object on stdout instead of the text report (--follow: one per storm line too).
    #[arg(long)]
    pub json: bool,
    /// Write the timeline figure (SVG and PNG) into DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

impl AnalyzeArgs {
    /// The thresholds of the checks.
    pub fn thresholds(&self) -> Thresholds {
        Thresholds {
            max_bucket_share: self.max_bucket_share,
            spike_share: self.spike_share,
            lockstep_spikes: self.lockstep_spikes,
            max_give_up_share: self.max_give_up_share,
            max_terminal_retries: self.max_terminal_retries,
            max_amplification: self.max_amplification,
            max_give_up_rate: self.max_give_up_rate,
            min_honored_share: self.min_honored_share,
            min_tasks: self.min_tasks,
        }
    }
}
