//! The **field** scenario: fleet recovery where users run it — the default
//! policy, outages from 5 s to 90 s whose end the server may not know, and
//! one, three or eight server replicas in front of one device, split evenly,
//! unevenly, or with one replica restarting mid-recovery.
//!
//! Every cell is the outage scenario's fleet (default 40,000 clients, C =
//! 10,000/s, the default policy) at an outage length `T` and an end (known,
//! unknown), and for the server-side strategy a server configuration
//! ([`ServerSetup`]: replicas and split, each replica told `E / R`). Four
//! strategies:
//!
//! * `full+hold` with each replica on its own (`coordination: none`);
//! * `full+hold` with the replicas sharing their reports (`shared`, read a
//!   second late; with one replica it is the same run, which a law test
//!   holds);
//! * `full+throttle`, the client-side throttle, which needs no server and
//!   so has one cell per `T` and end;
//! * plain `full` jitter, the baseline, likewise.
//!
//! Each cell has a verdict against its strategy's goals ([`FieldGoals`]); the
//! per-replica hold's is to be no worse than plain full jitter. The cells run
//! in parallel; every one faces the same fleet (common random numbers).

use std::time::Duration;

use serde::Serialize;

use crate::endpoint::{Coordination, OutageEnd, ServerParams, Split};
use crate::error::SimError;
use crate::guard::Guard;
use crate::scenario::outage::{self, OutageFigures, OutageParams};
use crate::strategy::StrategyKind;

/// A server configuration: replicas and how arrivals are split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerSetup {
    /// Replicas (each told `1 / R` of the estimate).
    pub replicas: u32,
    /// The balancer's split.
    pub split: Split,
}

/// Parameters of the field scenario.
///
/// ```
/// let p = herdless_sim::scenario::field::FieldParams::default();
/// // 6 lengths x 2 ends x (7 setups x 2 coordinations + throttle + full)
/// assert_eq!(p.cells().len(), 6 * 2 * (7 * 2 + 2));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct FieldParams {
    /// The fleet and device (its `outage`, `outage_end` and `server` are
    /// set per cell; its policy is the default one).
    pub base: OutageParams,
    /// The outage lengths.
    pub outages: Vec<Duration>,
    /// Known and unknown end.
    pub ends: Vec<OutageEnd>,
    /// The server configurations.
    pub setups: Vec<ServerSetup>,
    /// What each cell must meet.
    pub goals: FieldGoals,
}

impl Default for FieldParams {
    fn default() -> Self {
        let setups = [(1, Split::Even)]
            .into_iter()
            .chain([3, 8].into_iter().flat_map(|r| Split::ALL.map(|s| (r, s))))
            .map(|(replicas, split)| ServerSetup { replicas, split })
            .collect();
        FieldParams {
            base: OutageParams::default(),
            outages: [5, 15, 30, 45, 60, 90].map(Duration::from_secs).to_vec(),
            ends: vec![OutageEnd::Known, OutageEnd::Unknown],
            setups,
            goals: FieldGoals::default(),
        }
    }
}

/// What the cells must meet.
///
/// ```
/// let g = herdless_sim::scenario::field::FieldGoals::default();
/// assert_eq!((g.hold_vs_limit, g.hold_known_single, g.peak, g.calls_base, g.calls_per_s), (1.25, 1.10, 1.3, 2.0, 1.0 / 30.0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FieldGoals {
    /// The coordinated hold's drain over `T + N/C`.
    pub hold_vs_limit: f64,
    /// The same with one replica and the end known.
    pub hold_known_single: f64,
    /// The honoring peak and the service's own load per 100 ms after `T`,
    /// over C (the hold and the throttle alike).
    pub peak: f64,
    /// Calls per client: at most this plus `calls_per_s` times `T`
    /// (coordinated hold).
    pub calls_base: f64,
    /// See `calls_base`.
    pub calls_per_s: f64,
    /// The throttle's drain over `T + N/C`.
    pub throttle_vs_limit: f64,
    /// The throttle's calls per client.
    pub throttle_calls: f64,
}

impl Default for FieldGoals {
    fn default() -> Self {
        FieldGoals {
            hold_vs_limit: 1.25,
            hold_known_single: 1.10,
            peak: 1.3,
            calls_base: 2.0,
            calls_per_s: 1.0 / 30.0,
            throttle_vs_limit: 1.5,
            throttle_calls: 2.0,
        }
    }
}

/// The hold, the throttle and the baseline.
const HOLD: StrategyKind = StrategyKind::Guarded(herdless::Jitter::Full, Guard::Hold);
const THROTTLE: StrategyKind = StrategyKind::Guarded(herdless::Jitter::Full, Guard::Throttle);
const FULL: StrategyKind = StrategyKind::Backoff(herdless::Jitter::Full);

