//! The event loop for a fleet of independent retrying clients.
//!
//! Each client makes its first call at a given virtual time and carries the
//! library's per-call state, [`Engine`]. The loop pops the earliest pending
//! event from the [`EventQueue`], asks the engine whether a due retry may
//! start ([`Engine::ready`]: an open breaker may make it wait), asks the
//! [`Endpoint`], records the call in the histograms and reports the answer to
//! the engine ([`Engine::succeeded`] / [`Engine::failed`]), whose decision
//! schedules the next event. Nothing sleeps: virtual time jumps from event to
//! event. The loop itself decides nothing about retrying.
//!
//! # Cost and memory
//!
//! A [`Client`] is the engine's 24 bytes, the client's index and a flag. It
//! lives *in* the client's one pending event (see [`queue`](crate::queue)), so
//! there is no per-client array to miss in the cache: 32 bytes per client in
//! the queue ([`PackedClient`]: the event's time within its 134 ms period
//! shares a word with the flag), and the first-call times are drawn as the
//! clients are queued ([`run_fleet_from`]), so no array of them is kept
//! either. Per call the loop does one queue pop, one endpoint check, one or
//! two histogram increments and one engine decision (on failure: one delay
//! draw and one queue push); nothing allocates once the queue's chunk pool
//! has grown.
//!
//! # Randomness
//!
//! One generator (the library's [`Rng`]) per run draws every client's delays in
//! event order. The draws are independent whichever client takes them, so this
//! is statistically the same as one generator per client (what the library
//! does in production) and saves 8 bytes per client. It is *not* the
//! "everyone seeded alike" failure mode: no two clients share a draw.

use std::collections::HashMap;
use std::time::Duration;

use herdless::engine::{Decision, Engine, Gate};
use herdless::{Classification, GiveUp, RetryCause, Rng};

use crate::endpoint::Endpoint;
use crate::error::SimError;
use crate::guard::Guards;
use crate::latency::Latency;
use crate::metrics::Histogram;
use crate::queue::{EventQueue, OFFSET_MASK, Payload};
use crate::strategy::{Reply, Strategy};
/// The most calls one run may simulate before it is stopped with
/// [`SimError::TooManyCalls`] (a guard against parameter combinations that
/// would retry forever in zero virtual time).
pub const MAX_CALLS: u64 = 2_000_000_000;

/// One simulated client's state (carried by its pending event).
#[derive(Debug)]
pub struct Client {
    /// The library's per-call state.
    pub engine: Engine,
    /// The client's index.
    pub id: u32,
    /// The client's probe call is out: its answer arrives with this event.
    returning: u32,
}

/// A [`Client`] in the queue: its in-period time offset and flag share one
/// word beside the index, so the entry is the engine's 24 bytes and 8 more.
#[derive(Debug)]
pub struct PackedClient {
    engine: Engine,
    id: u32,
    /// The in-period offset (low 27 bits) and `returning` (bit 31).
    meta: u32,
}

const RETURNING: u32 = 1 << 31;

impl Payload for Client {
    type Packed = PackedClient;

    #[inline]
    fn pack(self, offset: u32) -> PackedClient {
        PackedClient {
            engine: self.engine,
            id: self.id,
            meta: offset | if self.returning != 0 { RETURNING } else { 0 },
        }
    }

    #[inline]
    fn unpack(p: PackedClient) -> (Client, u32) {
        let client = Client {
            engine: p.engine,
            id: p.id,
            returning: u32::from(p.meta & RETURNING != 0),
        };
        (client, p.meta & OFFSET_MASK)
    }

    #[inline]
    fn offset(p: &PackedClient) -> u32 {
        p.meta & OFFSET_MASK
    }

