//! What the search found: the recommendation with its re-simulated figures,
//! the runner-up, the baselines, the Pareto front, and what to change when
//! nothing fits. JSON field names are a public contract (docs/cli.md,
//! `herdless tune --json`).

use std::time::Duration;

use herdless::Policy;
use serde::Serialize;

use super::Facts;
use super::eval::Score;
use super::grid::GuardChoice;
use crate::report::OutageReport;

/// A policy as reported (seconds as numbers).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PolicyReport {
    /// Jitter mode name.
    pub jitter: &'static str,
    /// Base delay, seconds.
    pub base_s: f64,
    /// Multiplier.
    pub multiplier: f64,
    /// Cap, seconds.
    pub cap_s: f64,
    /// Attempt limit, counting the first call.
    pub max_attempts: u32,
    /// Elapsed budget, seconds.
    pub max_elapsed_s: f64,
    /// Clamp on server-supplied delays, seconds.
    pub max_retry_after_s: f64,
    /// The library policy itself.
    #[serde(skip)]
    pub policy: Policy,
}

impl From<&Policy> for PolicyReport {
    fn from(p: &Policy) -> Self {
        PolicyReport {
            jitter: p.jitter().name(),
            base_s: p.base().as_secs_f64(),
            multiplier: p.multiplier(),
            cap_s: p.cap().as_secs_f64(),
            max_attempts: p.max_attempts(),
            max_elapsed_s: p.max_elapsed().as_secs_f64(),
            max_retry_after_s: p.max_retry_after().as_secs_f64(),
            policy: *p,
        }
    }
}

/// A policy with figures re-simulated on the verification seeds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verified {
    /// `recommended`, `runner-up`, `current (NAME)`, `full jitter, defaults`, …
    pub label: String,
    /// The policy.
    pub policy: PolicyReport,
    /// Its fleet-level guard.
    pub guard: Option<GuardChoice>,
    /// `herdless check --strict`'s refusal of it, when it refuses (baselines only).
    pub check: Option<String>,
    /// Its figures on the search seeds (candidates of the search only).
    pub search: Option<Score>,
    /// Its figures on seeds the search did not use: what is printed.
    pub verify: Score,
}

/// A check that refused candidates before any was simulated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pruned {
    /// The check's name (`jitter`, `recovery_time`, `visibility_timeout`,
    /// `invalid` for combinations the library refuses, e.g. a cap below the base).
    pub check: String,
    /// Candidates it refused (the first refusing check counts).
    pub count: usize,
    /// One of its messages.
    pub example: String,
}

/// The search's size and seeds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchReport {
    /// Policies in the grid.
    pub grid: usize,
    /// Refused before simulating, by check.
    pub pruned: Vec<Pruned>,
    /// Candidates simulated (policies, and policies with a guard).
    pub candidates: usize,
    /// Of those, candidates with a guard.
    pub guard_candidates: usize,
    /// Candidates run on every search seed.
    pub finalists: usize,
    /// Candidates that tied with a better-ranked one on every figure of the
    /// first seed (they differ where the simulation never reaches, e.g. a
    /// `max_elapsed` no worker runs into) and were not run further.
    pub ties: usize,
    /// Simulation runs made (search and verification).
    pub runs: usize,
    /// The seeds of the search (the first for every candidate, all for the finalists).
    pub search_seeds: Vec<u64>,
    /// The seeds of the verification (never among `search_seeds`).
    pub verify_seeds: Vec<u64>,
}

/// One point of the Pareto front: no other candidate drains faster with a
/// lower peak and fewer calls.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrontRow {
    /// The policy.
    pub policy: PolicyReport,
    /// Its guard.
    pub guard: Option<GuardChoice>,
    /// Worst completion over the physical limit.
    pub objective: f64,
    /// Worst drain time per outage length, seconds.
    pub drain_s: Vec<Option<f64>>,
    /// Worst peak after recovery, times the capacity.
    pub peak_over_capacity: f64,
    /// Mean calls per client.
    pub calls: f64,
    /// Whether it meets every constraint.
    pub feasible: bool,
    /// The constraints it breaks.
    pub violations: Vec<super::Violation>,
}

/// No policy fits: which fact to change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unsatisfied {
    /// The fact (or limit) to change: `visibility_timeout`, `recovery_time`,
    /// `max_peak`, `capacity`, `max_give_up_share`, `max_bucket_share`, `latency`.
    pub fact: String,
    /// Why, with the numbers, and what value would do.
    pub message: String,
}

