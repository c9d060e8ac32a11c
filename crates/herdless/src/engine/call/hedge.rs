//! Hedging decisions, sans-IO: may a hedge be sent now, what a copy's
//! failure means while others are in flight, and who won. One call's
//! [`Hedging`] state lives beside its [`Engine`]; see [`hedge`](crate::hedge)
//! for the model.

use std::time::Duration;

use super::{Engine, LEVEL_SET, nanos};
use crate::classify::Classification;
use crate::engine::context::Context;
use crate::events::{Notify, RetryEvent};
use crate::guard::Spent;
use crate::hedge::Hedge;
use crate::rng::Rng;

/// Whether a hedge may be sent now ([`Hedging::send`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HedgeGate {
    /// Send it: its attempt number (begun on the engine).
    Send {
        /// The copy's attempt number.
        attempt: u32,
    },
    /// Not now, and not again this round (the reason).
    Stop(HedgeStop),
}

/// Why no hedge is sent, in the order the checks are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HedgeStop {
    /// The server pushed back (Retry-After, gRPC pushback): no more hedges
    /// for this call.
    Pushback,
    /// The call sent `max_hedges` hedges.
    MaxHedges,
    /// The copies reach `max_attempts`.
    MaxAttempts,
    /// The request is not idempotent (and the hedger does not allow those).
    NotIdempotent,
    /// The elapsed limit is spent.
    MaxElapsed,
    /// The shared breaker is open.
    BreakerOpen,
    /// The shared retry budget refused.
    Budget,
    /// The shared adaptive throttle has no turn for it now (a hedge never
    /// waits for one: it is extra load).
    Throttled,
}

impl HedgeStop {
    /// The reason's name: `pushback`, `max_hedges`, `max_attempts`,
    /// `not_idempotent`, `max_elapsed`, `breaker_open`, `retry_budget`,
    /// `throttled`.
    ///
    /// ```
    /// assert_eq!(herdless::engine::HedgeStop::Budget.as_str(), "retry_budget");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            HedgeStop::Pushback => "pushback",
            HedgeStop::MaxHedges => "max_hedges",
            HedgeStop::MaxAttempts => "max_attempts",
            HedgeStop::NotIdempotent => "not_idempotent",
            HedgeStop::MaxElapsed => "max_elapsed",
            HedgeStop::BreakerOpen => "breaker_open",
            HedgeStop::Budget => "retry_budget",
            HedgeStop::Throttled => "throttled",
        }
    }
}

/// What a copy's failure means ([`Hedging::failed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyFailed {
    /// Other copies are in flight: wait for them (the failure was counted
    /// by the breaker and the budget).
    Wait,
    /// The round is over (no copy left, or an answer that ends the call:
    /// terminal, unknown, server pushback): drop the other copies and ask
    /// [`Engine::failed`] with this classification.
    Decide(Classification),
}

/// One hedged call's hedging state, beside its [`Engine`] (which counts
/// every copy as an attempt). Sans-IO, like the engine: the driver passes
/// the time and asks.
///
/// ```
/// use std::time::Duration;
/// use herdless::engine::{Context, CopyFailed, Engine, HedgeGate, Hedging};
/// use herdless::hedge::Hedge;
/// use herdless::{Classification, Policy, RetryBudget, Rng};
///
/// let policy = Policy::default();
/// let budget = RetryBudget::builder().aws().max_tokens(7.0).spread(0.0).build()?;
/// let cx = Context::new(&policy).budget(&budget);
/// let hedge = Hedge::builder().delay(Duration::from_millis(10)).max_hedges(2).build()?;
/// let (mut call, mut hedging, mut rng) = (Engine::new(Duration::ZERO), Hedging::new(), Rng::with_seed(1));
/// hedging.round(&mut call); // the primary, attempt 1
/// assert_eq!(hedging.next_at(&hedge, Duration::ZERO), Some(Duration::from_millis(10)));
/// let ms = Duration::from_millis;
/// assert_eq!(hedging.send(&mut call, &cx, &hedge, ms(10), true, &mut rng), HedgeGate::Send { attempt: 2 });
/// // The second hedge: 7 − 5 = 2 tokens left, less than a retry's cost.
/// assert!(matches!(hedging.send(&mut call, &cx, &hedge, ms(20), true, &mut rng), HedgeGate::Stop(_)));
/// assert_eq!(hedging.failed(&cx, ms(22), Classification::retryable()), CopyFailed::Wait);
/// hedging.won(&mut call, &cx, &hedge, ms(25), 2, ms(10)); // the hedge answered first
/// assert_eq!(budget.tokens(), 7.0); // AWS: the winning call's hedge is refunded
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hedging {
    sent: u32,
    in_flight: u32,
    rounds: u32,
    /// The attempt number of this round's first copy: later ones are hedges.
    round_first: u32,
    stopped: bool,
    /// The classification that stopped hedging in this round (a server's
    /// delay), what the round's decision uses.
    pushback: Option<Classification>,
    /// Tokens the call's hedges took from the budget.
    spent: Spent,
}

