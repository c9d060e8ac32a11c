//! One call's state and every decision about it: the sans-IO [`Engine`].

use std::time::Duration;

use crate::classify::Classification;
use crate::classify::RetryCause;
use crate::engine::context::Context;
use crate::events::GiveUp;
use crate::events::{Notify, RetryEvent};
use crate::policy::Schedule;
use crate::rng::Rng;

mod deadline;
mod failed;
mod hedge;
mod resume;
mod settle;
mod throttle;

pub(crate) use deadline::deadline_ns;
pub use hedge::{CopyFailed, HedgeGate, HedgeStop, Hedging};

/// What follows a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Retry after `delay` (then ask [`Engine::ready`] before starting it).
    Retry {
        /// How long to wait: the computed jitter, or the server's delay clamped
        /// and spread when one was honored.
        delay: Duration,
        /// Whether a server-supplied delay (Retry-After) replaced the jitter.
        honored_retry_after: bool,
    },
    /// Stop: the call is over, for this reason.
    GiveUp(GiveUp),
}

/// Whether a retry that is due may start now (asked after the backoff wait),
/// or, with a [throttle](crate::guard::Throttle), whether any attempt may.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Start the attempt.
    Go,
    /// An open breaker's probe is out, or the throttle's turn has not come:
    /// wait this long (not an attempt), then ask again.
    Wait(Duration),
    /// Stop: waiting would pass the elapsed limit.
    GiveUp(GiveUp),
}

const LEVEL_SET: u8 = 1;
const PENDING: u8 = 1 << 1;
const PENDING_TIMEOUT: u8 = 1 << 2;
const SPENT: u8 = 1 << 3;
const SPENT_TIMEOUT: u8 = 1 << 4;
const PROBE: u8 = 1 << 5;
/// The retry waited behind an open breaker's probe (its release may be
/// spread when the breaker closes).
const BEHIND_PROBE: u8 = 1 << 6;

/// One call's retry state, and the one place where every retry decision is
/// made. Sans-IO: it never reads a clock, never sleeps and owns no generator;
/// the driver passes `now` (any monotonic time since an origin of its choice:
/// only differences matter) and a [`Rng`]. 24 bytes, no heap, no borrow: it can
/// live in a future, a tower policy, a simulated client or a queue message.
///
/// A driver loops: [`begin`](Self::begin) an attempt; report
/// [`succeeded`](Self::succeeded) or [`failed`](Self::failed) (with the
/// error's [`Classification`] and [`RetryCause`]); on
/// [`Decision::Retry`] wait the delay, then ask [`ready`](Self::ready) until it
/// says [`Gate::Go`]; a driver that drops a call early calls
/// [`cancel`](Self::cancel). See the [module documentation](crate::engine)
/// for the order of the checks and a hand-written driver.
///
/// ```
/// use std::time::Duration;
/// use herdless::engine::{Context, Decision, Engine};
/// use herdless::{Classification, GiveUp, Policy, RetryCause, Rng};
///
/// let policy = Policy::builder().max_attempts(2).build()?;
/// let cx = Context::new(&policy);
/// let mut rng = Rng::with_seed(1);
/// let mut call = Engine::new(Duration::ZERO);
/// assert_eq!(call.begin(), 1);
/// let d = call.failed(&cx, Duration::ZERO, Classification::retryable(), RetryCause::Error, &mut rng);
/// assert!(matches!(d, Decision::Retry { .. }));
/// assert_eq!(call.begin(), 2);
/// let d = call.failed(&cx, Duration::from_secs(1), Classification::retryable(), RetryCause::Error, &mut rng);
/// assert_eq!(d, Decision::GiveUp(GiveUp::MaxAttempts));
/// # Ok::<(), herdless::PolicyError>(())
/// ```
#[derive(Debug, PartialEq, Eq)]
pub struct Engine {
    start_ns: u64,
    /// The previous delay (decorrelated modes); 0 before the first.
    prev_ns: u64,
    attempts: u32,
    /// This call's uniform level for the budget's spread, in 1/65536.
    level: u16,
    flags: u8,
    /// Requeue answers taken (not attempts; see `Classification::Requeued`).
    requeues: u8,
}

