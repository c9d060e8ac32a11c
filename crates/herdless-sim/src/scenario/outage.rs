//! The **outage** scenario (the default): a card-authorization endpoint down for a few seconds.
//!
//! `N` clients (default 40,000 point-of-sale terminals) each send one request
//! early, at a uniform time in the first 100 ms. The endpoint fails everything
//! for `T` seconds (default 5, a database failover), then serves at most `C`
//! requests per second (default 10,000) and answers the rest 503. Each
//! strategy is run on the same fleet (the same first-call times).
//!
//! Per strategy: calls per client, the time until every client has succeeded
//! or given up, give-ups, the peak of arrivals per 100 ms at or after `T`
//! relative to what the endpoint can serve in 100 ms (`C / 10`), and the
//! largest 100 ms bucket of retries as a share of the fleet. Beside them, the
//! **physical limit**: every client needs at least one call after `T`, and the
//! endpoint serves at most `C` per second, so no strategy can finish before
//! `T + N / C` (9 s by default). The endpoint model makes this a hard bound
//! (see [`endpoint`](crate::endpoint)).
//!
//! Modelling choices:
//!
//! * calls take no time; a 503 is answered at once, without Retry-After;
//! * the endpoint's token bucket starts empty at `T`, refills at `C` per
//!   second and holds at most `burst` tokens (default `C / 10`);
//! * the policy is the library's default (×2, cap 30 s, 6 attempts, 120 s
//!   budget) with a base of 1 s (after its first failure a terminal
//!   waits a random time in [0, 1 s], then [0, 2 s], [0, 4 s]…);
//! * the naive baseline `fixed-1s` retries every second with no attempt limit
//!   (the naive fixed one-second loop), within the same 120 s budget;
//! * `no-backoff` is refused here: during the outage it would retry forever in
//!   zero virtual time;
//! * the fleet-level strategies (`full+budget`, `full+breaker`,
//!   `full+pushback`, `full+static-pushback`) use the library's
//!   `RetryBudget`, `Breaker`, `AdaptiveAllocator` and `SlotAllocator`, one
//!   budget or breaker per simulated process of
//!   [`GuardParams::clients_per_process`] clients; pushback puts the
//!   allocator in front of the same capacity-limited endpoint (see
//!   [`guard`](crate::guard) for the model and its defaults);
//! * what the server knows, and what the clients do, can be wrong:
//!   [`OutageParams::capacity_estimate`] is the pushback allocator's starting
//!   estimate over the true capacity (default 1), [`OutageParams::outage_end`]
//!   whether it is told when the outage ends (default
//!   [`OutageEnd::Unknown`]: no oracle), and [`OutageParams::honor`] the share
//!   of clients that honor Retry-After (default 1; the others use their own
//!   backoff, see [`endpoint::honor`](crate::endpoint::honor)).
//!
//! The figures of the honoring clients alone (`honoring_completion_s`,
//! `honoring_vs_limit`, `honoring_calls`, `honoring_gave_up`) are the drain a
//! pushback server can schedule; with `honor = 1` they are the fleet's.
//!
//! Give-ups are counted per 100 ms too: `give_up_max_bucket_share` (the
//! largest bucket's share of all give-ups) tells a synchronized give-up (one
//! bucket holds them all) from give-ups spread in time.

use std::time::Duration;

use herdless::{Policy, Rng};
use serde::Serialize;

use crate::endpoint::{
    AdaptiveEndpoint, Endpoint, HoldEndpoint, HonorStats, Honoring, OutageEnd, OutageEndpoint,
    PushbackEndpoint, ServerParams, Setup, WaveEndpoint,
};
use crate::error::SimError;
use crate::event_loop::{FleetOutcome, run_fleet_from};
use crate::guard::{Guard, GuardParams, Guards};
use crate::metrics::Histogram;
use crate::report::units;
use crate::strategy::StrategyKind;

mod figures;
use figures::figures;

