//! The **robustness** scenario: the outage again, with what the server knows
//! and what the clients do made wrong on purpose.
//!
//! Server pushback drains an outage at the physical limit when the server
//! knows three things no real server knows for sure: its capacity, when the
//! outage ends, and that every client honors Retry-After. This scenario tells
//! the server a **fixed capacity estimate E** (the base outage's `capacity`,
//! default 10,000 calls/s: what an operator configures) and runs the outage
//! scenario's fleet (defaults 40,000 clients, 5 s) for every cell of
//!
//! * the **true** capacity over the told estimate: C = E/2, E, 2E (each cell's
//!   physical limit `T + N/C` is its own; the token bucket scales with C);
//! * whether the server is told the outage's end ([`OutageParams::outage_end`]):
//!   known, unknown;
//! * the share of clients that honor Retry-After ([`OutageParams::honor`]):
//!   1, 0.9, 0.5;
//!
//! plus **long outages** (default 20 s and 60 s) at C = E, every client
//! honoring, end known and unknown, twice: with the library's default policy
//! (6 attempts, 120 s: what users run), and, labelled `long` in `policy`,
//! with a policy whose limits outlast them (at least 20 attempts and 5
//! minutes). Each strategy under test (default
//! `full+hold`, then `full+pushback`: slots only, for comparison, and
//! `full+throttle`, the client-side throttle that needs no server) runs every
//! cell, beside plain full jitter on the same fleet and capacity, and each
//! cell is checked against [`Goals`]: the peak of arrivals and of the load on
//! the service itself per 100 ms after `T` against C; the honoring clients'
//! drain against the cell's physical limit, their calls and their give-ups;
//! and no worse than plain full jitter on drain, peak and give-ups
//! ([`vs_full_jitter`]). The cells run in parallel; every one faces the same
//! fleet.

use std::time::Duration;

use serde::Serialize;

use crate::endpoint::OutageEnd;
use crate::error::SimError;
use crate::guard::Guard;
use crate::scenario::outage::{self, OutageFigures, OutageParams};
use crate::strategy::StrategyKind;

mod cell;
use cell::cell;
pub use cell::{Checks, RobustnessCell, drain_goal, vs_full_jitter};

/// Parameters of the robustness scenario.
///
/// ```
/// let p = herdless_sim::scenario::robustness::RobustnessParams::default();
/// assert_eq!(p.cells().len(), 3 * (18 + 8)); // three strategies, 18 cells and 8 long rows each
/// assert_eq!(p.strategies[0].name(), "full+hold");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RobustnessParams {
    /// The outage every cell runs; its `capacity` is the estimate E the
    /// server is told (its `honor`, `capacity_estimate`, `outage_end` and,
    /// for the long rows, `outage` are set per cell).
    pub base: OutageParams,
    /// The true capacities, over the told estimate.
    pub capacities: Vec<f64>,
    /// Known and unknown end.
    pub ends: Vec<OutageEnd>,
    /// The shares of clients that honor Retry-After.
    pub honors: Vec<f64>,
    /// The long outages, run at C = E with every client honoring, each end.
    pub long_outages: Vec<Duration>,
    /// The strategies under test, each over every cell.
    pub strategies: Vec<StrategyKind>,
    /// What each cell must meet.
    pub goals: Goals,
}

impl Default for RobustnessParams {
    fn default() -> Self {
        RobustnessParams {
            base: OutageParams::default(),
            capacities: vec![0.5, 1.0, 2.0],
            ends: vec![OutageEnd::Known, OutageEnd::Unknown],
            honors: vec![1.0, 0.9, 0.5],
            long_outages: vec![Duration::from_secs(20), Duration::from_secs(60)],
            strategies: DEFAULT_STRATEGIES.to_vec(),
            goals: Goals::default(),
        }
    }
}

/// The strategies the matrix tests unless told otherwise: the reconnect
/// queue, Retry-After slots alone, and the client-side throttle (no server
/// help: the estimate and the honoring share do not reach it).
pub const DEFAULT_STRATEGIES: [StrategyKind; 3] = [
    StrategyKind::Guarded(herdless::Jitter::Full, Guard::Hold),
    StrategyKind::Guarded(herdless::Jitter::Full, Guard::Pushback),
    StrategyKind::Guarded(herdless::Jitter::Full, Guard::Throttle),
];

/// The baseline every cell is compared with: plain full jitter.
pub const BASELINE: StrategyKind = StrategyKind::Backoff(herdless::Jitter::Full);

