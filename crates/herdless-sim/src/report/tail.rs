//! The latency-tail report: its parameters, and the terminal table.

use serde::Serialize;

use super::PolicyParameters;
use super::text::{grid, policy_line, secs};
use crate::scenario::tail::{TailFigures, TailParams};

/// Parameters of a latency-tail run, as reported.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TailParameters {
    /// Calls made.
    pub calls: u32,
    /// Calls started per second.
    pub rate_per_s: u32,
    /// The typical answer time, seconds.
    pub fast_s: f64,
    /// The slow answer time, seconds.
    pub slow_s: f64,
    /// The share of slow answers.
    pub slow_share: f64,
    /// When the overload starts, seconds.
    pub overload_start_s: f64,
    /// How long it lasts, seconds.
    pub overload_s: f64,
    /// How long an overloaded answer takes, seconds.
    pub overload_latency_s: f64,
    /// The hedge delay's quantile.
    pub hedge_quantile: f64,
    /// `hedge+budget`'s budget: gRPC `maxTokens`.
    pub budget_max_tokens: f64,
    /// `hedge+budget`'s budget: gRPC `tokenRatio`.
    pub budget_token_ratio: f64,
    /// The retry policy.
    pub policy: PolicyParameters,
}

/// A latency-tail run's report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TailReport {
    /// The seed.
    pub seed: u64,
    /// The parameters.
    pub parameters: TailParameters,
    /// One entry per strategy.
    pub strategies: Vec<TailFigures>,
}

impl TailReport {
    pub(crate) fn new(p: &TailParams, seed: u64, strategies: Vec<TailFigures>) -> Self {
        TailReport {
            seed,
            parameters: TailParameters {
                calls: p.calls,
                rate_per_s: p.rate,
                fast_s: p.fast.as_secs_f64(),
                slow_s: p.slow.as_secs_f64(),
                slow_share: p.slow_share,
                overload_start_s: p.overload_start.as_secs_f64(),
                overload_s: p.overload.as_secs_f64(),
                overload_latency_s: p.overload_latency.as_secs_f64(),
                hedge_quantile: p.hedge_quantile,
                budget_max_tokens: p.budget_tokens,
                budget_token_ratio: p.budget_token_ratio,
                policy: (&p.policy).into(),
            },
            strategies,
        }
    }
}

/// The table: one column per strategy.
pub(super) fn table(r: &TailReport) -> String {
    let p = &r.parameters;
    let s = &r.strategies;
    let mut out = format!(
        "latency-tail: {} calls at {} per s; answers in {} (±25 %), {:.0} % in {}; \
         overloaded from {} for {} (every answer a 503 after {}); seed {}\n\
         hedge after the p{} of recent answers; hedge+budget: gRPC budget {} tokens, \
         ratio {}\npolicy: {}\n\n",
        p.calls,
        p.rate_per_s,
        secs(p.fast_s),
        p.slow_share * 100.0,
        secs(p.slow_s),
        secs(p.overload_start_s),
        secs(p.overload_s),
        secs(p.overload_latency_s),
        r.seed,
        p.hedge_quantile * 100.0,
        p.budget_max_tokens,
        p.budget_token_ratio,
        policy_line(&p.policy),
    );
    let header: Vec<String> = std::iter::once(String::new())
        .chain(s.iter().map(|f| f.strategy.clone()))
        .collect();
    let row = |label: &str, cell: &dyn Fn(&TailFigures) -> String| -> Vec<String> {
        std::iter::once(label.to_owned())
            .chain(s.iter().map(cell))
            .collect()
    };
    let ms = |x: f64| format!("{:.1} ms", x * 1e3);
    let rows = vec![
        row("healthy: p50", &|f| ms(f.p50_s)),
        row("healthy: p99", &|f| ms(f.p99_s)),
        row("healthy: p99.9", &|f| ms(f.p999_s)),
        row("healthy: requests per call", &|f| {
            format!("{:.3}", f.healthy_requests_per_call)
        }),
        row("overload: requests per call", &|f| {
            format!("{:.3}", f.overload_requests_per_call)
        }),
        row("hedges sent", &|f| f.hedges.to_string()),
        row("calls won by a hedge", &|f| f.hedge_wins.to_string()),
        row("requests in all", &|f| f.calls_total.to_string()),
        row("gave up", &|f| f.gave_up.to_string()),
        row("completion (s)", &|f| format!("{:.3}", f.completion_s)),
    ];
    out.push_str(&grid(&header, &rows));
    out
}
