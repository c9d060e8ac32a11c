//! Fleet-level guards: the library's shared retry budget, half-open breaker
//! and server pushback, as they sit in a simulated fleet.
//!
//! A [`Guard`] is added to a jitter mode to make a strategy
//! (`full+budget`, `full+breaker`, `full+pushback`, see
//! [`StrategyKind::Guarded`](crate::StrategyKind::Guarded)). The simulator
//! drives the library's own types — [`RetryBudget`], [`Breaker`] and
//! [`SlotAllocator`](herdless::pushback::SlotAllocator) — not copies, in the
//! order the executors use them (`herdless::retry`'s engine): on a failed
//! call, the breaker learns the failure, the attempt limit is checked, the
//! delay is drawn (or the server's Retry-After honored), the elapsed budget
//! is checked, then the shared budget is asked; before a retry goes out, an
//! open breaker may make it wait.
//!
//! # How process-wide sharing maps onto a simulated fleet
//!
//! A budget and a breaker are shared by the calls of *one process*; a fleet
//! is many processes, each with its own. The simulator groups clients into
//! **processes of [`GuardParams::clients_per_process`] clients** (default
//! 100: clients `0..100` share process 0's budget and breaker, and so on;
//! 400 processes for the default 40,000 clients). Why not one per client, or
//! one for the whole fleet?
//!
//! * One budget for 40,000 terminals would be a fleet-wide coordinator that
//!   does not exist in the field (and would hide the synchronized give-up that
//!   matters: one bucket, one cliff).
//! * One budget per client degenerates into a per-call attempt cap: with one
//!   call per client nothing is shared.
//! * A process serving a hundred concurrent calls is the common case the
//!   budget is designed for (a store's gateway in front of its terminals, an
//!   application server in front of a database). Because every process sees a
//!   similar share of an outage, the processes' buckets drain together: the
//!   fleet-wide synchronized give-up the library's per-call level spread is
//!   meant to prevent can happen here, and the give-up histogram shows
//!   whether it does.
//!
//! The budget is the gRPC preset ([`RetryBudget::grpc`]) with
//! [`GuardParams::budget_tokens`] (default 1,000, gRPC's largest) and ratio
//! [`GuardParams::budget_token_ratio`] (0.1), with the library's default
//! anti-synchronization spread. Tokens are sized to the process: the first
//! wave (one failure per client, 100 tokens) leaves it at 900, above the
//! spread band 750..500, so the budget starts denying only as the outage
//! goes on. Each call's uniform level is the engine's own draw (two bytes of
//! its state), taken at the call's first retry.
//!
//! # The breaker in virtual time
//!
//! Simulated calls take no time, but a probe must hold the breaker for as long
//! as its call is in flight, or every caller would probe (each at its own
//! instant, none overlapping). A probe's call therefore takes
//! [`GuardParams::probe_rtt`] (default 20 ms: two 10 ms hops, the contention
//! scenario's mean hop): the endpoint answers when the call goes out, and the
//! answer reaches the probing client's engine a round trip later, which then
//! resolves the probe and decides the client's next step. Other callers of the same process
//! that find the breaker open and the probe taken wait
//! [`Breaker::wait_for`] (uniform in `[probe_wait / 2, probe_wait]`, default
//! `probe_wait` 1 s) and ask again; the wait counts against the elapsed
//! budget, not against the attempts. The breaker opens after
//! [`GuardParams::breaker_threshold`] (default 5) consecutive failures. As in
//! the executors, it gates retries only: first calls always go out. When a
//! probe succeeds, the callers held behind it are released over
//! [`GuardParams::breaker_release`] (the outage scenario: `N / C`, the time
//! the endpoint needs to serve the fleet, i.e. a process's held callers over
//! its share of the capacity), not all at their next re-check.
//!
//! # The throttle, and the CUBIC baseline
//!
//! `+throttle` gives each simulated process (the same groups of
//! [`GuardParams::clients_per_process`] clients as the budget and the
//! breaker: a process's calls share one rate, whichever client makes them)
//! the library's [`Throttle`] with its default settings, reached through the
//! engine's [`Context`] like the budget: the event loop asks
//! [`Engine::ready`](herdless::engine::Engine::ready) before every attempt,
//! the first included, and the engine records each answer. Its clock is the
//! virtual time (every engine starts at its client's first-call time on
//! it). The endpoint is the plain one (no pushback): the throttle needs no
//! server help and counts every 503.
//!
//! `+cubic` is the AWS-SDK-adaptive baseline of [`cubic`](crate::cubic), one
//! per process too, asked before the engine's gate and told every answer.
//!
//! # Waves
//!
//! `+waves` changes both sides: the endpoint puts the library's
//! [`WavePlanner`](herdless::pushback::waves::WavePlanner) in front of the
//! capacity ([`endpoint::WaveEndpoint`](crate::endpoint::WaveEndpoint)),
//! and every client has its own [`WaveGuard`] (one per client, not per
//! process: a wave is a client's, computed from its id; here its index),
//! reached through the engine's [`Context`]. The loop hands the guard what
//! each answer announced before the engine decides, as the executors do.
//!
//! # Pushback
//!
//! `+pushback` changes the endpoint, not the client: the server puts the
//! library's [`SlotAllocator`](herdless::pushback::SlotAllocator) (capacity
//! `C`, burst `burst`, horizon [`GuardParams::pushback_horizon`], in outage
//! mode until `T`) in front of the same capacity-limited handler as every
//! other strategy (see [`endpoint::PushbackEndpoint`](crate::endpoint::PushbackEndpoint)),
//! and its rejections carry the slot as Retry-After. The client honors it as
//! `herdless::Retry` does: the engine clamps it and adds the policy's positive
//! spread of up to 10 %.

