//! How the guards are set up in a simulated fleet: the parameters, their
//! defaults and their ranges.

use std::time::Duration;

use herdless::RetryBudget;

use crate::error::SimError;

/// How the guards are set up in a simulated fleet (see the [module
/// documentation](super) for why these defaults).
///
/// ```
/// let g = herdless_sim::guard::GuardParams::default();
/// assert_eq!(g.clients_per_process, 100);
/// assert!(g.validate().is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GuardParams {
    /// Clients sharing one process's budget and breaker.
    pub clients_per_process: u32,
    /// The budget's `max_tokens` (gRPC `maxTokens`; also the initial level).
    pub budget_tokens: f64,
    /// The budget's refund per success (gRPC `tokenRatio`).
    pub budget_token_ratio: f64,
    /// The budget's anti-synchronization spread in tokens (`None`: the
    /// library's default, half of `max_tokens − threshold`; `Some(0.0)`: the
    /// exact gRPC cliff).
    pub budget_spread: Option<f64>,
    /// Consecutive failures that open a process's breaker.
    pub breaker_threshold: u32,
    /// How long callers wait behind a probe (each wait uniform in `[w / 2, w]`).
    pub probe_wait: Duration,
    /// How long a probe holds the breaker (its call's round trip).
    pub probe_rtt: Duration,
    /// Over how long a closing breaker releases the callers it held (`None`:
    /// sized to the capacity by the scenario; the outage scenario uses
    /// `N / C`, the time the recovered endpoint needs to serve the fleet).
    pub breaker_release: Option<Duration>,
    /// The longest Retry-After the pushback server hands out.
    pub pushback_horizon: Duration,
    /// Whether the CUBIC baseline takes the endpoint's 503 as throttling
    /// (the AWS SDKs do not; `true`, the default, is the baseline at its
    /// best; with `false` it never turns on).
    pub cubic_counts_503: bool,
}

impl Default for GuardParams {
    fn default() -> Self {
        Self {
            clients_per_process: 100,
            budget_tokens: 1_000.0,
            budget_token_ratio: 0.1,
            budget_spread: None,
            breaker_threshold: 5,
            probe_wait: Duration::from_secs(1),
            probe_rtt: Duration::from_millis(20),
            breaker_release: None,
            pushback_horizon: Duration::from_secs(60),
            cubic_counts_503: true,
        }
    }
}

impl GuardParams {
    /// Checks the ranges: at least 1 client per process, a budget the library
    /// accepts, a breaker threshold ≥ 1, probe wait and round trip in
    /// `1 ms..=1 h`, a horizon in `1 s..=1 h`.
    ///
    /// ```
    /// let g = herdless_sim::guard::GuardParams { budget_tokens: -1.0, ..Default::default() };
    /// assert!(g.validate().unwrap_err().to_string().contains("budget"));
    /// ```
    pub fn validate(&self) -> Result<(), SimError> {
        let bad = |m: String| Err(SimError::Invalid(m));
        if self.clients_per_process == 0 {
            return bad("clients per process must be at least 1".into());
        }
        if let Err(e) = self.new_budget() {
            return bad(format!("retry budget: {e}"));
        }
        if self.breaker_threshold == 0 {
            return bad("the breaker threshold must be at least 1 failure".into());
        }
        let ms = Duration::from_millis(1);
        let hour = Duration::from_secs(3_600);
        if !(ms..=hour).contains(&self.probe_wait) || !(ms..=hour).contains(&self.probe_rtt) {
            return bad("probe wait and probe round trip must be within 1 ms..=1 h".into());
        }
        if self.breaker_release.is_some_and(|w| w > hour) {
            return bad("the breaker's release window must be at most 1 h".into());
        }
        if !(Duration::from_secs(1)..=hour).contains(&self.pushback_horizon) {
            return bad("the pushback horizon must be within 1 s..=1 h".into());
        }
        Ok(())
    }

    pub(super) fn new_budget(&self) -> Result<RetryBudget, herdless::guard::RetryBudgetError> {
        let b = RetryBudget::builder().grpc(self.budget_tokens, self.budget_token_ratio);
        match self.budget_spread {
            Some(spread) => b.spread(spread),
            None => b,
        }
        .build()
    }

    pub(super) fn process(&self, client: u32) -> usize {
        (client / self.clients_per_process.max(1)) as usize
    }
}
