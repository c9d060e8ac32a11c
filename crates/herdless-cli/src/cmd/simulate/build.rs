//! From `herdless simulate`'s flags to the simulation they describe: the
//! scenario's parameters, the policy, and the flags refused because they do
//! not apply to the chosen scenario.

use herdless::Policy;
use herdless_sim::{
    Config, ContentionParams, FieldParams, OutageParams, ReactivationParams, RobustnessParams,
    Scenario, Simulation, SpreadParams, TailParams,
};

use super::SimulateArgs;

impl SimulateArgs {
    /// Builds the simulation the flags describe, or explains what is wrong.
    pub(crate) fn simulation(&self) -> Result<Simulation, String> {
        let scenario = self.scenario;
        let refuse = |flag: &str, set: bool, wanted: &str| {
            if set {
                Err(format!(
                    "{flag} applies to --scenario {wanted}, not {}",
                    scenario.name()
                ))
            } else {
                Ok(())
            }
        };
        let not_outage = !matches!(
            scenario,
            Scenario::Outage | Scenario::Robustness | Scenario::Field
        );
        let either = "outage, robustness or field";
        let field = scenario == Scenario::Field;
        refuse(
            "--outage",
            (not_outage || field) && self.outage.is_some(),
            "outage or robustness (field runs 5 s to 90 s)",
        )?;
        refuse(
            "--jitter",
            field && !self.jitter.is_empty(),
            "the scenarios but field (which runs full+hold, full+throttle and full)",
        )?;
        refuse(
            "--replicas, --split and --coordination",
            field
                && (self.server.replicas.is_some()
                    || self.server.split.is_some()
                    || self.server.coordination.is_some()),
            "outage or robustness (field runs 1, 3 and 8 replicas, each split, with and without shared state)",
        )?;
        refuse(
            "--horizon, --hold-for, --hold-for-max, --hold-max, --replicas, --split, --coordination, --coordination-delay and --plain-clients",
            not_outage && self.server.any(),
            either,
        )?;
        let fleet = !matches!(
            scenario,
            Scenario::Outage | Scenario::Robustness | Scenario::Reactivation | Scenario::Field
        );
        let any = "outage, robustness, reactivation or field";
        refuse("--capacity", fleet && self.capacity.is_some(), any)?;
        refuse("--burst", fleet && self.burst.is_some(), any)?;
        refuse(
            "--clients-per-process",
            fleet && self.clients_per_process.is_some(),
            any,
        )?;
        refuse(
            "--plan",
            scenario != Scenario::Reactivation && self.plan.is_some(),
            "reactivation",
        )?;
        // The robustness matrix varies these three itself.
        let not_plain_outage = scenario != Scenario::Outage;
        refuse(
            "--honor",
            not_plain_outage && scenario != Scenario::Reactivation && self.honor.is_some(),
            "outage or reactivation",
        )?;
        refuse(
            "--capacity-estimate",
            not_plain_outage && self.capacity_estimate.is_some(),
            "outage",
        )?;
        refuse(
            "--outage-end",
            not_plain_outage && self.outage_end.is_some(),
            "outage",
        )?;
        let not_spread = scenario != Scenario::Spread;
        refuse("--workers", not_spread && self.workers.is_some(), "spread")?;
        refuse(
            "--failures",
            not_spread && self.failures.is_some(),
            "spread",
        )?;
        let not_contention = scenario != Scenario::Contention;
        refuse(
            "--trials",
            not_contention && self.trials.is_some(),
            "contention",
        )?;
        refuse(
            "--clients",
            scenario == Scenario::Spread && self.clients.is_some(),
            "outage or contention (spread has --workers)",
        )?;
        refuse(
            "--clients",
            scenario == Scenario::LatencyTail && self.clients.is_some(),
            "outage or contention (latency-tail has --calls)",
        )?;
        refuse(
            "--calls",
            scenario != Scenario::LatencyTail && self.calls.is_some(),
            "latency-tail",
        )?;

        let config = match scenario {
            Scenario::Spread => {
                let d = SpreadParams::default();
                Config::Spread(SpreadParams {
                    workers: self.workers.unwrap_or(d.workers),
                    failures: self.failures.unwrap_or(d.failures),
                    policy: self.policy(&d.policy)?,
                })
            }
            Scenario::Outage => Config::Outage(self.outage_params()?),
            Scenario::Robustness => Config::Robustness(RobustnessParams {
                base: self.outage_params()?,
                ..RobustnessParams::default()
            }),
            Scenario::Reactivation => Config::Reactivation(self.reactivation_params()?),
            Scenario::Field => Config::Field(FieldParams {
                base: self.outage_params()?,
                ..FieldParams::default()
            }),
            Scenario::LatencyTail => {
                let d = TailParams::default();
                Config::LatencyTail(TailParams {
                    calls: self.calls.unwrap_or(d.calls),
                    policy: self.policy(&d.policy)?,
                    ..d
                })
            }
            Scenario::Contention => {
                let d = ContentionParams::default();
                Config::Contention(ContentionParams {
                    clients: self
                        .clients
                        .map_or(d.clients.clone(), ContentionParams::sweep),
                    trials: self.trials.unwrap_or(d.trials),
                    policy: self.policy(&d.policy)?,
                    ..d
                })
            }
        };
        let mut sim = Simulation::new(config).seed(self.seed);
        if !self.jitter.is_empty() {
            sim = sim.strategies(self.jitter.clone());
        }
        if let Some(t) = self.threads {
            if t == 0 {
                return Err("--threads must be at least 1".into());
            }
            sim = sim.threads(t);
        }
        Ok(sim)
    }

