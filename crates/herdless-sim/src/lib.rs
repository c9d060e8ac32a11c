//! # herdless-sim: see the storm and its cure
//!
//! A discrete-event simulator of fleets of retrying clients, in virtual time
//! (nothing sleeps), in which every client carries the herdless library's own
//! decision engine ([`herdless::engine::Engine`]) and every retry decision is
//! made by it, with the library's [`Rng`](herdless::Rng). It measures what
//! ships, not a copy of the decision. A run is deterministic for a given seed.
//!
//! ```
//! use herdless_sim::{Config, OutageParams, Simulation, StrategyKind, Report};
//! use herdless::Jitter;
//!
//! let config = Config::Outage(OutageParams { clients: 4_000, capacity: 1_000, burst: 100, ..Default::default() });
//! let report = Simulation::new(config)
//!     .strategies(vec![StrategyKind::Backoff(Jitter::None), StrategyKind::Backoff(Jitter::Full)])
//!     .seed(42)
//!     .run()?;
//! let Report::Outage(outage) = &report else { unreachable!() };
//! for s in &outage.strategies {
//!     // nobody beats the physical limit T + N / C
//!     assert!(s.completion_s >= outage.physical_limit_s || s.gave_up > 0);
//! }
//! println!("{}", report.table());
//! # Ok::<(), herdless_sim::SimError>(())
//! ```
//!
//! ## Where things are
//!
//! | concept | module |
//! |---|---|
//! | the event queue (timing wheel) | [`queue`] |
//! | retry strategies, built on `herdless::Policy` | [`strategy`] |
//! | fleet-level guards: shared budget, breaker, pushback (the library's types) | [`guard`] |
//! | simulated endpoints (stub controller, outage + capacity, pushback allocators, clients ignoring Retry-After) | [`endpoint`] |
//! | the event loop of independent clients | [`event_loop`] |
//! | the scenarios: spread, outage, contention, robustness, latency-tail | [`scenario`] |
//! | histograms in 100 ms buckets | [`metrics`] |
//! | latency from each client's intended send time | [`latency`] |
//! | the report: JSON and the terminal table | [`report`] |
//! | SVG and PNG figures (feature `plots`) | [`plots`] |
//! | deterministic parallel runs | [`parallel`] |
//! | the policy search behind `herdless tune` | [`tune`] |
//!
//! ## Determinism
//!
//! Every generator is seeded from the run's seed and the identity of what it
//! drives (the scenario's fleet, a contention trial), never from a thread or a
//! clock, and every strategy faces the same fleet (common random numbers). The
//! same seed and parameters give the same report, byte for byte, whatever the
//! number of threads.

#![forbid(unsafe_code)]
#![doc(test(attr(deny(warnings), allow(dead_code))))]

pub mod cubic;
pub mod endpoint;
pub mod error;
pub mod event_loop;
#[deprecated(
    since = "0.1.0",
    note = "renamed `herdless_sim::event_loop`; this path goes in the next release"
)]
#[doc(hidden)]
pub mod fleet {
    //! The old path of [`event_loop`](crate::event_loop).
    pub use crate::event_loop::*;
}
pub mod guard;
pub mod latency;
pub mod metrics;
pub mod parallel;
#[cfg(feature = "plots")]
pub mod plots;
pub mod queue;
pub mod report;
pub mod scenario;
pub mod strategy;
pub mod tune;

pub use error::SimError;
pub use report::Report;
pub use scenario::Scenario;
pub use scenario::contention::ContentionParams;
pub use scenario::field::FieldParams;
pub use scenario::outage::OutageParams;
pub use scenario::reactivation::ReactivationParams;
pub use scenario::robustness::RobustnessParams;
pub use scenario::spread::SpreadParams;
pub use scenario::tail::TailParams;
pub use strategy::{ParseStrategyError, Reply, Strategy, StrategyKind};

/// This crate's README (crates.io's page): its example compiles as written.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct CrateReadme;

use std::fmt;

/// A scenario with its parameters.
#[derive(Debug, Clone, PartialEq)]
pub enum Config {
    /// The spread scenario.
    Spread(SpreadParams),
    /// The outage scenario.
    Outage(OutageParams),
    /// The contention scenario.
    Contention(ContentionParams),
    /// The robustness scenario.
    Robustness(RobustnessParams),
    /// The latency-tail scenario.
    LatencyTail(TailParams),
    /// The reactivation scenario.
    Reactivation(ReactivationParams),
    /// The field scenario.
    Field(FieldParams),
}

