//! The report of `herdless analyze` (text, JSON) and its timeline figure.
//! Formatting only: the numbers are [`Stats`]' and [`verdict`](super::verdict)'s.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use herdless_sim::plots::{TimelineFigure, write_timeline};
use serde_json::{Value, json};

use super::spread::WaveReport;
use super::stats::{BUCKET_NS, Stats};
use super::time::format;
use super::verdict::{Check, Lockstep, Outcome};

/// The most buckets a series in the report holds; a longer log is shown in
/// coarser buckets (a whole multiple of 100 ms).
pub(crate) const MAX_BUCKETS: usize = 100_000;

/// Retries and give-ups on one time axis: `(start ns, bucket ns, retries, give-ups)`.
pub(crate) fn timeline(s: &Stats) -> Option<(i64, i64, Vec<u32>, Vec<u32>)> {
    let keys = s.retries.a.keys().chain(s.give_ups.a.keys());
    let lo = *keys.clone().min()?;
    let hi = *keys.max()?;
    let span = u64::try_from(hi - lo + 1).ok()?;
    let k = span.div_ceil(MAX_BUCKETS as u64).max(1) as i64;
    let len = usize::try_from((hi - lo) / k + 1).ok()?;
    let dense = |m: &HashMap<i64, u32>| {
        let mut v = vec![0u32; len];
        for (&i, &c) in m {
            if let Some(slot) = usize::try_from((i - lo) / k)
                .ok()
                .and_then(|j| v.get_mut(j))
            {
                *slot = slot.saturating_add(c);
            }
        }
        v
    };
    Some((
        lo * BUCKET_NS,
        k * BUCKET_NS,
        dense(&s.retries.a),
        dense(&s.give_ups.a),
    ))
}

/// Writes `analyze-timeline.svg` and `.png` into `dir`.
///
/// # Errors
///
/// The figure cannot be written (the message names the file).
pub(crate) fn figure(s: &Stats, lock: &Lockstep, dir: &Path) -> Result<Vec<PathBuf>, String> {
    let Some((start, bucket, retries, give_ups)) = timeline(s) else {
        return Ok(Vec::new());
    };
    let spikes: Vec<usize> = lock
        .spikes_ns
        .iter()
        .filter_map(|&t| usize::try_from((t - start) / bucket).ok())
        .collect();
    let fig = TimelineFigure {
        title: format!(
            "analyze: retries and give-ups per {} s from {} ({} retrying tasks)",
            bucket as f64 / 1e9,
            format(start),
            s.retrying_tasks
        ),
        bucket_s: bucket as f64 / 1e9,
        retries: &retries,
        give_ups: &give_ups,
        spikes: &spikes,
    };
    write_timeline(&fig, dir).map_err(|e| e.to_string())
}

/// What is printed.
#[derive(Debug)]
pub(crate) struct Report<'a> {
    /// The tally.
    pub(crate) stats: &'a Stats,
    /// The lockstep search.
    pub(crate) lockstep: &'a Lockstep,
    /// The verdicts.
    pub(crate) checks: &'a [Check],
    /// What they conclude.
    pub(crate) outcome: Outcome,
    /// Why nothing was judged (with [`Outcome::NotJudged`]).
    pub(crate) why: Option<&'a str>,
    /// The `spread` check's waves.
    pub(crate) waves: &'a [WaveReport],
    /// The figure's files.
    pub(crate) figures: &'a [PathBuf],
}

fn bucket_json(b: Option<(i64, u32)>, of: u64, count: &str, share: &str) -> Value {
    match b {
        Some((t, c)) => {
            json!({ "start": format(t), count: c, share: if of > 0 { Some(f64::from(c) / of as f64) } else { None } })
        }
        None => Value::Null,
    }
}

