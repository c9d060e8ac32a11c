//! The decision engine: every retry decision, made in one place, sans-IO.
//!
//! [`Engine`] is one call's state (24 bytes); its methods make every decision
//! about the call, with the time passed in and a generator lent by the
//! driver. It never sleeps, never reads a clock and holds no borrow between
//! decisions, so every driver runs the same code: the blocking and async
//! executors ([`Retry::call`], [`Retry::call_async`]) are thin loops over it,
//! the fleet simulator (`herdless-sim`) keeps one per simulated client, and a
//! tower policy, a reqwest middleware or a queue consumer that retries by
//! redelivery can carry one in its request or message. What a decision reads
//! besides the call's state (policy, shared budget, breaker, escape lane, task
//! id, event hook) comes in a borrowed [`Context`].
//!
//! # The order of the checks
//!
//! After a failed attempt, [`Engine::failed`] asks, in this order:
//!
//! 1. **Classification.** Terminal or unknown (the classifier fails closed):
//!    give up with [`GiveUp::Terminal`] after this attempt
//!    (`retry_abandoned_terminal`). Neither the budget nor the breaker learns
//!    anything: the endpoint answered.
//! 2. **The breaker** learns the failure (an outstanding probe is resolved).
//!    **Server pushback.** A [`Classification::DoNotRetry`] (the server
//!    asked not to be retried: gRPC's negative `grpc-retry-pushback-ms`) gives
//!    up here with [`GiveUp::DoNotRetry`] (`retry_budget_exhausted`,
//!    `reason = "server_pushback"`), charging the budget's failure cost like
//!    steps 3 and 5: it is news about load, as gRPC's retry throttling counts it.
//! 3. **Attempt limit.** `max_attempts` attempts made: [`GiveUp::MaxAttempts`]
//!    — checked *before* anything is drawn, so a give-up consumes no
//!    randomness.
//! 4. **The delay.** Draw the jitter for retry index `attempts − 1` (capped
//!    before the draw, so it never exceeds the cap); when the classification
//!    carries a server delay (Retry-After), that replaces it, clamped to
//!    `max_retry_after` and spread upward. When the failure's answer
//!    announced a plan of waves and the call has a
//!    [`WaveGuard`](crate::guard::waves::WaveGuard), the client's wave
//!    replaces both: its time drawn within the wave (the guard's jitter),
//!    clamped to `max_retry_after`, not spread further.
//! 5. **Elapsed limit.** `elapsed + delay > max_elapsed` (or the tighter
//!    deadline of an [`Urgent`] call): give up *before sleeping* with
//!    [`GiveUp::MaxElapsed`]; with an attempt timeout, a retry due exactly at
//!    the limit is refused too (its attempt would have no time). No retry
//!    therefore *starts* after the limit. Whether the call also *ends* within
//!    it depends on its last attempt (see the deadline below): with the
//!    policy's [`attempt_timeout`](crate::Policy::attempt_timeout) (the
//!    async executors cut an attempt at its deadline) or an attempt that
//!    respects [`Attempt::deadline`] (the blocking executor, which cannot
//!    preempt, and the reqwest senders, which set the request's timeout), a
//!    call ends within `max_elapsed` (plus scheduling noise); with neither,
//!    within `max_elapsed` plus at most one attempt's own duration.
//! 6. **Shared budget.** The [`RetryBudget`], if any, must admit the retry (an
//!    urgent call's first `quota` retries skip it); a denial is
//!    [`GiveUp::RetryBudget`]. Steps 3 and 5 still charge the budget's failure
//!    cost: a failure is news about the endpoint whatever ends the call.
//! 7. `retry_scheduled`, and [`Decision::Retry`] with the delay.
//!
//! **The attempt's deadline** ([`Engine::deadline`], in every [`Attempt`]
//! as [`Attempt::deadline`] and [`Attempt::remaining`]) is the smaller of the
//! attempt's start plus the policy's `attempt_timeout` and the end of the
//! elapsed limit: it shrinks as the call spends its budget, and no attempt's
//! deadline lies past `max_elapsed`. An attempt cut there fails as a
//! [`RetryCause::Timeout`](crate::RetryCause) (the events say
//! `timed_out = true`), retryable unless its classifier says otherwise, and
//! goes through the steps above like any failure.
//!
//! When the delay has passed, [`Engine::ready`] asks the [`Breaker`]: closed,
//! go; open, one caller probes and the others wait a jittered probe wait (each
//! wait counted against the elapsed limit, never against the attempts). A
//! driver whose wait overran (its event observers took longer than the delay,
//! its timer woke late) and that asks past the elapsed limit is told to give
//! up: no retry starts after `max_elapsed`.
//!
//! Elapsed time is the driver's monotonic time (`now − start`), never the wall
//! clock: an NTP step or a DST change in the middle of a chain cannot make the
//! limit expire early or never.
//!
//! # A hand-written driver
//!
//! A driver that retries jobs from a queue by rescheduling them rather than
//! sleeping: the engine travels with the job, time is the queue's.
//!
//! ```
//! use std::time::Duration;
//! use herdless::engine::{Context, Decision, Engine, Gate};
//! use herdless::{Classification, Policy, RetryCause, Rng};
//!
//! struct Job { engine: Engine, due: Duration }
//!
//! let policy = Policy::builder().base(Duration::from_millis(100)).max_attempts(4).build()?;
//! let cx = Context::new(&policy).task_id("job-1");
//! let mut rng = Rng::with_seed(42);
//! let mut job = Job { engine: Engine::new(Duration::ZERO), due: Duration::ZERO };
//! let device = |attempt: u32| if attempt < 3 { Err("timeout") } else { Ok("done") };
//!
//! let outcome = loop {
//!     let now = job.due; // the queue's clock when the job comes due
//!     if job.engine.attempts() > 0 {
//!         match job.engine.ready(&cx, now, &mut rng) {
//!             Gate::Go => {}
//!             Gate::Wait(d) => { job.due = now + d; continue; }
//!             Gate::GiveUp(reason) => break Err(reason),
//!         }
//!     }
//!     let attempt = job.engine.begin();
//!     match device(attempt) {
//!         Ok(v) => { job.engine.succeeded(&cx, now); break Ok(v); }
//!         Err(_) => match job.engine.failed(&cx, now, Classification::retryable(), RetryCause::Timeout, &mut rng) {
//!             Decision::Retry { delay, .. } => job.due = now + delay,
//!             Decision::GiveUp(reason) => break Err(reason),
//!         },
//!     }
//! };
//! assert_eq!(outcome, Ok("done"));
//! assert_eq!(job.engine.attempts(), 3);
//! assert!(job.due <= Duration::from_millis(300)); // full jitter: ≤ 100 ms + 200 ms
//! # Ok::<(), herdless::PolicyError>(())
//! ```
//!
//! [`Attempt`]: crate::Attempt
//! [`Attempt::deadline`]: crate::Attempt::deadline
//! [`Attempt::remaining`]: crate::Attempt::remaining
//! [`Retry::call`]: crate::Retry::call
//! [`Retry::call_async`]: crate::Retry::call_async
//! [`RetryBudget`]: crate::RetryBudget
//! [`Breaker`]: crate::Breaker
//! [`Urgent`]: crate::Urgent
//! [`Classification::DoNotRetry`]: crate::Classification::DoNotRetry

pub(crate) mod call;
pub(crate) mod context;

pub use call::{CopyFailed, Decision, Engine, Gate, HedgeGate, HedgeStop, Hedging};
pub use context::Context;

// The paths of the executors, the events and `TimedOut` before they left
// this module (`crate::retry`, `crate::events`, `crate::classify`): kept for
// one release, hidden from the documentation (CHANGELOG, "Moves").
#[doc(hidden)]
pub use crate::classify::TimedOut;
#[doc(hidden)]
pub use crate::events::{
    EventLevels, EventValue, GiveUp, NoNotify, Notify, RetryEvent, UnknownEvent, levels, metrics,
};
#[doc(hidden)]
pub use crate::retry::{
    Attempt, IntoRetry, Retry, RetryAsync, RetryBlocking, RetryBuilder, RetryError,
};

/// The events module's old path (`crate::events`), kept for one release.
#[doc(hidden)]
pub mod events {
    pub use crate::events::*;
}