/// The facts as reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FactsReport {
    /// Clients (workers).
    pub clients: u32,
    /// The device's capacity after recovery, calls/s.
    pub capacity_per_s: u32,
    /// The outage lengths simulated, seconds.
    pub outages_s: Vec<f64>,
    /// The recovery time the checks use, seconds.
    pub recovery_time_s: f64,
    /// The window of the first failures, seconds.
    pub first_call_window_s: f64,
    /// The broker's visibility timeout, seconds.
    pub visibility_timeout_s: Option<f64>,
    /// The latency objective: share of the clients.
    pub latency_share: Option<f64>,
    /// The latency objective: seconds after recovery.
    pub latency_within_s: Option<f64>,
    /// The guards allowed.
    pub guards_allowed: Vec<&'static str>,
    /// The peak after recovery allowed, times the capacity.
    pub max_peak: f64,
    /// The give-up share allowed.
    pub max_give_up_share: f64,
    /// The largest 100 ms bucket of retries allowed, a share of the clients.
    pub max_bucket_share: f64,
}

impl From<&Facts> for FactsReport {
    fn from(f: &Facts) -> Self {
        FactsReport {
            clients: f.clients,
            capacity_per_s: f.capacity,
            outages_s: f.outages.iter().map(Duration::as_secs_f64).collect(),
            recovery_time_s: f.recovery_time.as_secs_f64(),
            first_call_window_s: f.first_call_window.as_secs_f64(),
            visibility_timeout_s: f.visibility_timeout.map(|v| v.as_secs_f64()),
            latency_share: f.latency.map(|l| l.share),
            latency_within_s: f.latency.map(|l| l.within.as_secs_f64()),
            guards_allowed: f.guards.iter().map(|g| g.name()).collect(),
            max_peak: f.max_peak,
            max_give_up_share: f.max_give_up_share,
            max_bucket_share: f.max_bucket_share,
        }
    }
}

/// The result of [`run`](super::run).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TuneReport {
    /// The facts.
    pub facts: FactsReport,
    /// The search.
    pub search: SearchReport,
    /// The recommendation, re-simulated on the verification seeds; `None`
    /// when no policy fits (then `unsatisfied` says why).
    pub recommended: Option<Verified>,
    /// The next candidate that met the facts on the search seeds, verified the same way.
    pub runner_up: Option<Verified>,
    /// Better-ranked candidates that met the facts on the search seeds but
    /// not on the verification seeds (so they were not recommended).
    pub failed_verification: Vec<Verified>,
    /// The user's current policy (when given) and full jitter with the
    /// library's defaults, on the same verification seeds.
    pub baselines: Vec<Verified>,
    /// The Pareto front of drain, peak and calls, fastest first (at most 15
    /// rows; a finalist's figures are over every search seed, the others' over
    /// the first; candidates tied with a better-ranked one are left out).
    pub pareto: Vec<FrontRow>,
    /// Which fact to change when nothing fits.
    pub unsatisfied: Option<Unsatisfied>,
    /// The outage figure's data: the longest outage on the first
    /// verification seed, the recommendation beside the baselines.
    #[serde(skip)]
    pub figure: Option<OutageReport>,
}

/// The Pareto front of `(objective, peak, calls)` among candidates whose
/// give-ups are allowed, fastest first, at most `rows`.
pub(crate) fn front(
    scored: &[(super::Candidate, Score)],
    facts: &Facts,
    rows: usize,
) -> Vec<FrontRow> {
    let ok: Vec<&(super::Candidate, Score)> = scored
        .iter()
        .filter(|(_, s)| s.give_up_share <= facts.max_give_up_share)
        .collect();
    let key = |s: &Score| [s.objective, s.peak_over_capacity, s.calls];
    let dominated = |a: &Score| {
        ok.iter().any(|(_, b)| {
            let (x, y) = (key(a), key(b));
            y.iter().zip(&x).all(|(p, q)| p <= q) && y.iter().zip(&x).any(|(p, q)| p < q)
        })
    };
    let mut out: Vec<FrontRow> = ok
        .iter()
        .filter(|(_, s)| !dominated(s))
        .map(|(c, s)| FrontRow {
            policy: (&c.policy).into(),
            guard: c.guard,
            objective: s.objective,
            drain_s: s.drain_s.clone(),
            peak_over_capacity: s.peak_over_capacity,
            calls: s.calls,
            feasible: s.feasible(),
            violations: s.violations.clone(),
        })
        .collect();
    out.sort_by(|a, b| {
        a.objective
            .total_cmp(&b.objective)
            .then(a.peak_over_capacity.total_cmp(&b.peak_over_capacity))
    });
    out.dedup_by(|a, b| key_eq(a, b));
    out.truncate(rows);
    out
}

fn key_eq(a: &FrontRow, b: &FrontRow) -> bool {
    a.objective == b.objective && a.peak_over_capacity == b.peak_over_capacity && a.calls == b.calls
}