    #[inline]
    fn take(p: &mut PackedClient) -> PackedClient {
        std::mem::replace(
            p,
            PackedClient {
                engine: Engine::new(Duration::ZERO),
                id: 0,
                meta: 0,
            },
        )
    }
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
    /// Clients that made `max_attempts` attempts ([`GiveUp::MaxAttempts`]).
    pub gave_up_max_attempts: u64,
    /// Clients whose next wait would have passed the elapsed limit
    /// ([`GiveUp::MaxElapsed`]).
    pub gave_up_max_elapsed: u64,
    /// Attempts a gate made wait: an open breaker, a throttle's or the CUBIC
    /// baseline's turn (each a re-check, not a call).
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
    /// Successes per 100 ms bucket (when the clients' calls were done).
    pub successes: Histogram,
    /// The most calls the endpoint held open at once (0 without a hold).
    pub max_held: u64,
    /// Calls that reached the service itself, per 100 ms bucket (its own
    /// refusals included; empty for an endpoint without one).
    pub service_load: Histogram,
    /// Each success's latency from its client's intended send time (its
    /// engine's start), whatever made it wait.
    pub latency: Latency,
}

/// Runs a fleet whose client `i` first calls at `starts[i]` (nanoseconds)
/// against `endpoint` under `strategy`, drawing from a generator seeded with
/// `seed`, until every client has succeeded or given up.
///
/// ```
/// use herdless_sim::endpoint::FailFirst;
/// use herdless_sim::event_loop::run_fleet;
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
    run_fleet_with(starts, endpoint, strategy, &mut Guards::none(), seed)
}

/// [`run_fleet`] with fleet-level guards (see [`Guards::new`]).
///
/// ```
/// use herdless_sim::endpoint::FailFirst;
/// use herdless_sim::event_loop::run_fleet_with;
/// use herdless_sim::guard::{GuardParams, Guards};
/// use herdless_sim::StrategyKind;
/// let kind = "full+budget".parse::<StrategyKind>()?;
/// let s = kind.resolve(&herdless::Policy::default());
/// let mut guards = Guards::new(kind.guard(), &GuardParams::default(), 50)?;
/// let out = run_fleet_with(&[0; 50], &mut FailFirst::new(1), &s, &mut guards, 1)?;
/// assert_eq!((out.succeeded, out.gave_up_retry_budget), (50, 0)); // 1000 tokens: no denial
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run_fleet_with<E: Endpoint>(
    starts: &[u64],
    endpoint: &mut E,
    strategy: &Strategy,
    guards: &mut Guards,
    seed: u64,
) -> Result<FleetOutcome, SimError> {
    run_fleet_from(starts.iter().copied(), endpoint, strategy, guards, seed)
}

/// [`run_fleet_with`] with the first-call times drawn as the clients are
/// queued: a fleet of millions keeps no array of them (8 bytes per client).
///
/// ```
/// use herdless_sim::endpoint::FailFirst;
/// use herdless_sim::event_loop::run_fleet_from;
/// use herdless_sim::guard::Guards;
/// use herdless_sim::StrategyKind;
/// let s = StrategyKind::Backoff(herdless::Jitter::None).resolve(&herdless::Policy::default());
/// let starts = (0..3u32).map(|i| u64::from(i) * 1_000);
/// let out = run_fleet_from(starts, &mut FailFirst::new(1), &s, &mut Guards::none(), 1)?;
/// assert_eq!(out.calls, 6);
/// # Ok::<(), herdless_sim::SimError>(())
/// ```
pub fn run_fleet_from<E: Endpoint>(
    starts: impl ExactSizeIterator<Item = u64>,
    endpoint: &mut E,
    strategy: &Strategy,
    guards: &mut Guards,
    seed: u64,
) -> Result<FleetOutcome, SimError> {
    run_fleet_intended(starts.map(|s| (s, s)), endpoint, strategy, guards, seed)
}

