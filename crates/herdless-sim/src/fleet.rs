//! The event loop for a fleet of independent retrying clients.
//!
//! Each client makes its first call at a given virtual time and, after every
//! failed call, asks its strategy's [`Retrier`] when to call
//! again (or whether to give up). The loop pops the earliest pending call from
//! the [`EventQueue`], asks the [`Endpoint`], records the call in the
//! histograms and schedules the next one. Nothing sleeps: virtual time jumps
//! from event to event.
//!
//! # Cost and memory
//!
//! A [`Client`] is the library's 16-byte [`Schedule`], the first call's time,
//! the attempt count and the client's index: 32 bytes. It lives *in* the
//! client's one pending event (see [`queue`](crate::queue)), so there is no
//! per-client array to miss in the cache: 40 bytes per client in the queue
//! (a million clients, six strategies on two threads: 212 MB peak resident
//! memory for the whole run, see the README). Per call the
//! loop does one queue pop, one endpoint check, one or two histogram
//! increments and, on failure, one library delay draw, one budget check and
//! one queue push; nothing allocates once the buckets have grown.
//!
//! # Randomness
//!
//! One generator (the library's [`Rng`]) per run draws every client's delays in
//! event order. The draws are independent whichever client takes them, so this
//! is statistically the same as one generator per client (what the library
//! does in production) and saves 8 bytes per client. It is *not* the
//! "everyone seeded alike" failure mode: no two clients share a draw.

use herdless::{GiveUp, Rng, Schedule};

use crate::endpoint::Endpoint;
use crate::error::SimError;
use crate::guard::Gate;
use crate::metrics::Histogram;
use crate::queue::EventQueue;
use crate::strategy::{Decision, Failure, Reply, Retrier, Strategy};

/// The most calls one run may simulate before it is stopped with
/// [`SimError::TooManyCalls`] (a guard against parameter combinations that
/// would retry forever in zero virtual time).
pub const MAX_CALLS: u64 = 2_000_000_000;

/// One simulated client's state (carried by its pending event).
#[derive(Debug, Clone, Copy, Default)]
pub struct Client {
    /// The library's per-retrier schedule.
    pub schedule: Schedule,
    /// Virtual time of the first call, in nanoseconds.
    pub start_ns: u64,
    /// Calls made so far.
    pub attempts: u32,
    /// The client's index.
    pub id: u32,
}

/// What a fleet run measured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FleetOutcome {
    /// Every call made, by every client.
    pub calls: u64,
    /// Clients whose last call succeeded.
    pub succeeded: u64,
    /// Clients that gave up (the budget ran out).
    pub gave_up: u64,
    /// Of those, clients denied by a shared retry budget
    /// ([`GiveUp::RetryBudget`]).
    pub gave_up_retry_budget: u64,
    /// Retries an open breaker made wait (each a re-check, not a call).
    pub breaker_waits: u64,
    /// Virtual time at which the last client succeeded or gave up (ns).
    pub last_done_ns: u64,
    /// Virtual time of the last successful call (ns; 0 when none succeeded).
    pub last_success_ns: u64,
    /// Every call, per 100 ms bucket.
    pub arrivals: Histogram,
    /// Calls after the first (retries), per 100 ms bucket.
    pub retries: Histogram,
    /// Give-ups per 100 ms bucket (a synchronized give-up shows as a spike).
    pub give_ups: Histogram,
}

/// Runs a fleet whose client `i` first calls at `starts[i]` (nanoseconds)
/// against `endpoint` under `strategy`, drawing delays from a generator seeded
/// with `seed`, until every client has succeeded or given up.
///
/// ```
/// use herdless_sim::endpoint::FailFirst;
/// use herdless_sim::fleet::run_fleet;
/// use herdless_sim::StrategyKind;
/// let strategy = StrategyKind::Backoff(herdless::Jitter::None).resolve(&herdless::Policy::default());
/// let out = run_fleet(&[0, 0, 0], &mut FailFirst::new(2), &strategy, 1)?;
/// assert_eq!(out.calls, 9);           // 3 clients × (2 failures + 1 success)
/// assert_eq!(out.succeeded, 3);
/// assert_eq!(out.last_done_ns, 1_500_000_000); // 0.5 s + 1 s, no jitter
/// # Ok::<(), herdless_sim::SimError>(())
/// ```
pub fn run_fleet<E: Endpoint>(
    starts: &[u64],
    endpoint: &mut E,
    strategy: &Strategy,
    seed: u64,
) -> Result<FleetOutcome, SimError> {
    run_fleet_with(starts, endpoint, strategy.retrier(), seed)
}