/// A duration in whole nanoseconds, saturating at `u64::MAX` (about 584 years).
#[inline]
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Engine {
    /// A call whose first attempt starts at `now`.
    ///
    /// ```
    /// let call = herdless::engine::Engine::new(std::time::Duration::from_secs(5));
    /// assert_eq!(call.attempts(), 0);
    /// ```
    pub fn new(now: Duration) -> Self {
        Engine {
            start_ns: nanos(now),
            prev_ns: 0,
            attempts: 0,
            level: 0,
            flags: 0,
            requeues: 0,
        }
    }

    /// A call that started at `start` and has already made `attempts` attempts
    /// (a task redelivered by a broker, resuming its chain). The decorrelated
    /// modes restart from the base.
    ///
    /// ```
    /// use std::time::Duration;
    /// let call = herdless::engine::Engine::resume(Duration::ZERO, 3);
    /// assert_eq!(call.attempts(), 3);
    /// ```
    pub fn resume(start: Duration, attempts: u32) -> Self {
        Engine {
            attempts,
            ..Engine::new(start)
        }
    }

    /// Attempts begun so far.
    ///
    /// ```
    /// let mut call = herdless::engine::Engine::new(Default::default());
    /// call.begin();
    /// assert_eq!(call.attempts(), 1);
    /// ```
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// When the first attempt started, on the driver's clock.
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(herdless::engine::Engine::new(Duration::from_secs(3)).start(), Duration::from_secs(3));
    /// ```
    pub fn start(&self) -> Duration {
        Duration::from_nanos(self.start_ns)
    }

    /// Time since the first attempt started (zero if `now` is earlier).
    ///
    /// ```
    /// use std::time::Duration;
    /// let call = herdless::engine::Engine::new(Duration::from_secs(3));
    /// assert_eq!(call.elapsed(Duration::from_secs(5)), Duration::from_secs(2));
    /// ```
    pub fn elapsed(&self, now: Duration) -> Duration {
        Duration::from_nanos(nanos(now).saturating_sub(self.start_ns))
    }

    /// Whether this call holds an open breaker's one probe (its current
    /// attempt is the probe).
    ///
    /// ```
    /// assert!(!herdless::engine::Engine::new(Default::default()).is_probe());
    /// ```
    pub fn is_probe(&self) -> bool {
        self.flags & PROBE != 0
    }

    /// Starts the next attempt and returns its 1-based number. An admitted
    /// retry is now spent (no longer refundable by [`cancel`](Self::cancel)).
    ///
    /// ```
    /// let mut call = herdless::engine::Engine::new(Default::default());
    /// assert_eq!(call.begin(), 1);
    /// assert_eq!(call.begin(), 2);
    /// ```
    #[inline]
    pub fn begin(&mut self) -> u32 {
        self.flags &= !(PENDING | PENDING_TIMEOUT);
        self.attempts = self.attempts.saturating_add(1);
        self.attempts
    }

    /// The current attempt succeeded at `now`: the budget is refunded, the
    /// breaker closes, and `retry_succeeded` is emitted if it was a retry.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::engine::{Context, Engine};
    /// let p = herdless::Policy::default();
    /// let budget = herdless::RetryBudget::grpc(10.0, 0.5)?;
    /// budget.record_failure();
    /// let mut call = Engine::new(Duration::ZERO);
    /// call.begin();
    /// call.succeeded(&Context::new(&p).budget(&budget), Duration::ZERO);
    /// assert_eq!(budget.tokens(), 9.5);
    /// # Ok::<(), herdless::guard::RetryBudgetError>(())
    /// ```
    #[inline]
    pub fn succeeded<N: Notify>(&mut self, cx: &Context<'_, N>, now: Duration) {
        self.succeeded_ns(cx, || nanos(now));
    }

    /// [`succeeded`](Self::succeeded) with the time in nanoseconds, read by
    /// `now_ns` only if a decision needs it (a breaker closing, an event's
    /// elapsed time): what the executors call. Always inlined: a first-try
    /// success then reads only the guards it checks, not the whole context.
    #[inline(always)]
    pub(crate) fn succeeded_ns<N: Notify>(
        &mut self,
        cx: &Context<'_, N>,
        now_ns: impl FnOnce() -> u64,
    ) {
        let retried = self.attempts > 1;
        // Asked once: whether the retry's success is told reads the same
        // answer as whether its time is read for it.
        let told = retried && cx.listening();
        let now = if cx.breaker.is_some() || cx.throttle.is_some() || told {
            now_ns()
        } else {
            0
        };
        if let Some(budget) = cx.budget {
            let last = (self.flags & SPENT != 0).then(|| budget.cost(self.spent_cause()));
            budget.record_success(last);
        }
        if let Some(breaker) = cx.breaker {
            breaker.record_success_at(now);
        }
        self.throttle_record(cx, now, true);
        self.release_probe(cx);
        if retried {
            if told {
                let elapsed = Duration::from_nanos(now.saturating_sub(self.start_ns));
                let event = RetryEvent::Succeeded {
                    task_id: cx.task_id,
                    attempt: self.attempts,
                    elapsed,
                };
                cx.emit(event, true);
            }
        } else {
            cx.first_success();
        }
    }

    /// A retry is due at `now` (its delay has passed), or, with a
    /// [throttle](crate::guard::Throttle), any attempt is about to start: may
    /// it start? A retry whose `now` is past the elapsed limit (the driver's
    /// wait overran it: a slow event observer, a late timer) gives up with
    /// [`GiveUp::MaxElapsed`], refunded, before any gate: no retry starts
    /// after the limit. The throttle is asked first: until the process's turn
    /// comes, [`Gate::Wait`]; an attempt that would have no time left (the
    /// limit reached, or its turn at or past it) is not made:
    /// [`Gate::GiveUp`] (`max_elapsed`), a first attempt's included, which
    /// ends the call after 0 attempts. Then,
    /// without a breaker, or while it is closed, or for a retry in the escape lane:
    /// [`Gate::Go`]. While it is open, the one caller that takes the probe
    /// goes; the others [`Gate::Wait`] a jittered probe wait, or give up when
    /// that wait would pass the elapsed limit (the admitted retry is then
    /// refunded). A retry that waited behind the probe and finds the
    /// breaker closed within its [release
    /// window](crate::Breaker::release_window) waits once more, a uniform
    /// share of the rest of the window (same elapsed rule), then goes.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::engine::{Context, Engine, Gate};
    /// use herdless::{Breaker, Policy, Rng};
    /// let p = Policy::default();
    /// let breaker = Breaker::new(1);
    /// breaker.record_failure(); // open
    /// let cx = Context::new(&p).breaker(&breaker);
    /// let (mut a, mut b) = (Engine::new(Duration::ZERO), Engine::new(Duration::ZERO));
    /// a.begin();
    /// b.begin();
    /// let mut rng = Rng::with_seed(1);
    /// assert_eq!(a.ready(&cx, Duration::ZERO, &mut rng), Gate::Go); // the probe
    /// assert!(a.is_probe());
    /// assert!(matches!(b.ready(&cx, Duration::ZERO, &mut rng), Gate::Wait(_)));
    /// ```
    #[inline]
    pub fn ready<N: Notify>(&mut self, cx: &Context<'_, N>, now: Duration, rng: &mut Rng) -> Gate {
        self.ready_ns(cx, nanos(now), rng)
    }

    /// [`ready`](Self::ready) with `now` in nanoseconds: what the executors
    /// call.
    #[inline(always)]
    pub(crate) fn ready_ns<N: Notify>(
        &mut self,
        cx: &Context<'_, N>,
        now_ns: u64,
        rng: &mut Rng,
    ) -> Gate {
        if self.attempts > 0 && now_ns.saturating_sub(self.start_ns) > cx.max_elapsed_ns() {
            return self.overdue(cx, now_ns);
        }
        if cx.throttle.is_some() {
            if let Some(gate) = self.throttle_gate(cx, now_ns, rng, true) {
                return gate;
            }
        }
        let Some(breaker) = cx.breaker.filter(|_| self.attempts > 0) else {
            return Gate::Go;
        };
        if self.bypasses(cx) {
            return Gate::Go;
        }
        let wait = if breaker.is_open() {
            if breaker.try_take_probe() {
                self.flags = (self.flags | PROBE) & !BEHIND_PROBE;
                return Gate::Go;
            }
            self.flags |= BEHIND_PROBE;
            breaker.wait_for(rng)
        } else if self.flags & BEHIND_PROBE != 0 {
            self.flags &= !BEHIND_PROBE;
            match breaker.release_wait(now_ns, rng) {
                Some(wait) => wait,
                None => return Gate::Go,
            }
        } else {
            return Gate::Go;
        };
        self.wait_or_give_up(cx, now_ns, wait)
    }

    /// A throttled call's gate before its first attempt, for the executors:
    /// [`ready_ns`](Self::ready_ns), except that a give-up (no time left) is
    /// not told: the executor tells it ([`unstarted`](Self::unstarted)) once
    /// it has the error to end the call with, and otherwise lets the attempt
    /// go.
    #[inline]
    pub(crate) fn first_gate_ns<N: Notify>(
        &mut self,
        cx: &Context<'_, N>,
        now_ns: u64,
        rng: &mut Rng,
    ) -> Gate {
        self.throttle_gate(cx, now_ns, rng, false)
            .unwrap_or(Gate::Go)
    }
}
