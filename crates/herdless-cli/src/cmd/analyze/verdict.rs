//! The checks of `herdless analyze`, each a verdict against a threshold flag.
//!
//! | check | fails when | flag (default) |
//! |---|---|---|
//! | `spread` | more than the share of a wave of retries (those after one attempt number) slept the same (no jitter), or went out in one 100 ms bucket lined up by their sleeps (see [`super::spread`]) | `--max-bucket-share` (0.25) |
//! | `lockstep` | spikes (buckets holding at least `--spike-share` of the retrying tasks, and 3 times the mean of the second around them) recur at a fixed period, `--lockstep-spikes` times or more | `--spike-share` (0.1), `--lockstep-spikes` (3) |
//! | `give_up_sync` | the largest 100 ms bucket of give-ups holds more than the share of all give-ups | `--max-give-up-share` (0.5) |
//! | `terminal_retried` | more retries than allowed followed a status the library calls terminal (a wrong classifier) | `--max-terminal-retries` (0) |
//! | `amplification` | attempts per task above the limit | `--max-amplification` (none: a note, since it grows with the outage's length) |
//! | `give_ups` | the share of the tasks that exhausted their budget is above the limit | `--max-give-up-rate` (0.05) |
//! | `retry_after` | the share of the scheduled retries that honored a server's delay is below the floor | `--min-honored-share` (none: a note) |
//!
//! A share of fewer than `--min-tasks` (10) retrying tasks or give-ups is a
//! note, not a verdict: a bucket holding 2 of 3 tasks says nothing about a
//! fleet. A check whose field no event carries is a note too.
//!
//! A memory bound may cost precision, never a verdict: once
//! `--max-open-tasks` made open tasks count as unfinished mid-log (their
//! later events then count as new tasks), the checks that count tasks
//! (`lockstep`, `amplification`, `give_ups`, and `spread` when a retry has
//! no attempt number) are notes saying so. The report's [`Outcome`] is
//! `passed` only when something was judged and nothing was left unjudged by
//! the bound: a log with no event, or no task that retried, is `not_judged`
//! (its own exit status), never `passed`.

use serde::Serialize;

use super::spread;
use super::stats::{BUCKET_NS, Stats};

/// The thresholds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// `spread`: the share of a wave that may sleep the same, or go out in
    /// one 100 ms bucket.
    pub max_bucket_share: f64,
    /// `lockstep`: a spike's share of the retrying tasks.
    pub spike_share: f64,
    /// `lockstep`: spikes at a fixed period that make a lockstep.
    pub lockstep_spikes: u32,
    /// `give_up_sync`: the largest bucket's share of the give-ups.
    pub max_give_up_share: f64,
    /// `terminal_retried`: retries of a terminal status allowed.
    pub max_terminal_retries: u64,
    /// `amplification`: attempts per task (none: a note).
    pub max_amplification: Option<f64>,
    /// `give_ups`: the share of the tasks that gave up.
    pub max_give_up_rate: f64,
    /// `retry_after`: the honored share's floor (none: a note).
    pub min_honored_share: Option<f64>,
    /// Fewest retrying tasks (or give-ups) for a share to be judged.
    pub min_tasks: u64,
}

/// `pass`, `fail` or `note`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Within the threshold.
    Pass,
    /// Past it.
    Fail,
    /// Nothing to judge (too few events, a field no event carries).
    Note,
}

/// One check's verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// The check's name.
    pub check: &'static str,
    /// Its verdict.
    pub verdict: Verdict,
    /// The value measured (`null` when there is none).
    pub value: Option<f64>,
    /// The threshold.
    pub limit: Option<f64>,
    /// Why, with the numbers.
    pub message: String,
}

/// Spikes recurring at a fixed period.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lockstep {
    /// Whether a fixed-period train of at least `--lockstep-spikes` spikes was found.
    pub detected: bool,
    /// Its period, seconds.
    pub period_s: Option<f64>,
    /// Spikes in the longest train.
    pub train: usize,
    /// Every spike's start, ns since the epoch (at most 1,000, largest first in time order).
    pub spikes_ns: Vec<i64>,
}

/// How many times the mean of its neighbourhood a spike holds at least.
pub const SPIKE_OVER_NEIGHBOURS: f64 = 3.0;

/// Buckets on each side of a bucket that make its neighbourhood (1 s).
pub const NEIGHBOURS: i64 = 10;

