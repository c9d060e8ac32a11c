//! The **robustness** scenario: the outage again, with what the server knows
//! and what the clients do made wrong on purpose.
//!
//! Server pushback drains an outage at the physical limit when the server
//! knows three things no real server knows for sure: its capacity, when the
//! outage ends, and that every client honors Retry-After. This scenario runs
//! the outage scenario's fleet (the same parameters, defaults 40,000 clients,
//! 5 s, 10,000 calls/s) under one pushback strategy (default
//! `full+pushback`) for every cell of
//!
//! * the allocator's starting capacity estimate over the true capacity
//!   ([`OutageParams::capacity_estimate`]): 0.5, 1, 2;
//! * whether it is told the outage's end ([`OutageParams::outage_end`]):
//!   known, unknown;
//! * the share of clients that honor Retry-After ([`OutageParams::honor`]):
//!   1, 0.9, 0.5;
//!
//! beside plain full jitter on the same fleet, and checks each cell against
//! [`Goals`]: the peak of arrivals per 100 ms after `T` against the capacity;
//! the honoring clients' drain against the physical limit, their calls and
//! their give-ups; and no worse than plain full jitter on completion, peak and
//! give-ups. The cells run in parallel; every one faces the same fleet.

use serde::Serialize;

use crate::endpoint::OutageEnd;
use crate::error::SimError;
use crate::scenario::outage::{self, OutageFigures, OutageParams};
use crate::strategy::StrategyKind;

/// Parameters of the robustness scenario.
///
/// ```
/// let p = herdless_sim::scenario::robustness::RobustnessParams::default();
/// assert_eq!(p.cells().len(), 18);
/// assert_eq!(p.strategy.name(), "full+pushback");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RobustnessParams {
    /// The outage every cell runs (its `honor`, `capacity_estimate` and
    /// `outage_end` are set per cell).
    pub base: OutageParams,
    /// The capacity estimates (over the true capacity).
    pub estimates: Vec<f64>,
    /// Known and unknown end.
    pub ends: Vec<OutageEnd>,
    /// The shares of clients that honor Retry-After.
    pub honors: Vec<f64>,
    /// The strategy under test (a pushback strategy).
    pub strategy: StrategyKind,
    /// What each cell must meet.
    pub goals: Goals,
}

impl Default for RobustnessParams {
    fn default() -> Self {
        RobustnessParams {
            base: OutageParams::default(),
            estimates: vec![0.5, 1.0, 2.0],
            ends: vec![OutageEnd::Known, OutageEnd::Unknown],
            honors: vec![1.0, 0.9, 0.5],
            strategy: StrategyKind::GUARDED[2],
            goals: Goals::default(),
        }
    }
}

/// The baseline every cell is compared with: plain full jitter.
pub const BASELINE: StrategyKind = StrategyKind::Backoff(herdless::Jitter::Full);

/// What each cell must meet.
///
/// ```
/// let g = herdless_sim::scenario::robustness::Goals::default();
/// assert_eq!((g.peak, g.honoring_vs_limit, g.honoring_calls), (1.3, 1.35, 3.5));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Goals {
    /// The largest 100 ms bucket of arrivals after `T` over the capacity.
    pub peak: f64,
    /// The honoring clients' drain over the physical limit.
    pub honoring_vs_limit: f64,
    /// The honoring clients' mean calls.
    pub honoring_calls: f64,
}

impl Default for Goals {
    fn default() -> Self {
        Goals {
            peak: 1.3,
            honoring_vs_limit: 1.35,
            honoring_calls: 3.5,
        }
    }
}

impl RobustnessParams {
    /// The cells, estimate first, then end, then honor.
    pub fn cells(&self) -> Vec<OutageParams> {
        let mut cells = Vec::new();
        for &capacity_estimate in &self.estimates {
            for &outage_end in &self.ends {
                for &honor in &self.honors {
                    cells.push(OutageParams {
                        capacity_estimate,
                        outage_end,
                        honor,
                        ..self.base
                    });
                }
            }
        }
        cells
    }

    /// Checks the base and every cell, and that there is a strategy to test.
    ///
    /// ```
    /// let mut p = herdless_sim::scenario::robustness::RobustnessParams::default();
    /// p.honors = vec![1.5];
    /// assert!(p.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), SimError> {
        if self.cells().is_empty() {
            return Err(SimError::Invalid(
                "the robustness matrix has no cell".into(),
            ));
        }
        self.cells().iter().try_for_each(OutageParams::validate)
    }
}

