//! The reactivation report: one table per fleet, the strategies side by
//! side, the figures as rows.

use serde::Serialize;

use super::{GuardParameters, PolicyParameters, grid, secs};
use crate::scenario::reactivation::{Fleet, ReactivationFigures, ReactivationParams};

/// Parameters of a reactivation run, as reported.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ReactivationParameters {
    /// Number of clients (N).
    pub clients: u32,
    /// Calls per second the server serves (C).
    pub capacity_per_s: u32,
    /// Its token bucket size.
    pub burst: u32,
    /// Window of the intended reconnects, seconds.
    pub first_call_window_s: f64,
    /// `announced` or `unannounced`.
    pub plan: &'static str,
    /// The honoring share of the mixed fleet.
    pub mixed_honor: f64,
    /// Servers in the replicas fleet.
    pub replicas: u32,
    /// The base policy.
    pub policy: PolicyParameters,
    /// The client guards' set-up.
    pub guards: GuardParameters,
}

/// A reactivation run's report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReactivationReport {
    /// The seed.
    pub seed: u64,
    /// The parameters.
    pub parameters: ReactivationParameters,
    /// `N / C`, seconds.
    pub physical_limit_s: f64,
    /// One entry per fleet and strategy, fleet first.
    pub strategies: Vec<ReactivationFigures>,
}

impl ReactivationReport {
    pub(crate) fn new(
        p: &ReactivationParams,
        seed: u64,
        strategies: Vec<ReactivationFigures>,
    ) -> Self {
        ReactivationReport {
            seed,
            parameters: ReactivationParameters {
                clients: p.clients,
                capacity_per_s: p.capacity,
                burst: p.burst,
                first_call_window_s: p.first_call_window.as_secs_f64(),
                plan: p.plan.name(),
                mixed_honor: p.mixed_honor,
                replicas: p.replicas,
                policy: (&p.policy).into(),
                guards: GuardParameters::new(&p.guards, p.clients, std::time::Duration::ZERO),
            },
            physical_limit_s: p.physical_limit_s(),
            strategies,
        }
    }
}

fn opt(x: Option<f64>, digits: usize) -> String {
    x.map_or("-".to_owned(), |v| format!("{v:.digits$}"))
}

fn fleet_heading(r: &ReactivationReport, fleet: Fleet) -> String {
    let p = &r.parameters;
    match fleet {
        Fleet::AllHonor => "every client honors plans and Retry-After; one server".to_owned(),
        Fleet::HalfIgnore => format!(
            "a share of {} honors, the others ignore plans and Retry-After (their own \
             backoff); one server",
            p.mixed_honor
        ),
        Fleet::Replicas => format!(
            "every client honors; {} servers behind a load balancer, each with C/{} and its \
             own allocator or planner, deciding alone",
            p.replicas, p.replicas
        ),
    }
}

pub(crate) fn table(r: &ReactivationReport) -> String {
    let p = &r.parameters;
    let mut out = format!(
        "reactivation: {} clients disconnected at t = 0, each meaning to reconnect within {} \
         (its intended send time), from a server that is up and serves {} calls/s (burst {}, \
         nothing banked at 0); plan {}; seed {}\n\
         physical limit: N/C = {} / {} per s = {}; latency from each client's intended send time\n",
        p.clients,
        secs(p.first_call_window_s),
        p.capacity_per_s,
        p.burst,
        p.plan,
        r.seed,
        p.clients,
        p.capacity_per_s,
        secs(r.physical_limit_s),
    );
    for fleet in Fleet::ALL {
        let s: Vec<&ReactivationFigures> = r
            .strategies
            .iter()
            .filter(|f| f.fleet == fleet.name())
            .collect();
        if s.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "\n{}: {}\n",
            fleet.name(),
            fleet_heading(r, fleet)
        ));
        let header: Vec<String> = std::iter::once(String::new())
            .chain(s.iter().map(|f| f.strategy.clone()))
            .collect();
        let row = |label: &str, f: &dyn Fn(&ReactivationFigures) -> String| {
            std::iter::once(label.to_owned())
                .chain(s.iter().map(|x| f(x)))
                .collect::<Vec<_>>()
        };
        let mut rows = vec![
            row("drain x limit", &|f| opt(f.drain_vs_limit, 2)),
            row("peak per 100 ms / capacity", &|f| {
                format!("{:.2}", f.peak_over_capacity)
            }),
            row("  after the first 100 ms", &|f| {
                format!("{:.2}", f.peak_after_100ms_over_capacity)
            }),
            row("service load peak / capacity", &|f| {
                format!("{:.2}", f.service_peak_over_capacity)
            }),
            row("calls per client", &|f| format!("{:.2}", f.calls)),
            row("gave up", &|f| f.gave_up.to_string()),
            row("server bytes per waiting client", &|f| {
                f.server_bytes_per_waiting_client.to_string()
            }),
            row("latency p50 (s)", &|f| opt(f.latency_p50_s, 2)),
            row("latency p99 (s)", &|f| opt(f.latency_p99_s, 2)),
            row("latency max (s)", &|f| opt(f.latency_max_s, 2)),
        ];
        if fleet == Fleet::HalfIgnore {
            rows.extend([
                row("honoring: drain x limit", &|f| {
                    opt(f.honoring.drain_vs_limit, 2)
                }),
                row("  calls", &|f| {
                    // An empty group (`--honor 0`) has no calls per client.
                    if f.honoring.clients == 0 {
                        "-".to_owned()
                    } else {
                        format!("{:.2}", f.honoring.calls)
                    }
                }),
                row("  gave up", &|f| f.honoring.gave_up.to_string()),
                row("  peak after 100 ms / capacity", &|f| {
                    format!("{:.2}", f.honoring_peak_after_100ms_over_capacity)
                }),
                row("ignoring: drain x limit", &|f| {
                    opt(f.ignoring.as_ref().and_then(|g| g.drain_vs_limit), 2)
                }),
                row("  calls", &|f| {
                    f.ignoring
                        .as_ref()
                        .map_or("-".to_owned(), |g| format!("{:.2}", g.calls))
                }),
                row("  gave up", &|f| {
                    f.ignoring
                        .as_ref()
                        .map_or("-".to_owned(), |g| g.gave_up.to_string())
                }),
            ]);
        }
        out.push_str(&grid(&header, &rows));
    }
    if r.strategies.iter().any(|f| f.drain_s.is_none()) {
        out.push_str(
            "\n-: clients gave up, so the fleet (or the group) did not drain; server bytes per \
             waiting client: from the library's documented costs, not simulated\n",
        );
    } else {
        out.push_str(
            "\nserver bytes per waiting client: from the library's documented costs, not \
             simulated\n",
        );
    }
    out
}
