//! The **reactivation** scenario: a whole fleet comes back at once to a
//! server that is up.
//!
//! `N` clients (default 40,000) lose their connections at `t = 0` (a broker
//! restart, a deploy, a push that wakes every terminal) from a server that
//! is up and serves `C` calls per second (default 10,000; its token bucket
//! empty at 0, so no strategy drains before `N / C`, 4 s: the physical
//! limit). Each client means to reconnect at once, at a uniform time in the
//! first 100 ms (its **intended** send time). Two variants
//! ([`PlanMode`], `--plan`):
//!
//! * **announced** (the default): the server going away hands out its plan
//!   of waves in its last answers before it drops the connections (as NATS's
//!   lame-duck mode announces itself), so a client with a wave guard
//!   reconnects in its wave, not at once: the planner is told the
//!   population (the connections it had) and announces the plan at 0;
//! * **unannounced**: clients learn the plan from their first refusal; the
//!   planner is told nothing but its capacity and counts the callers it
//!   turns away (a counted plan, [`WavePlanner`](herdless::pushback::waves::WavePlanner)).
//!
//! Every strategy (default `full`, `full+pushback`, `full+hold`,
//! `full+throttle`, `full+waves`) runs on three fleets ([`Fleet`]), the same
//! first-call times in each: **all honoring** (one server); **half
//! ignoring** (half the clients, chosen by seed, ignore plans and
//! Retry-After alike and use their own backoff; one server); and
//! **replicas** (`R = 3` servers behind a load balancer, each with `C / R`
//! and its own allocator, hold or planner, told its share of the population
//! and deciding alone: [`Replicas`]).
//!
//! Figures per strategy and fleet: the drain against `N / C`, the peak of
//! arrivals per 100 ms against `C / 10` (the whole run, and after the first
//! 100 ms: the reconnect storm itself is in the first), the peak of calls
//! that reached the service, calls per client, give-ups, the server memory
//! per waiting client (from the library's documented costs:
//! [`server_bytes_per_waiting`]), and the latency of each success measured
//! from its client's intended send time ([`latency`](crate::latency): no
//! coordinated omission). With a fleet that half ignores, the honoring and
//! the ignoring clients are counted apart.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use herdless::{Jitter, Policy, Rng};

use crate::endpoint::honor::honors;
use crate::endpoint::{
    AdaptiveEndpoint, Endpoint, HoldEndpoint, Honoring, OutageEnd, OutageEndpoint, Replicas,
    WaveEndpoint,
};
use crate::error::SimError;
use crate::event_loop::{FleetOutcome, run_fleet_intended};
use crate::guard::{Guard, GuardParams, Guards};
use crate::strategy::StrategyKind;

mod figures;

pub use figures::{Group, ReactivationFigures, server_bytes_per_waiting};

/// When the clients learn the plan.
///
/// ```
/// use herdless_sim::scenario::reactivation::PlanMode;
/// assert_eq!("unannounced".parse::<PlanMode>(), Ok(PlanMode::Unannounced));
/// assert_eq!(PlanMode::default().name(), "announced");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PlanMode {
    /// Before the disconnect: the first reconnect is in the client's wave.
    #[default]
    Announced,
    /// From the first refusal.
    Unannounced,
}

impl PlanMode {
    /// `announced` or `unannounced`.
    pub fn name(self) -> &'static str {
        match self {
            PlanMode::Announced => "announced",
            PlanMode::Unannounced => "unannounced",
        }
    }
}

impl fmt::Display for PlanMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PlanMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "announced" => Ok(PlanMode::Announced),
            "unannounced" => Ok(PlanMode::Unannounced),
            _ => Err(format!(
                "unknown plan {:?} (expected announced or unannounced)",
                s.chars().take(64).collect::<String>()
            )),
        }
    }
}

/// The fleets every strategy runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fleet {
    /// Every client honors plans and Retry-After; one server.
    AllHonor,
    /// A share of the clients ([`ReactivationParams::mixed_honor`]) honors,
    /// the others use their own backoff; one server.
    HalfIgnore,
    /// Every client honors; [`ReactivationParams::replicas`] servers.
    Replicas,
}