/// One cell to run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldSpec {
    /// The outage as this cell runs it (length, end, server).
    pub params: OutageParams,
    /// The strategy.
    pub strategy: StrategyKind,
}

impl FieldSpec {
    fn is_hold(&self) -> bool {
        self.strategy == HOLD
    }
}

impl FieldParams {
    /// Every cell: length, then end; per (length, end) the hold with each
    /// setup, alone then shared, then the throttle, then plain full jitter.
    pub fn cells(&self) -> Vec<FieldSpec> {
        let mut cells = Vec::new();
        for &outage in &self.outages {
            for &outage_end in &self.ends {
                let at = OutageParams {
                    outage,
                    outage_end,
                    server: ServerParams::default(),
                    ..self.base
                };
                for s in &self.setups {
                    for coordination in [Coordination::None, Coordination::Shared] {
                        let server = ServerParams {
                            replicas: s.replicas,
                            split: s.split,
                            coordination,
                            ..self.base.server
                        };
                        cells.push(FieldSpec {
                            params: OutageParams { server, ..at },
                            strategy: HOLD,
                        });
                    }
                }
                for strategy in [THROTTLE, FULL] {
                    cells.push(FieldSpec {
                        params: at,
                        strategy,
                    });
                }
            }
        }
        cells
    }

    /// Checks the base and every cell.
    ///
    /// ```
    /// let mut p = herdless_sim::scenario::field::FieldParams::default();
    /// p.outages.clear();
    /// assert!(p.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), SimError> {
        if self.cells().is_empty() {
            return Err(SimError::Invalid("the field scenario has no cell".into()));
        }
        self.base.validate()?;
        self.cells().iter().try_for_each(|c| {
            c.params.validate()?;
            c.params.server.validate()
        })
    }
}

/// One cell's figures and verdict (JSON field names are public).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldCell {
    /// `full+hold`, `full+throttle` or `full`.
    pub strategy: String,
    /// How long the device was down, seconds.
    pub outage_s: f64,
    /// `known` or `unknown`.
    pub outage_end: &'static str,
    /// Server replicas (1 for the client-side strategies).
    pub replicas: u32,
    /// `even`, `skewed` or `restart`.
    pub split: &'static str,
    /// `none` or `shared`.
    pub coordination: &'static str,
    /// `T + N / C`, seconds.
    pub physical_limit_s: f64,
    /// The fleet's drain over the physical limit (`null`: someone gave up).
    pub drain_vs_limit: Option<f64>,
    /// The honoring clients' drain over it.
    pub honoring_vs_limit: Option<f64>,
    /// Mean calls per client (every request sent, requeued ones included).
    pub calls: f64,
    /// Clients that gave up.
    pub gave_up: u64,
    /// The largest 100 ms bucket of arrivals after `T` over C.
    pub peak_over_capacity: f64,
    /// The same for the calls that reached the device itself.
    pub service_peak_over_capacity: f64,
    /// The most calls held at once (summed over replicas).
    pub max_held: u64,
    /// `met`, `missed` or `baseline`.
    pub verdict: &'static str,
    /// The goals missed (empty when met).
    pub missed: Vec<&'static str>,
}

/// The verdict of `f`, the figures of `c`, against `g`, with `base` the
/// plain full jitter run of the same length and end: the goals missed, or
/// `None` for the baseline itself.
fn missed(
    c: &FieldSpec,
    f: &OutageFigures,
    base: &OutageFigures,
    g: &FieldGoals,
) -> Option<Vec<&'static str>> {
    let mut out = Vec::new();
    let mut check = |ok: bool, what: &'static str| {
        if !ok {
            out.push(what);
        }
    };
    let t = c.params.outage.as_secs_f64();
    match (c.strategy, c.params.server.coordination) {
        (FULL, _) => return None,
        (THROTTLE, _) => {
            check(f.gave_up == 0, "gave_up");
            check(
                f.drain_vs_limit.is_some_and(|d| d <= g.throttle_vs_limit),
                "drain",
            );
            check(f.honoring_peak_over_capacity <= g.peak, "peak");
            check(f.calls <= g.throttle_calls, "calls");
        }
        (_, Coordination::None) => check(no_worse(f, base, g), "vs_full_jitter"),
        (_, Coordination::Shared) => {
            let single_known =
                c.params.server.replicas == 1 && c.params.outage_end == OutageEnd::Known;
            let drain = if single_known {
                g.hold_known_single
            } else {
                g.hold_vs_limit
            };
            check(f.gave_up == 0, "gave_up");
            check(f.drain_vs_limit.is_some_and(|d| d <= drain), "drain");
            check(f.honoring_peak_over_capacity <= g.peak, "peak");
            check(f.service_peak_over_capacity <= g.peak, "service_peak");
            check(f.calls <= g.calls_base + g.calls_per_s * t, "calls");
        }
    }
    Some(out)
}