/// [`run_fleet_from`] for clients that first call later than they meant
/// to: each item is `(intended, first)`, the time the client wanted to call
/// (its engine starts then: its elapsed limit and its latency count from
/// it) and the time its first call goes (a plan announced before a
/// disconnect puts it in its wave).
///
/// ```
/// use herdless_sim::endpoint::FailFirst;
/// use herdless_sim::event_loop::run_fleet_intended;
/// use herdless_sim::guard::Guards;
/// use herdless_sim::StrategyKind;
/// let s = StrategyKind::Backoff(herdless::Jitter::None).resolve(&herdless::Policy::default());
/// let out = run_fleet_intended([(0, 2_000_000_000)].into_iter(), &mut FailFirst::new(0), &s, &mut Guards::none(), 1)?;
/// assert_eq!(out.latency.max(), Some(std::time::Duration::from_millis(2_010)));
/// # Ok::<(), herdless_sim::SimError>(())
/// ```
pub fn run_fleet_intended<E: Endpoint>(
    starts: impl ExactSizeIterator<Item = (u64, u64)>,
    endpoint: &mut E,
    strategy: &Strategy,
    guards: &mut Guards,
    seed: u64,
) -> Result<FleetOutcome, SimError> {
    let n = u32::try_from(starts.len()).map_err(|_| SimError::TooManyClients)?;
    let mut queue: EventQueue<Client> = EventQueue::with_capacity(starts.len());
    for (id, (intended_ns, first_ns)) in (0..n).zip(starts) {
        let client = Client {
            engine: Engine::new(Duration::from_nanos(intended_ns)),
            id,
            returning: 0,
        };
        queue.push(first_ns.max(intended_ns), client);
    }
    let policy = strategy.policy();
    let max_elapsed_ns = u64::try_from(policy.max_elapsed().as_nanos()).unwrap_or(u64::MAX);
    let rtt = guards.probe_rtt_ns();
    let mut rng = Rng::with_seed(seed);
    let mut out = FleetOutcome::default();
    // Clients whose call the endpoint holds open, until it answers them.
    let mut parked: HashMap<u32, Client> = HashMap::new();
    // The endpoint's next answer is a tick event in the same queue.
    let mut tick_at: Option<u64> = None;

    while let Some(ev) = queue.pop() {
        let now = ev.at_ns;
        let at = Duration::from_nanos(now);
        let mut c = ev.client;
        if c.id == TICK {
            if tick_at == Some(now) {
                tick_at = None;
            }
            while let Some((id, reply)) = endpoint.answer(now) {
                if let Some(mut held) = parked.remove(&id) {
                    let step = &mut Step {
                        guards,
                        policy,
                        rng: &mut rng,
                        out: &mut out,
                    };
                    if let Some(next) = settle(&mut held, reply, now, step) {
                        queue.push(next, held);
                    }
                }
            }
            arm(&*endpoint, &mut queue, &mut tick_at, now.saturating_add(1));
            continue;
        }
        let reply = if c.returning != 0 {
            // A probe's answer, back after its round trip.
            c.returning = 0;
            let p = guards.process(c.id);
            let held = guards.in_flight[p].take();
            held.unwrap_or(Reply::Rejected { retry_after: None })
        } else {
            if let Some(wait) = guards.cubic_wait(c.id, now) {
                out.breaker_waits += 1;
                queue.push(now.saturating_add(wait), c);
                continue;
            }
            match c.engine.ready(&guards.context(policy, c.id), at, &mut rng) {
                Gate::Go => {}
                Gate::Wait(d) => {
                    out.breaker_waits += 1;
                    queue.push(now.saturating_add(nanos(d)), c);
                    continue;
                }
                Gate::GiveUp(reason) => {
                    out.give_up(now, reason);
                    continue;
                }
            }
            let attempt = c.engine.begin();
            out.calls += 1;
            out.arrivals.add(now);
            if attempt > 1 {
                out.retries.add(now);
            }
            if out.calls > MAX_CALLS {
                return Err(SimError::TooManyCalls(MAX_CALLS));
            }
            // What the client waits for an answer: the rest of its elapsed
            // limit (the policy has no attempt timeout here).
            let wait = max_elapsed_ns.saturating_sub(nanos(c.engine.elapsed(at)));
            let reply = endpoint.call_waiting(now, c.id, attempt, wait);
            if reply == Reply::Held {
                parked.insert(c.id, c);
                arm(&*endpoint, &mut queue, &mut tick_at, now);
                continue;
            }
            if c.engine.is_probe() {
                let p = guards.process(c.id);
                guards.in_flight[p] = Some(reply);
                c.returning = 1;
                queue.push(now.saturating_add(rtt), c);
                continue;
            }
            reply
        };
        let step = &mut Step {
            guards,
            policy,
            rng: &mut rng,
            out: &mut out,
        };
        if let Some(next) = settle(&mut c, reply, now, step) {
            queue.push(next, c);
        }
    }
    out.max_held = endpoint.max_held();
    if let Some(load) = endpoint.service_load() {
        out.service_load = load.clone();
    }
    Ok(out)
}

