//! The report: one JSON object per run, and the aligned terminal table.
//!
//! The JSON field names are a public contract, documented in the README:
//! every report has `scenario`, `seed`, `parameters` and `strategies` (one
//! object per strategy with at least `strategy`, `calls`, `completion_s` and,
//! where they apply, `gave_up` and `max_bucket_share`). Durations are seconds
//! (`_s`), rates per second (`_per_s`). An unlimited budget is `null`.
//!
//! The table puts the strategies side by side, one column each, with the
//! figures as rows; in the outage scenario a last column gives the physical
//! limit beside them.

use std::fmt::Write as _;
use std::time::Duration;

use herdless::Policy;
use serde::Serialize;

use crate::guard::GuardParams;
use crate::scenario::contention::{ContentionFigures, ContentionParams};
use crate::scenario::outage::{OutageFigures, OutageParams};
use crate::scenario::spread::{SpreadFigures, SpreadParams};
use crate::scenario::Scenario;

mod robustness;

pub use robustness::RobustnessReport;

/// The policy a scenario started from (each strategy sets its own jitter).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PolicyParameters {
    /// Base delay (first retry's ceiling), seconds.
    pub base_s: f64,
    /// Growth factor per retry.
    pub multiplier: f64,
    /// Cap on one delay, seconds.
    pub cap_s: f64,
    /// Attempt limit, counting the first call; `null` when unlimited.
    pub max_attempts: Option<u32>,
    /// Elapsed-time budget, seconds; `null` when unlimited.
    pub max_elapsed_s: Option<f64>,
}

impl From<&Policy> for PolicyParameters {
    fn from(p: &Policy) -> Self {
        Self {
            base_s: p.base().as_secs_f64(),
            multiplier: p.multiplier(),
            cap_s: p.cap().as_secs_f64(),
            max_attempts: (p.max_attempts() != u32::MAX).then_some(p.max_attempts()),
            max_elapsed_s: (p.max_elapsed() < Duration::from_secs(u64::MAX / 2))
                .then(|| p.max_elapsed().as_secs_f64()),
        }
    }
}

/// Parameters of a spread run, as reported.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SpreadParameters {
    /// Number of workers.
    pub workers: u32,
    /// Calls failed per worker before success.
    pub failures: u32,
    /// The base policy.
    pub policy: PolicyParameters,
}

/// A spread run's report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpreadReport {
    /// The seed.
    pub seed: u64,
    /// The parameters.
    pub parameters: SpreadParameters,
    /// One entry per strategy.
    pub strategies: Vec<SpreadFigures>,
}

impl SpreadReport {
    pub(crate) fn new(p: &SpreadParams, seed: u64, strategies: Vec<SpreadFigures>) -> Self {
        Self {
            seed,
            parameters: SpreadParameters {
                workers: p.workers,
                failures: p.failures,
                policy: (&p.policy).into(),
            },
            strategies,
        }
    }
}

/// Parameters of an outage run, as reported.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct OutageParameters {
    /// Number of clients (N).
    pub clients: u32,
    /// Outage length (T), seconds.
    pub outage_s: f64,
    /// Calls per second served after the outage (C).
    pub capacity_per_s: u32,
    /// Token bucket size of the endpoint.
    pub burst: u32,
    /// Window of the first calls, seconds.
    pub first_call_window_s: f64,
    /// The base policy.
    pub policy: PolicyParameters,
    /// How the fleet-level guards are set up.
    pub guards: GuardParameters,
    /// The share of clients that honor Retry-After.
    pub honor: f64,
    /// The pushback allocator's starting estimate over the true capacity.
    pub capacity_estimate: f64,
    /// Whether the pushback allocator is told the outage's end (`known`,
    /// `unknown`).
    pub outage_end: &'static str,
}

/// The fleet-level guards' set-up, as reported (see [`GuardParams`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GuardParameters {
    /// Clients sharing one process's budget and breaker.
    pub clients_per_process: u32,
    /// The number of simulated processes (`ceil(clients / clients_per_process)`).
    pub processes: u32,
    /// Each process's budget: gRPC `maxTokens`.
    pub budget_max_tokens: f64,
    /// Each process's budget: gRPC `tokenRatio`.
    pub budget_token_ratio: f64,
    /// Each process's budget: the anti-synchronization spread, tokens.
    pub budget_spread: f64,
    /// Consecutive failures that open a process's breaker.
    pub breaker_threshold: u32,
    /// Breaker probe wait, seconds (each wait uniform in `[w / 2, w]`).
    pub probe_wait_s: f64,
    /// How long a probe holds the breaker, seconds.
    pub probe_rtt_s: f64,
    /// Over how long a closing breaker releases its held callers, seconds.
    pub breaker_release_s: f64,
    /// The longest Retry-After of the pushback server, seconds.
    pub pushback_horizon_s: f64,
}

