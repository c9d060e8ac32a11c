//! `herdless fleet`: N concurrent workers, one logical GET each, and what the
//! server saw of them.
//!
//! ```text
//! herdless fleet --workers N [--timeout DUR] [--json] [policy flags] URL
//! ```
//!
//! Worker `i` (0-based) is a tokio task sending `X-Worker-Id: i`; each does one
//! logical GET with retries through [`herdless::http::HttpRetry`] (the seed's
//! status sets, `Retry-After` clamped and spread, connection errors and
//! per-attempt timeouts retried). The report:
//!
//! * `succeeded` / `terminal` / `exhausted`: every worker lands in exactly one,
//!   so they sum to `workers` in every run — a reset connection or a hung
//!   server is a retryable failure bounded by `--timeout` and the budget, and
//!   a worker task that somehow dies is counted as terminal (and said so);
//! * `calls`: every request sent (first tries and retries);
//! * the **largest share of attempts in any 100 ms window**: the window slides
//!   over the attempt start times (so a spike is never split across two fixed
//!   bins), reported over all attempts and over retries only (the first tries
//!   start together by construction);
//! * a histogram of attempts in fixed 100 ms buckets.
//!
//! With `--seed S`, worker `i` draws from a generator derived from `(S, i)`:
//! reproducible, yet never the same sequence for two workers (a shared seed
//! would re-synchronize the fleet).

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use herdless::http::client::HttpClassifier;
use herdless::http::{HttpRetry, SendError};
use herdless::{Jitter, Policy, Retry};
use serde::Serialize;

use crate::events_out::StderrEvents;
use crate::get::parse_url;
use crate::policy_args::{parse_duration, PolicyArgs};
use crate::{exit, limits};

/// The histogram's and the peak window's width.
pub const BUCKET: Duration = Duration::from_millis(100);

/// `herdless fleet` flags.
#[derive(Debug, Clone, Args)]
pub struct FleetArgs {
    /// The URL every worker GETs.
    pub url: String,
    /// Number of concurrent workers.
    #[arg(long, value_name = "N")]
    pub workers: u32,
    /// Per-attempt timeout (connect to end of response).
    #[arg(long, value_parser = parse_duration, value_name = "DUR", default_value = "10s")]
    pub timeout: Duration,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Retry policy.
    #[command(flatten)]
    pub policy: PolicyArgs,
}

/// How one worker's call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A status below 400, possibly after retries.
    Succeeded,
    /// A terminal status or error.
    Terminal,
    /// The budget ran out.
    Exhausted,
}

/// One attempt, as the fleet saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttemptAt {
    /// Start time, seconds since the fleet started.
    pub t_s: f64,
    /// 1-based attempt number within its worker's call.
    pub number: u32,
}

/// One 100 ms histogram bucket.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bucket {
    /// The bucket's start, seconds since the fleet started.
    pub start_s: f64,
    /// Attempts started in it.
    pub attempts: u64,
}

/// The busiest 100 ms window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Peak {
    /// Attempts started in it.
    pub attempts: u64,
    /// `attempts` over all the attempts counted (the share of attempts).
    pub share_of_attempts: f64,
    /// `attempts / workers` (the share of the fleet; above 1 when workers
    /// attempt more than once in the window).
    pub share_of_fleet: f64,
    /// Its start, seconds since the fleet started.
    pub start_s: f64,
}

/// The fleet's report (`--json` prints exactly this).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Number of workers.
    pub workers: u64,
    /// Workers whose call succeeded.
    pub succeeded: u64,
    /// Workers whose call ended on a terminal error.
    pub terminal: u64,
    /// Workers whose budget ran out.
    pub exhausted: u64,
    /// Every request sent, first tries included.
    pub calls: u64,
    /// Attempts numbered 2 or more.
    pub retries: u64,
    /// From the first attempt to the last worker's end, seconds.
    pub duration_s: f64,
    /// `calls / duration_s`.
    pub attempts_per_s: f64,
    /// Busiest 100 ms window over all attempts.
    pub peak_100ms: Peak,
    /// Busiest 100 ms window over retries only.
    pub peak_100ms_retries: Peak,
    /// Attempts per fixed 100 ms bucket, from 0 to the last attempt.
    pub histogram: Vec<Bucket>,
}