/// Finds spikes and the longest train of them whose gaps are equal within
/// one bucket. A spike is a bucket of grid A holding at least `share` of the
/// retrying tasks and at least [`SPIKE_OVER_NEIGHBOURS`] times the mean `m`
/// of the [`NEIGHBOURS`] buckets on each side: a smear of full jitter, where
/// every bucket holds a similar share, has no spike however dense it is.
/// It must also stand out of the neighbours' noise: at least `m + 3√m + 3`
/// retries (a bucket of 2 or 3 among empty ones is chance in a small fleet:
/// 20 tasks with full jitter made trains of such "spikes").
pub fn lockstep(stats: &Stats, share: f64, min_train: u32) -> Lockstep {
    let floor = (share * stats.retrying_tasks as f64).max(2.0);
    let a = &stats.retries.a;
    let around = |i: i64| {
        let sum: u64 = (i - NEIGHBOURS..=i + NEIGHBOURS)
            .filter(|&j| j != i)
            .map(|j| u64::from(a.get(&j).copied().unwrap_or(0)))
            .sum();
        sum as f64 / (2 * NEIGHBOURS) as f64
    };
    let mut spikes: Vec<i64> = a
        .iter()
        .filter(|&(&i, &c)| {
            let (c, m) = (f64::from(c), around(i));
            c >= floor && c >= SPIKE_OVER_NEIGHBOURS * m && c >= m + 3.0 * m.sqrt() + 3.0
        })
        .map(|(&i, _)| i)
        .collect();
    spikes.sort_unstable();
    spikes.truncate(1_000);
    // Neighbouring buckets of one spike count once.
    spikes.dedup_by(|b, a| *b - *a <= 1);
    let (mut best, mut best_gap) = (usize::from(!spikes.is_empty()), None);
    let mut i = 0;
    while i + 1 < spikes.len() {
        let gap = spikes[i + 1] - spikes[i];
        let mut j = i + 1;
        while j + 1 < spikes.len() && (spikes[j + 1] - spikes[j] - gap).abs() <= 1 {
            j += 1;
        }
        if j - i + 1 > best {
            best = j - i + 1;
            best_gap = Some(gap);
        }
        i = j;
    }
    let detected = best >= min_train as usize && best >= 2;
    Lockstep {
        detected,
        period_s: best_gap.filter(|_| detected).map(|g| g as f64 * 0.1),
        train: best,
        spikes_ns: spikes.iter().map(|i| i * BUCKET_NS).collect(),
    }
}

fn share_check(
    check: &'static str,
    value: Option<f64>,
    limit: f64,
    enough: bool,
    what: String,
) -> Check {
    let (verdict, message) = match value {
        None => (Verdict::Note, format!("nothing to judge: {what}")),
        Some(_) if !enough => (Verdict::Note, format!("too few to judge: {what}")),
        Some(v) if v > limit => (
            Verdict::Fail,
            format!("{what}, above the limit {:.1}%", limit * 100.0),
        ),
        Some(_) => (
            Verdict::Pass,
            format!("{what}, within {:.1}%", limit * 100.0),
        ),
    };
    Check {
        check,
        verdict,
        value,
        limit: Some(limit),
        message,
    }
}

/// What the report concludes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Something was judged and no check failed.
    Passed,
    /// A check failed.
    Failed,
    /// Nothing to judge (no event, no task that retried), or a check the
    /// memory bound left unjudged while none failed.
    NotJudged,
}

impl Outcome {
    /// The name in the reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed => "failed",
            Outcome::NotJudged => "not_judged",
        }
    }
}

/// A check the memory bound left unjudged says so in its message.
const UNJUDGED_BY_BOUND: &str = "not judged: --max-open-tasks";

/// The outcome of `checks` over `s`, and why when nothing was judged.
pub fn outcome(s: &Stats, checks: &[Check]) -> (Outcome, Option<String>) {
    if s.events == 0 {
        let why = format!(
            "no retry event in {} lines ({} skipped)",
            s.lines, s.skipped
        );
        return (Outcome::NotJudged, Some(why));
    }
    if checks.iter().any(|c| c.verdict == Verdict::Fail) {
        return (Outcome::Failed, None);
    }
    if s.retrying_tasks == 0 {
        let why = format!("no task retried ({} tasks)", s.tasks);
        return (Outcome::NotJudged, Some(why));
    }
    let unjudged: Vec<&str> = checks
        .iter()
        .filter(|c| c.message.starts_with(UNJUDGED_BY_BOUND))
        .map(|c| c.check)
        .collect();
    if !unjudged.is_empty() {
        let why = format!(
            "--max-open-tasks was reached: {} left unjudged",
            unjudged.join(", ")
        );
        return (Outcome::NotJudged, Some(why));
    }
    (Outcome::Passed, None)
}

/// `c` as a note: the memory bound counted `flushed` open tasks as
/// unfinished mid-log, so its numbers may count a task twice.
fn unjudged(mut c: Check, max_open: usize, flushed: u64) -> Check {
    c.verdict = Verdict::Note;
    c.message = format!(
        "{UNJUDGED_BY_BOUND} ({max_open}) was reached and {flushed} open tasks were counted as \
         unfinished mid-log (their later events as new tasks); raise it to judge: {}",
        c.message
    );
    c
}

