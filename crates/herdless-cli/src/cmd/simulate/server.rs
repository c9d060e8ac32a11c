//! `herdless simulate`'s pushback-server flags: the same hold and horizon
//! settings as `herdless stub` and the tower layer take, and the replicas.

use std::time::Duration;

use clap::Args;
use herdless_sim::OutageParams;
use herdless_sim::endpoint::{Coordination, ServerParams, Split};

use crate::shared::values::parse_duration;

/// The pushback server's flags (outage, robustness and field scenarios).
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct ServerArgs {
    /// Pushback: the longest Retry-After handed out, 1s to 1h [default: 60s].
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub(crate) horizon: Option<Duration>,
    /// full+hold: the longest a request is held when its client says nothing
    /// of its patience, 10ms to 1h [default: 10s].
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub(crate) hold_for: Option<Duration>,
    /// full+hold: the longest a request is held when its client says it
    /// waits longer (Prefer: wait), --hold-for to 1h [default: 50s].
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub(crate) hold_for_max: Option<Duration>,
    /// full+hold: the most requests one replica holds, 1 to 10,000,000
    /// [default: what the starting release rate serves in 0.4 --hold-for-max
    /// at the replica's estimate: 120,000 at 10,000/s].
    #[arg(long, value_name = "N")]
    pub(crate) hold_max: Option<usize>,
    /// full+hold: server replicas in front of the one device, 1 to 64, each
    /// told 1/R of the estimate; arrivals routed per request [default: 1].
    #[arg(long, value_name = "R")]
    pub(crate) replicas: Option<u32>,
    /// full+hold with --replicas: even, skewed (one replica gets twice the
    /// share of each other) or restart (one restarts 2 s after the end)
    /// [default: even].
    #[arg(long, value_parser = parse_split, value_name = "even|skewed|restart")]
    pub(crate) split: Option<Split>,
    /// full+hold with --replicas: none, or shared (the replicas publish what
    /// they learn once a second and read each other's reports) [default: none].
    #[arg(long, value_parser = parse_coordination, value_name = "none|shared")]
    pub(crate) coordination: Option<Coordination>,
    /// With --coordination shared: how late a replica reads the others'
    /// reports, 0s to 60s [default: 1s].
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub(crate) coordination_delay: Option<Duration>,
    /// The clients honor Retry-After and know nothing else: they neither tell
    /// a server how long they wait nor recognise its requeue answer.
    #[arg(long)]
    pub(crate) plain_clients: bool,
}

fn parse_split(s: &str) -> Result<Split, String> {
    s.parse()
}

fn parse_coordination(s: &str) -> Result<Coordination, String> {
    s.parse()
}

impl ServerArgs {
    /// Whether any of these flags was given.
    pub(crate) fn any(&self) -> bool {
        self.horizon.is_some()
            || self.hold_for.is_some()
            || self.hold_for_max.is_some()
            || self.hold_max.is_some()
            || self.replicas.is_some()
            || self.split.is_some()
            || self.coordination.is_some()
            || self.coordination_delay.is_some()
            || self.plain_clients
    }

    /// Applies the flags to `params`, checked against their ranges.
    pub(crate) fn apply(&self, params: &mut OutageParams) -> Result<(), String> {
        if let Some(h) = self.horizon {
            if !(Duration::from_secs(1)..=Duration::from_secs(3_600)).contains(&h) {
                return Err("--horizon must be within 1s..=1h".into());
            }
            params.guards.pushback_horizon = h;
        }
        let d = ServerParams::default();
        let hold_for = self.hold_for.unwrap_or(d.hold_for);
        params.server = ServerParams {
            hold_for,
            hold_for_max: self.hold_for_max.unwrap_or(d.hold_for_max.max(hold_for)),
            hold_max: self.hold_max,
            replicas: self.replicas.unwrap_or(d.replicas),
            split: self.split.unwrap_or(d.split),
            coordination: self.coordination.unwrap_or(d.coordination),
            coordination_delay: self.coordination_delay.unwrap_or(d.coordination_delay),
        };
        params.plain_clients = self.plain_clients;
        params.server.validate().map_err(|e| e.to_string())
    }
}
