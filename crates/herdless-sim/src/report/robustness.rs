//! The robustness report: one row per cell, strategy by strategy, the
//! verdicts beside the figures.

use serde::Serialize;

use super::{OutageParameters, grid, secs};
use crate::scenario::outage::OutageFigures;
use crate::scenario::robustness::{Goals, RobustnessCell, RobustnessParams};

/// Plain full jitter's figures at one true capacity and outage: the
/// baseline of the cells that face the same fleet.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Baseline {
    /// `full`.
    pub strategy: String,
    /// The true capacity, calls per second.
    pub capacity_per_s: u32,
    /// The outage, seconds.
    pub outage_s: f64,
    /// The clients' policy: `default` or `long` (see the cells').
    pub policy: &'static str,
    /// Mean calls per client.
    pub calls: f64,
    /// When the last client succeeded or gave up, seconds.
    pub completion_s: f64,
    /// Clients that gave up.
    pub gave_up: u64,
    /// The largest 100 ms bucket of arrivals after `T` over the capacity.
    pub peak_over_capacity: f64,
}

impl Baseline {
    fn new(capacity_per_s: u32, outage_s: f64, policy: &'static str, f: &OutageFigures) -> Self {
        Baseline {
            strategy: f.strategy.clone(),
            capacity_per_s,
            outage_s,
            policy,
            calls: f.calls,
            completion_s: f.completion_s,
            gave_up: f.gave_up,
            peak_over_capacity: f.peak_over_capacity,
        }
    }
}

/// A robustness run's report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RobustnessReport {
    /// The seed.
    pub seed: u64,
    /// The strategies under test, in the cells' order.
    pub strategies: Vec<String>,
    /// The first of them.
    pub strategy: String,
    /// The base outage; its `capacity_per_s` is the estimate E the server is
    /// told (each cell sets its true capacity, end, honor and, in the long
    /// rows, the outage).
    pub parameters: OutageParameters,
    /// The told estimate E, calls per second.
    pub capacity_estimate_per_s: u32,
    /// `T + N / E`, seconds (each cell reports its own).
    pub physical_limit_s: f64,
    /// What each cell must meet.
    pub goals: Goals,
    /// Plain full jitter with the server told the truth (C = E, the base
    /// outage).
    pub baseline: Baseline,
    /// Plain full jitter at every true capacity and long outage.
    pub baselines: Vec<Baseline>,
    /// One entry per cell: strategy, then capacity, end and honor, then the
    /// long rows.
    pub cells: Vec<RobustnessCell>,
    /// How many cells met every goal.
    pub passed: usize,
}

impl RobustnessReport {
    pub(crate) fn new(
        p: &RobustnessParams,
        seed: u64,
        bases: Vec<OutageFigures>,
        cells: Vec<RobustnessCell>,
    ) -> Self {
        let baselines: Vec<Baseline> = p
            .baselines()
            .iter()
            .zip(&bases)
            .map(|(q, f)| {
                let policy = if q.policy == p.base.policy {
                    "default"
                } else {
                    "long"
                };
                Baseline::new(q.capacity, q.outage.as_secs_f64(), policy, f)
            })
            .collect();
        let told = baselines
            .iter()
            .find(|b| {
                b.capacity_per_s == p.base.capacity && b.outage_s == p.base.outage.as_secs_f64()
            })
            .or(baselines.first())
            .cloned()
            .unwrap_or_else(|| Baseline::new(p.base.capacity, 0.0, "default", &bases[0]));
        RobustnessReport {
            seed,
            strategies: p.strategies.iter().map(|k| k.name().to_owned()).collect(),
            strategy: p.strategies.first().map_or("", |k| k.name()).to_owned(),
            parameters: OutageParameters::new(&p.base),
            capacity_estimate_per_s: p.base.capacity,
            physical_limit_s: p.base.physical_limit_s(),
            goals: p.goals,
            baseline: told,
            baselines,
            passed: cells.iter().filter(|c| c.passed).count(),
            cells,
        }
    }
}

