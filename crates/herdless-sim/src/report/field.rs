//! The field report: one row per cell, the verdict beside the figures, and
//! per strategy the count of cells that met their goals.

use serde::Serialize;

use super::{OutageParameters, grid, secs};
use crate::scenario::field::{FieldCell, FieldGoals, FieldParams};

/// How many cells of one strategy met their goals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Met {
    /// `full+hold`, `full+throttle`.
    pub strategy: String,
    /// `none` or `shared` (`none` for the client-side throttle).
    pub coordination: &'static str,
    /// Cells that met every goal.
    pub met: usize,
    /// Cells.
    pub cells: usize,
}

/// A field run's report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldReport {
    /// The seed.
    pub seed: u64,
    /// The fleet and device every cell shares (each sets its outage, end
    /// and server).
    pub parameters: OutageParameters,
    /// What the cells must meet.
    pub goals: FieldGoals,
    /// Every cell: length, then end; the hold per setup (alone, shared),
    /// then the throttle, then plain full jitter.
    pub cells: Vec<FieldCell>,
    /// Per strategy, how many cells met their goals.
    pub met: Vec<Met>,
}

impl FieldReport {
    pub(crate) fn new(p: &FieldParams, seed: u64, cells: Vec<FieldCell>) -> Self {
        let mut met: Vec<Met> = Vec::new();
        for c in cells.iter().filter(|c| c.verdict != "baseline") {
            let i = match met
                .iter()
                .position(|m| m.strategy == c.strategy && m.coordination == c.coordination)
            {
                Some(i) => i,
                None => {
                    met.push(Met {
                        strategy: c.strategy.clone(),
                        coordination: c.coordination,
                        met: 0,
                        cells: 0,
                    });
                    met.len() - 1
                }
            };
            met[i].cells += 1;
            met[i].met += usize::from(c.verdict == "met");
        }
        FieldReport {
            seed,
            parameters: OutageParameters::new(&p.base),
            goals: p.goals,
            cells,
            met,
        }
    }
}

fn opt(x: Option<f64>) -> String {
    x.map_or("-".to_owned(), |v| format!("{v:.2}"))
}

pub(crate) fn table(r: &FieldReport) -> String {
    let p = &r.parameters;
    let g = &r.goals;
    let mut out = format!(
        "field: {} clients, {} calls/s (burst {}) after outages of every length, the end known or \
         not, 1, 3 or 8 server replicas (each told 1/R of the capacity); policy: the scenario's \
         default; seed {}\n\
         Goals: full+hold with shared state: nobody gives up, drain <= {}x T + N/C ({}x with one \
         replica and the end known), honoring peak and service load per 100 ms after T <= {}x C, \
         calls <= {} + T/{:.0} s; full+hold per replica: no worse than plain full jitter; \
         full+throttle: nobody gives up, drain <= {}x, peak <= {}x C, <= {} calls\n",
        p.clients,
        p.capacity_per_s,
        p.burst,
        r.seed,
        g.hold_vs_limit,
        g.hold_known_single,
        g.peak,
        g.calls_base,
        1.0 / g.calls_per_s,
        g.throttle_vs_limit,
        g.peak,
        g.throttle_calls,
    );
    let header: Vec<String> = [
        "strategy",
        "outage",
        "end",
        "replicas",
        "split",
        "shared",
        "x limit",
        "honoring",
        "calls",
        "gave up",
        "peak / C",
        "service / C",
        "max held",
        "verdict",
    ]
    .map(str::to_owned)
    .to_vec();
    let rows: Vec<Vec<String>> = r
        .cells
        .iter()
        .map(|c| {
            let hold = c.strategy == "full+hold";
            vec![
                c.strategy.clone(),
                secs(c.outage_s),
                c.outage_end.to_owned(),
                if hold {
                    c.replicas.to_string()
                } else {
                    "-".to_owned()
                },
                if hold {
                    c.split.to_owned()
                } else {
                    "-".to_owned()
                },
                if hold {
                    c.coordination.to_owned()
                } else {
                    "-".to_owned()
                },
                opt(c.drain_vs_limit),
                opt(c.honoring_vs_limit),
                format!("{:.2}", c.calls),
                c.gave_up.to_string(),
                format!("{:.2}", c.peak_over_capacity),
                format!("{:.2}", c.service_peak_over_capacity),
                c.max_held.to_string(),
                match c.verdict {
                    "missed" => format!("MISSED: {}", c.missed.join(", ")),
                    v => v.to_owned(),
                },
            ]
        })
        .collect();
    out.push('\n');
    out.push_str(&grid(&header, &rows));
    for m in &r.met {
        out.push_str(&format!(
            "\n{} ({}): cells meeting their goals: {} of {}",
            m.strategy,
            if m.strategy == "full+hold" {
                format!("shared state: {}", m.coordination)
            } else {
                "client side".to_owned()
            },
            m.met,
            m.cells
        ));
    }
    out.push('\n');
    out
}
