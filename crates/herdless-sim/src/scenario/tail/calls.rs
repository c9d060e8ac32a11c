//! The latency-tail event loop: calls, their copies and their timers, every
//! decision asked of the library's engine.

use std::cell::Cell;
use std::time::Duration;

use herdless::engine::{Context, CopyFailed, Decision, Engine, Gate, HedgeGate, Hedging};
use herdless::hedge::Hedge;
use herdless::{Classification, Notify, RetryBudget, RetryCause, RetryEvent, Rng};

use super::{TailFigures, TailParams};
use crate::error::SimError;
use crate::queue::EventQueue;
use crate::strategy::StrategyKind;

/// What an event wakes.
#[derive(Debug, Clone, Copy)]
enum Ev {
    Start(u32),
    /// A copy of call `0` answered (in `round`, as attempt `2`; `ok`).
    Answer(u32, u32, u32, bool),
    /// The next hedge of call `0`'s `round` is due.
    HedgeDue(u32, u32),
    /// Call `0`'s retry is due.
    RetryDue(u32),
}

struct Call {
    engine: Engine,
    hedging: Hedging,
    rng: Rng,
    start_ns: u64,
    round: u32,
    /// The copies in flight: attempt number and start.
    copies: Vec<(u32, u64)>,
    requests: u32,
    done: bool,
}

struct Loop<'a> {
    p: &'a TailParams,
    queue: EventQueue<u32>,
    events: Vec<Ev>,
    rng: Rng,
    requests: u64,
}

impl Loop<'_> {
    fn push(&mut self, at_ns: u64, ev: Ev) {
        self.queue.push(at_ns, self.events.len() as u32);
        self.events.push(ev);
    }

    fn overloaded(&self, at_ns: u64) -> bool {
        let from = self.p.overload_start.as_nanos() as u64;
        (from..from + self.p.overload.as_nanos() as u64).contains(&at_ns)
    }

    /// Sends copy `attempt` of call `i` at `now`: its answer is scheduled.
    fn send(&mut self, i: u32, call: &mut Call, attempt: u32, now: u64) {
        self.requests += 1;
        call.requests += 1;
        call.copies.push((attempt, now));
        let (latency, ok) = if self.overloaded(now) {
            (self.p.overload_latency, false)
        } else if self.rng.unit_f64() < self.p.slow_share {
            (self.p.slow, true)
        } else {
            (self.p.fast.mul_f64(0.75 + 0.5 * self.rng.unit_f64()), true)
        };
        let at = now + latency.as_nanos() as u64;
        self.push(at, Ev::Answer(i, call.round, attempt, ok));
    }

    fn schedule_hedge(&mut self, i: u32, call: &Call, hedge: Option<&Hedge>, last: u64) {
        if let Some(at) = hedge.and_then(|h| call.hedging.next_at(h, ns(last))) {
            self.push(at.as_nanos() as u64, Ev::HedgeDue(i, call.round));
        }
    }
}

fn ns(n: u64) -> Duration {
    Duration::from_nanos(n)
}

/// Runs the calls under `kind`: no hedging (a jitter mode), `hedge`, or
/// `hedge+budget`.
pub(super) fn run(p: &TailParams, kind: StrategyKind, seed: u64) -> Result<TailFigures, SimError> {
    let policy = kind.resolve(&p.policy).policy().to_owned();
    let hedge = matches!(kind, StrategyKind::Hedge | StrategyKind::HedgeBudget).then(|| {
        Hedge::builder()
            .percentile(p.hedge_quantile)
            .build()
            .expect("the quantile was validated")
    });
    let budget = (kind == StrategyKind::HedgeBudget)
        .then(|| RetryBudget::grpc(p.budget_tokens, p.budget_token_ratio))
        .transpose()
        .map_err(|e| SimError::Invalid(format!("budget: {e}")))?;
    // The events count the hedges (the public contract, as a user would).
    let (hedges, wins) = (Cell::new(0u64), Cell::new(0u64));
    let count = |e: &RetryEvent<'_>| match e.name() {
        "hedge_sent" => hedges.set(hedges.get() + 1),
        "hedge_won" => wins.set(wins.get() + 1),
        _ => {}
    };
    // The baseline's calls never hedge; `won` still wants a configuration.
    let never = Hedge::builder()
        .delay(Duration::from_secs(1))
        .build()
        .expect("a valid delay");
    let cx = Context::new(&policy)
        .trace(false)
        .metrics(false)
        .notify(&count);
    let cx = match &budget {
        Some(b) => cx.budget(b),
        None => cx,
    };
    let mut l = Loop {
        p,
        queue: EventQueue::new(),
        events: Vec::new(),
        rng: Rng::with_seed(seed),
        requests: 0,
    };
    let gap = 1e9 / f64::from(p.rate);
    for i in 0..p.calls {
        l.push((f64::from(i) * gap) as u64, Ev::Start(i));
    }
    let mut calls: Vec<Call> = Vec::with_capacity(p.calls as usize);
    let mut tally = Tally::default();
    while let Some(e) = l.queue.pop() {
        let now = e.at_ns;
        match l.events[e.client as usize] {
            Ev::Start(i) => {
                let mut call = Call::new(seed, i, now);
                let attempt = call.hedging.round(&mut call.engine);
                l.send(i, &mut call, attempt, now);
                l.schedule_hedge(i, &call, hedge.as_ref(), now);
                calls.push(call);
            }
            Ev::HedgeDue(i, round) => {
                let (call, h) = (&mut calls[i as usize], hedge.as_ref());
                let (Some(h), false) = (h, call.done || call.round != round) else {
                    continue;
                };
                let gate =
                    call.hedging
                        .send(&mut call.engine, &cx, h, ns(now), true, &mut call.rng);
                if let HedgeGate::Send { attempt } = gate {
                    l.send(i, call, attempt, now);
                    l.schedule_hedge(i, call, Some(h), now);
                }
            }
            Ev::RetryDue(i) => {
                let call = &mut calls[i as usize];
                match call.engine.ready(&cx, ns(now), &mut call.rng) {
                    Gate::Go => {
                        let attempt = call.hedging.round(&mut call.engine);
                        l.send(i, call, attempt, now);
                        l.schedule_hedge(i, call, hedge.as_ref(), now);
                    }
                    // No breaker in this scenario: `ready` always goes.
                    Gate::Wait(d) => l.push(now + d.as_nanos() as u64, Ev::RetryDue(i)),
                    Gate::GiveUp(_) => {
                        call.done = true;
                        tally.gave_up += 1;
                    }
                }
            }
            Ev::Answer(i, round, attempt, ok) => {
                let call = &mut calls[i as usize];
                if call.done || call.round != round {
                    continue; // a dropped copy: its answer is ignored
                }
                let h = hedge.as_ref().unwrap_or(&never);
                answered(&mut l, call, &cx, h, (i, now, attempt, ok), &mut tally);
            }
        }
    }
    let counted = Counted {
        gave_up: tally.gave_up,
        hedges: hedges.get(),
        wins: wins.get(),
        last_ns: tally.last_ns,
    };
    Ok(figures(p, kind, &l, &calls, tally.latencies, counted))
}

