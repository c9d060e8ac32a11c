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
//!   does not exist in the field (and would hide the synchronized give-up the
//!   issue asks about: one bucket, one cliff).
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
//! goes on. Each call's uniform level is derived from the run's seed and the
//! client's index (no per-client storage; statistically the same as the
//! engine's one draw per call). In the gRPC preset a retry costs nothing and
//! a success refunds the ratio whatever the call spent, so the engine's
//! `last_spent` bookkeeping has no effect and is not simulated.
//!
//! # The breaker in virtual time
//!
//! Simulated calls take no time, but a probe must hold the breaker for as long
//! as its call is in flight, or every caller would probe (each at its own
//! instant, none overlapping). The simulator holds the [`Probe`] for
//! [`GuardParams::probe_rtt`] (default 20 ms: two 10 ms hops, the contention
//! scenario's mean hop) and resolves it then with its call's outcome; the
//! probing client itself goes on at once. Other callers of the same process
//! that find the breaker open and the probe taken wait
//! [`Breaker::wait_for`] (uniform in `[probe_wait / 2, probe_wait]`, default
//! `probe_wait` 1 s) and ask again; the wait counts against the elapsed
//! budget, not against the attempts. The breaker opens after
//! [`GuardParams::breaker_threshold`] (default 5) consecutive failures. As in
//! the executors, it gates retries only: first calls always go out.
//!
//! # Pushback
//!
//! `+pushback` changes the endpoint, not the client: the server puts the
//! library's [`SlotAllocator`](herdless::pushback::SlotAllocator) (capacity
//! `C`, burst `burst`, horizon [`GuardParams::pushback_horizon`], in outage
//! mode until `T`) in front of the same capacity-limited handler as every
//! other strategy (see [`endpoint::PushbackEndpoint`](crate::endpoint::PushbackEndpoint)),
//! and its rejections carry the slot as Retry-After. The client honors it as
//! `herdless::Retry` does, through `Policy::server_delay` (clamped, plus the
//! core's positive spread of up to 10 %).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use herdless::breaker::{Admission, Probe};
use herdless::{Breaker, GiveUp, RetryBudget, RetryCause, Rng};

use crate::error::SimError;

/// A fleet-level guard added to a jitter mode.
///
/// ```
/// use herdless_sim::guard::Guard;
/// assert_eq!(Guard::Pushback.name(), "pushback");
/// assert_eq!(Guard::ALL.len(), 3);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Guard {
    /// A shared retry budget per process ([`RetryBudget`], gRPC preset).
    Budget,
    /// A half-open probe breaker per process ([`Breaker`]).
    Breaker,
    /// Server pushback: the endpoint answers with spread Retry-After slots.
    Pushback,
}

impl Guard {
    /// Every guard, in table order.
    pub const ALL: [Guard; 3] = [Guard::Budget, Guard::Breaker, Guard::Pushback];

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

/// How the guards are set up in a simulated fleet (see the [module
/// documentation](self) for why these defaults).
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
    /// The longest Retry-After the pushback server hands out.
    pub pushback_horizon: Duration,
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
            pushback_horizon: Duration::from_secs(60),
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
        if !(Duration::from_secs(1)..=hour).contains(&self.pushback_horizon) {
            return bad("the pushback horizon must be within 1 s..=1 h".into());
        }
        Ok(())
    }

    fn new_budget(&self) -> Result<RetryBudget, herdless::RetryBudgetError> {
        let b = RetryBudget::builder().grpc(self.budget_tokens, self.budget_token_ratio);
        match self.budget_spread {
            Some(spread) => b.spread(spread),
            None => b,
        }
        .build()
    }

    fn process(&self, client: u32) -> usize {
        (client / self.clients_per_process.max(1)) as usize
    }
}

/// What an open breaker says about a retry that is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Make the call now.
    Go,
    /// Ask again after this many nanoseconds (not a call).
    Wait(u64),
    /// Give up: waiting would pass the elapsed budget.
    GiveUp(GiveUp),
}

/// A probe in flight: released `rtt` after it went out, with its outcome.
pub(crate) struct InFlight {
    probe: Probe,
    client: u32,
    sent_ns: u64,
    release_ns: u64,
    succeeded: Option<bool>,
}

pub(crate) struct BreakerSlot {
    breaker: Arc<Breaker>,
    in_flight: Option<InFlight>,
}

impl BreakerSlot {
    /// Resolves the probe once its round trip is over.
    fn settle(&mut self, now_ns: u64) {
        if let Some(f) = &self.in_flight {
            if f.release_ns <= now_ns && f.succeeded.is_some() {
                let f = self.in_flight.take().expect("checked");
                if f.succeeded == Some(true) {
                    f.probe.succeeded();
                } else {
                    f.probe.failed();
                }
            }
        }
    }