use std::fmt;

use herdless::engine::Context;
use herdless::guard::Throttle;
use herdless::guard::waves::WaveGuard;
use herdless::pushback::waves::WavePlan;
use herdless::{Breaker, Policy, RetryBudget};

use crate::cubic::CubicLimiter;

use crate::error::SimError;
use crate::strategy::Reply;

mod params;
pub use params::GuardParams;

/// A fleet-level guard added to a jitter mode.
///
/// ```
/// use herdless_sim::guard::Guard;
/// assert_eq!(Guard::Pushback.name(), "pushback");
/// assert_eq!(Guard::ALL.len(), 9);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Guard {
    /// A shared retry budget per process ([`RetryBudget`], gRPC preset).
    Budget,
    /// A half-open probe breaker per process ([`Breaker`]).
    Breaker,
    /// Server pushback: the endpoint answers with spread Retry-After slots
    /// from the library's adaptive allocator (it learns the capacity and the
    /// outage's end).
    Pushback,
    /// Server pushback with the static slot allocator: told the capacity and
    /// the outage's end (or recovered by an operator at the end).
    StaticPushback,
    /// Server pushback with a hold: the adaptive allocator keeps requests
    /// open (a capacity-aware reconnect queue) and answers them when the
    /// service can take them; what it cannot hold gets slots.
    Hold,
    /// A client-side adaptive throttle per process ([`Throttle`]): no
    /// server help, the plain endpoint.
    Throttle,
    /// The AWS-SDK-adaptive baseline per process ([`CubicLimiter`]): a
    /// token bucket whose rate follows CUBIC on throttling answers.
    Cubic,
    /// Cohort-based reactivation: the endpoint puts the library's
    /// [`WavePlanner`](herdless::pushback::waves::WavePlanner) in front of
    /// the capacity and announces a plan of waves with each rejection; each
    /// client has a [`WaveGuard`] that comes back in its own wave.
    Waves,
    /// Waves and the throttle together: the wave planner's endpoint, a
    /// [`WaveGuard`] per client and a [`Throttle`] per process, in one
    /// engine context (what an outage with an unknown end needs from both:
    /// the throttle paces the calls until the end is seen, the waves bring
    /// the fleet back after it).
    WavesThrottle,
}

impl Guard {
    /// Every guard, in table order.
    pub const ALL: [Guard; 9] = [
        Guard::Budget,
        Guard::Breaker,
        Guard::Pushback,
        Guard::StaticPushback,
        Guard::Hold,
        Guard::Throttle,
        Guard::Cubic,
        Guard::Waves,
        Guard::WavesThrottle,
    ];

    /// The guard's name (the part after `+` in a strategy name).
    ///
    /// ```
    /// assert_eq!(herdless_sim::guard::Guard::Budget.name(), "budget");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Guard::Budget => "budget",
            Guard::Breaker => "breaker",
            Guard::Pushback => "pushback",
            Guard::StaticPushback => "static-pushback",
            Guard::Hold => "hold",
            Guard::Throttle => "throttle",
            Guard::Cubic => "cubic",
            Guard::Waves => "waves",
            Guard::WavesThrottle => "waves+throttle",
        }
    }

    /// Parses a guard name (case-insensitive).
    ///
    /// ```
    /// use herdless_sim::guard::Guard;
    /// assert_eq!(Guard::parse("Breaker"), Some(Guard::Breaker));
    /// assert_eq!(Guard::parse("fuse"), None);
    /// ```
    pub fn parse(s: &str) -> Option<Guard> {
        Guard::ALL
            .into_iter()
            .find(|g| g.name().eq_ignore_ascii_case(s.trim()))
    }
}

