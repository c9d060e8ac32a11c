//! One cell of the robustness matrix: its figures and its verdicts against
//! the goals, each judged against plain full jitter on the same fleet.

use serde::Serialize;

use super::{CellSpec, Goals};
use crate::endpoint::OutageEnd;
use crate::scenario::outage::OutageFigures;

/// One cell's figures and verdicts (JSON field names are public).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RobustnessCell {
    /// The strategy under test.
    pub strategy: String,
    /// A long-outage row (C = E, every client honoring).
    pub long: bool,
    /// The clients' policy: `default` (the library's) or, in the labelled
    /// extra long rows, `long` (at least 20 attempts and 5 minutes).
    pub policy: &'static str,
    /// The true capacity, calls per second.
    pub capacity_per_s: u32,
    /// The true capacity over the told estimate (0.5: the server was told
    /// twice what it serves).
    pub capacity_over_estimate: f64,
    /// The told estimate over the true capacity (the allocator's start).
    pub capacity_estimate: f64,
    /// How long the endpoint failed everything, seconds.
    pub outage_s: f64,
    /// `known` or `unknown`.
    pub outage_end: &'static str,
    /// The share of clients that honor Retry-After.
    pub honor: f64,
    /// `T + N / C` for this cell, seconds.
    pub physical_limit_s: f64,
    /// Mean calls per client (everyone).
    pub calls: f64,
    /// Mean calls per honoring client.
    pub honoring_calls: f64,
    /// When the last honoring client succeeded, seconds (`null`: one gave up).
    pub honoring_completion_s: Option<f64>,
    /// That over the physical limit (`null` with it).
    pub honoring_vs_limit: Option<f64>,
    /// Honoring clients that gave up.
    pub honoring_gave_up: u64,
    /// Clients that gave up (everyone).
    pub gave_up: u64,
    /// When the last client succeeded or gave up, seconds.
    pub completion_s: f64,
    /// The largest 100 ms bucket of arrivals after `T` over the true capacity.
    pub peak_over_capacity: f64,
    /// The largest 100 ms bucket of calls that reached the service after
    /// `T`, its own refusals included, over the true capacity.
    pub service_peak_over_capacity: f64,
    /// The same for the honoring clients' arrivals alone.
    pub honoring_peak_over_capacity: f64,
    /// The most calls held open at once (0 without a hold).
    pub max_held: u64,
    /// Each goal, met or not.
    pub checks: Checks,
    /// Every goal met.
    pub passed: bool,
}

/// The verdicts of one cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Checks {
    /// Peak of the honoring clients' arrivals after `T` within the goal.
    pub peak: bool,
    /// Peak of the service's own load after `T` within the goal.
    pub service_peak: bool,
    /// Honoring drain within the goal (the tighter one at C = E, end known).
    pub drain: bool,
    /// Honoring calls within the goal (true in the long rows: not checked).
    pub calls: bool,
    /// No honoring client gave up.
    pub no_give_up: bool,
    /// No worse than plain full jitter on drain, peak and give-ups
    /// ([`vs_full_jitter`]).
    pub vs_full_jitter: bool,
}

impl Checks {
    /// Every check met.
    pub fn all(&self) -> bool {
        self.peak
            && self.service_peak
            && self.drain
            && self.calls
            && self.no_give_up
            && self.vs_full_jitter
    }
}

/// No worse than plain full jitter on the same fleet: the honoring clients
/// drain no later than full jitter's fleet drains (where its clients give
/// up, any drain is better: a fleet that stopped trying is done, not
/// drained), the peak of arrivals after `T` is no higher (or within the
/// peak goal: below it, arrivals the service can take are no harm, and
/// draining at the capacity raises the peak above a slower strategy's), and
/// no more clients give up.
pub fn vs_full_jitter(f: &OutageFigures, base: &OutageFigures, g: &Goals) -> bool {
    let drain = match (f.honoring_completion_s, base.drain_s) {
        (Some(d), Some(b)) => d <= b,
        (Some(_), None) => true,
        (None, _) => false,
    };
    drain
        && f.peak_over_capacity <= base.peak_over_capacity.max(g.peak)
        && f.gave_up <= base.gave_up
}

/// The drain goal of a cell: tighter when the server was told the truth and
/// the end (outside the long rows).
pub fn drain_goal(c: &CellSpec, g: &Goals) -> f64 {
    let exact = (c.capacity_over_estimate - 1.0).abs() < 1e-9;
    if exact && !c.long && c.params.outage_end == OutageEnd::Known {
        g.known_vs_limit
    } else {
        g.honoring_vs_limit
    }
}

pub(super) fn cell(
    c: &CellSpec,
    f: &OutageFigures,
    base: &OutageFigures,
    g: &Goals,
) -> RobustnessCell {
    let p = &c.params;
    let checks = Checks {
        peak: f.honoring_peak_over_capacity <= g.peak,
        service_peak: f.service_peak_over_capacity <= g.service_peak,
        drain: f.honoring_vs_limit.is_some_and(|x| x <= drain_goal(c, g)),
        calls: c.long || f.honoring_calls <= g.honoring_calls,
        no_give_up: f.honoring_gave_up == 0,
        vs_full_jitter: vs_full_jitter(f, base, g),
    };
    RobustnessCell {
        strategy: c.strategy.name().to_owned(),
        long: c.long,
        policy: if c.long_policy { "long" } else { "default" },
        capacity_per_s: p.capacity,
        capacity_over_estimate: c.capacity_over_estimate,
        capacity_estimate: p.capacity_estimate,
        outage_s: p.outage.as_secs_f64(),
        outage_end: p.outage_end.name(),
        honor: p.honor,
        physical_limit_s: p.physical_limit_s(),
        calls: f.calls,
        honoring_calls: f.honoring_calls,
        honoring_completion_s: f.honoring_completion_s,
        honoring_vs_limit: f.honoring_vs_limit,
        honoring_gave_up: f.honoring_gave_up,
        gave_up: f.gave_up,
        completion_s: f.completion_s,
        peak_over_capacity: f.peak_over_capacity,
        service_peak_over_capacity: f.service_peak_over_capacity,
        honoring_peak_over_capacity: f.honoring_peak_over_capacity,
        max_held: f.max_held,
        passed: checks.all(),
        checks,
    }
}
