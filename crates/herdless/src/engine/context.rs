//! [`Context`]: what a decision reads besides the call's own state.

use std::fmt;
use std::time::Duration;

use crate::events::EventLevels;
use crate::events::{NoNotify, Notify, RetryEvent};
use crate::guard::{Breaker, RetryBudget, Throttle, Urgent, WaveGuard};
use crate::policy::Policy;

/// What a decision reads besides the call's own state: the policy, the shared
/// fleet-level guards, the task id and where events go. Built per decision (it
/// only borrows), so one engine state can be driven from anywhere: a future, a
/// tower policy, a simulator's event loop or a message taken from a queue.
///
/// ```
/// use std::time::Duration;
/// use herdless::engine::Context;
/// use herdless::{Policy, RetryBudget, Urgent};
/// let policy = Policy::default();
/// let budget = RetryBudget::aws();
/// let cx = Context::new(&policy)
///     .task_id("scan-7")
///     .budget(&budget)
///     .urgent(Urgent::new(Duration::from_secs(1)));
/// assert_eq!(cx.max_elapsed(), Duration::from_secs(1)); // the urgent deadline is tighter
/// ```
pub struct Context<'a, N = NoNotify> {
    pub(super) policy: &'a Policy,
    pub(super) task_id: &'a str,
    pub(super) notify: &'a N,
    pub(super) budget: Option<&'a RetryBudget>,
    pub(super) breaker: Option<&'a Breaker>,
    pub(super) throttle: Option<&'a Throttle>,
    /// Added to the call's `now` to read the throttle's clock (the executors:
    /// the call's origin on the process's timer; 0 for a driver whose `now`
    /// is already on one clock for every call, as the simulator's).
    pub(super) throttle_epoch_ns: u64,
    pub(super) urgent: Option<Urgent>,
    /// The client's wave guard: a failure whose answer announced a plan
    /// waits for its wave.
    pub(super) waves: Option<&'a WaveGuard>,
    /// [`max_elapsed`](Self::max_elapsed) in nanoseconds, kept beside the
    /// policy and the urgency it follows from (compared on every failure).
    max_elapsed_ns: u64,
    pub(super) listen: Listen,
    pub(super) levels: EventLevels,
}

/// Where events go besides the hook: `tracing`, and
/// [metrics](crate::events::metrics) when a recorder is installed. One byte,
/// so that the common case (no recorder, traced or not) is told by one test,
/// as `tracing` alone is without the `metrics` feature: with two fields the
/// second test (and the branch behind it) took registers from the decision
/// around it (docs/performance.md has the counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Listen(u8);

#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
impl Listen {
    /// Events go to `tracing` (when a subscriber wants them).
    const TRACE: u8 = 1;
    /// Metrics when a recorder is installed, asked at each event (the default).
    const METER_ASK: u8 = 2;
    /// A recorder was installed when the call's retries began
    /// ([`Context::ask_metrics`]).
    const METER_ON: u8 = 4;
    /// The default: traced, metered if a recorder is installed.
    const DEFAULT: Listen = Listen(Self::TRACE | Self::METER_ASK);

    #[inline(always)]
    fn traced(self) -> bool {
        self.0 & Self::TRACE != 0
    }

    /// Whether metrics may be recorded (a recorder was or may be installed).
    #[inline(always)]
    fn metered(self) -> bool {
        self.0 & (Self::METER_ASK | Self::METER_ON) != 0
    }

    #[inline(always)]
    fn with(self, bit: u8, on: bool) -> Listen {
        Listen(if on { self.0 | bit } else { self.0 & !bit })
    }
}

impl<N> fmt::Debug for Context<'_, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("policy", self.policy)
            .field("task_id", &self.task_id)
            .field("budget", &self.budget)
            .field("breaker", &self.breaker)
            .field("throttle", &self.throttle)
            .field("urgent", &self.urgent)
            .field("waves", &self.waves)
            .field("trace", &self.listen.traced())
            .field("metrics", &self.listen.metered())
            .field("levels", &self.levels)
            .finish_non_exhaustive()
    }
}

impl<N> Clone for Context<'_, N> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<N> Copy for Context<'_, N> {}