impl Config {
    /// The default parameters of a scenario.
    ///
    /// ```
    /// use herdless_sim::{Config, Scenario};
    /// assert_eq!(Config::default_for(Scenario::Outage).scenario(), Scenario::Outage);
    /// ```
    pub fn default_for(scenario: Scenario) -> Self {
        match scenario {
            Scenario::Spread => Config::Spread(SpreadParams::default()),
            Scenario::Outage => Config::Outage(OutageParams::default()),
            Scenario::Contention => Config::Contention(ContentionParams::default()),
            Scenario::Robustness => Config::Robustness(RobustnessParams::default()),
            Scenario::LatencyTail => Config::LatencyTail(TailParams::default()),
            Scenario::Reactivation => Config::Reactivation(ReactivationParams::default()),
            Scenario::Field => Config::Field(FieldParams::default()),
        }
    }

    /// Which scenario this is.
    ///
    /// ```
    /// use herdless_sim::{Config, Scenario, SpreadParams};
    /// assert_eq!(Config::Spread(SpreadParams::default()).scenario(), Scenario::Spread);
    /// ```
    pub fn scenario(&self) -> Scenario {
        match self {
            Config::Spread(_) => Scenario::Spread,
            Config::Outage(_) => Scenario::Outage,
            Config::Contention(_) => Scenario::Contention,
            Config::Robustness(_) => Scenario::Robustness,
            Config::LatencyTail(_) => Scenario::LatencyTail,
            Config::Reactivation(_) => Scenario::Reactivation,
            Config::Field(_) => Scenario::Field,
        }
    }
}

/// Receives progress of a long run (the CLI draws a progress bar with it).
/// Units are independent runs: one per strategy in spread and outage, one per
/// trial in contention.
pub trait Progress: Sync {
    /// The run is about to do `total` units (called again with a larger
    /// total when a run finds it has more to do: `herdless tune`'s rounds).
    fn start(&self, total: u64);
    /// `n` more units are done.
    fn advance(&self, n: u64);
    /// Whether the run should stop: asked before each unit, so a run whose
    /// progress says so ends with [`SimError::Cancelled`] once the units
    /// already started have ended (a unit is not cut short). The Python
    /// binding answers a Ctrl-C with it.
    fn cancelled(&self) -> bool {
        false
    }
}

/// A [`Progress`] that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _total: u64) {}
    fn advance(&self, _n: u64) {}
}

/// A configured simulation: a scenario, the strategies to compare, a seed.
///
/// ```
/// use herdless_sim::{Config, Scenario, Simulation};
/// let sim = Simulation::new(Config::default_for(Scenario::Spread)).seed(3).threads(1);
/// let a = sim.run()?.to_json();
/// let b = sim.threads(2).run()?.to_json();
/// assert_eq!(a, b); // deterministic, whatever the threads
/// # Ok::<(), herdless_sim::SimError>(())
/// ```
#[derive(Clone)]
pub struct Simulation {
    config: Config,
    strategies: Vec<StrategyKind>,
    seed: u64,
    threads: usize,
}

impl fmt::Debug for Simulation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Simulation")
            .field("config", &self.config)
            .field("strategies", &self.strategies)
            .field("seed", &self.seed)
            .field("threads", &self.threads)
            .finish()
    }
}

impl Simulation {
    /// The default seed.
    pub const DEFAULT_SEED: u64 = 1;

    /// A simulation of `config` comparing the scenario's default strategies,
    /// seed [`DEFAULT_SEED`](Self::DEFAULT_SEED), on every available core.
    ///
    /// ```
    /// use herdless_sim::{Config, Scenario, Simulation};
    /// let sim = Simulation::new(Config::default_for(Scenario::Outage));
    /// assert_eq!(sim.strategy_kinds().len(), 9);
    /// ```
    pub fn new(config: Config) -> Self {
        let strategies = config.scenario().default_strategies();
        Self {
            config,
            strategies,
            seed: Self::DEFAULT_SEED,
            threads: parallel::default_threads(),
        }
    }