impl Fleet {
    /// Every fleet, in table order.
    pub const ALL: [Fleet; 3] = [Fleet::AllHonor, Fleet::HalfIgnore, Fleet::Replicas];

    /// `all-honor`, `half-ignore` or `replicas`.
    pub fn name(self) -> &'static str {
        match self {
            Fleet::AllHonor => "all-honor",
            Fleet::HalfIgnore => "half-ignore",
            Fleet::Replicas => "replicas",
        }
    }
}

/// The strategies compared unless told otherwise.
pub const DEFAULT_STRATEGIES: [StrategyKind; 5] = [
    StrategyKind::Backoff(Jitter::Full),
    StrategyKind::Guarded(Jitter::Full, Guard::Pushback),
    StrategyKind::Guarded(Jitter::Full, Guard::Hold),
    StrategyKind::Guarded(Jitter::Full, Guard::Throttle),
    StrategyKind::Guarded(Jitter::Full, Guard::Waves),
];

/// Parameters of the reactivation scenario.
///
/// ```
/// let p = herdless_sim::scenario::reactivation::ReactivationParams::default();
/// assert_eq!((p.clients, p.capacity, p.replicas), (40_000, 10_000, 3));
/// assert_eq!(p.physical_limit_s(), 4.0);
/// assert!(p.validate().is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReactivationParams {
    /// Number of clients (N).
    pub clients: u32,
    /// Calls per second the server serves (C).
    pub capacity: u32,
    /// Its token bucket size.
    pub burst: u32,
    /// The intended reconnects are spread uniformly over this window.
    pub first_call_window: Duration,
    /// The base policy; each strategy sets its own jitter.
    pub policy: Policy,
    /// How the client guards are set up (processes, pushback horizon).
    pub guards: GuardParams,
    /// When the clients learn the plan.
    pub plan: PlanMode,
    /// The honoring share of the mixed fleet (`0..=1`).
    pub mixed_honor: f64,
    /// The servers of the replicas fleet (`1..=64`).
    pub replicas: u32,
}

impl Default for ReactivationParams {
    fn default() -> Self {
        Self {
            clients: 40_000,
            capacity: 10_000,
            burst: 1_000,
            first_call_window: Duration::from_millis(100),
            policy: Policy::builder()
                .base(Duration::from_secs(1))
                .build()
                .expect("1 s is a valid base"),
            guards: GuardParams::default(),
            plan: PlanMode::Announced,
            mixed_honor: 0.5,
            replicas: 3,
        }
    }
}

impl ReactivationParams {
    /// The physical limit `N / C`, seconds.
    pub fn physical_limit_s(&self) -> f64 {
        f64::from(self.clients) / f64::from(self.capacity.max(1))
    }

    /// Checks the ranges (clients 1..=10⁷, capacity and burst ≥ 1, each
    /// replica's share of both ≥ 1, window ≤ 1 h, mixed share 0..=1,
    /// replicas 1..=64).
    ///
    /// ```
    /// use herdless_sim::scenario::reactivation::ReactivationParams;
    /// assert!(ReactivationParams { replicas: 0, ..Default::default() }.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), SimError> {
        let bad = |m: &str| Err(SimError::Invalid(m.into()));
        if !(1..=10_000_000).contains(&self.clients) {
            return bad("clients must be in 1..=10000000");
        }
        if !(1..=64).contains(&self.replicas) {
            return bad("replicas must be within 1..=64");
        }
        if self.capacity < self.replicas || self.burst < self.replicas {
            return Err(SimError::Invalid(format!(
                "capacity ({}/s) and burst ({}; by default a tenth of the capacity) must each be \
                 at least 1 call per replica ({} replicas, the figures' replica runs included)",
                self.capacity, self.burst, self.replicas
            )));
        }
        if self.first_call_window > Duration::from_secs(3_600) {
            return bad("the first-call window must be at most 1 hour");
        }
        if !(0.0..=1.0).contains(&self.mixed_honor) {
            return bad("the mixed fleet's honoring share must be within 0..=1");
        }
        self.guards.validate()
    }

    /// Every run: each fleet, each strategy.
    pub fn runs(&self, strategies: &[StrategyKind]) -> Vec<(Fleet, StrategyKind)> {
        Fleet::ALL
            .iter()
            .flat_map(|&f| strategies.iter().map(move |&k| (f, k)))
            .collect()
    }
}