/// The long rows' policy floor: attempts and elapsed time that outlast them.
const LONG_ATTEMPTS: u32 = 20;
const LONG_ELAPSED: Duration = Duration::from_secs(300);

/// What each cell must meet.
///
/// ```
/// let g = herdless_sim::scenario::robustness::Goals::default();
/// assert_eq!((g.peak, g.service_peak, g.honoring_vs_limit, g.honoring_calls), (1.3, 1.3, 1.25, 2.0));
/// assert_eq!(g.known_vs_limit, 1.10);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Goals {
    /// The largest 100 ms bucket of the honoring clients' arrivals after `T`
    /// over the true capacity (everyone's when all honor: the callers that
    /// ignore Retry-After are held to plain full jitter's peak instead).
    pub peak: f64,
    /// The largest 100 ms bucket of calls that reached the service itself
    /// after `T` (its own refusals included) over the true capacity.
    pub service_peak: f64,
    /// The honoring clients' drain over the cell's physical limit.
    pub honoring_vs_limit: f64,
    /// The same when the estimate is right (C = E) and the end known.
    pub known_vs_limit: f64,
    /// The honoring clients' mean calls (not checked in the long rows: a
    /// caller held again before an unknown end makes a call each time).
    pub honoring_calls: f64,
}

impl Default for Goals {
    fn default() -> Self {
        Goals {
            peak: 1.3,
            service_peak: 1.3,
            honoring_vs_limit: 1.25,
            known_vs_limit: 1.10,
            honoring_calls: 2.0,
        }
    }
}

/// One cell to run: its outage, the strategy, and what kind of row it is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CellSpec {
    /// The outage as this cell runs it (true capacity, end, honor, length).
    pub params: OutageParams,
    /// The true capacity over the told estimate.
    pub capacity_over_estimate: f64,
    /// The strategy under test.
    pub strategy: StrategyKind,
    /// A long-outage row.
    pub long: bool,
    /// A long row run with at least 20 attempts and 5 minutes elapsed (the
    /// others run the base policy, the library's default).
    pub long_policy: bool,
}

impl RobustnessParams {
    /// The outage at true capacity `factor × E`: the estimate the server
    /// starts from is still E.
    fn at_capacity(&self, factor: f64) -> OutageParams {
        let e = f64::from(self.base.capacity);
        let capacity = (e * factor).round().clamp(1.0, f64::from(u32::MAX)) as u32;
        let burst = (f64::from(self.base.burst) * factor).round().max(1.0) as u32;
        OutageParams {
            capacity,
            burst,
            capacity_estimate: e / f64::from(capacity),
            ..self.base
        }
    }

    /// The long rows' outage: `outage` long, at C = E, every client honoring,
    /// with the base policy or (`long_policy`) at least [`LONG_ATTEMPTS`]
    /// attempts and [`LONG_ELAPSED`].
    fn long(&self, outage: Duration, outage_end: OutageEnd, long_policy: bool) -> OutageParams {
        let p = &self.base.policy;
        let policy = if long_policy {
            p.to_builder()
                .max_attempts(p.max_attempts().max(LONG_ATTEMPTS))
                .max_elapsed(p.max_elapsed().max(LONG_ELAPSED))
                .build()
                .unwrap_or(*p)
        } else {
            *p
        };
        OutageParams {
            outage,
            outage_end,
            honor: 1.0,
            policy,
            ..self.at_capacity(1.0)
        }
    }

    /// The cells of one strategy: capacity first, then end, then honor; then
    /// the long rows, outage first, then end.
    fn cells_of(&self, strategy: StrategyKind) -> Vec<CellSpec> {
        let mut cells = Vec::new();
        for &factor in &self.capacities {
            for &outage_end in &self.ends {
                for &honor in &self.honors {
                    cells.push(CellSpec {
                        params: OutageParams {
                            outage_end,
                            honor,
                            ..self.at_capacity(factor)
                        },
                        capacity_over_estimate: factor,
                        strategy,
                        long: false,
                        long_policy: false,
                    });
                }
            }
        }
        for &outage in &self.long_outages {
            for &end in &self.ends {
                for long_policy in [false, true] {
                    cells.push(CellSpec {
                        params: self.long(outage, end, long_policy),
                        capacity_over_estimate: 1.0,
                        strategy,
                        long: true,
                        long_policy,
                    });
                }
            }
        }
        cells
    }

