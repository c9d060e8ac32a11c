//! The **spread** scenario: measure spread, not just the mean.
//!
//! `W` workers (default 200) call a stub controller that fails each worker's
//! first `K` calls (default 3) and answers the rest. The retry timestamps are
//! histogrammed in 100 ms buckets; the figure of merit is the largest bucket's
//! share of the fleet. Without jitter it is 1: every retry wave holds the whole
//! fleet; with full jitter it is a small fraction.
//!
//! Modelling choices:
//!
//! * every worker makes its first call at virtual time 0 (the controller fails
//!   for all of them at the same instant: the premise of a synchronized fleet);
//! * calls take no time (see [`endpoint`](crate::endpoint));
//! * the policy is the library's default (base 0.5 s, ×2, cap 30 s,
//!   6 attempts, 120 s), overridable; a worker that runs out of budget before
//!   its `K + 1`-th call gives up and is counted;
//! * "retries" are calls 2 to `K + 1` of each worker; the first calls (all at 0)
//!   are not in the histogram.

use herdless::Policy;
use serde::Serialize;

use crate::endpoint::FailFirst;
use crate::error::SimError;
use crate::event_loop::run_fleet;
use crate::metrics::BUCKET;
use crate::strategy::StrategyKind;

/// Parameters of the spread scenario.
///
/// ```
/// let p = herdless_sim::SpreadParams::default();
/// assert_eq!((p.workers, p.failures), (200, 3));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpreadParams {
    /// Number of workers (W).
    pub workers: u32,
    /// Calls the controller fails per worker before answering (K).
    pub failures: u32,
    /// The base policy; each strategy sets its own jitter.
    pub policy: Policy,
}

impl Default for SpreadParams {
    fn default() -> Self {
        Self {
            workers: 200,
            failures: 3,
            policy: Policy::default(),
        }
    }
}

impl SpreadParams {
    /// Checks the ranges: at least one worker, at most 10 million.
    ///
    /// ```
    /// let p = herdless_sim::SpreadParams { workers: 0, ..Default::default() };
    /// assert!(p.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), SimError> {
        if !(1..=10_000_000).contains(&self.workers) {
            return Err(SimError::Invalid(format!(
                "workers must be in 1..=10000000 (got {})",
                self.workers
            )));
        }
        Ok(())
    }
}

/// One strategy's figures in the spread scenario (JSON field names are the
/// README's contract).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpreadFigures {
    /// Strategy name.
    pub strategy: String,
    /// Mean calls per worker.
    pub calls: f64,
    /// Total calls of the fleet.
    pub calls_total: u64,
    /// Virtual time when the last worker succeeded or gave up, in seconds.
    pub completion_s: f64,
    /// Workers that gave up.
    pub gave_up: u64,
    /// The largest 100 ms bucket of retries, as a share of the fleet (0 to 1).
    pub max_bucket_share: f64,
    /// Start of that bucket, in seconds.
    pub max_bucket_start_s: f64,
    /// Retries per 100 ms bucket, from time 0.
    pub retries_per_100ms: Vec<u32>,
}

/// Runs one strategy of the spread scenario.
///
/// ```
/// use herdless_sim::{scenario::spread, SpreadParams, StrategyKind};
/// let f = spread::run(&SpreadParams::default(), StrategyKind::Backoff(herdless::Jitter::None), 7)?;
/// assert_eq!(f.max_bucket_share, 1.0); // three waves, each the whole fleet
/// # Ok::<(), herdless_sim::SimError>(())
/// ```
pub fn run(
    params: &SpreadParams,
    kind: StrategyKind,
    seed: u64,
) -> Result<SpreadFigures, SimError> {
    params.validate()?;
    super::outage_only(super::Scenario::Spread, kind)?;
    let strategy = kind.resolve(&params.policy);
    let starts = vec![0u64; params.workers as usize];
    let out = run_fleet(
        &starts,
        &mut FailFirst::new(params.failures),
        &strategy,
        crate::stream_seed(seed, 1),
    )?;
    let w = f64::from(params.workers);
    let (idx, count) = out.retries.max_bucket().unwrap_or((0, 0));
    Ok(SpreadFigures {
        strategy: kind.name().to_owned(),
        calls: out.calls as f64 / w,
        calls_total: out.calls,
        completion_s: out.last_done_ns as f64 / 1e9,
        gave_up: out.gave_up,
        max_bucket_share: f64::from(count) / w,
        max_bucket_start_s: idx as f64 * BUCKET.as_secs_f64(),
        retries_per_100ms: out.retries.counts().to_vec(),
    })
}