/// Every check, in report order.
pub fn checks(s: &Stats, t: &Thresholds, lock: &Lockstep) -> Vec<Check> {
    let bound = |c: Check, counts_tasks: bool| {
        if counts_tasks && s.bound_flushed > 0 {
            unjudged(c, s.max_open, s.bound_flushed)
        } else {
            c
        }
    };
    let mut out = Vec::new();
    out.push(bound(spread::judge(&s.waves, t).0, s.without_attempt > 0));
    out.push(bound(if s.retrying_tasks < t.min_tasks {
        Check { check: "lockstep", verdict: Verdict::Note, value: None, limit: Some(f64::from(t.lockstep_spikes)),
            message: format!("too few to judge: {} retrying tasks", s.retrying_tasks) }
    } else {
        let v = lock.train as f64;
        Check {
            check: "lockstep",
            verdict: if lock.detected { Verdict::Fail } else { Verdict::Pass },
            value: Some(v),
            limit: Some(f64::from(t.lockstep_spikes)),
            message: match lock.period_s {
                Some(p) => format!(
                    "{} spikes of at least {:.0}% of the retrying tasks recur every {p:.1} s: the fleet retries in lockstep",
                    lock.train,
                    t.spike_share * 100.0
                ),
                None => format!(
                    "{} spike(s) of at least {:.0}% of the retrying tasks, no train of {} at a fixed period",
                    lock.spikes_ns.len(),
                    t.spike_share * 100.0,
                    t.lockstep_spikes
                ),
            },
        }
    }, true));
    let gl = s.give_ups.largest();
    let gshare = gl
        .filter(|_| s.give_ups.total > 0)
        .map(|(_, c)| f64::from(c) / s.give_ups.total as f64);
    out.push(share_check(
        "give_up_sync",
        gshare,
        t.max_give_up_share,
        s.give_ups.total >= t.min_tasks,
        match gshare {
            Some(v) => format!(
                "the largest 100 ms bucket holds {} of the {} give-ups = {:.1}%",
                gl.map_or(0, |l| l.1),
                s.give_ups.total,
                v * 100.0
            ),
            None => "no give-up".into(),
        },
    ));
    out.push(if s.with_status == 0 {
        Check { check: "terminal_retried", verdict: Verdict::Note, value: None, limit: Some(t.max_terminal_retries as f64),
            message: "no retry_scheduled event carries a status field".into() }
    } else {
        let statuses: Vec<String> = s.terminal_statuses.iter().map(|(k, v)| format!("{k} x{v}")).collect();
        Check {
            check: "terminal_retried",
            verdict: if s.terminal_retries > t.max_terminal_retries { Verdict::Fail } else { Verdict::Pass },
            value: Some(s.terminal_retries as f64),
            limit: Some(t.max_terminal_retries as f64),
            message: if s.terminal_retries == 0 {
                format!("none of the {} retries with a status followed a terminal status", s.with_status)
            } else {
                format!(
                    "{} retries ({} tasks) followed a status the library calls terminal ({}): a classifier retries \
                     what cannot succeed",
                    s.terminal_retries,
                    s.terminal_retried_tasks,
                    statuses.join(", ")
                )
            },
        }
    });
    let amp = (s.tasks > 0).then(|| s.attempts as f64 / s.tasks as f64);
    out.push(bound(
        Check {
            check: "amplification",
            verdict: match (amp, t.max_amplification) {
                (Some(a), Some(max)) if a > max => Verdict::Fail,
                (Some(_), Some(_)) => Verdict::Pass,
                _ => Verdict::Note,
            },
            value: amp,
            limit: t.max_amplification,
            message: match amp {
                Some(a) => format!(
                    "{} attempts for {} tasks = {a:.2} per task",
                    s.attempts, s.tasks
                ),
                None => "no task".into(),
            },
        },
        true,
    ));
    let rate = (s.tasks > 0).then(|| s.give_ups.total as f64 / s.tasks as f64);
    let reasons: Vec<String> = s.reasons.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let mut g = share_check(
        "give_ups",
        rate,
        t.max_give_up_rate,
        true,
        format!(
            "{} of {} tasks exhausted their budget{}",
            s.give_ups.total,
            s.tasks,
            if reasons.is_empty() {
                String::new()
            } else {
                format!(" ({})", reasons.join(", "))
            }
        ),
    );
    if rate.is_none() {
        g.message = "no task".into();
    }
    out.push(bound(g, true));
    let honored = (s.honored_known > 0).then(|| s.honored as f64 / s.honored_known as f64);
    out.push(Check {
        check: "retry_after",
        verdict: match (honored, t.min_honored_share) {
            (Some(h), Some(min)) if h < min => Verdict::Fail,
            (Some(_), Some(_)) => Verdict::Pass,
            _ => Verdict::Note,
        },
        value: honored,
        limit: t.min_honored_share,
        message: match honored {
            Some(h) => format!(
                "{} of {} scheduled retries honored a server's delay (Retry-After) = {:.1}%",
                s.honored,
                s.honored_known,
                h * 100.0
            ),
            None => "no retry_scheduled event carries honored_retry_after".into(),
        },
    });
    out
}