    /// Records a call's outcome: the probe's own (kept until it is released),
    /// or a call made while closed.
    fn record(&mut self, now_ns: u64, client: u32, ok: bool) {
        self.settle(now_ns);
        if let Some(f) = &mut self.in_flight {
            if f.client == client && f.sent_ns == now_ns && f.succeeded.is_none() {
                f.succeeded = Some(ok);
                return;
            }
        }
        if ok {
            self.breaker.record_success();
        } else {
            self.breaker.record_failure();
        }
    }
}

/// The fleet-level state of one run: the library's budgets or breakers, one
/// per simulated process, created as clients appear.
pub(crate) enum GuardState {
    None,
    Budget {
        params: GuardParams,
        salt: u64,
        budgets: Vec<RetryBudget>,
    },
    Breaker {
        params: GuardParams,
        slots: Vec<BreakerSlot>,
    },
}

impl fmt::Debug for GuardState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GuardState::None => f.write_str("None"),
            GuardState::Budget { budgets, .. } => f
                .debug_struct("Budget")
                .field("processes", &budgets.len())
                .finish_non_exhaustive(),
            GuardState::Breaker { slots, .. } => f
                .debug_struct("Breaker")
                .field("processes", &slots.len())
                .finish_non_exhaustive(),
        }
    }
}

impl Clone for GuardState {
    /// A fresh state with the same parameters (budgets full, breakers closed).
    fn clone(&self) -> Self {
        match self {
            GuardState::None => GuardState::None,
            GuardState::Budget { params, salt, .. } => GuardState::Budget {
                params: *params,
                salt: *salt,
                budgets: Vec::new(),
            },
            GuardState::Breaker { params, .. } => GuardState::Breaker {
                params: *params,
                slots: Vec::new(),
            },
        }
    }
}

impl GuardState {
    pub(crate) fn new(guard: Option<Guard>, params: GuardParams, seed: u64) -> Self {
        match guard {
            Some(Guard::Budget) => GuardState::Budget {
                params,
                salt: crate::stream_seed(seed, 0xB0D6),
                budgets: Vec::new(),
            },
            Some(Guard::Breaker) => GuardState::Breaker {
                params,
                slots: Vec::new(),
            },
            Some(Guard::Pushback) | None => GuardState::None,
        }
    }

    fn budget(&mut self, client: u32) -> Option<&RetryBudget> {
        let GuardState::Budget {
            params, budgets, ..
        } = self
        else {
            return None;
        };
        let p = params.process(client);
        while budgets.len() <= p {
            // validated when the run starts
            let b = params.new_budget().expect("validated budget parameters");
            budgets.push(b);
        }
        Some(&budgets[p])
    }

