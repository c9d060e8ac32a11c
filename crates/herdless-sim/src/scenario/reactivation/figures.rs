//! The reactivation scenario's figures: one row per strategy and fleet
//! (JSON field names are a public contract, documented in docs/simulator.md).

use serde::Serialize;

use super::{Fleet, Measured, ReactivationParams};
use crate::guard::Guard;
use crate::metrics::BUCKET;
use crate::strategy::StrategyKind;

/// What one group of clients (those honoring plans and Retry-After, or
/// those ignoring both) did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    /// How many clients.
    pub clients: u64,
    /// Their mean calls.
    pub calls: f64,
    /// Those of them that gave up.
    pub gave_up: u64,
    /// When the last of them succeeded, seconds; `None` (JSON `null`) when
    /// any of them gave up (or the group is empty).
    pub drain_s: Option<f64>,
    /// `drain_s` over the physical limit `N / C`.
    pub drain_vs_limit: Option<f64>,
}

/// One strategy on one fleet.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReactivationFigures {
    /// Strategy name.
    pub strategy: String,
    /// `all-honor`, `half-ignore` or `replicas`.
    pub fleet: &'static str,
    /// Servers behind the load balancer.
    pub replicas: u32,
    /// The share of clients honoring plans and Retry-After.
    pub honor: f64,
    /// Mean calls per client.
    pub calls: f64,
    /// Clients that gave up.
    pub gave_up: u64,
    /// When the last client succeeded, seconds; `None` when any gave up.
    pub drain_s: Option<f64>,
    /// `drain_s` over the physical limit `N / C`.
    pub drain_vs_limit: Option<f64>,
    /// The largest 100 ms bucket of arrivals over `C / 10`, the whole run
    /// (the reconnect storm included).
    pub peak_over_capacity: f64,
    /// The same from 100 ms on (after the storm of intended reconnects).
    pub peak_after_100ms_over_capacity: f64,
    /// The largest 100 ms bucket of calls that reached the service itself,
    /// over `C / 10`.
    pub service_peak_over_capacity: f64,
    /// Each success's latency from its client's intended send time:
    /// median, 99th percentile and largest, seconds (10 ms buckets).
    pub latency_p50_s: Option<f64>,
    /// The 99th percentile.
    pub latency_p99_s: Option<f64>,
    /// The largest.
    pub latency_max_s: Option<f64>,
    /// What the server keeps per waiting client, bytes
    /// ([`server_bytes_per_waiting`]).
    pub server_bytes_per_waiting_client: u64,
    /// The most calls held open at once (the hold).
    pub max_held: u64,
    /// The clients honoring plans and Retry-After.
    pub honoring: Group,
    /// The clients ignoring both (`None` when every client honors).
    pub ignoring: Option<Group>,
    /// The largest 100 ms bucket of the honoring clients' arrivals from
    /// 100 ms on, over `C / 10`.
    pub honoring_peak_after_100ms_over_capacity: f64,
    /// Every call per 100 ms bucket, from time 0.
    pub arrivals_per_100ms: Vec<u32>,
    /// Calls that reached the service per 100 ms bucket.
    pub service_per_100ms: Vec<u32>,
}

/// What a server keeps per client waiting to come back, bytes, from the
/// library's documented costs (not measured by the simulator):
///
/// * `full`, `+throttle`: nothing (a refusal is forgotten once answered;
///   the throttle is the client's);
/// * `+pushback`: the adaptive allocator's entry for a named caller, 16
///   bytes in a hash map plus its slack, up to 40 (`adaptive/clients.rs`);
/// * `+hold`: the open connection, about 16 KB in `herdless stub`
///   (measured in docs/http.md), of which the hold's own state is a few
///   hundred bytes;
/// * `+waves`: nothing: a caller's wave is computed from its id.
///
/// ```
/// use herdless_sim::scenario::reactivation::server_bytes_per_waiting;
/// assert_eq!(server_bytes_per_waiting("full+waves".parse()?), 0);
/// assert_eq!(server_bytes_per_waiting("full+pushback".parse()?), 40);
/// # Ok::<(), herdless_sim::ParseStrategyError>(())
/// ```
pub fn server_bytes_per_waiting(kind: StrategyKind) -> u64 {
    match kind.guard() {
        Some(Guard::Pushback) => 40,
        Some(Guard::Hold) => 16_384,
        _ => 0,
    }
}

fn group(clients: u64, calls: u64, succeeded: u64, last_ns: u64, limit: f64) -> Group {
    let drained = clients > 0 && succeeded == clients;
    let drain_s = drained.then_some(last_ns as f64 / 1e9);
    Group {
        clients,
        calls: if clients == 0 {
            0.0
        } else {
            calls as f64 / clients as f64
        },
        gave_up: clients - succeeded.min(clients),
        drain_s,
        drain_vs_limit: drain_s.map(|d| d / limit),
    }
}

pub(super) fn figures(
    p: &ReactivationParams,
    fleet: Fleet,
    kind: StrategyKind,
    replicas: u32,
    honor: f64,
    m: &Measured,
) -> ReactivationFigures {
    let out = &m.out;
    let limit = p.physical_limit_s();
    let per_bucket = f64::from(p.capacity) * BUCKET.as_secs_f64();
    let over = |h: &crate::metrics::Histogram, from: usize| {
        f64::from(h.max_bucket_from(from).map_or(0, |(_, c)| c)) / per_bucket
    };
    let drained = out.gave_up == 0;
    let drain_s = drained.then_some(out.last_success_ns as f64 / 1e9);
    let h = m.honoring;
    let honoring = group(h.clients, h.calls, h.succeeded, h.last_success_ns, limit);
    let ignoring_clients = u64::from(p.clients) - h.clients;
    let ignoring = (ignoring_clients > 0).then(|| {
        group(
            ignoring_clients,
            out.calls - h.calls,
            h.ignoring_succeeded,
            h.ignoring_last_success_ns,
            limit,
        )
    });
    let secs = |d: Option<std::time::Duration>| d.map(|d| d.as_secs_f64());
    ReactivationFigures {
        strategy: kind.name().to_owned(),
        fleet: fleet.name(),
        replicas,
        honor,
        calls: out.calls as f64 / f64::from(p.clients),
        gave_up: out.gave_up,
        drain_s,
        drain_vs_limit: drain_s.map(|d| d / limit),
        peak_over_capacity: over(&out.arrivals, 0),
        peak_after_100ms_over_capacity: over(&out.arrivals, 1),
        service_peak_over_capacity: over(&out.service_load, 0),
        latency_p50_s: secs(out.latency.quantile(0.5)),
        latency_p99_s: secs(out.latency.quantile(0.99)),
        latency_max_s: secs(out.latency.max()),
        server_bytes_per_waiting_client: server_bytes_per_waiting(kind),
        max_held: out.max_held,
        honoring,
        ignoring,
        honoring_peak_after_100ms_over_capacity: match &m.honoring_arrivals {
            Some(a) => over(a, 1),
            None => over(&out.arrivals, 1),
        },
        arrivals_per_100ms: out.arrivals.counts().to_vec(),
        service_per_100ms: out.service_load.counts().to_vec(),
    }
}
