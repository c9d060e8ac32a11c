//! `herdless fleet`: N concurrent workers, one logical GET each, and what the
//! server saw of them.
//!
//! ```text
//! herdless fleet --workers N [--timeout DUR] [--json] [policy flags]
//!                [--retry-budget none|grpc|aws] [--budget-tokens T]
//!                [--breaker THRESHOLD] [--probe-wait DUR]
//!                [--urgent DUR] [--urgent-quota Q] [--urgent-workers K] URL
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
//! * a histogram of attempts in fixed 100 ms buckets;
//! * what is needed to compare fleet-level strategies: `drain_s` (when the
//!   last successful call ended), `calls_per_worker` and its maximum, the
//!   give-ups by reason (`terminal`, `max_attempts`, `max_elapsed`,
//!   `retry_budget`), `budget_denials`, and how concentrated the give-ups were
//!   in time (`give_ups_peak_100ms`).
//!
//! # Fleet-level protection
//!
//! The workers of one `fleet` process are one process's calls, so the
//! library's fleet-level pieces are shared by all of them (one `Arc` each):
//!
//! * `--retry-budget grpc|aws`: one [`RetryBudget`] — gRPC retry throttling
//!   (`--budget-tokens` tokens, default 100, a failure costs 1, a success
//!   refunds 0.1, retries only while more than half remain) or the AWS SDK
//!   quota (default 500 tokens, a retry costs 5, after a per-attempt timeout
//!   10, refunded on success). A denied retry ends the call with
//!   `retry_budget`.
//! * `--breaker THRESHOLD`: one half-open probe [`Breaker`]: after THRESHOLD
//!   consecutive failures one retry at a time probes, the others wait
//!   `--probe-wait` (jittered, default 1 s).
//! * `--urgent DUR`: the escape lane ([`Urgent`]) for `--urgent-workers K`
//!   workers (default: all): their first `--urgent-quota` (default 2) retries
//!   skip the budget and the breaker, and no sleep takes them past DUR.
//!
//! With `--seed S`, worker `i` draws from a generator derived from `(S, i)`:
//! reproducible, yet never the same sequence for two workers (a shared seed
//! would re-synchronize the fleet).

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use herdless::http::client::HttpClassifier;
use herdless::http::{HttpRetry, SendError};
use herdless::{Breaker, GiveUp, Jitter, Policy, Retry, RetryBudget, Urgent};
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
    /// A retry budget shared by every worker (token bucket): none, grpc or aws.
    #[arg(long, value_enum, value_name = "KIND", default_value = "none")]
    pub retry_budget: BudgetKind,
    /// The budget's capacity in tokens (default: grpc 100, aws 500).
    #[arg(long, value_name = "T")]
    pub budget_tokens: Option<f64>,
    /// A half-open probe breaker shared by every worker: opens after THRESHOLD
    /// consecutive failures, then one retry at a time probes.
    #[arg(long, value_name = "THRESHOLD")]
    pub breaker: Option<u32>,
    /// With --breaker: how long the others wait behind a probe (jittered in [DUR/2, DUR]).
    #[arg(long, value_parser = parse_duration, value_name = "DUR", default_value = "1s")]
    pub probe_wait: Duration,
    /// Escape lane: urgent calls never sleep past DUR from their start.
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub urgent: Option<Duration>,
    /// With --urgent: retries per call that skip the budget and the breaker.
    #[arg(long, value_name = "Q", default_value_t = 2)]
    pub urgent_quota: u32,
    /// With --urgent: how many workers (the first K) are urgent (default: all).
    #[arg(long, value_name = "K")]
    pub urgent_workers: Option<u32>,
    /// Retry policy.
    #[command(flatten)]
    pub policy: PolicyArgs,
}

/// `--retry-budget` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BudgetKind {
    /// No shared budget.
    None,
    /// gRPC retry throttling.
    Grpc,
    /// The AWS SDK retry quota.
    Aws,
}

