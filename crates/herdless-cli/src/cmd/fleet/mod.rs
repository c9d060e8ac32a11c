//! `herdless fleet`: N concurrent workers, one logical GET each, and what the
//! server saw of them.
//!
//! ```text
//! herdless fleet --workers N [--timeout DUR] [--json] [policy flags]
//!                [--retry-budget none|grpc|aws] [--budget-tokens T]
//!                [--breaker THRESHOLD] [--probe-wait DUR] [--breaker-release DUR]
//!                [--urgent DUR] [--urgent-quota Q] [--urgent-workers K] URL [URL...]
//! ```
//!
//! With several URLs (the replicas of one service), the fleet is its own
//! round-robin balancer: each request, a retry included, goes to the next
//! URL in one turn shared by every worker (`balance.rs`), so a worker's
//! retry usually lands on another replica than its first try, as behind a
//! balancer that picks per request. The report lists the URLs and the
//! calls each got.
//!
//! Worker `i` (0-based) is a tokio task sending `X-Worker-Id: i`; each does one
//! logical GET with retries through [`herdless::adapters::reqwest::HttpRetry`] (the default
//! status sets: 408, 425, 429, 500, 502, 503 and 504 retried, every other
//! status from 400 up terminal; `Retry-After` clamped and spread, connection errors and
//! per-attempt timeouts retried). A call succeeds when the whole response
//! arrived: each attempt reads the body to its end and discards it
//! ([`herdless::adapters::reqwest::Discard`]), so a body that stalls past
//! `--timeout` is a timed-out attempt. The report:
//!
//! * `succeeded` / `terminal` / `exhausted` / `interrupted_workers`: every
//!   worker lands in exactly one, so they sum to `workers` in every run — a reset connection or a hung
//!   server is a retryable failure bounded by `--timeout` and the budget, and
//!   a worker task that somehow dies is counted as terminal (and said so);
//! * `calls`: every request sent (first tries and retries);
//!   `timed_out_attempts`: those ended by `--timeout`; `body_bytes`: the
//!   response body bytes read;
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
//! SIGINT, SIGTERM or SIGHUP stops the calls still running (counted as interrupted),
//! prints the partial report (marked `interrupted`) and exits 130 or 143.
//!
//! # Fleet-level protection
//!
//! The workers of one `fleet` process are one process's calls, so the
//! library's fleet-level pieces are shared by all of them (one `Arc` each):
//!
//! * `--retry-budget grpc|aws`: one [`RetryBudget`](herdless::guard::RetryBudget) — gRPC retry throttling
//!   (`--budget-tokens` tokens, default 100, a failure costs 1, a success
//!   refunds 0.1, retries only while more than half remain) or the AWS SDK
//!   quota (default 500 tokens, a retry costs 5, after a per-attempt timeout
//!   10, refunded on success). A denied retry ends the call with
//!   `retry_budget`.
//! * `--breaker THRESHOLD`: one half-open probe [`Breaker`](herdless::guard::Breaker): after THRESHOLD
//!   consecutive failures one retry at a time probes, the others wait
//!   `--probe-wait` (jittered, default 1 s); with `--breaker-release DUR`,
//!   when the probe succeeds the held calls come back spread over DUR.
//! * `--urgent DUR`: the escape lane ([`Urgent`](herdless::guard::Urgent)) for `--urgent-workers K`
//!   workers (default: all): their first `--urgent-quota` (default 2) retries
//!   skip the budget and the breaker, and no sleep takes them past DUR.
//!
//! The windows and buckets are the simulator's metrics
//! ([`herdless_sim::metrics`]: `Timeline::peak` and `Histogram`) over the
//! attempt times in nanoseconds since the fleet started, so boundaries are
//! exact and a real fleet is measured as a simulated one is.
//!
//! # Layout
//!
//! `args.rs` (the flags and the shared pieces they build: [`FleetArgs`]),
//! `run.rs` (the workers: [`run_fleet`]), `report.rs` ([`summarize`]),
//! `render.rs` ([`render_text`]); this file is the command's entry,
//! [`run()`].
//!
//! With `--seed S`, worker `i` draws from a generator derived from `(S, i)`:
//! reproducible, yet never the same sequence for two workers (a shared seed
//! would re-synchronize the fleet).