/// No worse than plain full jitter on the same fleet: no more give-ups; a
/// drain (when full jitter drains at all: where its clients give up, any
/// drain is better) no later than its; a peak of arrivals after `T` no
/// higher, or within the peak goal (arrivals the device can take are no
/// harm).
fn no_worse(f: &OutageFigures, base: &OutageFigures, g: &FieldGoals) -> bool {
    let drain = match (f.drain_s, base.drain_s) {
        (Some(d), Some(b)) => d <= b,
        (None, Some(_)) => false,
        (_, None) => true,
    };
    drain
        && f.gave_up <= base.gave_up
        && f.peak_over_capacity <= base.peak_over_capacity.max(g.peak)
}

fn cell(c: &FieldSpec, f: &OutageFigures, base: &OutageFigures, g: &FieldGoals) -> FieldCell {
    let p = &c.params;
    let (replicas, split, coordination) = if c.is_hold() {
        (
            p.server.replicas,
            p.server.split.name(),
            p.server.coordination.name(),
        )
    } else {
        (1, Split::Even.name(), Coordination::None.name())
    };
    let missed = missed(c, f, base, g);
    FieldCell {
        strategy: c.strategy.name().to_owned(),
        outage_s: p.outage.as_secs_f64(),
        outage_end: p.outage_end.name(),
        replicas,
        split,
        coordination,
        physical_limit_s: p.physical_limit_s(),
        drain_vs_limit: f.drain_vs_limit,
        honoring_vs_limit: f.honoring_vs_limit,
        calls: f.calls,
        gave_up: f.gave_up,
        peak_over_capacity: f.peak_over_capacity,
        service_peak_over_capacity: f.service_peak_over_capacity,
        max_held: f.max_held,
        verdict: match &missed {
            None => "baseline",
            Some(m) if m.is_empty() => "met",
            Some(_) => "missed",
        },
        missed: missed.unwrap_or_default(),
    }
}

/// The runs of the scenario, in [`FieldParams::cells`]' order.
pub(crate) fn runs(params: &FieldParams) -> Vec<(OutageParams, StrategyKind)> {
    params
        .cells()
        .into_iter()
        .map(|c| (c.params, c.strategy))
        .collect()
}

/// Assembles what [`runs`] produced, in its order.
pub(crate) fn assemble(params: &FieldParams, figures: &[OutageFigures]) -> Vec<FieldCell> {
    let cells = params.cells();
    cells
        .iter()
        .zip(figures)
        .map(|(c, f)| {
            let base = cells
                .iter()
                .zip(figures)
                .find(|(b, _)| {
                    b.strategy == FULL
                        && b.params.outage == c.params.outage
                        && b.params.outage_end == c.params.outage_end
                })
                .map_or(f, |(_, bf)| bf);
            cell(c, f, base, &params.goals)
        })
        .collect()
}

/// Runs one cell.
pub(crate) fn run_one(
    p: &OutageParams,
    kind: StrategyKind,
    seed: u64,
) -> Result<OutageFigures, SimError> {
    outage::run(p, kind, seed)
}

/// Runs the scenario one cell after the other (the library's
/// [`Simulation`](crate::Simulation) runs them in parallel).
///
/// # Errors
///
/// The first run that failed.
///
/// ```
/// use std::time::Duration;
/// use herdless_sim::scenario::field::{self, FieldParams, ServerSetup};
/// use herdless_sim::endpoint::Split;
/// let p = FieldParams {
///     base: herdless_sim::OutageParams { clients: 400, capacity: 200, burst: 20, ..Default::default() },
///     outages: vec![Duration::from_secs(5)],
///     setups: vec![ServerSetup { replicas: 1, split: Split::Even }],
///     ..Default::default()
/// };
/// let cells = field::run(&p, 1)?;
/// assert_eq!(cells.len(), 2 * (2 + 2));
/// assert!(cells.iter().any(|c| c.strategy == "full" && c.verdict == "baseline"));
/// # Ok::<(), herdless_sim::SimError>(())
/// ```
pub fn run(params: &FieldParams, seed: u64) -> Result<Vec<FieldCell>, SimError> {
    params.validate()?;
    let figures = runs(params)
        .iter()
        .map(|(q, k)| run_one(q, *k, seed))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(assemble(params, &figures))
}