/// The fleet-level pieces every worker shares.
#[derive(Debug, Clone, Default)]
pub struct Guards {
    /// The shared retry budget.
    pub budget: Option<Arc<RetryBudget>>,
    /// The shared breaker.
    pub breaker: Option<Arc<Breaker>>,
    /// The escape lane, for the first `urgent_workers` workers.
    pub urgent: Option<Urgent>,
    /// How many workers are urgent.
    pub urgent_workers: u32,
}

/// The strategy a report was made with (echoed in the JSON).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Strategy {
    /// `none`, `grpc` or `aws`.
    pub retry_budget: BudgetKind,
    /// The budget's capacity in tokens (null without a budget).
    pub budget_tokens: Option<f64>,
    /// The breaker's threshold (null without a breaker).
    pub breaker: Option<u32>,
    /// The urgent deadline in seconds (null without the escape lane).
    pub urgent_s: Option<f64>,
    /// How many workers were urgent.
    pub urgent_workers: u32,
}

impl FleetArgs {
    /// Builds the shared pieces the flags ask for.
    ///
    /// # Errors
    ///
    /// A message for an invalid budget size or urgent deadline.
    pub fn guards(&self) -> Result<(Guards, Strategy), String> {
        let budget = match (self.retry_budget, self.budget_tokens) {
            (BudgetKind::None, Some(_)) => {
                return Err("--budget-tokens needs --retry-budget grpc|aws".into())
            }
            (BudgetKind::None, None) => None,
            (BudgetKind::Grpc, t) => Some(
                RetryBudget::builder()
                    .grpc(t.unwrap_or(100.0), 0.1)
                    .build()
                    .map_err(|e| format!("--budget-tokens: {e}"))?,
            ),
            (BudgetKind::Aws, t) => Some(
                RetryBudget::builder()
                    .aws()
                    .max_tokens(t.unwrap_or(500.0))
                    .build()
                    .map_err(|e| format!("--budget-tokens: {e}"))?,
            ),
        };
        if self.breaker == Some(0) {
            return Err("--breaker 0: the threshold must be at least 1".into());
        }
        if self.probe_wait.is_zero() {
            // A zero wait would make every waiting call re-ask in a busy loop.
            return Err("--probe-wait must be positive".into());
        }
        if self.urgent.is_some_and(|d| d.is_zero()) {
            return Err("--urgent must be positive".into());
        }
        if self.urgent.is_none() && self.urgent_workers.is_some() {
            return Err("--urgent-workers needs --urgent DUR".into());
        }
        let urgent_workers = match self.urgent {
            Some(_) => self
                .urgent_workers
                .unwrap_or(self.workers)
                .min(self.workers),
            None => 0,
        };
        let strategy = Strategy {
            retry_budget: self.retry_budget,
            budget_tokens: budget.as_ref().map(RetryBudget::max_tokens),
            breaker: self.breaker,
            urgent_s: self.urgent.map(|d| d.as_secs_f64()),
            urgent_workers,
        };
        let guards = Guards {
            budget: budget.map(Arc::new),
            breaker: self
                .breaker
                .map(|t| Arc::new(Breaker::new(t).probe_wait(self.probe_wait))),
            urgent: self.urgent.map(|d| Urgent::new(d).quota(self.urgent_quota)),
            urgent_workers,
        };
        Ok((guards, strategy))
    }
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

/// One worker's end, as the fleet saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorkerEnd {
    /// How its call ended.
    pub outcome: Outcome,
    /// Why it gave up (`None` on success).
    pub reason: Option<GiveUp>,
    /// When its call returned, seconds since the fleet started.
    pub end_s: f64,
}

/// Give-ups by reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct GiveUps {
    /// Terminal (or unknown) errors.
    pub terminal: u64,
    /// `max_attempts` reached.
    pub max_attempts: u64,
    /// The next sleep would have passed `max_elapsed` (or the urgent deadline).
    pub max_elapsed: u64,
    /// The shared retry budget denied a retry.
    pub retry_budget: u64,
}

