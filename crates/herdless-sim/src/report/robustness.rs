//! The robustness report: one row per cell, the verdicts beside the figures.

use serde::Serialize;

use super::{grid, secs, OutageParameters};
use crate::scenario::outage::OutageFigures;
use crate::scenario::robustness::{Goals, RobustnessCell, RobustnessParams};

/// Plain full jitter's figures, the baseline of every cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Baseline {
    /// `full`.
    pub strategy: String,
    /// Mean calls per client.
    pub calls: f64,
    /// When the last client succeeded or gave up, seconds.
    pub completion_s: f64,
    /// Clients that gave up.
    pub gave_up: u64,
    /// The largest 100 ms bucket of arrivals after `T` over the capacity.
    pub peak_over_capacity: f64,
}

/// A robustness run's report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RobustnessReport {
    /// The seed.
    pub seed: u64,
    /// The strategy under test.
    pub strategy: String,
    /// The outage every cell runs (`honor`, `capacity_estimate` and
    /// `outage_end` are the defaults; each cell sets its own).
    pub parameters: OutageParameters,
    /// `T + N / C`, seconds.
    pub physical_limit_s: f64,
    /// What each cell must meet.
    pub goals: Goals,
    /// Plain full jitter on the same fleet.
    pub baseline: Baseline,
    /// One entry per cell: estimate, then end, then honor.
    pub cells: Vec<RobustnessCell>,
    /// How many cells met every goal.
    pub passed: usize,
}

impl RobustnessReport {
    pub(crate) fn new(
        p: &RobustnessParams,
        seed: u64,
        base: OutageFigures,
        cells: Vec<RobustnessCell>,
    ) -> Self {
        RobustnessReport {
            seed,
            strategy: p.strategy.name().to_owned(),
            parameters: OutageParameters::new(&p.base),
            physical_limit_s: p.base.physical_limit_s(),
            goals: p.goals,
            baseline: Baseline {
                strategy: base.strategy,
                calls: base.calls,
                completion_s: base.completion_s,
                gave_up: base.gave_up,
                peak_over_capacity: base.peak_over_capacity,
            },
            passed: cells.iter().filter(|c| c.passed).count(),
            cells,
        }
    }
}

fn verdict(c: &RobustnessCell) -> String {
    let k = &c.checks;
    let failed: Vec<&str> = [
        (k.peak, "peak"),
        (k.drain, "drain"),
        (k.calls, "calls"),
        (k.no_give_up, "gave up"),
        (k.vs_full_jitter, "vs full"),
    ]
    .into_iter()
    .filter(|(ok, _)| !ok)
    .map(|(_, name)| name)
    .collect();
    if failed.is_empty() {
        "ok".to_owned()
    } else {
        format!("FAIL: {}", failed.join(", "))
    }
}

pub(crate) fn table(r: &RobustnessReport) -> String {
    let p = &r.parameters;
    let g = &r.goals;
    let b = &r.baseline;
    let mut out = format!(
        "robustness: {} against plain full jitter; {} clients, endpoint down {}, then {} calls/s \
         (burst {}); seed {}\n\
         physical limit: {:.3} s. Goals per cell: peak per 100 ms after T <= {}x capacity; the \
         clients that honor Retry-After drain within {}x the limit, with <= {} calls each, none \
         gives up; no worse than plain full jitter (completion {:.3} s, peak {:.2}, {} gave up)\n\n",
        r.strategy,
        p.clients,
        secs(p.outage_s),
        p.capacity_per_s,
        p.burst,
        r.seed,
        r.physical_limit_s,
        g.peak,
        g.honoring_vs_limit,
        g.honoring_calls,
        b.completion_s,
        b.peak_over_capacity,
        b.gave_up,
    );
    let header: Vec<String> = [
        "estimate",
        "end",
        "honor",
        "calls",
        "honoring: calls",
        "x limit",
        "gave up",
        "all: gave up",
        "completion (s)",
        "peak / capacity",
        "verdict",
    ]
    .map(str::to_owned)
    .to_vec();
    let mut rows: Vec<Vec<String>> = r
        .cells
        .iter()
        .map(|c| {
            vec![
                format!("{}x", c.capacity_estimate),
                c.outage_end.to_owned(),
                format!("{}", c.honor),
                format!("{:.2}", c.calls),
                format!("{:.2}", c.honoring_calls),
                c.honoring_vs_limit
                    .map_or("-".to_owned(), |x| format!("{x:.2}")),
                c.honoring_gave_up.to_string(),
                c.gave_up.to_string(),
                format!("{:.3}", c.completion_s),
                format!("{:.2}", c.peak_over_capacity),
                verdict(c),
            ]
        })
        .collect();
    rows.push(vec![
        "full jitter".to_owned(),
        "-".to_owned(),
        "-".to_owned(),
        format!("{:.2}", b.calls),
        "-".to_owned(),
        "-".to_owned(),
        "-".to_owned(),
        b.gave_up.to_string(),
        format!("{:.3}", b.completion_s),
        format!("{:.2}", b.peak_over_capacity),
        "baseline".to_owned(),
    ]);
    out.push_str(&grid(&header, &rows));
    out.push_str(&format!(
        "\ncells meeting every goal: {} of {}\n",
        r.passed,
        r.cells.len()
    ));
    out
}