    /// The call's uniform level in `[0, 1)`: a hash of the run's salt and the
    /// client (the same for every decision of the call, as in the engine).
    fn level(salt: u64, client: u32) -> f64 {
        (crate::stream_seed(salt, u64::from(client)) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    fn breaker(&mut self, client: u32) -> Option<(&mut BreakerSlot, &GuardParams)> {
        let GuardState::Breaker { params, slots } = self else {
            return None;
        };
        let p = params.process(client);
        while slots.len() <= p {
            slots.push(BreakerSlot {
                breaker: Arc::new(
                    Breaker::new(params.breaker_threshold).probe_wait(params.probe_wait),
                ),
                in_flight: None,
            });
        }
        Some((&mut slots[p], params))
    }

    /// A retry of `client` is due at `now_ns`: may it go out?
    #[inline]
    pub(crate) fn gate(
        &mut self,
        now_ns: u64,
        client: u32,
        elapsed_ns: u64,
        max_elapsed: Duration,
        rng: &mut Rng,
    ) -> Gate {
        let Some((slot, params)) = self.breaker(client) else {
            return Gate::Go;
        };
        slot.settle(now_ns);
        match slot.breaker.admit() {
            Admission::Closed => Gate::Go,
            Admission::Probe(probe) => {
                let rtt = u64::try_from(params.probe_rtt.as_nanos()).unwrap_or(u64::MAX);
                slot.in_flight = Some(InFlight {
                    probe,
                    client,
                    sent_ns: now_ns,
                    release_ns: now_ns.saturating_add(rtt),
                    succeeded: None,
                });
                Gate::Go
            }
            Admission::Wait => {
                let wait = slot.breaker.wait_for(rng);
                let after = Duration::from_nanos(elapsed_ns).saturating_add(wait);
                if after > max_elapsed {
                    Gate::GiveUp(GiveUp::MaxElapsed)
                } else {
                    Gate::Wait(u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX))
                }
            }
        }
    }

    /// A call of `client` succeeded at `now_ns`.
    #[inline]
    pub(crate) fn succeeded(&mut self, now_ns: u64, client: u32) {
        match self {
            GuardState::None => {}
            GuardState::Budget { .. } => {
                if let Some(b) = self.budget(client) {
                    b.record_success(None);
                }
            }
            GuardState::Breaker { .. } => {
                if let Some((slot, _)) = self.breaker(client) {
                    slot.record(now_ns, client, true);
                }
            }
        }
    }

    /// A call of `client` failed at `now_ns` (retryable): the breaker learns it.
    #[inline]
    pub(crate) fn failed(&mut self, now_ns: u64, client: u32) {
        if let Some((slot, _)) = self.breaker(client) {
            slot.record(now_ns, client, false);
        }
    }

    /// The call gives up for a reason of its own: the budget still charges
    /// the failure (as the engine's `denied` does).
    #[inline]
    pub(crate) fn gave_up(&mut self, client: u32) {
        if let Some(b) = self.budget(client) {
            b.record_failure();
        }
    }

    /// Asks the shared budget for the retry of `client` (always admitted
    /// without a budget).
    #[inline]
    pub(crate) fn try_retry(&mut self, client: u32) -> bool {
        let salt = match self {
            GuardState::Budget { salt, .. } => *salt,
            _ => return true,
        };
        let level = Self::level(salt, client);
        self.budget(client)
            .is_none_or(|b| b.try_retry(RetryCause::Error, level).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker_state(per: u32) -> GuardState {
        let params = GuardParams {
            clients_per_process: per,
            breaker_threshold: 2,
            ..GuardParams::default()
        };
        GuardState::new(Some(Guard::Breaker), params, 1)
    }

    const MAX: Duration = Duration::from_secs(120);

    #[test]
    fn an_open_breaker_lets_one_probe_per_process_through_for_its_round_trip() {
        let mut g = breaker_state(10);
        let mut rng = Rng::with_seed(3);
        // clients 0 and 1 (process 0) fail: open
        g.failed(0, 0);
        g.failed(0, 1);
        assert_eq!(g.gate(1_000, 0, 1_000, MAX, &mut rng), Gate::Go); // the probe
        g.failed(1_000, 0);
        // within the probe's 20 ms round trip everyone else waits...
        for c in 1..10 {
            let Gate::Wait(ns) = g.gate(2_000, c, 2_000, MAX, &mut rng) else {
                panic!("client {c} should wait")
            };
            assert!((500_000_000..=1_000_000_000).contains(&ns), "{ns}");
        }
        // ...but another process has its own breaker (closed)
        assert_eq!(g.gate(2_000, 10, 2_000, MAX, &mut rng), Gate::Go);
        // after the round trip the failed probe is released: the next probes
        assert_eq!(g.gate(21_000_000, 3, 0, MAX, &mut rng), Gate::Go);
        g.succeeded(21_000_000, 3);
        assert!(matches!(
            g.gate(21_000_001, 4, 0, MAX, &mut rng),
            Gate::Wait(_)
        ));
        // the successful probe closes the breaker once it is back
        assert_eq!(g.gate(41_000_000, 4, 0, MAX, &mut rng), Gate::Go);
        assert_eq!(g.gate(41_000_000, 5, 0, MAX, &mut rng), Gate::Go);
    }

    #[test]
    fn a_wait_past_the_elapsed_budget_gives_up() {
        let mut g = breaker_state(10);
        let mut rng = Rng::with_seed(3);
        g.failed(0, 0);
        g.failed(0, 1);
        assert_eq!(g.gate(0, 0, 0, MAX, &mut rng), Gate::Go);
        let near_end = u64::try_from(MAX.as_nanos()).unwrap() - 1;
        assert_eq!(
            g.gate(0, 1, near_end, MAX, &mut rng),
            Gate::GiveUp(GiveUp::MaxElapsed)
        );
    }

    #[test]
    fn a_process_budget_denies_once_drained_and_other_processes_keep_theirs() {
        let params = GuardParams {
            clients_per_process: 2,
            budget_tokens: 4.0,
            ..GuardParams::default()
        };
        let mut g = GuardState::new(Some(Guard::Budget), params, 1);
        // gRPC: 4 tokens, a failure costs 1, threshold 2 plus a personal
        // level in [0, 1) tokens: 3 is above every personal threshold, 2 never.
        assert!(g.try_retry(0), "4 -> 3");
        assert!(!g.try_retry(1), "3 -> 2: at the threshold");
        assert!(!g.try_retry(0), "2 -> 1");
        assert!(g.try_retry(2), "process 1 has its own bucket");
        // successes refund the ratio (0.1 each) up to the capacity
        for _ in 0..30 {
            g.succeeded(0, 0);
        }
        assert!(g.try_retry(1), "refilled to 4 -> 3");
    }
}