/// One attempt, as the fleet saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttemptAt {
    /// Start time, seconds since the fleet started.
    pub t_s: f64,
    /// 1-based attempt number within its worker's call.
    pub number: u32,
    /// The worker.
    pub worker: u32,
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
    /// The fleet-level pieces in use.
    pub strategy: Strategy,
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
    /// From the fleet's start to the end of the last successful call, seconds
    /// (null when none succeeded).
    pub drain_s: Option<f64>,
    /// `calls / workers`.
    pub calls_per_worker: f64,
    /// The most calls any one worker made.
    pub max_calls_per_worker: u64,
    /// Give-ups by reason (`terminal` equals the `terminal` count; the other
    /// three sum to `exhausted`).
    pub give_ups: GiveUps,
    /// Retries the shared budget denied (each ends one call: equals
    /// `give_ups.retry_budget`).
    pub budget_denials: u64,
    /// The budget's level when the fleet ended (null without a budget).
    pub budget_tokens_left: Option<f64>,
    /// Busiest 100 ms window of give-ups (exhausted calls' ends): a budget
    /// cliff shows as one window holding most of them.
    pub give_ups_peak_100ms: Peak,
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

/// Builds the report from every worker's end and attempts.
pub fn summarize(
    ends: &[WorkerEnd],
    attempts: &[AttemptAt],
    duration: Duration,
    strategy: Strategy,
    budget_tokens_left: Option<f64>,
) -> Report {
    let workers = ends.len() as u64;
    let count = |o: Outcome| ends.iter().filter(|x| x.outcome == o).count() as u64;
    let reason = |r: GiveUp| ends.iter().filter(|x| x.reason == Some(r)).count() as u64;
    let give_ups = GiveUps {
        terminal: reason(GiveUp::Terminal),
        max_attempts: reason(GiveUp::MaxAttempts),
        max_elapsed: reason(GiveUp::MaxElapsed),
        retry_budget: reason(GiveUp::RetryBudget),
    };
    let drain_s = ends
        .iter()
        .filter(|e| e.outcome == Outcome::Succeeded)
        .map(|e| e.end_s)
        .max_by(f64::total_cmp);
    let mut per_worker: std::collections::HashMap<u32, u64> = std::collections::HashMap::new();
    for a in attempts {
        *per_worker.entry(a.worker).or_default() += 1;
    }
    let mut give_up_times: Vec<f64> = ends
        .iter()
        .filter(|e| e.outcome == Outcome::Exhausted)
        .map(|e| e.end_s)
        .collect();
    give_up_times.sort_by(f64::total_cmp);
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
        strategy,
        workers,
        succeeded: count(Outcome::Succeeded),
        terminal: count(Outcome::Terminal),
        exhausted: count(Outcome::Exhausted),
        calls: all.len() as u64,
        retries: retries.len() as u64,
        duration_s,
        drain_s,
        calls_per_worker: ratio(all.len() as u64, workers),
        max_calls_per_worker: per_worker.values().copied().max().unwrap_or(0),
        give_ups,
        budget_denials: give_ups.retry_budget,
        budget_tokens_left,
        give_ups_peak_100ms: peak(&give_up_times),
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
    s.push_str(&format!(
        "per worker   {:.2} calls (max {})\n",
        r.calls_per_worker, r.max_calls_per_worker
    ));
    s.push_str(&format!("duration     {:.3} s\n", r.duration_s));
    if let Some(d) = r.drain_s {
        s.push_str(&format!("drained      {d:.3} s (last success)\n"));
    }
    s.push_str(&format!(
        "give-ups     terminal {}, max_attempts {}, max_elapsed {}, retry_budget {}\n",
        r.give_ups.terminal,
        r.give_ups.max_attempts,
        r.give_ups.max_elapsed,
        r.give_ups.retry_budget
    ));
    if let Some(t) = r.budget_tokens_left {
        s.push_str(&format!(
            "budget       {:?}: {} denials, {t:.1} tokens left\n",
            r.strategy.retry_budget, r.budget_denials
        ));
    }
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
#[allow(clippy::too_many_arguments)]
pub async fn run_fleet(
    url: reqwest::Url,
    workers: u32,
    policy: Policy,
    timeout: Duration,
    args: &PolicyArgs,
    guards: Guards,
    strategy: Strategy,
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
        let guards = guards.clone();
        set.spawn(async move {
            let mut retry = Retry::new(policy, HttpClassifier::default())
                .notify(StderrEvents { format })
                .task_id(format!("{prefix}{i}"));
            if let Some(seed) = seed {
                retry = retry.seed(seed ^ u64::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            }
            if let Some(budget) = guards.budget {
                retry = retry.budget(budget);
            }
            if let Some(breaker) = guards.breaker {
                retry = retry.breaker(breaker);
            }
            if let (Some(urgent), true) = (guards.urgent, i < guards.urgent_workers) {
                retry = retry.urgent(urgent);
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
            let (outcome, reason) = match outcome {
                Ok(_) => (Outcome::Succeeded, None),
                Err(SendError::Retry(e)) if e.is_exhausted() => {
                    (Outcome::Exhausted, Some(e.reason()))
                }
                Err(_) => (Outcome::Terminal, Some(GiveUp::Terminal)),
            };
            let end = WorkerEnd {
                outcome,
                reason,
                end_s: start.elapsed().as_secs_f64(),
            };
            (i, end, attempts)
        });
    }
    let mut ends = Vec::with_capacity(workers as usize);
    let mut attempts = Vec::new();
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok((worker, end, times)) => {
                ends.push(end);
                attempts.extend(times.into_iter().map(|(t, number)| AttemptAt {
                    t_s: t.saturating_duration_since(start).as_secs_f64(),
                    number,
                    worker,
                }));
            }
            Err(e) => {
                eprintln!("herdless fleet: a worker task died ({e}); counted as terminal");
                ends.push(WorkerEnd {
                    outcome: Outcome::Terminal,
                    reason: Some(GiveUp::Terminal),
                    end_s: start.elapsed().as_secs_f64(),
                });
            }
        }
        if let Some(p) = &progress {
            p.inc(1);
        }
    }
    if let Some(p) = progress {
        p.finish_and_clear();
    }
    let duration = start.elapsed();
    let tokens_left = guards.budget.as_ref().map(|b| b.tokens());
    Ok(summarize(&ends, &attempts, duration, strategy, tokens_left))
}

