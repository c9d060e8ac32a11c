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

use std::time::Duration;

use herdless::Policy;
use serde::Serialize;

use crate::guard::GuardParams;
use crate::scenario::Scenario;
use crate::scenario::contention::{ContentionFigures, ContentionParams};
use crate::scenario::outage::{OutageFigures, OutageParams};
use crate::scenario::spread::{SpreadFigures, SpreadParams};

pub(crate) mod field;
pub(crate) mod reactivation;
pub(crate) mod robustness;
mod tail;
mod text;
pub mod units;

pub use field::FieldReport;
pub use reactivation::{ReactivationParameters, ReactivationReport};
pub use robustness::RobustnessReport;
pub use tail::{TailParameters, TailReport};
use text::{contention_table, grid, outage_table, secs, spread_table};

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
/// `outage`, `contention`, `robustness`, `latency-tail`, `reactivation`, `field`) beside the
/// scenario's fields.
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
    /// The latency-tail scenario (tag `latency-tail`).
    #[serde(rename = "latency-tail")]
    LatencyTail(TailReport),
    /// The reactivation scenario.
    Reactivation(ReactivationReport),
    /// The field scenario.
    Field(FieldReport),
}

impl Report {
    /// Which scenario ran.
    pub fn scenario(&self) -> Scenario {
        match self {
            Report::Spread(_) => Scenario::Spread,
            Report::Outage(_) => Scenario::Outage,
            Report::Contention(_) => Scenario::Contention,
            Report::Robustness(_) => Scenario::Robustness,
            Report::LatencyTail(_) => Scenario::LatencyTail,
            Report::Reactivation(_) => Scenario::Reactivation,
            Report::Field(_) => Scenario::Field,
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
            Report::LatencyTail(r) => tail::table(r),
            Report::Reactivation(r) => reactivation::table(r),
            Report::Field(r) => field::table(r),
        }
    }
}