impl GuardParameters {
    fn new(g: &GuardParams, clients: u32, release: Duration) -> Self {
        Self {
            clients_per_process: g.clients_per_process,
            processes: clients.div_ceil(g.clients_per_process.max(1)),
            budget_max_tokens: g.budget_tokens,
            budget_token_ratio: g.budget_token_ratio,
            budget_spread: g
                .budget_spread
                .unwrap_or((g.budget_tokens - g.budget_tokens / 2.0) / 2.0),
            breaker_threshold: g.breaker_threshold,
            probe_wait_s: g.probe_wait.as_secs_f64(),
            probe_rtt_s: g.probe_rtt.as_secs_f64(),
            breaker_release_s: release.as_secs_f64(),
            pushback_horizon_s: g.pushback_horizon.as_secs_f64(),
        }
    }
}

/// An outage run's report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutageReport {
    /// The seed.
    pub seed: u64,
    /// The parameters.
    pub parameters: OutageParameters,
    /// `T + N / C`, seconds: no strategy can finish sooner.
    pub physical_limit_s: f64,
    /// The fewest calls per client any strategy can make.
    pub min_calls_per_client: f64,
    /// One entry per strategy.
    pub strategies: Vec<OutageFigures>,
}

impl OutageParameters {
    pub(crate) fn new(p: &OutageParams) -> Self {
        OutageParameters {
            clients: p.clients,
            outage_s: p.outage.as_secs_f64(),
            capacity_per_s: p.capacity,
            burst: p.burst,
            first_call_window_s: p.first_call_window.as_secs_f64(),
            policy: (&p.policy).into(),
            guards: GuardParameters::new(&p.guards, p.clients, p.breaker_release()),
            honor: p.honor,
            capacity_estimate: p.capacity_estimate,
            outage_end: p.outage_end.name(),
        }
    }
}

impl OutageReport {
    pub(crate) fn new(p: &OutageParams, seed: u64, strategies: Vec<OutageFigures>) -> Self {
        Self {
            seed,
            parameters: OutageParameters::new(p),
            physical_limit_s: p.physical_limit_s(),
            min_calls_per_client: p.min_calls_per_client(),
            strategies,
        }
    }
}

/// Parameters of a contention run, as reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContentionParameters {
    /// The numbers of clients swept.
    pub clients: Vec<u32>,
    /// Trials averaged per point.
    pub trials: u32,
    /// Mean network hop, seconds.
    pub hop_mean_s: f64,
    /// Standard deviation of a hop, seconds.
    pub hop_sd_s: f64,
    /// The base policy.
    pub policy: PolicyParameters,
}

/// A contention run's report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContentionReport {
    /// The seed.
    pub seed: u64,
    /// The parameters.
    pub parameters: ContentionParameters,
    /// One entry per strategy.
    pub strategies: Vec<ContentionFigures>,
}

impl ContentionReport {
    pub(crate) fn new(p: &ContentionParams, seed: u64, strategies: Vec<ContentionFigures>) -> Self {
        Self {
            seed,
            parameters: ContentionParameters {
                clients: p.clients.clone(),
                trials: p.trials,
                hop_mean_s: p.hop_mean.as_secs_f64(),
                hop_sd_s: p.hop_sd.as_secs_f64(),
                policy: (&p.policy).into(),
            },
            strategies,
        }
    }
}

/// A simulation's report: serializes with a `scenario` tag (`spread`,
/// `outage`, `contention`) beside the scenario's fields.
///
/// ```
/// use herdless_sim::{Config, Scenario, Simulation};
/// let report = Simulation::new(Config::default_for(Scenario::Spread)).run()?;
/// let v: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
/// assert_eq!(v["scenario"], "spread");
/// assert_eq!(v["strategies"][0]["strategy"], "none");
/// # Ok::<(), herdless_sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "scenario", rename_all = "lowercase")]
pub enum Report {
    /// The spread scenario.
    Spread(SpreadReport),
    /// The outage scenario.
    Outage(OutageReport),
    /// The contention scenario.
    Contention(ContentionReport),
    /// The robustness scenario.
    Robustness(RobustnessReport),
}

impl Report {
    /// Which scenario ran.
    pub fn scenario(&self) -> Scenario {
        match self {
            Report::Spread(_) => Scenario::Spread,
            Report::Outage(_) => Scenario::Outage,
            Report::Contention(_) => Scenario::Contention,
            Report::Robustness(_) => Scenario::Robustness,
        }
    }