/// One cell's figures and verdicts (JSON field names are public).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RobustnessCell {
    /// The starting estimate over the true capacity.
    pub capacity_estimate: f64,
    /// `known` or `unknown`.
    pub outage_end: &'static str,
    /// The share of clients that honor Retry-After.
    pub honor: f64,
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
    /// The largest 100 ms bucket of arrivals after `T` over the capacity.
    pub peak_over_capacity: f64,
    /// Each goal, met or not.
    pub checks: Checks,
    /// Every goal met.
    pub passed: bool,
}

/// The verdicts of one cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Checks {
    /// Peak after `T` within the goal.
    pub peak: bool,
    /// Honoring drain within the goal.
    pub drain: bool,
    /// Honoring calls within the goal.
    pub calls: bool,
    /// No honoring client gave up.
    pub no_give_up: bool,
    /// No worse than plain full jitter on completion, peak and give-ups.
    pub vs_full_jitter: bool,
}

fn cell(p: &OutageParams, f: &OutageFigures, base: &OutageFigures, g: &Goals) -> RobustnessCell {
    let checks = Checks {
        peak: f.peak_over_capacity <= g.peak,
        drain: f
            .honoring_vs_limit
            .is_some_and(|x| x <= g.honoring_vs_limit),
        calls: f.honoring_calls <= g.honoring_calls,
        no_give_up: f.honoring_gave_up == 0,
        vs_full_jitter: f.completion_s <= base.completion_s
            && f.peak_over_capacity <= base.peak_over_capacity
            && f.gave_up <= base.gave_up,
    };
    RobustnessCell {
        capacity_estimate: p.capacity_estimate,
        outage_end: p.outage_end.name(),
        honor: p.honor,
        calls: f.calls,
        honoring_calls: f.honoring_calls,
        honoring_completion_s: f.honoring_completion_s,
        honoring_vs_limit: f.honoring_vs_limit,
        honoring_gave_up: f.honoring_gave_up,
        gave_up: f.gave_up,
        completion_s: f.completion_s,
        peak_over_capacity: f.peak_over_capacity,
        passed: checks.peak
            && checks.drain
            && checks.calls
            && checks.no_give_up
            && checks.vs_full_jitter,
        checks,
    }
}

/// Runs the matrix: `run` maps each `(params, strategy)` to its figures (the
/// caller decides how: in parallel, with progress); returns the baseline's
/// figures and the cells.
///
/// # Errors
///
/// The first run that failed.
///
/// ```
/// use herdless_sim::scenario::{outage, robustness::{self, RobustnessParams}};
/// use herdless_sim::OutageParams;
/// let p = RobustnessParams {
///     base: OutageParams { clients: 500, capacity: 250, burst: 25, ..Default::default() },
///     estimates: vec![1.0],
///     honors: vec![1.0],
///     ..Default::default()
/// };
/// let (base, cells) = robustness::run(&p, |q, k| outage::run(q, k, 1))?;
/// assert_eq!(base.strategy, "full");
/// assert_eq!(cells.len(), 2);
/// # Ok::<(), herdless_sim::SimError>(())
/// ```
pub fn run<F>(
    params: &RobustnessParams,
    run: F,
) -> Result<(OutageFigures, Vec<RobustnessCell>), SimError>
where
    F: Fn(&OutageParams, StrategyKind) -> Result<OutageFigures, SimError>,
{
    params.validate()?;
    let base = run(&params.base, BASELINE)?;
    let cells = params
        .cells()
        .iter()
        .map(|p| run(p, params.strategy).map(|f| cell(p, &f, &base, &params.goals)))
        .collect::<Result<_, _>>()?;
    Ok((base, cells))
}

/// The runs of the matrix, baseline first: what [`Simulation`](crate::Simulation)
/// spreads over its threads.
pub(crate) fn runs(params: &RobustnessParams) -> Vec<(OutageParams, StrategyKind)> {
    std::iter::once((params.base, BASELINE))
        .chain(params.cells().into_iter().map(|p| (p, params.strategy)))
        .collect()
}

/// Assembles what [`runs`] produced, in its order.
pub(crate) fn assemble(
    params: &RobustnessParams,
    mut figures: Vec<OutageFigures>,
) -> (OutageFigures, Vec<RobustnessCell>) {
    let cells_figures = figures.split_off(1);
    let base = figures.remove(0);
    let cells = params
        .cells()
        .iter()
        .zip(&cells_figures)
        .map(|(p, f)| cell(p, f, &base, &params.goals))
        .collect();
    (base, cells)
}

/// Runs one cell (or the baseline).
pub(crate) fn run_one(
    p: &OutageParams,
    kind: StrategyKind,
    seed: u64,
) -> Result<OutageFigures, SimError> {
    outage::run(p, kind, seed)
}
