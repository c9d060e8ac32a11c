//! Running the fleet: one tokio task per worker, each one logical GET through
//! [`HttpRetry`] whose body is read to its end and discarded, and what each
//! saw of its attempts.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use herdless::adapters::reqwest::{AttemptRecord, AttemptWatch, Discard, HttpRetry, SendError};
use herdless::guard::waves::WaveGuard;
use herdless::{GiveUp, Policy, Retry};

use super::args::{FleetStrategy, GuardFlags};
use super::balance::Balancer;
use super::events::FleetEvents;
use super::report::{FleetReport, summarize};
use crate::shared::events_out::EventFilter;
use crate::shared::policy_args::PolicyArgs;

/// A time since the fleet started in nanoseconds (saturating after ~584 years).
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// How one worker's call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// A status below 400, possibly after retries.
    Succeeded,
    /// A terminal status or error.
    Terminal,
    /// The budget ran out.
    Exhausted,
    /// The fleet was interrupted (SIGINT, SIGTERM or SIGHUP) before the call ended.
    Interrupted,
}

/// One worker's end, as the fleet saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct WorkerEnd {
    /// How its call ended.
    pub(crate) outcome: Outcome,
    /// Why it gave up (`None` on success and when interrupted).
    pub(crate) reason: Option<GiveUp>,
    /// When its call returned (or was interrupted), nanoseconds since the
    /// fleet started.
    pub(crate) end_ns: u64,
}

/// One attempt, as the fleet saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct AttemptAt {
    /// Start time, nanoseconds since the fleet started.
    pub(crate) t_ns: u64,
    /// 1-based attempt number within its worker's call.
    pub(crate) number: u32,
    /// The worker.
    pub(crate) worker: u32,
    /// Whether it ended by `--timeout` (before or while reading the body).
    pub(crate) timed_out: bool,
    /// Response body bytes it read (and discarded).
    pub(crate) body_bytes: u64,
}

/// What one worker's attempts did, told as each starts and ends: the
/// attempt in flight is known when the fleet is interrupted.
struct Watch {
    ended: Vec<AttemptRecord>,
    in_flight: Option<(u32, Instant)>,
    last_status: Arc<AtomicU32>,
    balancer: Arc<Balancer>,
}

impl AttemptWatch for Watch {
    fn sending(&mut self, request: &mut reqwest::Request) {
        self.balancer.route(request);
    }

    fn started(&mut self, number: u32, at: Instant) {
        self.in_flight = Some((number, at));
    }

    fn ended(&mut self, a: &AttemptRecord) {
        self.in_flight = None;
        self.last_status
            .store(a.status.map_or(0, u32::from), Ordering::Relaxed);
        self.ended.push(*a);
    }
}

/// A request a worker sent: its attempt ended, or was in flight when the
/// fleet was interrupted.
enum Sent {
    Ended(AttemptRecord),
    InFlight(u32, Instant),
}

impl Sent {
    fn at(&self, worker: u32, start: Instant) -> AttemptAt {
        let since = |t: Instant| nanos(t.saturating_duration_since(start));
        match *self {
            Sent::Ended(a) => AttemptAt {
                t_ns: since(a.started),
                number: a.number,
                worker,
                timed_out: a.timed_out,
                body_bytes: a.body_bytes,
            },
            Sent::InFlight(number, at) => AttemptAt {
                t_ns: since(at),
                number,
                worker,
                timed_out: false,
                body_bytes: 0,
            },
        }
    }
}