/// Refuses a strategy the scenario does not model (the ones it compares,
/// and any plain jitter mode, are fine).
pub(crate) fn supported(kind: StrategyKind) -> Result<(), SimError> {
    match kind {
        StrategyKind::Backoff(_) => Ok(()),
        StrategyKind::Guarded(
            _,
            Guard::Pushback | Guard::Hold | Guard::Throttle | Guard::Waves | Guard::WavesThrottle,
        ) => Ok(()),
        other => Err(SimError::Invalid(format!(
            "the reactivation scenario compares jitter modes with pushback, hold, throttle \
             and waves, not {other}"
        ))),
    }
}

/// The intended reconnect times: uniform over the window, from `seed`.
fn intended(p: &ReactivationParams, seed: u64) -> Vec<u64> {
    let mut rng = Rng::with_seed(crate::stream_seed(seed, 0));
    let window = p.first_call_window.as_secs_f64() * 1e9;
    (0..p.clients)
        .map(|_| (rng.unit_f64() * window) as u64)
        .collect()
}

/// One share of `total` among `r` replicas (the last takes the rest).
fn share(total: u32, r: u32, i: u32) -> u32 {
    total / r + u32::from(i + 1 == r) * (total % r)
}

/// What one run measured, before the figures.
pub(crate) struct Measured {
    pub(crate) out: FleetOutcome,
    pub(crate) honoring: crate::endpoint::HonorStats,
    pub(crate) honoring_arrivals: Option<crate::metrics::Histogram>,
}

/// Runs one strategy on one fleet.
///
/// # Errors
///
/// [`SimError::Invalid`] for out-of-range parameters or a strategy the
/// scenario does not model.
///
/// ```
/// use herdless_sim::scenario::reactivation::{Fleet, ReactivationParams, run_one};
/// let p = ReactivationParams { clients: 2_000, capacity: 500, burst: 50, ..Default::default() };
/// let f = run_one(&p, Fleet::AllHonor, "full+waves".parse()?, 1)?;
/// assert!(f.drain_vs_limit.unwrap() >= 1.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run_one(
    p: &ReactivationParams,
    fleet: Fleet,
    kind: StrategyKind,
    seed: u64,
) -> Result<ReactivationFigures, SimError> {
    p.validate()?;
    supported(kind)?;
    let (honor, r) = match fleet {
        Fleet::AllHonor => (1.0, 1),
        Fleet::HalfIgnore => (p.mixed_honor, 1),
        Fleet::Replicas => (1.0, p.replicas),
    };
    let strategy = kind.resolve(&p.policy);
    let mut guards = Guards::new(kind.guard(), &p.guards, p.clients)?;
    let intents = intended(p, seed);
    let horizon = p.guards.pushback_horizon;
    let n = p.clients;
    let zero = Duration::ZERO;
    let each = |i: u32| (share(p.capacity, r, i), share(p.burst, r, i));
    let run = Run {
        honor,
        seed,
        clients: n,
        fleet_seed: crate::stream_seed(seed, 1),
    };
    let plain = |i| {
        let (c, b) = each(i);
        OutageEndpoint::new(zero, c, b)
    };
    let m = match kind.guard() {
        Some(Guard::Pushback) => {
            let reps = (0..r)
                .map(|i| {
                    let (c, b) = each(i);
                    AdaptiveEndpoint::with_callers(
                        zero,
                        c,
                        b,
                        f64::from(c),
                        OutageEnd::Unknown,
                        horizon,
                        n,
                    )
                })
                .collect::<Result<_, _>>()?;
            run.go(Replicas::new(reps, seed), &intents, &strategy, &mut guards)?
        }
        Some(Guard::Hold) => {
            let reps = (0..r)
                .map(|i| {
                    let (c, b) = each(i);
                    HoldEndpoint::new(zero, c, b, f64::from(c), OutageEnd::Unknown, horizon, n)
                })
                .collect::<Result<_, _>>()?;
            run.go(Replicas::new(reps, seed), &intents, &strategy, &mut guards)?
        }
        Some(Guard::Waves | Guard::WavesThrottle) => {
            let mut reps = Replicas::new(
                (0..r)
                    .map(|i| {
                        let (c, b) = each(i);
                        let population = match p.plan {
                            PlanMode::Announced => Some(u64::from(share(n, r, i)).max(1)),
                            PlanMode::Unannounced => None,
                        };
                        WaveEndpoint::new(
                            zero,
                            c,
                            b,
                            f64::from(c),
                            OutageEnd::Unknown,
                            population,
                            seed,
                        )
                    })
                    .collect::<Result<_, _>>()?,
                seed,
            );
            let sends = match p.plan {
                PlanMode::Announced => {
                    announce(&mut reps, &intents, &guards, &strategy, honor, seed)
                }
                PlanMode::Unannounced => intents.iter().map(|&t| (t, t)).collect(),
            };
            run.go_from(reps, sends, &strategy, &mut guards)?
        }
        _ => run.go(
            Replicas::new((0..r).map(plain).collect(), seed),
            &intents,
            &strategy,
            &mut guards,
        )?,
    };
    Ok(figures::figures(p, fleet, kind, r, honor, &m))
}