impl<'a> Context<'a> {
    /// A context with `policy` only: no task id, no hook, no shared guards,
    /// events traced.
    ///
    /// ```
    /// let policy = herdless::Policy::default();
    /// let cx = herdless::engine::Context::new(&policy);
    /// assert_eq!(cx.policy().max_attempts(), 6);
    /// ```
    #[inline]
    pub fn new(policy: &'a Policy) -> Self {
        Context {
            policy,
            task_id: "",
            notify: &NoNotify,
            budget: None,
            breaker: None,
            throttle: None,
            throttle_epoch_ns: 0,
            urgent: None,
            waves: None,
            max_elapsed_ns: policy.max_elapsed_ns,
            listen: Listen::DEFAULT,
            levels: EventLevels::DEFAULT,
        }
    }
}

impl<'a, N> Context<'a, N> {
    /// The task id every event carries.
    ///
    /// ```
    /// let p = herdless::Policy::default();
    /// let _cx = herdless::engine::Context::new(&p).task_id("ingest-9");
    /// ```
    #[inline]
    pub fn task_id(mut self, task_id: &'a str) -> Self {
        self.task_id = task_id;
        self
    }

    /// A hook receiving every event (beside `tracing`).
    ///
    /// ```
    /// use std::cell::Cell;
    /// use herdless::RetryEvent;
    /// let seen = Cell::new(0);
    /// let hook = |_: &RetryEvent<'_>| seen.set(seen.get() + 1);
    /// let p = herdless::Policy::default();
    /// let _cx = herdless::engine::Context::new(&p).notify(&hook);
    /// ```
    #[inline]
    pub fn notify<N2>(self, notify: &'a N2) -> Context<'a, N2> {
        Context {
            policy: self.policy,
            task_id: self.task_id,
            notify,
            budget: self.budget,
            breaker: self.breaker,
            throttle: self.throttle,
            throttle_epoch_ns: self.throttle_epoch_ns,
            urgent: self.urgent,
            waves: self.waves,
            max_elapsed_ns: self.max_elapsed_ns,
            listen: self.listen,
            levels: self.levels,
        }
    }

    /// The shared retry budget every retry must be admitted by.
    ///
    /// ```
    /// let p = herdless::Policy::default();
    /// let b = herdless::RetryBudget::aws();
    /// let _cx = herdless::engine::Context::new(&p).budget(&b);
    /// ```
    #[inline]
    pub fn budget(mut self, budget: &'a RetryBudget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// The shared breaker that gates retries.
    ///
    /// ```
    /// let p = herdless::Policy::default();
    /// let b = herdless::Breaker::new(5);
    /// let _cx = herdless::engine::Context::new(&p).breaker(&b);
    /// ```
    #[inline]
    pub fn breaker(mut self, breaker: &'a Breaker) -> Self {
        self.breaker = Some(breaker);
        self
    }

    /// The shared adaptive throttle that paces every attempt, the first
    /// included ([`Engine::ready`](crate::engine::Engine::ready) before each,
    /// the outcome after). Its clock is the `now` the driver passes: every
    /// call sharing one throttle must pass times on the same clock (an
    /// [`Engine`](crate::engine::Engine) started at its call's start on
    /// that clock, as the simulator does).
    ///
    /// ```
    /// let p = herdless::Policy::default();
    /// let t = herdless::guard::Throttle::new();
    /// let _cx = herdless::engine::Context::new(&p).throttle(&t);
    /// ```
    #[inline]
    pub fn throttle(mut self, throttle: &'a Throttle) -> Self {
        self.throttle = Some(throttle);
        self.throttle_epoch_ns = 0;
        self
    }

    /// [`throttle`](Self::throttle) for a driver whose `now` counts from
    /// the call's origin, `epoch_ns` on the shared clock.
    #[inline]
    pub(crate) fn throttle_at(mut self, throttle: &'a Throttle, epoch_ns: u64) -> Self {
        self.throttle = Some(throttle);
        self.throttle_epoch_ns = epoch_ns;
        self
    }

    /// Marks the call urgent (the escape lane, see [`Urgent`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = herdless::Policy::default();
    /// let cx = herdless::engine::Context::new(&p).urgent(herdless::Urgent::new(Duration::from_secs(2)));
    /// assert_eq!(cx.max_elapsed(), Duration::from_secs(2));
    /// ```
    #[inline]
    pub fn urgent(mut self, urgent: Urgent) -> Self {
        self.urgent = Some(urgent);
        self.max_elapsed_ns = crate::engine::call::nanos(self.max_elapsed());
        self
    }

    /// The client's [`WaveGuard`]: after a failure whose answer announced a
    /// plan of waves (the guard [`observe`](WaveGuard::observe)d it), the
    /// retry waits for the client's wave instead of the jitter or the
    /// server's spread delay (clamped to `max_retry_after`, counted against
    /// the elapsed limit). Times are relative to the answer: the guard
    /// needs no clock.
    ///
    /// ```
    /// use herdless::guard::waves::WaveGuard;
    /// let p = herdless::Policy::default();
    /// let g = WaveGuard::new("worker-1");
    /// let _cx = herdless::engine::Context::new(&p).waves(&g);
    /// ```
    #[inline]
    pub fn waves(mut self, guard: &'a WaveGuard) -> Self {
        self.waves = Some(guard);
        self
    }

    /// Whether events also go to `tracing` (default: yes). A simulator of a
    /// million clients turns this off; the hook still receives every event.
    ///
    /// ```
    /// let p = herdless::Policy::default();
    /// let _quiet = herdless::engine::Context::new(&p).trace(false);
    /// ```
    pub fn trace(mut self, trace: bool) -> Self {
        self.listen = self.listen.with(Listen::TRACE, trace);
        self
    }

    /// Whether the engine records [metrics](crate::events::metrics) (default:
    /// yes; they exist only with the `metrics` feature). The fleet simulator
    /// turns them off with tracing, so its virtual clients stay out of a real
    /// process's metrics.
    ///
    /// ```
    /// let p = herdless::Policy::default();
    /// let _unmetered = herdless::engine::Context::new(&p).trace(false).metrics(false);
    /// ```
    pub fn metrics(mut self, metrics: bool) -> Self {
        self.listen = self
            .listen
            .with(Listen::METER_ON, false)
            .with(Listen::METER_ASK, metrics);
        self
    }

    /// Asks once whether a metrics recorder is installed, for a context that
    /// serves every decision of one call (the executors'): with none, those
    /// decisions skip the metrics and build no event for them (a recorder
    /// installed during the call counts from the next call); with one, each
    /// event still finds the recorder in effect when it happens. Without the
    /// `metrics` feature, nothing to ask. In place: a context passed through
    /// by value was copied (16 instructions a call).
    #[inline(always)]
    pub(crate) fn ask_metrics(&mut self) {
        self.metrics_known(crate::events::metrics::installed());
    }

    /// [`ask_metrics`](Self::ask_metrics) with the answer asked earlier in
    /// the call.
    #[inline(always)]
    pub(crate) fn metrics_known(&mut self, installed: bool) {
        if self.listen.0 & Listen::METER_ASK != 0 {
            let bits = self.listen.0 & !Listen::METER_ASK;
            self.listen = Listen(if installed {
                bits | Listen::METER_ON
            } else {
                bits
            });
        }
    }

    /// The `tracing` level of each event (default: [`EventLevels::DEFAULT`]).
    ///
    /// ```
    /// use herdless::engine::{Context, EventLevels};
    /// let p = herdless::Policy::default();
    /// let levels = EventLevels::default().retry_scheduled(tracing::Level::DEBUG);
    /// let cx = Context::new(&p).event_levels(levels);
    /// assert_eq!(cx.levels(), levels);
    /// ```
    #[inline]
    pub fn event_levels(mut self, levels: EventLevels) -> Self {
        self.levels = levels;
        self
    }

    /// The event levels in force.
    ///
    /// ```
    /// let p = herdless::Policy::default();
    /// let cx = herdless::engine::Context::new(&p);
    /// assert_eq!(cx.levels(), herdless::events::EventLevels::DEFAULT);
    /// ```
    pub fn levels(&self) -> EventLevels {
        self.levels
    }

    /// The policy.
    ///
    /// ```
    /// let p = herdless::Policy::default();
    /// assert_eq!(herdless::engine::Context::new(&p).policy(), &p);
    /// ```
    pub fn policy(&self) -> &'a Policy {
        self.policy
    }

    /// The elapsed limit in force: `max_elapsed`, or the urgent deadline when
    /// it is tighter.
    ///
    /// ```
    /// let p = herdless::Policy::default();
    /// assert_eq!(herdless::engine::Context::new(&p).max_elapsed(), p.max_elapsed());
    /// ```
    #[inline]
    pub fn max_elapsed(&self) -> Duration {
        max_elapsed(self.policy, self.urgent)
    }

    /// [`max_elapsed`](Self::max_elapsed) in nanoseconds (saturating).
    #[inline]
    pub(crate) fn max_elapsed_ns(&self) -> u64 {
        self.max_elapsed_ns
    }
}

/// The elapsed limit in force for `policy` and `urgent` (what
/// [`Context::max_elapsed`] reads), for a driver that has no context yet.
#[inline]
pub(crate) fn max_elapsed(policy: &Policy, urgent: Option<Urgent>) -> Duration {
    match urgent {
        Some(u) => policy.max_elapsed.min(u.deadline()),
        None => policy.max_elapsed,
    }
}

impl<N: Notify> Context<'_, N> {
    /// Emits the event `make` builds, building it only when something
    /// listens: `tracing` with a subscriber at any level, metrics, or a hook
    /// ([`Notify::ACTIVE`]). With none, an event costs one atomic load.
    #[inline]
    pub(super) fn emit_with<'e>(&self, attempt_ended: bool, make: impl FnOnce() -> RetryEvent<'e>) {
        if self.listening() {
            self.emit(make(), attempt_ended);
        }
    }

    /// Whether an event would reach anyone: `tracing` with a subscriber at
    /// any level, metrics, or a hook.
    #[inline]
    pub(super) fn listening(&self) -> bool {
        use tracing::level_filters::LevelFilter;
        let traced = || LevelFilter::current() != LevelFilter::OFF;
        #[cfg(feature = "metrics")]
        {
            // The common case first, on one test: no recorder, traced or not.
            if self.listen.0 & !Listen::TRACE == 0 {
                return (self.listen.traced() && traced()) || N::ACTIVE;
            }
            self.listening_metered()
        }
        #[cfg(not(feature = "metrics"))]
        {
            (self.listen.traced() && traced()) || N::ACTIVE
        }
    }

    /// [`listening`](Self::listening) for a context that records metrics (a
    /// recorder was installed, or it was not asked yet): out of line and
    /// cold, so that the common case keeps its registers.
    #[cfg(feature = "metrics")]
    #[cold]
    #[inline(never)]
    fn listening_metered(&self) -> bool {
        use tracing::level_filters::LevelFilter;
        let bits = self.listen.0;
        (bits & Listen::TRACE != 0 && LevelFilter::current() != LevelFilter::OFF)
            || N::ACTIVE
            || bits & Listen::METER_ON != 0
            || (bits & Listen::METER_ASK != 0 && crate::events::metrics::installed())
    }

    /// The one event path: `tracing` at the configured level, metrics, the
    /// hook. `attempt_ended` is false for a give-up while waiting on the
    /// breaker (no attempt ran since the last event).
    #[inline]
    pub(super) fn emit(&self, event: RetryEvent<'_>, attempt_ended: bool) {
        if self.listen.traced() {
            let level = self.levels.level(&event);
            // What `tracing::event!` checks first, before the per-level
            // dispatch: with no subscriber (or a quieter one) nothing else runs.
            if tracing::level_enabled!(level) {
                crate::events::emit::trace(&event, level);
            }
        }
        #[cfg(feature = "metrics")]
        if self.listen.metered() {
            crate::events::metrics::event(&event, attempt_ended, self.budget, self.breaker);
        }
        let _ = attempt_ended;
        self.notify.notify(&event);
    }

    /// A hedged call's copy failed while others were in flight: no event,
    /// one attempt counted.
    pub(super) fn copy_failed(&self) {
        #[cfg(feature = "metrics")]
        if self.listen.metered() {
            crate::events::metrics::copy_failed();
        }
    }

    /// A first-try success: no event (the hot path), only metrics.
    #[inline]
    pub(super) fn first_success(&self) {
        #[cfg(feature = "metrics")]
        if self.listen.metered() {
            crate::events::metrics::first_success(self.budget, self.breaker);
        }
    }
}