/// Runs the fleet against `urls` (each request to the next of them:
/// `balance.rs`) and returns the report (the engine of `herdless fleet`,
/// usable in-process).
///
/// When `interrupt` completes first, every call still running is stopped and
/// counted as [`Outcome::Interrupted`] (its attempts so far are kept, the one
/// in flight included: its request was sent), and the
/// report is marked `interrupted`: a partial report of what finished.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run_fleet(
    urls: Vec<reqwest::Url>,
    workers: u32,
    policy: Policy,
    timeout: Duration,
    args: &PolicyArgs,
    guards: GuardFlags,
    strategy: FleetStrategy,
    progress: Option<indicatif::ProgressBar>,
    interrupt: impl Future<Output = ()> + Send + 'static,
) -> Result<FleetReport, String> {
    crate::shared::http::install_tls();
    let client = reqwest::Client::builder()
        .connect_timeout(timeout)
        .build()
        .map_err(|e| crate::shared::http::client_error(&e))?;
    let format = args.log_format;
    let filter = EventFilter::from_env(args.quiet);
    let task_prefix: Arc<str> = Arc::from(args.task_id.clone().unwrap_or_else(|| "worker-".into()));
    // Every worker watches `stop`; the watcher flips it when `interrupt` completes.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let watcher = tokio::spawn(async move {
        interrupt.await;
        let _ = stop_tx.send(true);
    });
    let balancer = Arc::new(Balancer::new(urls));
    let start = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for i in 0..workers {
        let (client, prefix) = (client.clone(), task_prefix.clone());
        let balancer = Arc::clone(&balancer);
        let seed = args.seed;
        let guards = guards.clone();
        let mut stop = stop_rx.clone();
        set.spawn(async move {
            let last_status = Arc::new(AtomicU32::new(0));
            let events = FleetEvents {
                format,
                filter,
                last_status: last_status.clone(),
            };
            let mut retry = Retry::builder()
                .policy(policy)
                .classifier(guards.classifier)
                .notify(events)
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
            if let Some(throttle) = guards.throttle {
                retry = retry.throttle(throttle);
            }
            if let (Some(urgent), true) = (guards.urgent, i < guards.urgent_workers) {
                retry = retry.urgent(urgent);
            }
            if guards.waves {
                // Its wave in a plan is the hash of the id the server names it by.
                retry = retry.waves(WaveGuard::new(i.to_string()));
            }
            let http = HttpRetry::from_retry(retry.build());
            let url = balancer.first().clone();
            let mut watch = Watch {
                ended: Vec::with_capacity(4),
                in_flight: None,
                last_status,
                balancer,
            };
            // Each attempt reads the body to its end (constant memory): a
            // call succeeds when the whole response arrived, and a body that
            // breaks off or stalls past --timeout is a failed attempt.
            let mut body = Discard::default();
            let request = client
                .get(url)
                .header("x-worker-id", i.to_string())
                .timeout(timeout);
            let outcome = tokio::select! {
                o = http.send_to_watched(request, &mut body, &mut watch) => Some(o),
                // Resolves once `stop` is true (an error: the fleet is ending anyway).
                _ = stop.wait_for(|&s| s) => None,
            };
            let Watch {
                ended, in_flight, ..
            } = watch;
            let mut attempts: Vec<Sent> = ended.into_iter().map(Sent::Ended).collect();
            // Interrupted mid-attempt: its request was sent; it is counted.
            attempts.extend(in_flight.map(|(number, at)| Sent::InFlight(number, at)));
            let (outcome, reason) = match outcome {
                None => (Outcome::Interrupted, None),
                Some(Ok(_)) => (Outcome::Succeeded, None),
                Some(Err(SendError::Retry(e))) if e.is_exhausted() => {
                    (Outcome::Exhausted, Some(e.reason()))
                }
                Some(Err(_)) => (Outcome::Terminal, Some(GiveUp::Terminal)),
            };
            let end = WorkerEnd {
                outcome,
                reason,
                end_ns: nanos(start.elapsed()),
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
                attempts.extend(times.into_iter().map(|a| a.at(worker, start)));
            }
            Err(e) => {
                eprintln!("herdless fleet: a worker task died ({e}); counted as terminal");
                ends.push(WorkerEnd {
                    outcome: Outcome::Terminal,
                    reason: Some(GiveUp::Terminal),
                    end_ns: nanos(start.elapsed()),
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
    watcher.abort();
    let interrupted = *stop_rx.borrow();
    let duration = start.elapsed();
    let tokens_left = guards.budget.as_ref().map(|b| b.tokens());
    let mut report = summarize(&ends, &attempts, duration, strategy, tokens_left);
    report.interrupted = interrupted;
    report.urls = balancer.report();
    Ok(report)
}