/// The plan each replica hands out before the disconnect, and each
/// client's first reconnect: an honoring client's guard observes the plan
/// of the replica it was connected to and waits for its wave; a client that
/// ignores plans reconnects when it meant to.
fn announce(
    reps: &mut Replicas<WaveEndpoint>,
    intents: &[u64],
    guards: &Guards,
    strategy: &crate::strategy::Strategy,
    honor: f64,
    seed: u64,
) -> Vec<(u64, u64)> {
    let plans: Vec<_> = reps
        .replicas_mut()
        .iter_mut()
        .map(|e| e.planner_mut().announce(Duration::ZERO, Duration::ZERO))
        .collect();
    let mut rng = Rng::with_seed(crate::stream_seed(seed, 2));
    intents
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            let client = i as u32;
            let plan = plans[i % plans.len()];
            let wave = match (guards.wave_guard(client), honors(honor, seed, client)) {
                (Some(g), true) => {
                    g.observe(plan);
                    g.first_wait(Duration::ZERO, strategy.policy(), &mut rng)
                }
                _ => None,
            };
            let send = wave.map_or(t, |w| {
                u64::try_from(w.as_nanos()).unwrap_or(u64::MAX).max(t)
            });
            (t, send)
        })
        .collect()
}

/// One fleet run over an endpoint, the honoring clients counted apart.
struct Run {
    honor: f64,
    seed: u64,
    clients: u32,
    fleet_seed: u64,
}

impl Run {
    fn go<E: Endpoint>(
        &self,
        endpoint: E,
        intents: &[u64],
        strategy: &crate::strategy::Strategy,
        guards: &mut Guards,
    ) -> Result<Measured, SimError> {
        let sends = intents.iter().map(|&t| (t, t)).collect();
        self.go_from(endpoint, sends, strategy, guards)
    }

    fn go_from<E: Endpoint>(
        &self,
        endpoint: E,
        sends: Vec<(u64, u64)>,
        strategy: &crate::strategy::Strategy,
        guards: &mut Guards,
    ) -> Result<Measured, SimError> {
        let mut e = Honoring::new(endpoint, self.honor, self.seed, self.clients);
        let out = run_fleet_intended(sends.into_iter(), &mut e, strategy, guards, self.fleet_seed)?;
        Ok(Measured {
            out,
            honoring: e.stats(),
            honoring_arrivals: e.arrivals().cloned(),
        })
    }
}