impl Hedging {
    /// A call that has sent nothing yet.
    pub fn new() -> Self {
        Hedging::default()
    }

    /// Hedges sent so far.
    pub fn hedges(&self) -> u32 {
        self.sent
    }

    /// Copies in flight.
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// Whether a server's pushback stopped hedging for this call.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Starts a round: its first copy (the call's first attempt, or a retry
    /// after a backoff) is begun on the engine; returns its number.
    pub fn round(&mut self, engine: &mut Engine) -> u32 {
        self.rounds += 1;
        self.in_flight = 1;
        self.pushback = None;
        self.round_first = engine.begin();
        self.round_first
    }

    /// When the next hedge is due, on the driver's clock: the last copy's
    /// start plus the hedge delay; `None` when no hedge can follow (pushed
    /// back, or `max_hedges` sent).
    pub fn next_at(&self, hedge: &Hedge, last_start: Duration) -> Option<Duration> {
        (!self.stopped && self.sent < hedge.max_hedges())
            .then(|| last_start.saturating_add(hedge.delay()))
    }

    /// A hedge is due at `now` (no copy has answered): may it be sent? In
    /// order: pushback, `max_hedges`, `max_attempts`, idempotency, the
    /// elapsed limit, the breaker, the throttle (a turn now, or no hedge:
    /// an urgent call's lane skips it), the budget (a retry's cost). On
    /// [`HedgeGate::Send`] the copy is begun on the engine and `hedge_sent`
    /// is emitted.
    pub fn send<N: Notify>(
        &mut self,
        engine: &mut Engine,
        cx: &Context<'_, N>,
        hedge: &Hedge,
        now: Duration,
        idempotent: bool,
        rng: &mut Rng,
    ) -> HedgeGate {
        let stop = if self.stopped {
            Some(HedgeStop::Pushback)
        } else if self.sent >= hedge.max_hedges() {
            Some(HedgeStop::MaxHedges)
        } else if engine.attempts >= cx.policy.max_attempts {
            Some(HedgeStop::MaxAttempts)
        } else if !idempotent && !hedge.allows_non_idempotent() {
            Some(HedgeStop::NotIdempotent)
        } else if engine.remaining(cx, now).is_zero() {
            Some(HedgeStop::MaxElapsed)
        } else if cx.breaker.is_some_and(|b| b.is_open()) {
            Some(HedgeStop::BreakerOpen)
        } else {
            None
        };
        if let Some(stop) = stop {
            return HedgeGate::Stop(stop);
        }
        if let Some(throttle) = cx.throttle.filter(|_| !engine.bypasses(cx)) {
            let at = nanos(now).saturating_add(cx.throttle_epoch_ns);
            // A hedge is a second copy: it defers a probe to a fresh call.
            if throttle.acquire_ns(at, rng, true).is_err() {
                return HedgeGate::Stop(HedgeStop::Throttled);
            }
        }
        if let Some(budget) = cx.budget {
            if engine.flags & LEVEL_SET == 0 {
                engine.level = (rng.next_u64() >> 48) as u16;
                engine.flags |= LEVEL_SET;
            }
            match budget.try_hedge(f64::from(engine.level) / 65_536.0) {
                Ok(spent) => self.spent = self.spent.plus(spent),
                Err(_) => return HedgeGate::Stop(HedgeStop::Budget),
            }
        }
        self.sent += 1;
        self.in_flight += 1;
        let attempt = engine.begin();
        cx.emit(
            RetryEvent::HedgeSent {
                task_id: cx.task_id,
                attempt,
                hedge: self.sent,
                elapsed: engine.elapsed(now),
            },
            false,
        );
        HedgeGate::Send { attempt }
    }

