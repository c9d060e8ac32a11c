//! One call's state and every decision about it: the sans-IO [`Engine`].

use std::time::Duration;

use crate::classify::Classification;
use crate::classify::RetryCause;
use crate::engine::GiveUp;
use crate::engine::context::Context;
use crate::engine::events::{Notify, RetryEvent};
use crate::policy::Schedule;
use crate::rng::Rng;

mod deadline;
mod hedge;
mod resume;
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
/// or, with a [throttle](crate::fleet::Throttle), whether any attempt may.
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
/// The retry was held behind an open breaker's probe (its release may be
/// spread when the breaker closes).
const HELD: u8 = 1 << 6;

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
    /// # Ok::<(), herdless::fleet::RetryBudgetError>(())
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

    /// The current attempt failed at `now`: decides whether and when to retry.
    ///
    /// In order: a terminal (or unknown) classification gives up
    /// (`retry_abandoned_terminal`); the breaker learns the failure; a
    /// [`ServerPushback`](Classification::ServerPushback) gives up
    /// ([`GiveUp::ServerPushback`]); `max_attempts` is checked; the delay is drawn (advancing the schedule)
    /// and replaced by the server's delay, clamped and spread, when the
    /// classification carries one; `elapsed + delay` is checked against the
    /// elapsed limit; the shared budget is asked (unless the escape lane
    /// covers this retry). A give-up for any reason but the shared budget
    /// still charges the budget's failure cost. Emits `retry_scheduled` or
    /// `retry_budget_exhausted`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::engine::{Context, Decision, Engine};
    /// use herdless::{Classification, GiveUp, Policy, RetryCause, Rng};
    /// let p = Policy::default();
    /// let cx = Context::new(&p);
    /// let mut call = Engine::new(Duration::ZERO);
    /// call.begin();
    /// let d = call.failed(&cx, Duration::ZERO, Classification::terminal(), RetryCause::Error, &mut Rng::with_seed(1));
    /// assert_eq!(d, Decision::GiveUp(GiveUp::Terminal));
    /// ```
    pub fn failed<N: Notify>(
        &mut self,
        cx: &Context<'_, N>,
        now: Duration,
        classification: Classification,
        cause: RetryCause,
        rng: &mut Rng,
    ) -> Decision {
        self.failed_ns(cx, nanos(now), classification, cause, rng)
    }

    /// [`failed`](Self::failed) with `now` in nanoseconds: what the executors
    /// call (their clocks read nanoseconds, so no `Duration` round trip).
    #[inline]
    pub(crate) fn failed_ns<N: Notify>(
        &mut self,
        cx: &Context<'_, N>,
        now_ns: u64,
        classification: Classification,
        cause: RetryCause,
        rng: &mut Rng,
    ) -> Decision {
        let elapsed_ns = now_ns.saturating_sub(self.start_ns);
        let elapsed = || Duration::from_nanos(elapsed_ns);
        let timed_out = cause == RetryCause::Timeout;
        let pushback = classification == Classification::ServerPushback;
        if !classification.is_retryable() && !pushback {
            // The endpoint answered: neither a breaker failure nor a success;
            // for the throttle, an answer (it served the call).
            self.throttle_record(cx, now_ns, true);
            self.release_probe(cx);
            cx.emit_with(true, || RetryEvent::AbandonedTerminal {
                task_id: cx.task_id,
                attempt: self.attempts,
                classification,
                timed_out,
                elapsed: elapsed(),
            });
            return Decision::GiveUp(GiveUp::Terminal);
        }
        if let Some(breaker) = cx.breaker {
            breaker.record_failure();
        }
        self.throttle_record(cx, now_ns, false);
        self.release_probe(cx);
        if pushback {
            // The server asked not to be retried: a failure about load.
            return self.denied(cx, GiveUp::ServerPushback, elapsed(), timed_out);
        }
        let policy = cx.policy;
        if self.attempts >= policy.max_attempts {
            return self.denied(cx, GiveUp::MaxAttempts, elapsed(), timed_out);
        }
        let mut schedule = Schedule {
            retry: self.attempts.saturating_sub(1),
            prev_ns: self.prev_ns,
        };
        let computed_ns = policy.next_delay_ns(&mut schedule, rng);
        self.prev_ns = schedule.prev_ns;
        let (delay_ns, honored) = match classification {
            Classification::Retryable { after: Some(d) } if !d.is_zero() => {
                (policy.server_delay_ns(d, rng), true)
            }
            _ => (computed_ns, false),
        };
        if cx.budget.is_some() && self.flags & LEVEL_SET == 0 {
            self.level = (rng.next_u64() >> 48) as u16;
            self.flags |= LEVEL_SET;
        }
        // `elapsed + delay > max_elapsed`, in nanoseconds (exact: a sum past
        // `u64::MAX` is past every limit). With an attempt timeout the
        // retry's attempt would be cut at the limit: one due exactly at the
        // limit would have no time, so it is not scheduled either.
        let limit = cx.max_elapsed_ns();
        if elapsed_ns
            .checked_add(delay_ns)
            .is_none_or(|due| due > limit || (due == limit && policy.attempt_timeout_ns != 0))
        {
            return self.denied(cx, GiveUp::MaxElapsed, elapsed(), timed_out);
        }
        let delay = Duration::from_nanos(delay_ns);
        if let (Some(budget), false) = (cx.budget, self.bypasses(cx)) {
            let level = f64::from(self.level) / 65_536.0;
            if budget.try_retry(cause, level).is_err() {
                return self.exhausted(cx, GiveUp::RetryBudget, elapsed(), true, timed_out);
            }
            let cause_bits = match cause {
                RetryCause::Timeout => PENDING_TIMEOUT | SPENT_TIMEOUT,
                RetryCause::Error => 0,
            };
            self.flags &= !(SPENT_TIMEOUT | PENDING_TIMEOUT);
            self.flags |= SPENT | PENDING | cause_bits;
        }
        cx.emit_with(true, || RetryEvent::Scheduled {
            task_id: cx.task_id,
            attempt: self.attempts,
            computed_jitter: Duration::from_nanos(computed_ns),
            sleep: delay,
            honored_retry_after: honored,
            timed_out,
            elapsed: elapsed(),
        });
        Decision::Retry {
            delay,
            honored_retry_after: honored,
        }
    }

    /// A retry is due at `now` (its delay has passed), or, with a
    /// [throttle](crate::fleet::Throttle), any attempt is about to start: may
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
    /// refunded). A retry that was held behind the probe and finds the
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
                self.flags = (self.flags | PROBE) & !HELD;
                return Gate::Go;
            }
            self.flags |= HELD;
            breaker.wait_for(rng)
        } else if self.flags & HELD != 0 {
            self.flags &= !HELD;
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

    /// Whether [`cancel`](Self::cancel) has anything to settle: an admitted
    /// retry not yet begun, or a held probe.
    #[inline]
    pub(crate) fn is_unsettled(&self) -> bool {
        self.flags & (PENDING | PROBE) != 0
    }

    /// The driver drops the call early (a cancelled future, a shutdown): an
    /// admitted retry that never started is refunded to the budget and a held
    /// probe is released. Harmless to call on a finished call.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::engine::{Context, Engine};
    /// use herdless::{Classification, Policy, RetryBudget, RetryCause, Rng};
    /// let p = Policy::default();
    /// let budget = RetryBudget::aws();
    /// let cx = Context::new(&p).budget(&budget);
    /// let mut call = Engine::new(Duration::ZERO);
    /// call.begin();
    /// call.failed(&cx, Duration::ZERO, Classification::retryable(), RetryCause::Error, &mut Rng::with_seed(1));
    /// assert_eq!(budget.tokens(), 495.0);
    /// call.cancel(&cx);
    /// assert_eq!(budget.tokens(), 500.0);
    /// ```
    #[inline]
    pub fn cancel<N>(&mut self, cx: &Context<'_, N>) {
        self.refund(cx);
        self.release_probe(cx);
    }

    /// Whether the retry being decided goes through the escape lane: the first
    /// `quota` retries of an urgent call (the `k`-th retry follows attempt `k`).
    fn bypasses<N>(&self, cx: &Context<'_, N>) -> bool {
        cx.urgent.is_some_and(|u| self.attempts <= u.retry_quota())
    }

    fn spent_cause(&self) -> RetryCause {
        if self.flags & SPENT_TIMEOUT != 0 {
            RetryCause::Timeout
        } else {
            RetryCause::Error
        }
    }

    #[inline]
    fn refund<N>(&mut self, cx: &Context<'_, N>) {
        if self.flags & PENDING == 0 {
            return;
        }
        let cause = if self.flags & PENDING_TIMEOUT != 0 {
            RetryCause::Timeout
        } else {
            RetryCause::Error
        };
        self.flags &= !(PENDING | PENDING_TIMEOUT);
        if let Some(budget) = cx.budget {
            budget.refund(budget.cost(cause));
        }
    }

    #[inline]
    fn release_probe<N>(&mut self, cx: &Context<'_, N>) {
        if self.flags & PROBE != 0 {
            self.flags &= !PROBE;
            if let Some(breaker) = cx.breaker {
                breaker.release_probe();
            }
        }
    }

    /// Gives up for a reason other than the shared budget: the failure still
    /// charges the budget's failure cost (it is news about the endpoint).
    fn denied<N: Notify>(
        &mut self,
        cx: &Context<'_, N>,
        reason: GiveUp,
        elapsed: Duration,
        timed_out: bool,
    ) -> Decision {
        if let Some(budget) = cx.budget {
            budget.record_failure();
        }
        self.exhausted(cx, reason, elapsed, true, timed_out)
    }

    /// `attempt_ended` is false for a give-up while waiting on the breaker
    /// (no attempt ran since the last event); `timed_out`: the attempt that
    /// ended was a timeout.
    fn exhausted<N: Notify>(
        &self,
        cx: &Context<'_, N>,
        reason: GiveUp,
        elapsed: Duration,
        attempt_ended: bool,
        timed_out: bool,
    ) -> Decision {
        cx.emit(
            RetryEvent::BudgetExhausted {
                task_id: cx.task_id,
                attempt: self.attempts,
                timed_out,
                elapsed,
                reason,
            },
            attempt_ended,
        );
        Decision::GiveUp(reason)
    }
}