impl Call {
    /// Call `i` of the run seeded `seed`, started at `now`.
    fn new(seed: u64, i: u32, now: u64) -> Self {
        Call {
            engine: Engine::new(ns(now)),
            hedging: Hedging::new(),
            rng: Rng::with_seed(crate::stream_seed(seed, u64::from(i) + 1)),
            start_ns: now,
            round: 0,
            copies: Vec::new(),
            requests: 0,
            done: false,
        }
    }
}

/// What the loop counts as calls end: the latencies of the calls started
/// outside the overload, the give-ups, the last answer.
#[derive(Default)]
struct Tally {
    latencies: Vec<u64>,
    gave_up: u64,
    last_ns: u64,
}

/// Copy `attempt` of call `i`'s current round answered at `now` (`ok`, or
/// failed): the first success wins the call (`h` its hedging, or a
/// configuration for the calls that never hedge); a failure is the
/// engine's to decide once every copy of the round has failed.
fn answered<N: Notify>(
    l: &mut Loop<'_>,
    call: &mut Call,
    cx: &Context<'_, N>,
    h: &Hedge,
    (i, now, attempt, ok): (u32, u64, u32, bool),
    tally: &mut Tally,
) {
    let Some(k) = call.copies.iter().position(|c| c.0 == attempt) else {
        return;
    };
    let (_, started) = call.copies.swap_remove(k);
    tally.last_ns = tally.last_ns.max(now);
    if ok {
        call.hedging
            .won(&mut call.engine, cx, h, ns(now), attempt, ns(started));
        call.done = true;
        if !l.overloaded(call.start_ns) {
            tally.latencies.push(now - call.start_ns);
        }
        return;
    }
    match call
        .hedging
        .failed(cx, ns(now), Classification::retryable())
    {
        CopyFailed::Wait => {}
        CopyFailed::Decide(c) => {
            call.copies.clear();
            call.round += 1;
            let d = call
                .engine
                .failed(cx, ns(now), c, RetryCause::Error, &mut call.rng);
            match d {
                Decision::Retry { delay, .. } => {
                    l.push(now + delay.as_nanos() as u64, Ev::RetryDue(i))
                }
                Decision::GiveUp(_) => {
                    call.done = true;
                    tally.gave_up += 1;
                }
            }
        }
    }
}

struct Counted {
    gave_up: u64,
    hedges: u64,
    wins: u64,
    last_ns: u64,
}

fn quantile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[rank] as f64 / 1e9
}

fn figures(
    p: &TailParams,
    kind: StrategyKind,
    l: &Loop<'_>,
    calls: &[Call],
    mut latencies: Vec<u64>,
    c: Counted,
) -> TailFigures {
    latencies.sort_unstable();
    let per_call = |overload: bool| {
        let (n, r) = calls
            .iter()
            .filter(|k| l.overloaded(k.start_ns) == overload)
            .fold((0u64, 0u64), |(n, r), k| (n + 1, r + u64::from(k.requests)));
        if n == 0 { 0.0 } else { r as f64 / n as f64 }
    };
    TailFigures {
        strategy: kind.name().to_owned(),
        calls: l.requests as f64 / f64::from(p.calls),
        calls_total: l.requests,
        completion_s: c.last_ns as f64 / 1e9,
        gave_up: c.gave_up,
        p50_s: quantile(&latencies, 0.5),
        p99_s: quantile(&latencies, 0.99),
        p999_s: quantile(&latencies, 0.999),
        healthy_requests_per_call: per_call(false),
        overload_requests_per_call: per_call(true),
        hedges: c.hedges,
        hedge_wins: c.wins,
    }
}
