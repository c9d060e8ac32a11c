//! Tune: the user states facts, the simulator searches policies.
//!
//! [`run`] takes the facts of a fleet ([`Facts`]: clients, the device's
//! capacity, the outage lengths it must survive, the broker's visibility
//! timeout, an optional latency objective, the guards allowed) and a grid
//! ([`Space`]), and returns the best policy with its figures
//! ([`TuneReport`]). `herdless tune` renders it (docs/tune.md).
//!
//! # The search
//!
//! 1. **Prune.** Every policy of the grid is put to `admit` first: the
//!    caller's checks (`herdless tune` passes `herdless check --strict`'s own,
//!    with the facts as declared facts), so no policy the checks refuse is
//!    simulated or recommended. What was refused is counted per check.
//! 2. **Screen.** Every admitted candidate runs the outage scenario once per
//!    outage length on the first search seed.
//! 3. **Guards.** When guards are allowed, the best policies of the screen
//!    (at most [`GUARDED_POLICIES`]) are tried again with each guard variant.
//! 4. **Finalists.** The best [`TuneParams::finalists`] candidates run on
//!    every search seed; their score is the worst over lengths and seeds.
//!    When none of them meets the facts on every seed while others met them
//!    on the first, the next ones follow (at most four rounds): a small
//!    fleet's peak is noisy from seed to seed.
//! 5. **Verify.** The finalists that meet the facts are re-simulated, in
//!    rank order, on seeds the search never used, until one holds there
//!    too: that one is recommended, with the figures of that run. Better
//!    ranked ones that fail on the fresh seeds are reported, not hidden. The
//!    next one that met the facts is the runner-up (verified the same way),
//!    and the baselines (full jitter with the library's defaults, and the
//!    caller's current policies) run on the same fresh seeds.
//!
//! The objective is the worst completion over the physical limit `T + N / C`
//! across lengths and seeds (for a fleet that drained, its drain time over
//! the limit); ties go to fewer calls, then the lower peak. The constraints:
//! the peak after recovery at most [`Facts::max_peak`] times the capacity,
//! at most [`Facts::max_give_up_share`] of the clients giving up, no 100 ms
//! bucket holding more than [`Facts::max_bucket_share`] of the fleet's
//! retries (the `spread` check of `herdless analyze`, so a recommendation
//! is judged in the logs by the rule it was chosen by), and the latency
//! objective.
//!
//! ```
//! use std::time::Duration;
//! use herdless_sim::tune::{self, Facts, Space, TuneParams};
//! let facts = Facts::new(200, 100, vec![Duration::from_secs(5), Duration::from_secs(10)]);
//! let mut space = Space::for_facts(facts.recovery_time, None);
//! space.jitters = vec![herdless::Jitter::Full];
//! space.bases = vec![Duration::from_secs(1)];
//! let params = TuneParams { threads: 1, ..TuneParams::new(facts, space) };
//! let report = tune::run(&params, &|_| Ok(()), &herdless_sim::NoProgress)?;
//! let best = report.recommended.expect("a 10 s outage is survivable");
//! assert!(best.verify.feasible());
//! assert!(report.search.verify_seeds.iter().all(|s| !report.search.search_seeds.contains(s)));
//! # Ok::<(), herdless_sim::SimError>(())
//! ```

use std::time::Duration;

use herdless::Policy;

use crate::error::SimError;
use crate::guard::Guard;
use crate::parallel;

mod eval;
mod grid;
mod report;
mod search;
mod unsat;

pub use eval::{RunFigures, Score, Violation};
pub use grid::{Candidate, GuardChoice, Space};
pub use report::{
    FactsReport, FrontRow, PolicyReport, Pruned, SearchReport, TuneReport, Unsatisfied, Verified,
};
pub use search::run;

/// Policies of the screen tried again with each guard variant.
pub const GUARDED_POLICIES: usize = 8;

/// Rows of the Pareto front reported.
pub const FRONT_ROWS: usize = 15;

/// A latency objective: `share` of the clients done within `within` after
/// the device is back (no call can finish during the outage).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latency {
    /// The share of the clients (`0 < share <= 1`).
    pub share: f64,
    /// Within this long after recovery.
    pub within: Duration,
}

/// What the user knows about the fleet.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    /// Clients (workers) retrying against the device, 1..=10⁷.
    pub clients: u32,
    /// Calls per second the device serves once back, at least 1.
    pub capacity: u32,
    /// The device's burst after a quiet spell (`None`: a tenth of the capacity).
    pub burst: Option<u32>,
    /// The outage lengths to survive (each simulated; the result must hold for all).
    pub outages: Vec<Duration>,
    /// The recovery time the checks use (at least the longest outage).
    pub recovery_time: Duration,
    /// How spread the first failures are: the first calls are uniform over this window.
    pub first_call_window: Duration,
    /// The task broker's visibility timeout.
    pub visibility_timeout: Option<Duration>,
    /// The latency objective.
    pub latency: Option<Latency>,
    /// The fleet-level guards the search may add (budget, breaker).
    pub guards: Vec<Guard>,
    /// The largest peak after recovery allowed, times the capacity per 100 ms.
    pub max_peak: f64,
    /// The largest share of the clients allowed to give up (0: none).
    pub max_give_up_share: f64,
    /// The largest 100 ms bucket of retries allowed, as a share of the
    /// clients, at any time (the outage included): the `spread` that
    /// `herdless analyze` checks in the logs afterwards.
    pub max_bucket_share: f64,
}