/// [`run_fleet`] with a given per-run decision maker (e.g. one whose
/// fleet-level guards were set up with [`Strategy::retrier_with`]).
///
/// A retry that is due first passes [`Retrier::gate`]: an open breaker may
/// make it wait (rescheduled, not counted as a call) or give up.
///
/// ```
/// use herdless_sim::endpoint::FailFirst;
/// use herdless_sim::fleet::run_fleet_with;
/// use herdless_sim::{guard::GuardParams, StrategyKind};
/// let s = "full+budget".parse::<StrategyKind>()?.resolve(&herdless::Policy::default());
/// let out = run_fleet_with(&[0; 50], &mut FailFirst::new(1), s.retrier_with(&GuardParams::default(), 1), 1)?;
/// assert_eq!((out.succeeded, out.gave_up_retry_budget), (50, 0)); // 1000 tokens: no denial
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run_fleet_with<E: Endpoint>(
    starts: &[u64],
    endpoint: &mut E,
    mut retrier: Retrier,
    seed: u64,
) -> Result<FleetOutcome, SimError> {
    let n = u32::try_from(starts.len()).map_err(|_| SimError::TooManyClients)?;
    let mut queue: EventQueue<Client> = EventQueue::with_capacity(starts.len());
    for (id, &start_ns) in (0..n).zip(starts) {
        let client = Client {
            start_ns,
            id,
            ..Client::default()
        };
        queue.push(start_ns, client);
    }
    let mut rng = Rng::with_seed(seed);
    let mut out = FleetOutcome::default();

    while let Some(ev) = queue.pop() {
        let now = ev.at_ns;
        let mut c = ev.client;
        if c.attempts > 0 {
            match retrier.gate(now, c.id, now - c.start_ns, &mut rng) {
                Gate::Go => {}
                Gate::Wait(d) => {
                    out.breaker_waits += 1;
                    queue.push(now.saturating_add(d), c);
                    continue;
                }
                Gate::GiveUp(reason) => {
                    out.give_up(now, reason);
                    continue;
                }
            }
        }
        c.attempts += 1;
        out.calls += 1;
        out.arrivals.add(now);
        if c.attempts > 1 {
            out.retries.add(now);
        }
        if out.calls > MAX_CALLS {
            return Err(SimError::TooManyCalls(MAX_CALLS));
        }
        let reply = endpoint.call(now, c.id, c.attempts);
        if reply == Reply::Ok {
            retrier.on_success(now, c.id);
            out.succeeded += 1;
            out.last_done_ns = out.last_done_ns.max(now);
            out.last_success_ns = out.last_success_ns.max(now);
            continue;
        }
        let elapsed = now - c.start_ns;
        let failure = Failure {
            client: c.id,
            now_ns: now,
            attempts: c.attempts,
            elapsed_ns: elapsed,
            reply,
        };
        match retrier.on_failure(&mut c.schedule, &mut rng, failure) {
            Decision::RetryAfter(d) => queue.push(now.saturating_add(d), c),
            Decision::GiveUp(reason) => out.give_up(now, reason),
        }
    }
    Ok(out)
}

impl FleetOutcome {
    fn give_up(&mut self, now: u64, reason: GiveUp) {
        self.gave_up += 1;
        if reason == GiveUp::RetryBudget {
            self.gave_up_retry_budget += 1;
        }
        self.give_ups.add(now);
        self.last_done_ns = self.last_done_ns.max(now);
    }
}