    /// The outage parameters the flags describe (outage and robustness).
    fn outage_params(&self) -> Result<OutageParams, String> {
        let d = OutageParams::default();
        let capacity = self.capacity.unwrap_or(d.capacity);
        let mut params = OutageParams {
            clients: self.clients.unwrap_or(d.clients),
            outage: self.outage.unwrap_or(d.outage),
            capacity,
            burst: self.burst.unwrap_or((capacity / 10).max(1)),
            first_call_window: d.first_call_window,
            policy: self.policy(&d.policy)?,
            guards: herdless_sim::guard::GuardParams {
                clients_per_process: self
                    .clients_per_process
                    .unwrap_or(d.guards.clients_per_process),
                ..d.guards
            },
            honor: self.honor.unwrap_or(d.honor),
            capacity_estimate: self.capacity_estimate.unwrap_or(d.capacity_estimate),
            outage_end: self.outage_end.unwrap_or(d.outage_end),
            ..d
        };
        self.server.apply(&mut params)?;
        Ok(params)
    }

    /// The reactivation parameters the flags describe.
    fn reactivation_params(&self) -> Result<ReactivationParams, String> {
        let d = ReactivationParams::default();
        let capacity = self.capacity.unwrap_or(d.capacity);
        Ok(ReactivationParams {
            clients: self.clients.unwrap_or(d.clients),
            capacity,
            burst: self.burst.unwrap_or((capacity / 10).max(1)),
            policy: self.policy(&d.policy)?,
            guards: herdless_sim::guard::GuardParams {
                clients_per_process: self
                    .clients_per_process
                    .unwrap_or(d.guards.clients_per_process),
                ..d.guards
            },
            plan: self.plan.unwrap_or(d.plan),
            mixed_honor: self.honor.unwrap_or(d.mixed_honor),
            ..d
        })
    }

    /// The scenario's policy with the policy flags applied.
    fn policy(&self, base: &Policy) -> Result<Policy, String> {
        let mut b = base.to_builder();
        if let Some(v) = self.base {
            b = b.base(v);
        }
        if let Some(v) = self.multiplier {
            b = b.multiplier(v);
        }
        if let Some(v) = self.cap {
            b = b.cap(v);
        }
        if let Some(v) = self.max_attempts {
            b = b.max_attempts(v);
        }
        if let Some(v) = self.max_elapsed {
            b = b.max_elapsed(v);
        }
        b.build().map_err(|e| e.to_string())
    }
}