/// The largest number of `sorted` times in any half-open window of `width`
/// seconds, and where it starts.
pub fn busiest_window(sorted: &[f64], width: f64) -> (u64, f64) {
    let (mut best, mut at, mut lo) = (0usize, 0.0, 0usize);
    for (hi, &t) in sorted.iter().enumerate() {
        while t - sorted[lo] >= width {
            lo += 1;
        }
        if hi + 1 - lo > best {
            best = hi + 1 - lo;
            at = sorted[lo];
        }
    }
    (best as u64, at)
}

/// Builds the report from every worker's outcome and attempts.
pub fn summarize(outcomes: &[Outcome], attempts: &[AttemptAt], duration: Duration) -> Report {
    let workers = outcomes.len() as u64;
    let count = |o: Outcome| outcomes.iter().filter(|x| **x == o).count() as u64;
    let width = BUCKET.as_secs_f64();
    let mut all: Vec<f64> = attempts.iter().map(|a| a.t_s).collect();
    all.sort_by(f64::total_cmp);
    let mut retries: Vec<f64> = attempts
        .iter()
        .filter(|a| a.number >= 2)
        .map(|a| a.t_s)
        .collect();
    retries.sort_by(f64::total_cmp);
    let ratio = |n: u64, d: u64| if d == 0 { 0.0 } else { n as f64 / d as f64 };
    let peak = |times: &[f64]| {
        let (n, at) = busiest_window(times, width);
        Peak {
            attempts: n,
            share_of_attempts: ratio(n, times.len() as u64),
            share_of_fleet: ratio(n, workers),
            start_s: at,
        }
    };
    let mut histogram: Vec<Bucket> = Vec::new();
    for &t in &all {
        let i = (t / width).max(0.0) as usize;
        while histogram.len() <= i {
            let start_s = histogram.len() as f64 * width;
            histogram.push(Bucket {
                start_s,
                attempts: 0,
            });
        }
        histogram[i].attempts += 1;
    }
    let duration_s = duration.as_secs_f64();
    Report {
        workers,
        succeeded: count(Outcome::Succeeded),
        terminal: count(Outcome::Terminal),
        exhausted: count(Outcome::Exhausted),
        calls: all.len() as u64,
        retries: retries.len() as u64,
        duration_s,
        attempts_per_s: if duration_s > 0.0 {
            all.len() as f64 / duration_s
        } else {
            0.0
        },
        peak_100ms: peak(&all),
        peak_100ms_retries: peak(&retries),
        histogram,
    }
}