impl Facts {
    /// Facts with these clients, capacity and outage lengths, the recovery
    /// time the longest of them, first failures within 100 ms, peak at most
    /// 2x the capacity, no give-up, no 100 ms bucket holding more than a
    /// quarter of the fleet's retries, no broker, no latency objective, no guard.
    pub fn new(clients: u32, capacity: u32, outages: Vec<Duration>) -> Facts {
        let recovery_time = outages.iter().copied().max().unwrap_or_default();
        Facts {
            clients,
            capacity,
            burst: None,
            outages,
            recovery_time,
            first_call_window: Duration::from_millis(100),
            visibility_timeout: None,
            latency: None,
            guards: Vec::new(),
            max_peak: 2.0,
            max_give_up_share: 0.0,
            max_bucket_share: 0.25,
        }
    }

    /// The device's burst.
    pub fn burst(&self) -> u32 {
        self.burst.unwrap_or((self.capacity / 10).max(1))
    }

    /// Checks the ranges (the outage scenario's, and: 1 to 20 outage lengths,
    /// recovery time at least the longest, max peak above 0, shares within 0..=1).
    pub fn validate(&self) -> Result<(), SimError> {
        let bad = |m: &str| Err(SimError::Invalid(m.into()));
        if self.outages.is_empty() || self.outages.len() > 20 {
            return bad("tune needs 1 to 20 outage lengths");
        }
        if self.outages.iter().any(|&o| o > self.recovery_time) {
            return bad("every outage length must be at most the recovery time");
        }
        if !(self.max_peak > 0.0 && self.max_peak.is_finite()) {
            return bad("the peak limit must be a positive number (times the capacity)");
        }
        if !(0.0..=1.0).contains(&self.max_give_up_share) {
            return bad("the give-up share must be within 0..=1");
        }
        if !(0.0..=1.0).contains(&self.max_bucket_share) {
            return bad("the bucket share must be within 0..=1");
        }
        if let Some(l) = self.latency {
            if !(l.share > 0.0 && l.share <= 1.0) {
                return bad("the latency share must be within 0 (excluded) ..= 1");
            }
        }
        if self
            .guards
            .iter()
            .any(|g| !matches!(g, Guard::Budget | Guard::Breaker))
        {
            return bad("tune adds the budget and the breaker only");
        }
        for &outage in &self.outages {
            let c = Candidate {
                policy: Policy::default(),
                guard: None,
            };
            eval::params(self, &c, outage).validate()?;
        }
        Ok(())
    }
}

/// `n` outage lengths evenly spaced from `from` to `to` (one when `n` is 1
/// or the range is a point).
///
/// ```
/// use std::time::Duration;
/// let s = Duration::from_secs;
/// assert_eq!(herdless_sim::tune::outage_lengths(s(5), s(60), 3), [s(5), Duration::from_millis(32_500), s(60)]);
/// assert_eq!(herdless_sim::tune::outage_lengths(s(45), s(45), 3), [s(45)]);
/// ```
pub fn outage_lengths(from: Duration, to: Duration, n: u32) -> Vec<Duration> {
    let (a, b) = (from.min(to), from.max(to));
    if n <= 1 || a == b {
        return vec![b];
    }
    let step = (b - a).as_secs_f64() / f64::from(n - 1);
    (0..n)
        .map(|i| {
            let d = Duration::from_secs_f64(a.as_secs_f64() + step * f64::from(i));
            Duration::from_millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        })
        .collect()
}

/// Why a check refused a candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The check's name.
    pub check: String,
    /// Its message.
    pub message: String,
}

/// The caller's checks: `Ok` admits a policy, a [`Refusal`] prunes it.
pub type Admit<'a> = dyn Fn(&Policy) -> Result<(), Refusal> + Sync + 'a;

/// A search: the facts, the grid, seeds and threads, the baselines.
#[derive(Debug, Clone, PartialEq)]
pub struct TuneParams {
    /// The facts.
    pub facts: Facts,
    /// The grid.
    pub space: Space,
    /// The seed the search and verification seeds are derived from.
    pub seed: u64,
    /// Search seeds, 1..=20 (default 3): the first screens every candidate,
    /// all of them run the finalists.
    pub search_seeds: u32,
    /// Verification seeds, 1..=20 (default 3), never among the search seeds.
    pub verify_seeds: u32,
    /// Candidates run on every search seed, 1..=100 (default 8).
    pub finalists: usize,
    /// Threads (the result does not depend on them).
    pub threads: usize,
    /// Policies shown beside the recommendation, with their labels (full
    /// jitter with the library's defaults is always shown, first).
    pub baselines: Vec<(String, Policy)>,
}

impl TuneParams {
    /// A search with seed 1, 3 search and 3 verification seeds, 8 finalists,
    /// every core, no baseline beyond the defaults.
    pub fn new(facts: Facts, space: Space) -> TuneParams {
        TuneParams {
            facts,
            space,
            seed: 1,
            search_seeds: 3,
            verify_seeds: 3,
            finalists: 8,
            threads: parallel::default_threads(),
            baselines: Vec::new(),
        }
    }

    /// The search seeds and the verification seeds (disjoint).
    pub fn seeds(&self) -> (Vec<u64>, Vec<u64>) {
        let search: Vec<u64> = (0..u64::from(self.search_seeds))
            .map(|i| crate::stream_seed(self.seed, 0x7475_6e65_0000 + i))
            .collect();
        let mut verify = Vec::new();
        let mut i = 0u64;
        while verify.len() < self.verify_seeds as usize {
            let s = crate::stream_seed(self.seed, 0x7665_7269_0000 + i);
            if !search.contains(&s) && !verify.contains(&s) {
                verify.push(s);
            }
            i += 1;
        }
        (search, verify)
    }
}