    /// The report as one JSON object (one line).
    pub fn to_json(&self) -> String {
        // Serializing plain structs of numbers and strings cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The aligned terminal table, with a heading naming the parameters.
    pub fn table(&self) -> String {
        match self {
            Report::Spread(r) => spread_table(r),
            Report::Outage(r) => outage_table(r),
            Report::Contention(r) => contention_table(r),
            Report::Robustness(r) => robustness::table(r),
        }
    }
}

pub(crate) fn policy_line(p: &PolicyParameters) -> String {
    let attempts = p
        .max_attempts
        .map_or("no attempt limit".to_owned(), |n| format!("{n} attempts"));
    let elapsed = p.max_elapsed_s.map_or("no time limit".to_owned(), |s| {
        format!("{} budget", secs(s))
    });
    format!(
        "base {}, x{}, cap {}, {attempts}, {elapsed}",
        secs(p.base_s),
        p.multiplier,
        secs(p.cap_s)
    )
}

pub(crate) fn secs(s: f64) -> String {
    if s < 1.0 {
        format!("{} ms", (s * 1e3 * 1e3).round() / 1e3)
    } else {
        format!("{} s", (s * 1e3).round() / 1e3)
    }
}

/// Lays out rows: first column left-aligned, the others right-aligned.
pub(crate) fn grid(header: &[String], rows: &[Vec<String>]) -> String {
    let cols = header.len();
    let width: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .chain([header[c].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c == 0 {
                let _ = write!(line, "{cell:<w$}", w = width[0]);
            } else {
                let _ = write!(line, "  {cell:>w$}", w = width[c]);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn header(first: &str, names: impl Iterator<Item = String>) -> Vec<String> {
    std::iter::once(first.to_owned()).chain(names).collect()
}

fn row(label: &str, cells: impl Iterator<Item = String>) -> Vec<String> {
    std::iter::once(label.to_owned()).chain(cells).collect()
}

fn spread_table(r: &SpreadReport) -> String {
    let p = &r.parameters;
    let s = &r.strategies;
    let mut out = format!(
        "spread: {} workers, the controller fails each one's first {} calls; seed {}\n\
         policy: {}\n\n",
        p.workers,
        p.failures,
        r.seed,
        policy_line(&p.policy)
    );
    let h = header("", s.iter().map(|f| f.strategy.clone()));
    let rows = vec![
        row(
            "largest 100 ms bucket, share of fleet",
            s.iter().map(|f| format!("{:.3}", f.max_bucket_share)),
        ),
        row(
            "  at (s)",
            s.iter().map(|f| format!("{:.1}", f.max_bucket_start_s)),
        ),
        row(
            "calls per worker",
            s.iter().map(|f| format!("{:.2}", f.calls)),
        ),
        row(
            "completion (s)",
            s.iter().map(|f| format!("{:.3}", f.completion_s)),
        ),
        row("gave up", s.iter().map(|f| f.gave_up.to_string())),
    ];
    out.push_str(&grid(&h, &rows));
    out
}

fn outage_table(r: &OutageReport) -> String {
    let p = &r.parameters;
    let s = &r.strategies;
    let mut out = format!(
        "outage: {} clients (first calls within {}), endpoint down {}, then {} calls/s \
         (burst {}); seed {}\n\
         policy: {}; fixed-1s retries every second, no attempt limit\n\
         physical limit: T + N/C = {} + {} / {} per s = {:.3} s\n",
        p.clients,
        secs(p.first_call_window_s),
        secs(p.outage_s),
        p.capacity_per_s,
        p.burst,
        r.seed,
        policy_line(&p.policy),
        secs(p.outage_s),
        p.clients,
        p.capacity_per_s,
        r.physical_limit_s
    );
    if s.iter().any(|f| f.strategy.contains('+')) {
        let g = &p.guards;
        let _ = writeln!(
            out,
            "guards: {} processes of {} clients, each with a budget of {} tokens \
             (gRPC, ratio {}) and a breaker (opens after {} failures, probe wait {}, \
             probe round trip {}, releases over {}); pushback: Retry-After slots, horizon {}, starting \
             estimate {}x the capacity, outage end {}",
            g.processes,
            g.clients_per_process,
            g.budget_max_tokens,
            g.budget_token_ratio,
            g.breaker_threshold,
            secs(g.probe_wait_s),
            secs(g.probe_rtt_s),
            secs(g.breaker_release_s),
            secs(g.pushback_horizon_s),
            p.capacity_estimate,
            p.outage_end
        );
    }
    if p.honor < 1.0 {
        let _ = writeln!(
            out,
            "clients honoring Retry-After: {} (the others use their own backoff)",
            p.honor
        );
    }
    out.push('\n');
    let h = header(
        "",
        s.iter()
            .map(|f| f.strategy.clone())
            .chain(["physical limit".to_owned()]),
    );
    let rows = vec![
        row(
            "calls per client",
            s.iter()
                .map(|f| format!("{:.2}", f.calls))
                .chain([format!("{:.2}", r.min_calls_per_client)]),
        ),
        // A run with give-ups did not drain: it has no completion to set
        // beside the limit (it may be "done" long before it, by giving up).
        row(
            "completion (s)",
            s.iter()
                .map(|f| f.drain_s.map_or("-".to_owned(), |d| format!("{d:.3}")))
                .chain([format!("{:.3}", r.physical_limit_s)]),
        ),
        row(
            "x physical limit",
            s.iter()
                .map(|f| {
                    f.drain_vs_limit
                        .map_or("-".to_owned(), |x| format!("{x:.2}"))
                })
                .chain(["1.00".to_owned()]),
        ),
        row(
            "gave up",
            s.iter()
                .map(|f| f.gave_up.to_string())
                .chain(["0".to_owned()]),
        ),
        row(
            "  of which denied by the retry budget",
            s.iter()
                .map(|f| f.gave_up_retry_budget.to_string())
                .chain(["0".to_owned()]),
        ),
        row(
            "  largest 100 ms give-up bucket / give-ups",
            s.iter()
                .map(|f| {
                    if f.gave_up == 0 {
                        "-".to_owned()
                    } else {
                        format!("{:.3}", f.give_up_max_bucket_share)
                    }
                })
                .chain(["-".to_owned()]),
        ),
        row(
            "peak per 100 ms after T / capacity",
            s.iter()
                .map(|f| format!("{:.2}", f.peak_over_capacity))
                .chain(["1.00".to_owned()]),
        ),
        row(
            "largest 100 ms retry bucket / fleet",
            s.iter()
                .map(|f| format!("{:.3}", f.max_bucket_share))
                .chain(["-".to_owned()]),
        ),
    ];
    let mut rows = rows;
    if p.honor < 1.0 {
        rows.extend([
            row(
                "honoring clients: calls per client",
                s.iter()
                    .map(|f| format!("{:.2}", f.honoring_calls))
                    .chain([format!("{:.2}", r.min_calls_per_client)]),
            ),
            row(
                "  completion x physical limit",
                s.iter()
                    .map(|f| {
                        f.honoring_vs_limit
                            .map_or("-".to_owned(), |x| format!("{x:.2}"))
                    })
                    .chain(["1.00".to_owned()]),
            ),
            row(
                "  gave up",
                s.iter()
                    .map(|f| f.honoring_gave_up.to_string())
                    .chain(["0".to_owned()]),
            ),
        ]);
    }
    out.push_str(&grid(&h, &rows));
    if s.iter().any(|f| !f.drained) {
        out.push_str(
            "\n-: clients gave up, so the fleet did not drain (no completion to compare \
             with the physical limit)\n",
        );
    }
    out
}

fn contention_table(r: &ContentionReport) -> String {
    let p = &r.parameters;
    let s = &r.strategies;
    let mut out = format!(
        "contention: clients {}..{}, {} trials each, hops |Normal({}, {})|; seed {}\n\
         policy: {}\n",
        p.clients.first().copied().unwrap_or(0),
        p.clients.last().copied().unwrap_or(0),
        p.trials,
        secs(p.hop_mean_s),
        secs(p.hop_sd_s),
        r.seed,
        policy_line(&p.policy)
    );
    let h = header("clients", s.iter().map(|f| f.strategy.clone()));
    for (title, pick) in [
        (
            "write calls (mean over trials)",
            (|pt: &crate::scenario::contention::ContentionPoint| format!("{:.0}", pt.calls))
                as fn(&_) -> String,
        ),
        ("completion time, s (mean over trials)", |pt| {
            format!("{:.3}", pt.completion_s)
        }),
    ] {
        let _ = write!(out, "\n{title}\n");
        let rows: Vec<Vec<String>> = p
            .clients
            .iter()
            .enumerate()
            .map(|(i, n)| {
                row(
                    &n.to_string(),
                    s.iter()
                        .map(|f| f.points.get(i).map_or(String::new(), pick)),
                )
            })
            .collect();
        out.push_str(&grid(&h, &rows));
    }
    out
}