/// Parameters of the outage scenario.
///
/// ```
/// let p = herdless_sim::OutageParams::default();
/// assert_eq!((p.clients, p.capacity), (40_000, 10_000));
/// assert_eq!(p.physical_limit_s(), 9.0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutageParams {
    /// Number of clients (N).
    pub clients: u32,
    /// How long the endpoint fails everything (T).
    pub outage: Duration,
    /// Calls per second the endpoint serves after the outage (C).
    pub capacity: u32,
    /// Most calls the endpoint can serve at once after a quiet spell (token bucket size).
    pub burst: u32,
    /// The first calls are spread uniformly over this window.
    pub first_call_window: Duration,
    /// The base policy; each strategy sets its own jitter.
    pub policy: Policy,
    /// How the fleet-level guards are set up (processes, budget, breaker,
    /// pushback horizon).
    pub guards: GuardParams,
    /// The share of clients that honor Retry-After (`0..=1`; the rest use
    /// their own backoff).
    pub honor: f64,
    /// The pushback allocator's starting capacity estimate over the true
    /// capacity (`0.01..=100`; 1: exact).
    pub capacity_estimate: f64,
    /// Whether the pushback allocator is told when the outage ends.
    pub outage_end: OutageEnd,
    /// The pushback server's hold, replicas, split and coordination
    /// (`full+hold`).
    pub server: ServerParams,
    /// The clients honor `Retry-After` and know nothing else: they neither
    /// tell the server their patience nor recognise a requeue answer.
    pub plain_clients: bool,
}

impl Default for OutageParams {
    fn default() -> Self {
        Self {
            clients: 40_000,
            outage: Duration::from_secs(5),
            capacity: 10_000,
            burst: 1_000,
            first_call_window: Duration::from_millis(100),
            policy: Policy::builder()
                .base(Duration::from_secs(1))
                .build()
                .expect("1 s is a valid base"),
            guards: GuardParams::default(),
            honor: 1.0,
            capacity_estimate: 1.0,
            outage_end: OutageEnd::Unknown,
            server: ServerParams::default(),
            plain_clients: false,
        }
    }
}

impl OutageParams {
    /// The physical limit `T + N / C`, in seconds.
    ///
    /// ```
    /// let p = herdless_sim::OutageParams { clients: 1_000_000, ..Default::default() };
    /// assert_eq!(p.physical_limit_s(), 105.0);
    /// ```
    pub fn physical_limit_s(&self) -> f64 {
        self.outage.as_secs_f64() + f64::from(self.clients) / f64::from(self.capacity.max(1))
    }

    /// The breaker's release window when none is set: `N / C`, the time the
    /// recovered endpoint needs to serve the whole fleet (for one process:
    /// its held callers over its share of the capacity).
    ///
    /// ```
    /// assert_eq!(herdless_sim::OutageParams::default().breaker_release().as_secs(), 4);
    /// ```
    pub fn breaker_release(&self) -> Duration {
        self.guards
            .breaker_release
            .unwrap_or(Duration::from_secs_f64(
                f64::from(self.clients) / f64::from(self.capacity.max(1)),
            ))
    }

    /// The fewest calls per client any strategy can make: the first call
    /// (which fails if it falls inside the outage) plus one after `T`.
    ///
    /// ```
    /// assert_eq!(herdless_sim::OutageParams::default().min_calls_per_client(), 2.0);
    /// ```
    pub fn min_calls_per_client(&self) -> f64 {
        let w = self.first_call_window.as_secs_f64();
        let t = self.outage.as_secs_f64();
        let failing_first = if w <= 0.0 {
            f64::from(u8::from(t > 0.0))
        } else {
            (t / w).min(1.0)
        };
        1.0 + failing_first
    }

    /// Checks the ranges (clients 1..=10⁷, capacity ≥ 1, burst ≥ 1, outage
    /// ≤ 1 day, window ≤ 1 hour, honor 0..=1, capacity estimate 0.01..=100).
    ///
    /// ```
    /// let p = herdless_sim::OutageParams { capacity: 0, ..Default::default() };
    /// assert!(p.validate().unwrap_err().to_string().contains("capacity"));
    /// ```
    pub fn validate(&self) -> Result<(), SimError> {
        let bad = |m: String| Err(SimError::Invalid(m));
        if !(1..=10_000_000).contains(&self.clients) {
            return bad(format!(
                "clients must be in 1..=10000000 (got {})",
                self.clients
            ));
        }
        if self.capacity == 0 {
            return bad("capacity must be at least 1 call per second".into());
        }
        if self.burst == 0 {
            return bad("burst must be at least 1 call".into());
        }
        if self.outage > Duration::from_secs(86_400) {
            return bad(format!(
                "outage must be at most 1 day (got {})",
                units::duration(self.outage)
            ));
        }
        if self.first_call_window > Duration::from_secs(3_600) {
            return bad("the first-call window must be at most 1 hour".into());
        }
        if !(0.0..=1.0).contains(&self.honor) {
            return bad(format!(
                "honor must be a share of clients within 0..=1 (got {})",
                units::number(self.honor)
            ));
        }
        if !(0.01..=100.0).contains(&self.capacity_estimate) {
            return bad(format!(
                "the capacity estimate must be within 0.01..=100 times the capacity (got {})",
                units::number(self.capacity_estimate)
            ));
        }
        let told = self.capacity_estimate * f64::from(self.capacity);
        if !(1.0..=1e9).contains(&told) {
            return bad(format!(
                "the capacity estimate times the capacity must be within 1..=1e9 calls/s (got {})",
                units::number(told)
            ));
        }
        self.guards.validate()
    }
}