impl fmt::Display for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The fleet-level state of one run: the library's budgets or breakers, one
/// per simulated process, and the reply of each process's probe while it is
/// in flight.
pub struct Guards {
    params: GuardParams,
    budgets: Vec<RetryBudget>,
    breakers: Vec<Breaker>,
    throttles: Vec<Throttle>,
    cubics: Vec<CubicLimiter>,
    /// Per client: its wave guard (its key is its index).
    waves: Vec<WaveGuard>,
    /// Per process: the answer to its probe, until the probe's round trip ends.
    pub(crate) in_flight: Vec<Option<Reply>>,
}

impl fmt::Debug for Guards {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guards")
            .field("budgets", &self.budgets.len())
            .field("breakers", &self.breakers.len())
            .finish_non_exhaustive()
    }
}

impl Guards {
    /// No fleet-level guard: every context is the policy alone.
    ///
    /// ```
    /// let g = herdless_sim::guard::Guards::none();
    /// let p = herdless::Policy::default();
    /// assert_eq!(g.context(&p, 0).max_elapsed(), p.max_elapsed());
    /// ```
    pub fn none() -> Self {
        Guards {
            params: GuardParams::default(),
            budgets: Vec::new(),
            breakers: Vec::new(),
            throttles: Vec::new(),
            cubics: Vec::new(),
            waves: Vec::new(),
            in_flight: Vec::new(),
        }
    }

    /// The guards of a run of `clients` clients: for [`Guard::Budget`] one
    /// budget per process, for [`Guard::Breaker`] one breaker per process;
    /// nothing for [`Guard::Pushback`] (it is the endpoint's) or no guard.
    ///
    /// # Errors
    ///
    /// [`SimError::Invalid`] when `params` are out of range.
    ///
    /// ```
    /// use herdless_sim::guard::{Guard, GuardParams, Guards};
    /// let g = Guards::new(Some(Guard::Budget), &GuardParams::default(), 250)?;
    /// assert_eq!(g.processes(), 3);
    /// # Ok::<(), herdless_sim::SimError>(())
    /// ```
    pub fn new(guard: Option<Guard>, params: &GuardParams, clients: u32) -> Result<Self, SimError> {
        params.validate()?;
        let processes = clients.div_ceil(params.clients_per_process) as usize;
        let mut g = Guards {
            params: *params,
            ..Guards::none()
        };
        match guard {
            Some(Guard::Budget) => {
                g.budgets = (0..processes)
                    .map(|_| params.new_budget())
                    .collect::<Result<_, _>>()
                    .map_err(|e| SimError::Invalid(format!("retry budget: {e}")))?;
            }
            Some(Guard::Breaker) => {
                g.breakers = (0..processes)
                    .map(|_| {
                        Breaker::new(params.breaker_threshold)
                            .probe_wait(params.probe_wait)
                            .release_window(params.breaker_release.unwrap_or_default())
                    })
                    .collect();
                g.in_flight = vec![None; processes];
            }
            Some(Guard::Throttle) => {
                g.throttles = (0..processes).map(|_| Throttle::new()).collect();
            }
            Some(Guard::Cubic) => {
                g.cubics = vec![CubicLimiter::new(0); processes];
            }
            Some(Guard::Waves) => {
                g.waves = (0..clients)
                    .map(|i| WaveGuard::with_key(u64::from(i)))
                    .collect();
            }
            Some(Guard::WavesThrottle) => {
                g.waves = (0..clients)
                    .map(|i| WaveGuard::with_key(u64::from(i)))
                    .collect();
                g.throttles = (0..processes).map(|_| Throttle::new()).collect();
            }
            Some(Guard::Pushback | Guard::StaticPushback | Guard::Hold) | None => {}
        }
        Ok(g)
    }

    /// How many processes hold a budget, a breaker, a throttle or a CUBIC
    /// limiter (0 without one).
    ///
    /// ```
    /// assert_eq!(herdless_sim::guard::Guards::none().processes(), 0);
    /// ```
    pub fn processes(&self) -> usize {
        self.budgets
            .len()
            .max(self.breakers.len())
            .max(self.throttles.len())
            .max(self.cubics.len())
    }