/// The report as text.
pub fn render_text(r: &Report) -> String {
    let mut s = String::new();
    let pct = |x: f64| x * 100.0;
    s.push_str(&format!("workers      {}\n", r.workers));
    s.push_str(&format!("succeeded    {}\n", r.succeeded));
    s.push_str(&format!("terminal     {}\n", r.terminal));
    s.push_str(&format!("exhausted    {}\n", r.exhausted));
    s.push_str(&format!(
        "calls        {} ({} retries)\n",
        r.calls, r.retries
    ));
    s.push_str(&format!("duration     {:.3} s\n", r.duration_s));
    s.push_str(&format!("attempts/s   {:.1}\n", r.attempts_per_s));
    s.push_str(&format!(
        "peak 100 ms  {} attempts = {:.1}% of all attempts, {:.1}% of the fleet, at {:.3} s\n",
        r.peak_100ms.attempts,
        pct(r.peak_100ms.share_of_attempts),
        pct(r.peak_100ms.share_of_fleet),
        r.peak_100ms.start_s
    ));
    s.push_str(&format!(
        "peak retries {} retries = {:.1}% of all retries, {:.1}% of the fleet, at {:.3} s\n",
        r.peak_100ms_retries.attempts,
        pct(r.peak_100ms_retries.share_of_attempts),
        pct(r.peak_100ms_retries.share_of_fleet),
        r.peak_100ms_retries.start_s
    ));
    // At most 40 lines: merge 100 ms buckets when the run is long.
    let merge = r.histogram.len().div_ceil(40).max(1);
    let rows: Vec<(f64, u64)> = r
        .histogram
        .chunks(merge)
        .map(|c| (c[0].start_s, c.iter().map(|b| b.attempts).sum()))
        .collect();
    let top = rows.iter().map(|r| r.1).max().unwrap_or(0).max(1);
    s.push_str(&format!(
        "attempts per {} ms:\n",
        BUCKET.as_millis() * merge as u128
    ));
    for (start, n) in rows {
        let bar = "#".repeat(((n * 50).div_ceil(top)) as usize);
        s.push_str(&format!("{start:>8.1} s {n:>7} {bar}\n"));
    }
    s
}

/// Runs the fleet against `url` and returns the report (the engine of
/// `herdless fleet`, usable in-process).
pub async fn run_fleet(
    url: reqwest::Url,
    workers: u32,
    policy: Policy,
    timeout: Duration,
    args: &PolicyArgs,
    progress: Option<indicatif::ProgressBar>,
) -> Result<Report, String> {
    let client = reqwest::Client::builder()
        .connect_timeout(timeout)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let format = args.log_format;
    let task_prefix: Arc<str> = Arc::from(args.task_id.clone().unwrap_or_else(|| "worker-".into()));
    let start = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for i in 0..workers {
        let (client, url, prefix) = (client.clone(), url.clone(), task_prefix.clone());
        let seed = args.seed;
        set.spawn(async move {
            let mut retry = Retry::new(policy, HttpClassifier::default())
                .notify(StderrEvents { format })
                .task_id(format!("{prefix}{i}"));
            if let Some(seed) = seed {
                retry = retry.seed(seed ^ u64::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            }
            let http = HttpRetry::from_retry(retry);
            let mut attempts = Vec::with_capacity(4);
            let request = client
                .get(url)
                .header("x-worker-id", i.to_string())
                .timeout(timeout);
            let outcome = http
                .send_observed(request, |a| attempts.push((a.started, a.number)))
                .await;
            let outcome = match outcome {
                Ok(_) => Outcome::Succeeded,
                Err(SendError::Retry(e)) if e.is_exhausted() => Outcome::Exhausted,
                Err(_) => Outcome::Terminal,
            };
            (outcome, attempts)
        });
    }
    let mut outcomes = Vec::with_capacity(workers as usize);
    let mut attempts = Vec::new();
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok((outcome, times)) => {
                outcomes.push(outcome);
                attempts.extend(times.into_iter().map(|(t, number)| AttemptAt {
                    t_s: t.saturating_duration_since(start).as_secs_f64(),
                    number,
                }));
            }
            Err(e) => {
                eprintln!("herdless fleet: a worker task died ({e}); counted as terminal");
                outcomes.push(Outcome::Terminal);
            }
        }
        if let Some(p) = &progress {
            p.inc(1);
        }
    }
    if let Some(p) = progress {
        p.finish_and_clear();
    }
    Ok(summarize(&outcomes, &attempts, start.elapsed()))
}