    /// The strategies to compare, in table order.
    ///
    /// ```
    /// use herdless_sim::{Config, Scenario, Simulation, StrategyKind};
    /// let sim = Simulation::new(Config::default_for(Scenario::Spread)).strategies(vec![StrategyKind::FixedInterval]);
    /// assert_eq!(sim.strategy_kinds(), &[StrategyKind::FixedInterval]);
    /// ```
    pub fn strategies(mut self, strategies: Vec<StrategyKind>) -> Self {
        self.strategies = strategies;
        self
    }

    /// The seed.
    ///
    /// ```
    /// # use herdless_sim::{Config, Scenario, Simulation};
    /// let _ = Simulation::new(Config::default_for(Scenario::Spread)).seed(7);
    /// ```
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The number of threads (at least 1). The result does not depend on it.
    ///
    /// ```
    /// # use herdless_sim::{Config, Scenario, Simulation};
    /// let _ = Simulation::new(Config::default_for(Scenario::Spread)).threads(1);
    /// ```
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// The strategies this simulation compares.
    pub fn strategy_kinds(&self) -> &[StrategyKind] {
        &self.strategies
    }

    /// The scenario and its parameters.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The number of progress units a run reports (see [`Progress`]).
    ///
    /// ```
    /// use herdless_sim::{Config, Scenario, Simulation};
    /// assert_eq!(Simulation::new(Config::default_for(Scenario::Contention)).work_units(), 6 * 20 * 100);
    /// ```
    pub fn work_units(&self) -> u64 {
        let s = self.strategies.len() as u64;
        match &self.config {
            Config::Contention(p) => s * p.clients.len() as u64 * u64::from(p.trials),
            Config::Robustness(p) => {
                let p = RobustnessParams {
                    strategies: self.strategies.clone(),
                    ..p.clone()
                };
                (p.cells().len() + p.baselines().len()) as u64
            }
            Config::Reactivation(p) => p.runs(&self.strategies).len() as u64,
            Config::Field(p) => p.cells().len() as u64,
            _ => s,
        }
    }

    /// Runs the simulation.
    ///
    /// ```
    /// use herdless_sim::{Config, Scenario, Simulation};
    /// let report = Simulation::new(Config::default_for(Scenario::Spread)).run()?;
    /// assert_eq!(report.scenario(), Scenario::Spread);
    /// # Ok::<(), herdless_sim::SimError>(())
    /// ```
    pub fn run(&self) -> Result<Report, SimError> {
        self.run_with_progress(&NoProgress)
    }