/// One strategy's figures in the outage scenario (JSON field names are the
/// README's contract).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutageFigures {
    /// Strategy name.
    pub strategy: String,
    /// Mean calls per client.
    pub calls: f64,
    /// Total calls of the fleet.
    pub calls_total: u64,
    /// Virtual time when the last client succeeded or gave up, in seconds.
    pub completion_s: f64,
    /// Virtual time of the last successful call, in seconds (0 when none).
    pub last_success_s: f64,
    /// `completion_s` divided by the physical limit, when the fleet
    /// `drained` (then the same as `drain_vs_limit`, at least 1); `None`
    /// (JSON `null`) when any client gave up: a fleet that gave up is done
    /// without having drained, possibly long before the limit, and a ratio
    /// below 1 would read as beating it.
    pub vs_limit: Option<f64>,
    /// Whether every client succeeded. Only then did the fleet drain, and
    /// only then is `completion_s` a drain time, never below the physical
    /// limit.
    pub drained: bool,
    /// When the fleet drained (its last success), seconds; `None` (JSON
    /// `null`) when any client gave up.
    pub drain_s: Option<f64>,
    /// `drain_s` divided by the physical limit (at least 1); `None` when any
    /// client gave up.
    pub drain_vs_limit: Option<f64>,
    /// Clients that succeeded.
    pub succeeded: u64,
    /// Clients that gave up.
    pub gave_up: u64,
    /// Of those, clients denied by the shared retry budget (`retry_budget`).
    pub gave_up_retry_budget: u64,
    /// The largest 100 ms bucket of give-ups as a share of all give-ups (0
    /// when nobody gave up; 1 when they all gave up within one bucket).
    pub give_up_max_bucket_share: f64,
    /// Give-ups per 100 ms bucket, from time 0.
    pub give_ups_per_100ms: Vec<u32>,
    /// Times an open breaker made a due retry wait (not calls; 0 without a
    /// breaker).
    pub breaker_waits: u64,
    /// The largest 100 ms bucket of arrivals at or after `T`, divided by what
    /// the endpoint serves in 100 ms (`C / 10`).
    pub peak_over_capacity: f64,
    /// The largest 100 ms bucket at or after `T` of calls that reached the
    /// service itself (its own refusals included), over `C / 10`: what a
    /// pushback front end lets through, and what it holds back shows here
    /// as the difference from `peak_over_capacity`.
    pub service_peak_over_capacity: f64,
    /// The largest 100 ms bucket at or after `T` of the honoring clients'
    /// calls, over `C / 10` (`peak_over_capacity` when every client honors).
    pub honoring_peak_over_capacity: f64,
    /// The most calls the endpoint held open at once (0 without a hold).
    pub max_held: u64,
    /// Calls that reached the service itself per 100 ms bucket, from time 0.
    pub service_per_100ms: Vec<u32>,
    /// The largest 100 ms bucket of retries, as a share of the fleet (0 to 1).
    pub max_bucket_share: f64,
    /// Every call per 100 ms bucket, from time 0.
    pub arrivals_per_100ms: Vec<u32>,
    /// Successes (clients done) per 100 ms bucket, from time 0.
    pub successes_per_100ms: Vec<u32>,
    /// Clients that honor Retry-After.
    pub honoring_clients: u64,
    /// Their mean calls.
    pub honoring_calls: f64,
    /// Those of them that gave up.
    pub honoring_gave_up: u64,
    /// When the last of them succeeded, seconds; `None` (JSON `null`) when
    /// any of them gave up (or none honors).
    pub honoring_completion_s: Option<f64>,
    /// `honoring_completion_s` divided by the physical limit of the whole
    /// fleet; `None` with it.
    pub honoring_vs_limit: Option<f64>,
}

