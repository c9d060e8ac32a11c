//! One candidate's runs and their score against the facts' constraints.
//!
//! A run is the outage scenario (the simulator's own, [`outage::run`]) with
//! the facts' fleet, capacity and first-call window, one outage length and
//! one seed. A [`Score`] folds several runs (outage lengths × seeds) into
//! worst cases, since the result must hold for every length: the objective is
//! the worst completion over the physical limit `T + N / C` (for a fleet that
//! drained, its drain time over the limit), the constraints are the worst
//! peak after recovery, the worst give-up share and, when a latency objective
//! is stated, the worst time after recovery by which its share of the
//! clients was done.

use std::time::Duration;

use serde::Serialize;

use super::Facts;
use super::grid::Candidate;
use crate::OutageParams;
use crate::error::SimError;
use crate::scenario::outage::{self, OutageFigures};

/// The outage scenario's parameters for a candidate, an outage length and the facts.
pub(crate) fn params(facts: &Facts, cand: &Candidate, outage: Duration) -> OutageParams {
    let mut p = OutageParams {
        clients: facts.clients,
        outage,
        capacity: facts.capacity,
        burst: facts.burst(),
        first_call_window: facts.first_call_window,
        policy: cand.policy,
        ..OutageParams::default()
    };
    if let Some(g) = cand.guard {
        g.apply(&mut p.guards);
    }
    p
}

/// Simulates one run.
pub(crate) fn simulate(
    facts: &Facts,
    cand: &Candidate,
    outage: Duration,
    seed: u64,
) -> Result<OutageFigures, SimError> {
    outage::run(&params(facts, cand, outage), cand.kind(), seed)
}

/// One run, summarized.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RunFigures {
    /// The outage length, seconds.
    pub outage_s: f64,
    /// The seed.
    pub seed: u64,
    /// `T + N / C`, seconds.
    pub physical_limit_s: f64,
    /// When the last client succeeded or gave up, seconds.
    pub completion_s: f64,
    /// When the fleet drained (every client succeeded), seconds; `None` when any gave up.
    pub drain_s: Option<f64>,
    /// The largest 100 ms bucket of calls after recovery over what the device serves in 100 ms.
    pub peak_over_capacity: f64,
    /// Mean calls per client.
    pub calls: f64,
    /// Share of the clients that gave up.
    pub give_up_share: f64,
    /// The largest 100 ms bucket of retries, as a share of the clients.
    pub max_bucket_share: f64,
    /// Seconds after recovery by which the latency objective's share of the
    /// clients had succeeded (`None` without an objective, or when that share
    /// never succeeded).
    pub done_after_recovery_s: Option<f64>,
}

impl RunFigures {
    /// Summarizes a run of the outage scenario.
    pub(crate) fn new(facts: &Facts, outage: Duration, seed: u64, f: &OutageFigures) -> Self {
        let n = f64::from(facts.clients);
        let t = outage.as_secs_f64();
        let done_after_recovery_s = facts.latency.and_then(|l| {
            let need = (l.share * n).ceil().max(1.0) as u64;
            let mut done = 0u64;
            f.successes_per_100ms
                .iter()
                .enumerate()
                .find_map(|(i, &c)| {
                    done += u64::from(c);
                    (done >= need).then(|| ((i + 1) as f64 * 0.1 - t).max(0.0))
                })
        });
        RunFigures {
            outage_s: t,
            seed,
            physical_limit_s: t + n / f64::from(facts.capacity.max(1)),
            completion_s: f.completion_s,
            drain_s: f.drain_s,
            peak_over_capacity: f.peak_over_capacity,
            calls: f.calls,
            give_up_share: f.gave_up as f64 / n,
            max_bucket_share: f.max_bucket_share,
            done_after_recovery_s,
        }
    }
}

/// A constraint a candidate broke, with its worst value and the limit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Violation {
    /// `peak`, `give_ups`, `spread` or `latency`.
    pub constraint: &'static str,
    /// The worst value over the runs (peak: times the capacity; give-ups: a
    /// share of the clients; latency: seconds after recovery, infinite when
    /// the share was never done).
    pub value: f64,
    /// The limit the facts state.
    pub limit: f64,
}