    /// The CUBIC baseline's gate for `client` at `now`: `Some(wait_ns)` when
    /// its process's bucket has no token (nothing without the baseline).
    #[inline]
    pub(crate) fn cubic_wait(&mut self, client: u32, now: u64) -> Option<u64> {
        if self.cubics.is_empty() {
            // No division by the process size on every call.
            return None;
        }
        let p = self.params.process(client);
        self.cubics.get_mut(p)?.acquire(now).err()
    }

    /// The CUBIC baseline learns an answer: a refusal counts as throttling
    /// if [`GuardParams::cubic_counts_503`] says so.
    #[inline]
    pub(crate) fn cubic_answer(&mut self, client: u32, now: u64, refused: bool) {
        if self.cubics.is_empty() {
            return;
        }
        let p = self.params.process(client);
        let throttled = refused && self.params.cubic_counts_503;
        if let Some(c) = self.cubics.get_mut(p) {
            c.answer(now, throttled);
        }
    }

    /// The engine's context for a decision of `client` under `policy`: the
    /// client's process's budget or breaker, events off (a million simulated
    /// clients would flood any subscriber).
    ///
    /// ```
    /// use herdless_sim::guard::{Guard, GuardParams, Guards};
    /// let g = Guards::new(Some(Guard::Breaker), &GuardParams::default(), 10)?;
    /// let p = herdless::Policy::default();
    /// let _cx = g.context(&p, 3);
    /// # Ok::<(), herdless_sim::SimError>(())
    /// ```
    #[inline]
    pub fn context<'a>(&'a self, policy: &'a Policy, client: u32) -> Context<'a> {
        let cx = Context::new(policy).trace(false).metrics(false);
        let cx = match self.waves.get(client as usize) {
            Some(w) => cx.waves(w),
            None => cx,
        };
        if self.budgets.is_empty() && self.breakers.is_empty() && self.throttles.is_empty() {
            // A plain strategy: no division by the process size per decision.
            return cx;
        }
        let p = self.params.process(client);
        let cx = match self.budgets.get(p) {
            Some(b) => cx.budget(b),
            None => cx,
        };
        let cx = match self.breakers.get(p) {
            Some(b) => cx.breaker(b),
            None => cx,
        };
        match self.throttles.get(p) {
            Some(t) => cx.throttle(t),
            None => cx,
        }
    }

    /// What the answer to `client` announced (a plan of waves, or none):
    /// its wave guard takes it at the next decision (nothing without
    /// guards).
    #[inline]
    pub(crate) fn observe(&self, client: u32, plan: Option<WavePlan>) {
        if let Some(w) = self.waves.get(client as usize) {
            w.observe(plan);
        }
    }

    /// The wave guard of `client`, if the strategy has them.
    pub fn wave_guard(&self, client: u32) -> Option<&WaveGuard> {
        self.waves.get(client as usize)
    }

    /// The process of `client`.
    #[inline]
    pub(crate) fn process(&self, client: u32) -> usize {
        self.params.process(client)
    }

    /// How long a probe's call takes, in nanoseconds.
    pub(crate) fn probe_rtt_ns(&self) -> u64 {
        u64::try_from(self.params.probe_rtt.as_nanos()).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn clients_share_their_process_guard_and_no_other() {
        let params = GuardParams {
            clients_per_process: 2,
            budget_tokens: 4.0,
            budget_spread: Some(0.0),
            ..GuardParams::default()
        };
        let g = Guards::new(Some(Guard::Budget), &params, 5).unwrap();
        assert_eq!(g.processes(), 3);
        let p = Policy::default();
        // Drain process 0 through client 1's context: client 0 sees it, client 2 does not.
        let cx = g.context(&p, 1);
        let mut call = herdless::engine::Engine::new(Duration::ZERO);
        call.begin();
        let mut rng = herdless::Rng::with_seed(1);
        let _ = call.failed(
            &cx,
            Duration::ZERO,
            herdless::Classification::retryable(),
            herdless::RetryCause::Error,
            &mut rng,
        );
        assert_eq!(g.budgets[0].tokens(), 3.0);
        assert_eq!(g.budgets[1].tokens(), 4.0);
        assert_eq!(g.process(0), g.process(1));
        assert_ne!(g.process(1), g.process(2));
    }

    #[test]
    fn out_of_range_parameters_are_refused() {
        let bad = GuardParams {
            clients_per_process: 0,
            ..GuardParams::default()
        };
        assert!(Guards::new(Some(Guard::Budget), &bad, 10).is_err());
    }
}