impl Report<'_> {
    /// The JSON object (field names are a public contract: docs/cli.md).
    pub(crate) fn json(&self) -> Value {
        let s = self.stats;
        let series = timeline(s);
        let per = |pick: usize| match &series {
            Some((start, b, r, g)) => json!({
                "start": format(*start),
                "bucket_s": *b as f64 / 1e9,
                "counts": if pick == 0 { r } else { g },
            }),
            None => Value::Null,
        };
        let map = |m: &std::collections::BTreeMap<u32, u64>| {
            m.iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect::<serde_json::Map<_, _>>()
        };
        json!({
            "lines": s.lines,
            "events": s.events,
            "skipped": s.skipped,
            "first_event": s.first_ns.map(format),
            "last_event": s.last_ns.map(format),
            "span_s": s.first_ns.zip(s.last_ns).map(|(a, b)| (b - a) as f64 / 1e9),
            "tasks": s.tasks,
            "retrying_tasks": s.retrying_tasks,
            "unfinished_tasks": s.unfinished,
            "succeeded": s.succeeded,
            "abandoned_terminal": s.abandoned_terminal,
            "state_invalid": s.state_invalid,
            "requeued": s.requeued,
            "attempts": s.attempts,
            "amplification": (s.tasks > 0).then(|| s.attempts as f64 / s.tasks as f64),
            "attempts_per_task": map(&s.attempts_per_task),
            "retries": s.retries.total,
            "largest_retry_bucket": bucket_json(s.retries.largest(), s.retrying_tasks, "retries", "share_of_retrying_tasks"),
            "retries_per_100ms": per(0),
            "give_ups": s.give_ups.total,
            "largest_give_up_bucket": bucket_json(s.give_ups.largest(), s.give_ups.total, "give_ups", "share_of_give_ups"),
            "give_ups_per_100ms": per(1),
            "give_up_reasons": s.reasons,
            "lockstep": {
                "detected": self.lockstep.detected,
                "period_s": self.lockstep.period_s,
                "train": self.lockstep.train,
                "spikes": self.lockstep.spikes_ns.iter().map(|&t| format(t)).collect::<Vec<_>>(),
            },
            "terminal_retried": {
                "retries": s.terminal_retries,
                "tasks": s.terminal_retried_tasks,
                "retries_with_status": s.with_status,
                "statuses": s.terminal_statuses.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
            },
            "retry_after": {
                "retries_with_field": s.honored_known,
                "honored": s.honored,
                "honored_share": (s.honored_known > 0).then(|| s.honored as f64 / s.honored_known as f64),
            },
            "spread": { "waves": self.waves },
            "checks": self.checks,
            "outcome": self.outcome.as_str(),
            "not_judged": self.why,
            "passed": self.outcome == Outcome::Passed,
            "figures": self.figures.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        })
    }

    /// The text report.
    pub(crate) fn text(&self) -> String {
        let s = self.stats;
        let mut o = String::new();
        let span = match (s.first_ns, s.last_ns) {
            (Some(a), Some(b)) => format!(
                "{} .. {} ({:.1} s)",
                format(a),
                format(b),
                (b - a) as f64 / 1e9
            ),
            _ => "no event".into(),
        };
        let _ = writeln!(
            o,
            "herdless analyze: {} lines, {} events, {} skipped; {span}",
            s.lines, s.events, s.skipped
        );
        let _ = writeln!(
            o,
            "  tasks {} ({} retried, {} unfinished): {} succeeded after a retry, {} terminal, {} gave up",
            s.tasks,
            s.retrying_tasks,
            s.unfinished,
            s.succeeded,
            s.abandoned_terminal,
            s.give_ups.total
        );
        let amp = if s.tasks > 0 {
            s.attempts as f64 / s.tasks as f64
        } else {
            0.0
        };
        let _ = writeln!(
            o,
            "  attempts {} = {amp:.2} per task (amplification)",
            s.attempts
        );
        let hist: Vec<String> = s
            .attempts_per_task
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        let _ = writeln!(
            o,
            "  attempts per task: {}",
            if hist.is_empty() {
                "-".into()
            } else {
                hist.join(", ")
            }
        );
        if let Some((t, c)) = s.retries.largest() {
            let _ = writeln!(
                o,
                "  retries {}: largest 100 ms bucket {c} at {} = {:.1}% of the retrying tasks",
                s.retries.total,
                format(t),
                100.0 * f64::from(c) / s.retrying_tasks.max(1) as f64
            );
        }
        if let Some((_, b, r, _)) = timeline(s) {
            let _ = writeln!(o, "  retries per {} s: {}", b as f64 / 1e9, sparkline(&r));
        }
        if let Some((t, c)) = s.give_ups.largest() {
            let _ = writeln!(
                o,
                "  give-ups {}: largest 100 ms bucket {c} at {} = {:.1}% of them; reasons: {}",
                s.give_ups.total,
                format(t),
                100.0 * f64::from(c) / s.give_ups.total.max(1) as f64,
                s.reasons
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let _ = writeln!(o, "\nchecks:");
        for c in self.checks {
            let v = match c.verdict {
                super::verdict::Verdict::Pass => "pass",
                super::verdict::Verdict::Fail => "FAIL",
                super::verdict::Verdict::Note => "note",
            };
            let _ = writeln!(o, "  {v:<4} {}: {}", c.check, c.message);
        }
        let _ = match (self.outcome, self.why) {
            (Outcome::Passed, _) => writeln!(o, "\npassed"),
            (Outcome::Failed, _) => writeln!(o, "\nFAILED"),
            (Outcome::NotJudged, why) => {
                writeln!(o, "\nNOT JUDGED: {}", why.unwrap_or("nothing to judge"))
            }
        };
        if !self.figures.is_empty() {
            let names: Vec<String> = self
                .figures
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            let _ = writeln!(o, "figure written: {}", names.join(", "));
        }
        o
    }
}

/// A series as one line of block characters, at most 80 wide.
fn sparkline(v: &[u32]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let k = v.len().div_ceil(80).max(1);
    let cells: Vec<u32> = v
        .chunks(k)
        .map(|c| c.iter().copied().max().unwrap_or(0))
        .collect();
    let top = cells.iter().copied().max().unwrap_or(0).max(1);
    cells
        .iter()
        .map(|&c| {
            if c == 0 {
                ' '
            } else {
                BARS[((c as usize * 7) / top as usize).min(7)]
            }
        })
        .collect()
}