    /// Runs the simulation, reporting progress.
    ///
    /// ```
    /// use herdless_sim::{Config, NoProgress, Scenario, Simulation};
    /// let report = Simulation::new(Config::default_for(Scenario::Spread)).run_with_progress(&NoProgress)?;
    /// assert!(!report.to_json().is_empty());
    /// # Ok::<(), herdless_sim::SimError>(())
    /// ```
    pub fn run_with_progress(&self, progress: &dyn Progress) -> Result<Report, SimError> {
        if self.strategies.is_empty() {
            return Err(SimError::Invalid("no strategy to simulate".into()));
        }
        for &k in &self.strategies {
            scenario::outage_only(self.config.scenario(), k)?;
        }
        progress.start(self.work_units());
        let seed = self.seed;
        match &self.config {
            Config::Spread(p) => {
                p.validate()?;
                let figures = parallel::par_map(&self.strategies, self.threads, |&k| {
                    stop_if_cancelled(progress)?;
                    let r = scenario::spread::run(p, k, seed);
                    progress.advance(1);
                    r
                });
                let strategies = figures.into_iter().collect::<Result<_, _>>()?;
                Ok(Report::Spread(report::SpreadReport::new(
                    p, seed, strategies,
                )))
            }
            Config::Outage(p) => {
                p.validate()?;
                let figures = parallel::par_map(&self.strategies, self.threads, |&k| {
                    stop_if_cancelled(progress)?;
                    let r = scenario::outage::run(p, k, seed);
                    progress.advance(1);
                    r
                });
                let strategies = figures.into_iter().collect::<Result<_, _>>()?;
                Ok(Report::Outage(report::OutageReport::new(
                    p, seed, strategies,
                )))
            }
            Config::Robustness(p) => {
                let p = RobustnessParams {
                    strategies: self.strategies.clone(),
                    ..p.clone()
                };
                p.validate()?;
                let runs = scenario::robustness::runs(&p);
                let figures = parallel::par_map(&runs, self.threads, |(q, k)| {
                    stop_if_cancelled(progress)?;
                    let r = scenario::robustness::run_one(q, *k, seed);
                    progress.advance(1);
                    r
                });
                let figures = figures.into_iter().collect::<Result<_, _>>()?;
                let (baselines, cells) = scenario::robustness::assemble(&p, figures);
                Ok(Report::Robustness(report::RobustnessReport::new(
                    &p, seed, baselines, cells,
                )))
            }
            Config::Reactivation(p) => {
                p.validate()?;
                let runs = p.runs(&self.strategies);
                let figures = parallel::par_map(&runs, self.threads, |&(fleet, k)| {
                    let r = scenario::reactivation::run_one(p, fleet, k, seed);
                    progress.advance(1);
                    r
                });
                let strategies = figures.into_iter().collect::<Result<_, _>>()?;
                Ok(Report::Reactivation(report::ReactivationReport::new(
                    p, seed, strategies,
                )))
            }
            Config::Field(p) => {
                p.validate()?;
                let runs = scenario::field::runs(p);
                let figures = parallel::par_map(&runs, self.threads, |(q, k)| {
                    let r = scenario::field::run_one(q, *k, seed);
                    progress.advance(1);
                    r
                });
                let figures: Vec<_> = figures.into_iter().collect::<Result<_, _>>()?;
                let cells = scenario::field::assemble(p, &figures);
                Ok(Report::Field(report::FieldReport::new(p, seed, cells)))
            }
            Config::LatencyTail(p) => {
                p.validate()?;
                let figures = parallel::par_map(&self.strategies, self.threads, |&k| {
                    stop_if_cancelled(progress)?;
                    let r = scenario::tail::run(p, k, seed);
                    progress.advance(1);
                    r
                });
                let strategies = figures.into_iter().collect::<Result<_, _>>()?;
                Ok(Report::LatencyTail(report::TailReport::new(
                    p, seed, strategies,
                )))
            }
            Config::Contention(p) => {
                p.validate()?;
                let resolved: Vec<Strategy> = self
                    .strategies
                    .iter()
                    .map(|k| k.resolve(&p.policy))
                    .collect();
                let tasks: Vec<(usize, usize, u32)> = (0..resolved.len())
                    .flat_map(|s| {
                        (0..p.clients.len())
                            .flat_map(move |c| (0..p.trials).map(move |t| (s, c, t)))
                    })
                    .collect();
                let outcomes = parallel::par_map(&tasks, self.threads, |&(s, c, t)| {
                    stop_if_cancelled(progress)?;
                    let n = p.clients[c];
                    let o = scenario::contention::run_trial(
                        p,
                        n,
                        &resolved[s],
                        scenario::contention::trial_seed(seed, n, t),
                    );
                    progress.advance(1);
                    Ok(o)
                });
                let outcomes = outcomes.into_iter().collect::<Result<Vec<_>, SimError>>()?;
                let trials = p.trials as usize;
                let per_strategy = p.clients.len() * trials;
                let strategies = self
                    .strategies
                    .iter()
                    .enumerate()
                    .map(|(s, &k)| {
                        let mine = &outcomes[s * per_strategy..(s + 1) * per_strategy];
                        let grouped: Vec<Vec<_>> = mine.chunks(trials).map(<[_]>::to_vec).collect();
                        scenario::contention::summarize(p, k, &grouped)
                    })
                    .collect();
                Ok(Report::Contention(report::ContentionReport::new(
                    p, seed, strategies,
                )))
            }
        }
    }
}

/// [`SimError::Cancelled`] when `progress` asks the run to stop.
fn stop_if_cancelled(progress: &dyn Progress) -> Result<(), SimError> {
    if progress.cancelled() {
        Err(SimError::Cancelled)
    } else {
        Ok(())
    }
}

/// Derives the seed of an independent random stream from a run's seed.
pub(crate) fn stream_seed(seed: u64, stream: u64) -> u64 {
    let mut z = seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