/// Runs `herdless fleet`; returns the exit code: 0 when every worker
/// succeeded, 4 when any exhausted its budget, else 3 when any ended terminal.
pub fn run(args: &FleetArgs) -> i32 {
    let usage = |e: String| {
        eprintln!("herdless fleet: {e}");
        exit::USAGE
    };
    let (policy, policy_args) = match args.policy.resolve_layered(Jitter::Full) {
        Ok(r) => (r.policy, args.policy.with_resolved(&r)),
        Err(e) => return usage(e.to_string()),
    };
    let url = match parse_url(&args.url) {
        Ok(u) => u,
        Err(e) => return usage(e),
    };
    if args.workers == 0 {
        return usage("--workers must be at least 1".into());
    }
    if args.timeout.is_zero() {
        return usage("--timeout must be positive".into());
    }
    if let Some(limit) = limits::raise_nofile_limit() {
        if limit < u64::from(args.workers) + 64 {
            eprintln!(
                "herdless fleet: warning: {} workers need about as many sockets, but the open-file \
                 limit is {limit}; excess connections will fail (and be retried). Raise `ulimit -Hn`.",
                args.workers
            );
        }
    }
    let progress = std::io::stdout().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(u64::from(args.workers)),
            indicatif::ProgressDrawTarget::stdout(),
        );
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} workers done {elapsed}")
        {
            bar.set_style(style);
        }
        bar
    });
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("herdless fleet: cannot start the runtime: {e}");
            return exit::FAILURE;
        }
    };
    let report = rt.block_on(run_fleet(
        url,
        args.workers,
        policy,
        args.timeout,
        &policy_args,
        progress,
    ));
    let report = match report {
        Ok(r) => r,
        Err(e) => {
            eprintln!("herdless fleet: {e}");
            return exit::FAILURE;
        }
    };
    if args.json {
        match serde_json::to_string(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("herdless fleet: {e}");
                return exit::FAILURE;
            }
        }
    } else {
        print!("{}", render_text(&report));
    }
    if report.succeeded == report.workers {
        exit::SUCCESS
    } else if report.exhausted > 0 {
        exit::EXHAUSTED
    } else {
        exit::TERMINAL
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busiest_window_slides() {
        assert_eq!(busiest_window(&[], 0.1), (0, 0.0));
        // A spike straddling a fixed 100 ms boundary stays whole.
        let t = [0.05, 0.09, 0.11, 0.14, 0.5];
        assert_eq!(busiest_window(&t, 0.1), (4, 0.05));
        // Half-open: 0.1 apart is two windows.
        assert_eq!(busiest_window(&[0.0, 0.1], 0.1), (1, 0.0));
    }

    #[test]
    fn summary_counts_and_histogram() {
        let outcomes = [Outcome::Succeeded, Outcome::Exhausted, Outcome::Terminal];
        let attempts = [
            AttemptAt {
                t_s: 0.0,
                number: 1,
            },
            AttemptAt {
                t_s: 0.01,
                number: 1,
            },
            AttemptAt {
                t_s: 0.02,
                number: 1,
            },
            AttemptAt {
                t_s: 0.25,
                number: 2,
            },
            AttemptAt {
                t_s: 0.31,
                number: 2,
            },
        ];
        let r = summarize(&outcomes, &attempts, Duration::from_secs(1));
        assert_eq!(
            (r.workers, r.succeeded, r.terminal, r.exhausted),
            (3, 1, 1, 1)
        );
        assert_eq!((r.calls, r.retries), (5, 2));
        assert_eq!(r.peak_100ms.attempts, 3);
        assert_eq!(r.peak_100ms_retries.attempts, 2);
        assert!((r.peak_100ms_retries.share_of_fleet - 2.0 / 3.0).abs() < 1e-9);
        assert!((r.peak_100ms_retries.share_of_attempts - 1.0).abs() < 1e-9);
        assert!((r.peak_100ms.share_of_attempts - 3.0 / 5.0).abs() < 1e-9);
        let counts: Vec<u64> = r.histogram.iter().map(|b| b.attempts).collect();
        assert_eq!(counts, vec![3, 0, 1, 1]);
        assert!((r.attempts_per_s - 5.0).abs() < 1e-9);
        let text = render_text(&r);
        assert!(text.contains("exhausted    1"), "{text}");
    }
}