/// The first-call times of the fleet: uniform over the window, from `seed`,
/// drawn as the clients are queued (no array of them).
fn first_calls(params: &OutageParams, seed: u64) -> impl ExactSizeIterator<Item = u64> {
    let mut rng = Rng::with_seed(crate::stream_seed(seed, 0));
    let window = params.first_call_window.as_secs_f64() * 1e9;
    (0..params.clients as usize).map(move |_| (rng.unit_f64() * window) as u64)
}

/// Runs one strategy of the outage scenario.
///
/// ```
/// use herdless_sim::{scenario::outage, OutageParams, StrategyKind};
/// let p = OutageParams { clients: 2_000, capacity: 500, burst: 50, ..Default::default() };
/// let f = outage::run(&p, StrategyKind::Backoff(herdless::Jitter::Full), 1)?;
/// assert!(f.completion_s >= p.physical_limit_s() || f.gave_up > 0);
/// # Ok::<(), herdless_sim::SimError>(())
/// ```
pub fn run(
    params: &OutageParams,
    kind: StrategyKind,
    seed: u64,
) -> Result<OutageFigures, SimError> {
    params.validate()?;
    if kind == StrategyKind::NoBackoff {
        return Err(SimError::Invalid(
            "no-backoff cannot run in the outage scenario: it would retry forever in zero \
             virtual time while the endpoint is down (use it with --scenario contention)"
                .into(),
        ));
    }
    let strategy = kind.resolve(&params.policy);
    let mut guard_params = params.guards;
    guard_params
        .breaker_release
        .get_or_insert(params.breaker_release());
    let mut guards = Guards::new(kind.guard(), &guard_params, params.clients)?;
    let fleet_seed = crate::stream_seed(seed, 1);
    let told = params.capacity_estimate * f64::from(params.capacity);
    let horizon = params.guards.pushback_horizon;
    let run = Run {
        params,
        honor: params.honor,
        clients: params.clients,
        seed,
        fleet_seed,
    };
    let (out, honoring, honoring_arrivals) = match kind.guard() {
        Some(Guard::Pushback) => run.go(
            AdaptiveEndpoint::with_callers(
                params.outage,
                params.capacity,
                params.burst,
                told,
                params.outage_end,
                horizon,
                params.clients,
            )?,
            &strategy,
            &mut guards,
        )?,
        Some(Guard::Hold) => run.go(
            HoldEndpoint::with(
                Setup {
                    outage: params.outage,
                    estimate: told,
                    end: params.outage_end,
                    horizon,
                    callers: params.clients,
                },
                params.capacity,
                params.burst,
                &params.server,
                params.plain_clients,
            )?,
            &strategy,
            &mut guards,
        )?,
        Some(Guard::Waves | Guard::WavesThrottle) => run.go(
            WaveEndpoint::new(
                params.outage,
                params.capacity,
                params.burst,
                told,
                params.outage_end,
                None,
                seed,
            )?,
            &strategy,
            &mut guards,
        )?,
        Some(Guard::StaticPushback) => run.go(
            PushbackEndpoint::with(
                params.outage,
                params.capacity,
                params.burst,
                told,
                params.outage_end,
                horizon,
            )?,
            &strategy,
            &mut guards,
        )?,
        _ => run.go(
            OutageEndpoint::new(params.outage, params.capacity, params.burst),
            &strategy,
            &mut guards,
        )?,
    };
    Ok(figures(
        params,
        kind,
        &out,
        honoring,
        honoring_arrivals.as_ref(),
    ))
}

/// One fleet run over an endpoint, with the honoring clients counted apart.
struct Run<'a> {
    /// The first-call times are drawn from these (and `seed`) as the clients
    /// are queued: no array of them.
    params: &'a OutageParams,
    honor: f64,
    clients: u32,
    seed: u64,
    fleet_seed: u64,
}

impl Run<'_> {
    fn go<E: Endpoint>(
        &self,
        endpoint: E,
        strategy: &crate::strategy::Strategy,
        guards: &mut Guards,
    ) -> Result<(FleetOutcome, HonorStats, Option<Histogram>), SimError> {
        let mut e = Honoring::new(endpoint, self.honor, self.seed, self.clients);
        let starts = first_calls(self.params, self.seed);
        let out = run_fleet_from(starts, &mut e, strategy, guards, self.fleet_seed)?;
        Ok((out, e.stats(), e.arrivals().cloned()))
    }
}