/// A candidate's runs folded into worst cases.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Score {
    /// The objective: the worst completion over the physical limit (lower is better).
    pub objective: f64,
    /// The worst drain time per outage length, seconds (`None` where a client gave up).
    pub drain_s: Vec<Option<f64>>,
    /// The worst peak after recovery, times the capacity.
    pub peak_over_capacity: f64,
    /// Mean calls per client over the runs (the ranking's).
    pub calls: f64,
    /// The most calls per client of any run (the worst seed and length).
    pub calls_worst: f64,
    /// The worst give-up share.
    pub give_up_share: f64,
    /// The worst largest 100 ms bucket of retries, as a share of the clients.
    pub max_bucket_share: f64,
    /// The worst time after recovery by which the latency share was done,
    /// seconds (`None` without an objective; infinite never serializes: `null`).
    pub done_after_recovery_s: Option<f64>,
    /// The constraints broken (empty: the candidate meets the facts).
    pub violations: Vec<Violation>,
    /// The runs behind it.
    pub runs: Vec<RunFigures>,
}

impl Score {
    /// Folds `runs` (any order) for the facts' outage lengths.
    pub(crate) fn new(facts: &Facts, runs: Vec<RunFigures>) -> Score {
        let worst = |f: &dyn Fn(&RunFigures) -> f64| runs.iter().map(f).fold(0.0f64, f64::max);
        let objective = worst(&|r| r.completion_s / r.physical_limit_s.max(1e-9));
        let peak = worst(&|r| r.peak_over_capacity);
        let give_up_share = worst(&|r| r.give_up_share);
        let bucket = worst(&|r| r.max_bucket_share);
        let calls = runs.iter().map(|r| r.calls).sum::<f64>() / runs.len().max(1) as f64;
        let calls_worst = worst(&|r| r.calls);
        let drain_s = facts
            .outages
            .iter()
            .map(|o| {
                let mine = runs.iter().filter(|r| r.outage_s == o.as_secs_f64());
                mine.map(|r| r.drain_s)
                    .try_fold(0.0f64, |acc, d| d.map(|d| acc.max(d)))
            })
            .collect();
        let latency = facts.latency.map(|_| {
            runs.iter()
                .map(|r| r.done_after_recovery_s.unwrap_or(f64::INFINITY))
                .fold(0.0f64, f64::max)
        });
        let mut violations = Vec::new();
        if peak > facts.max_peak {
            violations.push(Violation {
                constraint: "peak",
                value: peak,
                limit: facts.max_peak,
            });
        }
        if give_up_share > facts.max_give_up_share {
            violations.push(Violation {
                constraint: "give_ups",
                value: give_up_share,
                limit: facts.max_give_up_share,
            });
        }
        if bucket > facts.max_bucket_share {
            violations.push(Violation {
                constraint: "spread",
                value: bucket,
                limit: facts.max_bucket_share,
            });
        }
        if let (Some(l), Some(v)) = (facts.latency, latency) {
            if v > l.within.as_secs_f64() {
                violations.push(Violation {
                    constraint: "latency",
                    value: v,
                    limit: l.within.as_secs_f64(),
                });
            }
        }
        Score {
            objective,
            drain_s,
            peak_over_capacity: peak,
            calls,
            calls_worst,
            give_up_share,
            max_bucket_share: bucket,
            done_after_recovery_s: latency.filter(|v| v.is_finite()),
            violations,
            runs,
        }
    }

    /// Whether the candidate meets every constraint.
    pub fn feasible(&self) -> bool {
        self.violations.is_empty()
    }

    /// The ranking key: feasible first, then the objective, then calls, then peak.
    pub(crate) fn rank_key(&self) -> (bool, f64, f64, f64) {
        (
            !self.feasible(),
            self.objective,
            self.calls,
            self.peak_over_capacity,
        )
    }

    /// How far the candidate is from meeting the facts: its largest
    /// violation as a ratio to the limit (0 when feasible).
    pub(crate) fn excess(&self) -> f64 {
        self.violations
            .iter()
            .map(|v| {
                if v.limit > 0.0 {
                    v.value / v.limit
                } else {
                    1.0 + v.value * 100.0
                }
            })
            .fold(0.0, f64::max)
    }
}

/// Compares two scores by [`Score::rank_key`].
pub(crate) fn by_rank(a: &Score, b: &Score) -> std::cmp::Ordering {
    let (x, y) = (a.rank_key(), b.rank_key());
    x.0.cmp(&y.0)
        .then(x.1.total_cmp(&y.1))
        .then(x.2.total_cmp(&y.2))
        .then(x.3.total_cmp(&y.3))
}