/// The client id of the endpoint's tick events (no client has it: a fleet
/// has at most 10⁷ clients).
const TICK: u32 = u32::MAX;

/// What settling a reply needs from the loop.
struct Step<'a, 'g> {
    guards: &'a mut Guards,
    policy: &'g herdless::Policy,
    rng: &'a mut Rng,
    out: &'a mut FleetOutcome,
}

/// Reports `reply` to the client's engine at `now`: `Some(time)` when the
/// client calls again then (the loop queues it).
///
/// The client is borrowed, not moved: each 32-byte copy of it (into a call's
/// arguments, into a local) read it back 16 bytes at a time right after the
/// engine had written single fields of it, a load that waits for those stores
/// to complete. Now it is copied once, into the queue.
#[inline]
fn settle(c: &mut Client, reply: Reply, now: u64, s: &mut Step<'_, '_>) -> Option<u64> {
    let at = Duration::from_nanos(now);
    if reply != Reply::Held {
        s.guards.cubic_answer(c.id, now, reply.is_rejection());
    }
    let cx = s.guards.context(s.policy, c.id);
    match reply {
        Reply::Ok => {
            c.engine.succeeded(&cx, at);
            s.out.succeeded += 1;
            s.out.last_done_ns = s.out.last_done_ns.max(now);
            s.out.last_success_ns = s.out.last_success_ns.max(now);
            s.out.successes.add(now);
            s.out
                .latency
                .add(now.saturating_sub(nanos(c.engine.start())));
        }
        Reply::Rejected { retry_after } | Reply::Planned { retry_after, .. } => {
            // What the answer announced reaches the client's wave guard
            // first, as an executor hands it over before deciding.
            let plan = match reply {
                Reply::Planned { plan, .. } => Some(plan),
                _ => None,
            };
            s.guards.observe(c.id, plan);
            let class = Classification::Retryable { after: retry_after };
            match c.engine.failed(&cx, at, class, RetryCause::Error, s.rng) {
                Decision::Retry { delay, .. } => return Some(now.saturating_add(nanos(delay))),
                Decision::GiveUp(reason) => s.out.give_up(now, reason),
            }
        }
        Reply::Requeued { retry_after } => {
            let class = Classification::requeued(retry_after);
            match c.engine.failed(&cx, at, class, RetryCause::Error, s.rng) {
                Decision::Retry { delay, .. } => return Some(now.saturating_add(nanos(delay))),
                Decision::GiveUp(reason) => s.out.give_up(now, reason),
            }
        }
        // An endpoint answers a held call with what became of it, never Held.
        Reply::Held => s.out.give_up(now, GiveUp::Terminal),
    }
    None
}

/// Makes sure a tick event is queued at the endpoint's next answer (no
/// earlier than `not_before`, so a tick never repeats at its own time).
fn arm<E: Endpoint + ?Sized>(
    endpoint: &E,
    queue: &mut EventQueue<Client>,
    tick_at: &mut Option<u64>,
    not_before: u64,
) {
    let Some(t) = endpoint.next_answer() else {
        return;
    };
    let t = t.max(not_before);
    if tick_at.is_none_or(|pending| t < pending) {
        *tick_at = Some(t);
        queue.push(
            t,
            Client {
                engine: Engine::new(Duration::ZERO),
                id: TICK,
                returning: 0,
            },
        );
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl FleetOutcome {
    fn give_up(&mut self, now: u64, reason: GiveUp) {
        self.gave_up += 1;
        match reason {
            GiveUp::RetryBudget => self.gave_up_retry_budget += 1,
            GiveUp::MaxAttempts => self.gave_up_max_attempts += 1,
            GiveUp::MaxElapsed => self.gave_up_max_elapsed += 1,
            _ => {}
        }
        self.give_ups.add(now);
        self.last_done_ns = self.last_done_ns.max(now);
    }
}