/// Runs `herdless fleet`; returns the exit code: 0 when every worker
/// succeeded, 4 when any exhausted its budget, else 3 when any ended terminal.
pub fn run(args: &FleetArgs) -> i32 {
    let usage = |e: String| {
        eprintln!("herdless fleet: {e}");
        exit::USAGE
    };
    let (policy, policy_args) = match args.policy.resolve_with_args(Jitter::Full) {
        Ok(resolved) => resolved,
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
    let (guards, strategy) = match args.guards() {
        Ok(g) => g,
        Err(e) => return usage(e),
    };
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
        guards,
        strategy,
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
        let end = |outcome, reason, end_s| WorkerEnd {
            outcome,
            reason,
            end_s,
        };
        let ends = [
            end(Outcome::Succeeded, None, 0.9),
            end(Outcome::Exhausted, Some(GiveUp::RetryBudget), 0.5),
            end(Outcome::Terminal, Some(GiveUp::Terminal), 0.02),
        ];
        let at = |t_s, number, worker| AttemptAt {
            t_s,
            number,
            worker,
        };
        let attempts = [
            at(0.0, 1, 0),
            at(0.01, 1, 1),
            at(0.02, 1, 2),
            at(0.25, 2, 0),
            at(0.31, 2, 1),
        ];
        let strategy = Strategy {
            retry_budget: BudgetKind::Grpc,
            budget_tokens: Some(10.0),
            breaker: None,
            urgent_s: None,
            urgent_workers: 0,
        };
        let r = summarize(
            &ends,
            &attempts,
            Duration::from_secs(1),
            strategy,
            Some(4.5),
        );
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
        // The strategy comparison fields.
        assert_eq!(r.drain_s, Some(0.9));
        assert!((r.calls_per_worker - 5.0 / 3.0).abs() < 1e-9);
        assert_eq!(r.max_calls_per_worker, 2);
        assert_eq!(
            r.give_ups,
            GiveUps {
                terminal: 1,
                max_attempts: 0,
                max_elapsed: 0,
                retry_budget: 1
            }
        );
        assert_eq!(r.budget_denials, 1);
        assert_eq!(r.budget_tokens_left, Some(4.5));
        assert_eq!(r.give_ups_peak_100ms.attempts, 1);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["strategy"]["retry_budget"], "grpc");
        assert_eq!(json["give_ups"]["retry_budget"], 1);
        let text = render_text(&r);
        assert!(text.contains("exhausted    1"), "{text}");
        assert!(text.contains("retry_budget 1"), "{text}");
        // Nobody succeeded: no drain time.
        let none = summarize(
            &ends[1..],
            &attempts,
            Duration::from_secs(1),
            strategy,
            None,
        );
        assert_eq!(none.drain_s, None);
    }

    #[test]
    fn guard_flags_build_shared_pieces_or_clear_errors() {
        use clap::Parser;
        let parse = |extra: &[&str]| {
            let argv = ["herdless", "fleet", "--workers", "10"]
                .iter()
                .chain(extra)
                .chain(&["http://127.0.0.1:1/"]);
            let crate::cli::Command::Fleet(a) =
                crate::cli::Cli::try_parse_from(argv).unwrap().command
            else {
                unreachable!()
            };
            a.guards()
        };
        let (g, s) = parse(&[]).unwrap();
        assert!(g.budget.is_none() && g.breaker.is_none() && g.urgent.is_none());
        assert_eq!(s.retry_budget, BudgetKind::None);
        let (g, s) = parse(&["--retry-budget", "grpc"]).unwrap();
        assert_eq!(g.budget.unwrap().max_tokens(), 100.0);
        assert_eq!(s.budget_tokens, Some(100.0));
        let (g, _) = parse(&["--retry-budget", "aws", "--budget-tokens", "50"]).unwrap();
        assert_eq!(g.budget.unwrap().max_tokens(), 50.0);
        let (g, s) = parse(&["--breaker", "3", "--probe-wait", "200ms"]).unwrap();
        let b = g.breaker.unwrap();
        assert_eq!(
            (b.threshold(), b.get_probe_wait()),
            (3, Duration::from_millis(200))
        );
        assert_eq!(s.breaker, Some(3));
        let (g, s) = parse(&["--urgent", "800ms", "--urgent-workers", "4"]).unwrap();
        assert_eq!(g.urgent.unwrap().deadline(), Duration::from_millis(800));
        assert_eq!((g.urgent_workers, s.urgent_workers), (4, 4));
        let (g, _) = parse(&["--urgent", "1s"]).unwrap();
        assert_eq!(g.urgent_workers, 10);
        for (bad, msg) in [
            (&["--budget-tokens", "5"][..], "needs --retry-budget"),
            (
                &["--retry-budget", "grpc", "--budget-tokens=-1"],
                "--budget-tokens",
            ),
            (&["--breaker", "0"], "at least 1"),
            (&["--urgent-workers", "2"], "needs --urgent"),
            (&["--urgent", "0s"], "positive"),
            (&["--breaker", "3", "--probe-wait", "0ms"], "--probe-wait"),
            (
                &["--retry-budget", "aws", "--budget-tokens", "NaN"],
                "--budget-tokens",
            ),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(msg), "{bad:?}: {e}");
        }
    }
}
