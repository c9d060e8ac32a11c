//! An outage run's figures, from what its fleet measured.

use super::{OutageFigures, OutageParams};
use crate::endpoint::HonorStats;
use crate::event_loop::FleetOutcome;
use crate::metrics::{BUCKET, Histogram, first_bucket_at_or_after};
use crate::strategy::StrategyKind;

pub(super) fn figures(
    params: &OutageParams,
    kind: StrategyKind,
    out: &FleetOutcome,
    honoring: HonorStats,
    honoring_arrivals: Option<&Histogram>,
) -> OutageFigures {
    let n = f64::from(params.clients);
    let per_bucket = f64::from(params.capacity) * BUCKET.as_secs_f64();
    let from = first_bucket_at_or_after(params.outage);
    let peak = out.arrivals.max_bucket_from(from).map_or(0, |(_, c)| c);
    let service_peak = out.service_load.max_bucket_from(from).map_or(0, |(_, c)| c);
    let honoring_peak = honoring_arrivals
        .map_or(Some(peak), |h| h.max_bucket_from(from).map(|(_, c)| c))
        .unwrap_or(0);
    let completion_s = out.last_done_ns as f64 / 1e9;
    let drained = out.gave_up == 0;
    let drain_s = drained.then_some(out.last_success_ns as f64 / 1e9);
    let honoring_completion_s = (honoring.clients > 0 && honoring.succeeded == honoring.clients)
        .then_some(honoring.last_success_ns as f64 / 1e9);
    OutageFigures {
        strategy: kind.name().to_owned(),
        calls: out.calls as f64 / n,
        calls_total: out.calls,
        completion_s,
        last_success_s: out.last_success_ns as f64 / 1e9,
        vs_limit: drained.then(|| completion_s / params.physical_limit_s()),
        drained,
        drain_s,
        drain_vs_limit: drain_s.map(|d| d / params.physical_limit_s()),
        succeeded: out.succeeded,
        gave_up: out.gave_up,
        gave_up_retry_budget: out.gave_up_retry_budget,
        give_up_max_bucket_share: if out.gave_up == 0 {
            0.0
        } else {
            f64::from(out.give_ups.max_bucket().map_or(0, |(_, c)| c)) / out.gave_up as f64
        },
        give_ups_per_100ms: out.give_ups.counts().to_vec(),
        breaker_waits: out.breaker_waits,
        peak_over_capacity: f64::from(peak) / per_bucket,
        service_peak_over_capacity: f64::from(service_peak) / per_bucket,
        honoring_peak_over_capacity: f64::from(honoring_peak) / per_bucket,
        max_held: out.max_held,
        service_per_100ms: out.service_load.counts().to_vec(),
        max_bucket_share: f64::from(out.retries.max_bucket().map_or(0, |(_, c)| c)) / n,
        arrivals_per_100ms: out.arrivals.counts().to_vec(),
        successes_per_100ms: out.successes.counts().to_vec(),
        honoring_clients: honoring.clients,
        honoring_calls: if honoring.clients == 0 {
            0.0
        } else {
            honoring.calls as f64 / honoring.clients as f64
        },
        honoring_gave_up: honoring.clients - honoring.succeeded,
        honoring_completion_s,
        honoring_vs_limit: honoring_completion_s.map(|d| d / params.physical_limit_s()),
    }
}
