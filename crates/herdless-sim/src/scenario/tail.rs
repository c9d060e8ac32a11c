//! The **latency-tail** scenario: what hedging buys, and what its budget
//! saves.
//!
//! One client process makes `N` calls (default 20,000) at a steady rate
//! (1,000 per second) to an endpoint that answers in about 2 ms (uniform in
//! 1.5 to 2.5 ms), one request in 20 in 1 s (a slow replica, a GC pause:
//! independent from one request to the next). From 8 s, for 4 s, the
//! endpoint is overloaded: every answer is a 503, after 50 ms.
//!
//! Strategies: full jitter without hedging (the baseline), `hedge` (a
//! second copy after the p95 of the recent answers, no budget) and
//! `hedge+budget` (the same, every hedge and retry admitted by one gRPC-style
//! [`RetryBudget`](herdless::RetryBudget), 100 tokens, ratio 0.1). Every
//! decision — hedge or not, which copy won, retry or give up — is the
//! library's [`Hedging`](herdless::engine::Hedging) and
//! [`Engine`](herdless::engine::Engine), driven in virtual time.
//!
//! The figures: the latency quantiles of the calls made while the endpoint
//! is healthy (what hedging is for), the requests per call then (its
//! price), and the requests per call made during the overload (where an
//! unbudgeted hedge doubles the load of a backend that is already failing).
//! Modelling choices: the endpoint has no queue (load does not feed back
//! into latency: the load figures are what a real backend would face);
//! a dropped copy's request still counts (it was sent).

use std::time::Duration;

use herdless::Policy;
use serde::Serialize;

use crate::error::SimError;
use crate::strategy::StrategyKind;

mod calls;

/// Parameters of the latency-tail scenario.
///
/// ```
/// let p = herdless_sim::scenario::tail::TailParams::default();
/// assert_eq!((p.calls, p.rate), (20_000, 1_000));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TailParams {
    /// Calls made (1 to 10 million).
    pub calls: u32,
    /// Calls started per second (1 to 1 million).
    pub rate: u32,
    /// The typical answer time (each answer uniform in ±25 % of it).
    pub fast: Duration,
    /// The slow answer time.
    pub slow: Duration,
    /// The share of slow answers, in `[0, 1]`.
    pub slow_share: f64,
    /// When the overload starts.
    pub overload_start: Duration,
    /// How long it lasts (zero: none).
    pub overload: Duration,
    /// How long an overloaded answer (a 503) takes.
    pub overload_latency: Duration,
    /// The hedge delay's quantile of the recent answers, in `(0, 1)`.
    pub hedge_quantile: f64,
    /// `hedge+budget`'s budget: gRPC `maxTokens`.
    pub budget_tokens: f64,
    /// `hedge+budget`'s budget: gRPC `tokenRatio`.
    pub budget_token_ratio: f64,
    /// The retry policy of every strategy.
    pub policy: Policy,
}

impl Default for TailParams {
    fn default() -> Self {
        TailParams {
            calls: 20_000,
            rate: 1_000,
            fast: Duration::from_millis(2),
            slow: Duration::from_secs(1),
            slow_share: 0.05,
            overload_start: Duration::from_secs(8),
            overload: Duration::from_secs(4),
            overload_latency: Duration::from_millis(50),
            hedge_quantile: 0.95,
            budget_tokens: 100.0,
            budget_token_ratio: 0.1,
            policy: Policy::default(),
        }
    }
}

impl TailParams {
    /// Checks the ranges.
    ///
    /// ```
    /// let p = herdless_sim::scenario::tail::TailParams { slow_share: 1.5, ..Default::default() };
    /// assert!(p.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), SimError> {
        let bad = |m: String| Err(SimError::Invalid(m));
        if !(1..=10_000_000).contains(&self.calls) {
            return bad(format!(
                "calls must be in 1..=10000000 (got {})",
                self.calls
            ));
        }
        if !(1..=1_000_000).contains(&self.rate) {
            return bad(format!("rate must be in 1..=1000000 (got {})", self.rate));
        }
        if !(0.0..=1.0).contains(&self.slow_share) {
            return bad(format!(
                "slow_share must be in [0, 1] (got {})",
                self.slow_share
            ));
        }
        if !(self.hedge_quantile > 0.0 && self.hedge_quantile < 1.0) {
            return bad(format!(
                "hedge_quantile must be in (0, 1) (got {})",
                self.hedge_quantile
            ));
        }
        let hour = Duration::from_secs(3600);
        for (name, d) in [
            ("fast", self.fast),
            ("slow", self.slow),
            ("overload_start", self.overload_start),
            ("overload", self.overload),
            ("overload_latency", self.overload_latency),
        ] {
            if d > hour {
                return bad(format!("{name} must be at most 1 h (got {d:?})"));
            }
        }
        if self.fast.is_zero() || self.slow.is_zero() || self.overload_latency.is_zero() {
            return bad("answer times must be positive".into());
        }
        herdless::RetryBudget::grpc(self.budget_tokens, self.budget_token_ratio)
            .map(|_| ())
            .map_err(|e| SimError::Invalid(format!("budget: {e}")))
    }
}

/// One strategy's figures in the latency-tail scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TailFigures {
    /// Strategy name.
    pub strategy: String,
    /// Requests per call, over the whole run.
    pub calls: f64,
    /// Requests sent in all (dropped copies included).
    pub calls_total: u64,
    /// Virtual time when the last call ended, seconds.
    pub completion_s: f64,
    /// Calls that gave up.
    pub gave_up: u64,
    /// Median latency of the calls started while the endpoint was healthy,
    /// seconds.
    pub p50_s: f64,
    /// Their 99th percentile, seconds.
    pub p99_s: f64,
    /// Their 99.9th percentile, seconds.
    pub p999_s: f64,
    /// Requests per call of those calls.
    pub healthy_requests_per_call: f64,
    /// Requests per call of the calls started during the overload.
    pub overload_requests_per_call: f64,
    /// Hedges sent.
    pub hedges: u64,
    /// Calls won by a hedge.
    pub hedge_wins: u64,
}

/// Runs one strategy of the latency-tail scenario.
///
/// ```
/// use herdless_sim::scenario::tail::{self, TailParams};
/// use herdless_sim::StrategyKind;
/// let p = TailParams { calls: 2_000, ..Default::default() };
/// let plain = tail::run(&p, StrategyKind::Backoff(herdless::Jitter::Full), 1)?;
/// let hedged = tail::run(&p, StrategyKind::Hedge, 1)?;
/// assert!(hedged.p99_s * 5.0 < plain.p99_s);
/// # Ok::<(), herdless_sim::SimError>(())
/// ```
pub fn run(params: &TailParams, kind: StrategyKind, seed: u64) -> Result<TailFigures, SimError> {
    params.validate()?;
    super::outage_only(super::Scenario::LatencyTail, kind)?;
    calls::run(params, kind, crate::stream_seed(seed, 7))
}