    /// A copy failed with `classification`. A terminal or unknown answer, or
    /// a server's refusal ([`DoNotRetry`](Classification::DoNotRetry)),
    /// ends the round at once; a server's delay (Retry-After) stops hedging
    /// for the call. Otherwise, while other copies are in flight, the
    /// failure is counted (breaker, budget's failure cost) and the call
    /// waits for them; the last copy's failure ends the round, decided with
    /// the server's delay if one came in this round. `now` is when the copy
    /// answered (the throttle learns of a failure the call waits past).
    pub fn failed<N: Notify>(
        &mut self,
        cx: &Context<'_, N>,
        now: Duration,
        classification: Classification,
    ) -> CopyFailed {
        self.in_flight = self.in_flight.saturating_sub(1);
        let ends_call = !classification.is_retryable();
        if ends_call || classification.server_delay().is_some() {
            self.stopped = true;
        }
        if classification.server_delay().is_some() {
            self.pushback = Some(classification);
        }
        if ends_call || self.in_flight == 0 {
            self.in_flight = 0;
            return CopyFailed::Decide(self.pushback.unwrap_or(classification));
        }
        if let Some(breaker) = cx.breaker {
            breaker.record_failure();
        }
        if let Some(budget) = cx.budget {
            budget.record_failure();
        }
        if let Some(throttle) = cx.throttle {
            throttle.record_failure_ns(nanos(now).saturating_add(cx.throttle_epoch_ns));
        }
        cx.copy_failed();
        CopyFailed::Wait
    }

    /// Copy `attempt`, started at `started`, answered first at `now`: the
    /// call succeeded. The budget is refunded as for a success after a retry
    /// (what the call's hedges and admitted retry took, when the budget
    /// returns a retry's cost), the breaker closes, the winner's latency is
    /// recorded for a tracked delay; `hedge_won` when a hedge won,
    /// `retry_succeeded` when a retry's round did.
    pub fn won<N: Notify>(
        &mut self,
        engine: &mut Engine,
        cx: &Context<'_, N>,
        hedge: &Hedge,
        now: Duration,
        attempt: u32,
        started: Duration,
    ) {
        self.in_flight = 0;
        hedge.record(now.saturating_sub(started));
        if let Some(budget) = cx.budget {
            let retry =
                (engine.flags & super::SPENT != 0).then(|| budget.cost(engine.spent_cause()));
            let spent = match retry {
                Some(r) => Some(self.spent.plus(r)),
                None => (self.spent != Spent::default()).then_some(self.spent),
            };
            budget.record_success(spent);
        }
        if let Some(breaker) = cx.breaker {
            breaker.record_success_at(nanos(now));
        }
        if let Some(throttle) = cx.throttle {
            throttle.record_success_ns(nanos(now).saturating_add(cx.throttle_epoch_ns));
        }
        engine.release_probe(cx);
        let elapsed = engine.elapsed(now);
        let task_id = cx.task_id;
        if self.is_hedge(attempt) {
            let hedges = self.sent;
            cx.emit(
                RetryEvent::HedgeWon {
                    task_id,
                    attempt,
                    hedges,
                    elapsed,
                },
                true,
            );
        } else if self.rounds > 1 {
            cx.emit(
                RetryEvent::Succeeded {
                    task_id,
                    attempt,
                    elapsed,
                },
                true,
            );
        } else {
            cx.first_success();
        }
    }

    /// Whether `attempt` was a hedge: a copy begun after its round's first.
    fn is_hedge(&self, attempt: u32) -> bool {
        attempt > self.round_first
    }
}