fn verdict(c: &RobustnessCell) -> String {
    let k = &c.checks;
    let failed: Vec<&str> = [
        (k.peak, "peak"),
        (k.service_peak, "service"),
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

/// A true capacity over the told estimate, by name: `E/2`, `E`, `2E`.
pub(crate) fn ratio(x: f64) -> String {
    if x == 0.5 {
        "E/2".to_owned()
    } else if x == 1.0 {
        "E".to_owned()
    } else {
        format!("{x}E")
    }
}

pub(crate) fn table(r: &RobustnessReport) -> String {
    let p = &r.parameters;
    let g = &r.goals;
    let mut out = format!(
        "robustness: {} against plain full jitter; {} clients, the server told E = {} calls/s \
         (burst {}), true capacity C per row; endpoint down {} (long rows: as shown); seed {}\n\
         Goals per cell: peak of the arrivals of the clients that honor Retry-After and of the \
         service's own load per 100 ms after T <= {}x C; those clients drain within {}x the cell's limit T + N/C ({}x at \
         C = E with the end known), with <= {} calls each (not checked in the long rows), none \
         gives up; clients run the library's default policy (6 attempts, 120 s), and the long \
         rows again with policy `long` (at least 20 attempts and 5 minutes); no worse than plain full jitter on drain, peak (above the goal) and give-ups\n",
        r.strategies.join(", "),
        p.clients,
        r.capacity_estimate_per_s,
        p.burst,
        secs(p.outage_s),
        r.seed,
        g.peak,
        g.honoring_vs_limit,
        g.known_vs_limit,
        g.honoring_calls,
    );
    let header: Vec<String> = [
        "strategy",
        "C",
        "outage",
        "policy",
        "end",
        "honor",
        "calls",
        "honoring: calls",
        "x limit",
        "gave up",
        "peak / C",
        "all: gave up",
        "peak / C",
        "service / C",
        "max held",
        "verdict",
    ]
    .map(str::to_owned)
    .to_vec();
    let mut rows: Vec<Vec<String>> = r
        .cells
        .iter()
        .map(|c| {
            vec![
                c.strategy.clone(),
                ratio(c.capacity_over_estimate),
                secs(c.outage_s),
                c.policy.to_owned(),
                c.outage_end.to_owned(),
                format!("{}", c.honor),
                format!("{:.2}", c.calls),
                format!("{:.2}", c.honoring_calls),
                c.honoring_vs_limit
                    .map_or("-".to_owned(), |x| format!("{x:.2}")),
                c.honoring_gave_up.to_string(),
                format!("{:.2}", c.honoring_peak_over_capacity),
                c.gave_up.to_string(),
                format!("{:.2}", c.peak_over_capacity),
                format!("{:.2}", c.service_peak_over_capacity),
                c.max_held.to_string(),
                verdict(c),
            ]
        })
        .collect();
    for b in &r.baselines {
        let factor = f64::from(b.capacity_per_s) / f64::from(r.capacity_estimate_per_s.max(1));
        rows.push(vec![
            "full jitter".to_owned(),
            ratio((factor * 1e6).round() / 1e6),
            secs(b.outage_s),
            b.policy.to_owned(),
            "-".to_owned(),
            "-".to_owned(),
            format!("{:.2}", b.calls),
            "-".to_owned(),
            "-".to_owned(),
            "-".to_owned(),
            "-".to_owned(),
            b.gave_up.to_string(),
            format!("{:.2}", b.peak_over_capacity),
            format!("{:.2}", b.peak_over_capacity),
            "0".to_owned(),
            format!("baseline (done at {:.3} s)", b.completion_s),
        ]);
    }
    out.push('\n');
    out.push_str(&grid(&header, &rows));
    for s in &r.strategies {
        let mine: Vec<&RobustnessCell> = r.cells.iter().filter(|c| &c.strategy == s).collect();
        out.push_str(&format!(
            "\n{s}: cells meeting every goal: {} of {}",
            mine.iter().filter(|c| c.passed).count(),
            mine.len()
        ));
    }
    out.push_str(&format!(
        "\ncells meeting every goal: {} of {}\n",
        r.passed,
        r.cells.len()
    ));
    out
}