mod args;
mod balance;
pub(crate) mod events;
mod render;
mod report;
mod run;

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use herdless::Jitter;

pub(crate) use args::FleetArgs;
use args::MAX_URLS;
pub(crate) use render::render_text;
pub(crate) use run::run_fleet;

use crate::shared::error::{CliError, CliResult};
use crate::shared::http::parse_url;
use crate::shared::output::print;
use crate::shared::{descriptors, exit};

/// Completes on the first SIGINT, SIGTERM or SIGHUP (the terminal closed)
/// after this call, storing its number in `caught`. The handlers are installed here, before the fleet
/// starts, so no signal between the start and the first poll is lost.
fn interrupt_signal(
    caught: Arc<AtomicI32>,
) -> Result<impl std::future::Future<Output = ()> + Send + 'static, String> {
    use nix::sys::signal::Signal;
    use tokio::signal::unix::{SignalKind, signal};
    let install = |kind: SignalKind| {
        signal(kind).map_err(|e| format!("cannot install a signal handler: {e}"))
    };
    let mut int = install(SignalKind::interrupt())?;
    let mut term = install(SignalKind::terminate())?;
    let mut hup = install(SignalKind::hangup())?;
    Ok(async move {
        let number = tokio::select! {
            _ = int.recv() => Signal::SIGINT as i32,
            _ = term.recv() => Signal::SIGTERM as i32,
            _ = hup.recv() => Signal::SIGHUP as i32,
        };
        caught.store(number, Ordering::SeqCst);
    })
}

/// Runs `herdless fleet`: exit 0 when every worker succeeded, 4 when any
/// exhausted its budget, else 3 when any ended terminal; 130 (SIGINT), 143
/// (SIGTERM) or 129 (SIGHUP) when interrupted, after printing the partial
/// report.
///
/// # Errors
///
/// Usage errors (exit 2), a runtime that cannot start or a stdout that cannot
/// be written (exit 1).
pub(crate) fn run(args: &FleetArgs) -> CliResult {
    let (policy, policy_args) = args
        .policy
        .resolve_with_args(Jitter::Full)
        .map_err(|e| CliError::usage(e.to_string()))?;
    let urls = args
        .urls
        .iter()
        .map(|u| parse_url(u))
        .collect::<Result<Vec<_>, _>>()
        .map_err(CliError::usage)?;
    if urls.len() > MAX_URLS {
        return Err(CliError::usage(format!(
            "{} URLs: at most {MAX_URLS} endpoints",
            urls.len()
        )));
    }
    if args.workers == 0 {
        return Err(CliError::usage("--workers must be at least 1"));
    }
    if args.timeout.is_zero() {
        return Err(CliError::usage("--timeout must be positive"));
    }
    let (guards, strategy) = args.guards().map_err(CliError::usage)?;
    if let Some(limit) = descriptors::raise_nofile_limit() {
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
    let rt = descriptors::build_runtime(tokio::runtime::Builder::new_multi_thread().enable_all())
        .map_err(|e| CliError::failure(format!("cannot start the runtime: {e}")))?;
    let (report, signal) = rt
        .block_on(async {
            let caught = Arc::new(AtomicI32::new(0));
            let interrupt = interrupt_signal(caught.clone())?;
            let report = run_fleet(
                urls,
                args.workers,
                policy,
                args.timeout,
                &policy_args,
                guards,
                strategy,
                progress,
                interrupt,
            )
            .await?;
            Ok::<_, String>((report, caught.load(Ordering::SeqCst)))
        })
        .map_err(CliError::failure)?;
    if args.json {
        let json = serde_json::to_string(&report).map_err(|e| CliError::failure(e.to_string()))?;
        print(&format!("{json}\n"))?;
    } else {
        print(&render_text(&report))?;
    }
    Ok(if report.interrupted {
        exit::SIGNAL_BASE + signal
    } else if report.succeeded == report.workers {
        exit::SUCCESS
    } else if report.exhausted > 0 {
        exit::EXHAUSTED
    } else {
        exit::TERMINAL
    })
}