    /// Every cell, strategy by strategy.
    pub fn cells(&self) -> Vec<CellSpec> {
        self.strategies
            .iter()
            .flat_map(|&k| self.cells_of(k))
            .collect()
    }

    /// The baselines: plain full jitter at each true capacity, and for each
    /// long outage; one per distinct outage.
    pub fn baselines(&self) -> Vec<OutageParams> {
        let mut out: Vec<OutageParams> = Vec::new();
        let plain = |p: OutageParams| OutageParams {
            honor: 1.0,
            outage_end: OutageEnd::Unknown,
            ..p
        };
        let all =
            self.capacities
                .iter()
                .map(|&f| plain(self.at_capacity(f)))
                .chain(self.long_outages.iter().flat_map(|&d| {
                    [false, true].map(|l| plain(self.long(d, OutageEnd::Unknown, l)))
                }));
        for p in all {
            if !out.iter().any(|q| same_fleet(q, &p)) {
                out.push(p);
            }
        }
        out
    }

    /// Checks the base and every cell, and that there is a strategy to test.
    ///
    /// ```
    /// let mut p = herdless_sim::scenario::robustness::RobustnessParams::default();
    /// p.honors = vec![1.5];
    /// assert!(p.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), SimError> {
        if self.strategies.is_empty() || self.cells().is_empty() {
            return Err(SimError::Invalid(
                "the robustness matrix has no cell".into(),
            ));
        }
        if let Some(&f) = self
            .capacities
            .iter()
            .find(|f| !(0.01..=100.0).contains(*f))
        {
            return Err(SimError::Invalid(format!(
                "a true capacity must be within 0.01..=100 times the estimate (got {f})"
            )));
        }
        self.base.validate()?;
        self.cells().iter().try_for_each(|c| c.params.validate())
    }
}

/// Whether plain full jitter would face the same fleet in `a` and `b`.
fn same_fleet(a: &OutageParams, b: &OutageParams) -> bool {
    a.capacity == b.capacity && a.outage == b.outage && a.policy == b.policy
}

/// Runs the matrix: `run` maps each `(params, strategy)` to its figures (the
/// caller decides how: in parallel, with progress); returns the baselines'
/// figures (in [`RobustnessParams::baselines`]' order) and the cells.
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
///     capacities: vec![1.0],
///     honors: vec![1.0],
///     long_outages: vec![],
///     ..Default::default()
/// };
/// let (baselines, cells) = robustness::run(&p, |q, k| outage::run(q, k, 1))?;
/// assert_eq!(baselines[0].strategy, "full");
/// assert_eq!(cells.len(), 6); // three strategies, two ends
/// # Ok::<(), herdless_sim::SimError>(())
/// ```
pub fn run<F>(
    params: &RobustnessParams,
    run: F,
) -> Result<(Vec<OutageFigures>, Vec<RobustnessCell>), SimError>
where
    F: Fn(&OutageParams, StrategyKind) -> Result<OutageFigures, SimError>,
{
    params.validate()?;
    let figures = runs(params)
        .iter()
        .map(|(q, k)| run(q, *k))
        .collect::<Result<_, _>>()?;
    Ok(assemble(params, figures))
}

/// The runs of the matrix, baselines first: what [`Simulation`](crate::Simulation)
/// spreads over its threads.
pub(crate) fn runs(params: &RobustnessParams) -> Vec<(OutageParams, StrategyKind)> {
    params
        .baselines()
        .into_iter()
        .map(|p| (p, BASELINE))
        .chain(params.cells().into_iter().map(|c| (c.params, c.strategy)))
        .collect()
}

/// Assembles what [`runs`] produced, in its order.
pub(crate) fn assemble(
    params: &RobustnessParams,
    mut figures: Vec<OutageFigures>,
) -> (Vec<OutageFigures>, Vec<RobustnessCell>) {
    let bases = params.baselines();
    let cells_figures = figures.split_off(bases.len());
    let cells = params
        .cells()
        .iter()
        .zip(&cells_figures)
        .map(|(c, f)| {
            let i = bases
                .iter()
                .position(|b| same_fleet(b, &c.params))
                .unwrap_or(0);
            cell(c, f, &figures[i], &params.goals)
        })
        .collect();
    (figures, cells)
}

/// Runs one cell (or a baseline).
pub(crate) fn run_one(
    p: &OutageParams,
    kind: StrategyKind,
    seed: u64,
) -> Result<OutageFigures, SimError> {
    outage::run(p, kind, seed)
}
