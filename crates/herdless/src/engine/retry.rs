//! [`Retry`]: a configured retrier, and [`Attempt`], what the operation sees.
//!
//! [`Retry`] holds a [`Policy`], a classifier, a timer, a notify hook and the
//! shared guards. Its [`call`](Retry::call) (blocking) and
//! [`call_async`](Retry::call_async) are thin loops over the sans-IO
//! [`Engine`]: this module only reads the clock, classifies the error, owns
//! the call's generator and idempotency key, and sleeps where the engine says.
//!
//! The success path allocates nothing and draws no randomness: the idempotency
//! key is derived on demand from a per-thread call id, and each call's generator
//! is created lazily at its first failure, by [`Rng::fresh`](crate::Rng::fresh) (or from the
//! explicit seed).

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use crate::engine::context::Context;
use crate::engine::events::NoNotify;
use crate::engine::EventLevels;
use crate::fleet::{Breaker, RetryBudget, Urgent};
use crate::policy::Policy;
use crate::rng::IdempotencyKey;
use crate::timer::SystemTimer;

/// What the operation sees on each attempt.
///
/// ```
/// use herdless::{AlwaysRetry, ManualTimer, Policy, Retry};
/// let mut keys = Vec::new();
/// let out = Retry::new(Policy::default(), AlwaysRetry)
///     .timer(ManualTimer::new())
///     .call(|attempt| {
///         keys.push(attempt.idempotency_key());
///         if attempt.number() < 3 { Err("busy") } else { Ok(attempt.number()) }
///     });
/// assert_eq!(out, Ok(3));
/// assert!(keys.iter().all(|k| *k == keys[0])); // stable across attempts
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    pub(super) number: u32,
    pub(super) elapsed: Duration,
    pub(super) key: CallKey,
}

/// Where a call's idempotency key comes from: given by the caller, or derived on
/// demand from a per-thread call id (so the success path draws no randomness).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CallKey {
    Explicit(IdempotencyKey),
    Derived(u128),
}

impl CallKey {
    fn key(self) -> IdempotencyKey {
        match self {
            CallKey::Explicit(key) => key,
            CallKey::Derived(id) => IdempotencyKey::from_call_id(id),
        }
    }
}

impl Attempt {
    /// The 1-based attempt number (1 is the first call).
    ///
    /// ```
    /// # use herdless::{AlwaysRetry, Policy, Retry};
    /// let n = Retry::new(Policy::default(), AlwaysRetry).call(|a| Ok::<_, ()>(a.number()));
    /// assert_eq!(n, Ok(1));
    /// ```
    pub fn number(&self) -> u32 {
        self.number
    }

    /// Whether this attempt is a retry (number ≥ 2).
    ///
    /// ```
    /// # use herdless::{AlwaysRetry, Policy, Retry};
    /// let r = Retry::new(Policy::default(), AlwaysRetry).call(|a| Ok::<_, ()>(a.is_retry()));
    /// assert_eq!(r, Ok(false));
    /// ```
    pub fn is_retry(&self) -> bool {
        self.number > 1
    }

    /// Time since the call's first attempt started, when this attempt
    /// started: zero for the first; for a retry, when it came due (the
    /// previous failure's clock reading plus the delay slept), or the clock's
    /// reading after a breaker's wait. The sleeps are as long as the engine
    /// says, so this reads no clock and is exact under a virtual clock.
    ///
    /// ```
    /// # use herdless::{AlwaysRetry, ManualTimer, Policy, Retry};
    /// let e = Retry::new(Policy::default(), AlwaysRetry)
    ///     .timer(ManualTimer::new())
    ///     .call(|a| Ok::<_, ()>(a.elapsed()));
    /// assert_eq!(e, Ok(std::time::Duration::ZERO));
    /// ```
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// The call's idempotency key: the same for every attempt of one call.
    ///
    /// ```
    /// # use herdless::{AlwaysRetry, IdempotencyKey, Policy, Retry};
    /// let key = IdempotencyKey::random();
    /// let seen = Retry::new(Policy::default(), AlwaysRetry)
    ///     .idempotency_key(key)
    ///     .call(|a| Ok::<_, ()>(a.idempotency_key()));
    /// assert_eq!(seen, Ok(key));
    /// ```
    pub fn idempotency_key(&self) -> IdempotencyKey {
        self.key.key()
    }
}

/// A configured retrier: policy, classifier, timer, notify hook, task id.
///
/// One `Retry` can serve many calls (`call` takes `&self`); each call gets its own
/// attempt count, budget, idempotency key and random generator.
///
/// ```
/// use std::time::Duration;
/// use herdless::{Classification, Policy, Retry};
///
/// #[derive(Debug)]
/// enum ScanError { Timeout, Unauthorized }
///
/// let policy = Policy::builder()
///     .base(Duration::from_millis(1))
///     .cap(Duration::from_millis(4))
///     .build()?;
/// let retry = Retry::new(policy, |e: &ScanError| match e {
///     ScanError::Timeout => Classification::retryable(),
///     ScanError::Unauthorized => Classification::terminal(),
/// })
/// .task_id("scan-42");
///
/// let mut calls = 0;
/// let pages = retry.call(|_attempt| {
///     calls += 1;
///     if calls < 3 { Err(ScanError::Timeout) } else { Ok(12) }
/// });
/// assert_eq!(pages.unwrap(), 12);
///
/// let denied = retry.call(|_| Err::<u32, _>(ScanError::Unauthorized)).unwrap_err();
/// assert!(denied.is_terminal());
/// assert_eq!(denied.attempts(), 1);
/// # Ok::<(), herdless::PolicyError>(())
/// ```
pub struct Retry<C, T = SystemTimer, N = NoNotify> {
    pub(crate) policy: Policy,
    pub(crate) classifier: C,
    pub(crate) timer: T,
    pub(crate) notify: N,
    pub(crate) task_id: Cow<'static, str>,
    pub(crate) seed: Option<u64>,
    pub(crate) key: Option<IdempotencyKey>,
    pub(crate) calls: AtomicU64,
    pub(crate) budget: Option<Arc<RetryBudget>>,
    pub(crate) breaker: Option<Arc<Breaker>>,
    pub(crate) urgent: Option<Urgent>,
    pub(crate) levels: EventLevels,
}

impl<C, T, N> fmt::Debug for Retry<C, T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Retry")
            .field("policy", &self.policy)
            .field("task_id", &self.task_id)
            .field("seed", &self.seed)
            .field("budget", &self.budget)
            .field("breaker", &self.breaker)
            .field("urgent", &self.urgent)
            .field("levels", &self.levels)
            .finish_non_exhaustive()
    }
}

impl<C> Retry<C> {
    /// A retrier with the system timer and no notify hook.
    ///
    /// ```
    /// let r = herdless::Retry::new(herdless::Policy::default(), herdless::ByTrait);
    /// assert_eq!(r.policy().max_attempts(), 6);
    /// ```
    pub fn new(policy: Policy, classifier: C) -> Self {
        Retry {
            policy,
            classifier,
            timer: SystemTimer,
            notify: NoNotify,
            task_id: Cow::Borrowed(""),
            seed: None,
            key: None,
            calls: AtomicU64::new(0),
            budget: None,
            breaker: None,
            urgent: None,
            levels: EventLevels::DEFAULT,
        }
    }
}

impl<C, T, N> Retry<C, T, N> {
    /// The policy.
    ///
    /// ```
    /// let r = herdless::Retry::new(herdless::Policy::default(), herdless::AlwaysRetry);
    /// assert_eq!(r.policy().cap().as_secs(), 30);
    /// ```
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Sets the task id carried by every event.
    ///
    /// ```
    /// let r = herdless::Retry::new(herdless::Policy::default(), herdless::AlwaysRetry).task_id("ingest-9");
    /// assert_eq!(r.task(), "ingest-9");
    /// ```
    pub fn task_id(mut self, task_id: impl Into<Cow<'static, str>>) -> Self {
        self.task_id = task_id.into();
        self
    }

    /// The task id.
    ///
    /// ```
    /// let r = herdless::Retry::new(herdless::Policy::default(), herdless::AlwaysRetry);
    /// assert_eq!(r.task(), "");
    /// ```
    pub fn task(&self) -> &str {
        &self.task_id
    }

    /// Makes the delays reproducible: call `k` of this retrier draws from a
    /// generator derived from `(seed, k)`. Without a seed every call's generator
    /// is its own ([`Rng::fresh`](crate::Rng::fresh): a per-thread generator seeded once from OS
    /// entropy seeds it, no system call per call).
    ///
    /// ```
    /// use herdless::{AlwaysRetry, ManualTimer, Policy, Retry};
    /// let run = |seed| {
    ///     let t = ManualTimer::new();
    ///     let _ = Retry::new(Policy::default(), AlwaysRetry).seed(seed).timer(t.clone())
    ///         .call(|_| Err::<(), _>(()));
    ///     t.sleeps()
    /// };
    /// assert_eq!(run(7), run(7));
    /// ```
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Uses a given idempotency key for every call (e.g. a redelivered task's
    /// original key) instead of a fresh one per call.
    ///
    /// ```
    /// use herdless::{AlwaysRetry, IdempotencyKey, Policy, Retry};
    /// let key: IdempotencyKey = "00000000-0000-4000-8000-00000000002a".parse()?;
    /// let r = Retry::new(Policy::default(), AlwaysRetry).idempotency_key(key);
    /// assert_eq!(r.call(|a| Ok::<_, ()>(a.idempotency_key())), Ok(key));
    /// # Ok::<(), herdless::ParseIdempotencyKeyError>(())
    /// ```
    pub fn idempotency_key(mut self, key: IdempotencyKey) -> Self {
        self.key = Some(key);
        self
    }

    /// Replaces the timer (clock and sleep): [`ManualTimer`](crate::ManualTimer)
    /// in tests.
    ///
    /// ```
    /// use herdless::{AlwaysRetry, ManualTimer, Policy, Retry};
    /// let t = ManualTimer::new();
    /// let _ = Retry::new(Policy::default(), AlwaysRetry).timer(t.clone()).call(|_| Err::<(), _>(()));
    /// assert_eq!(t.sleeps().len(), 5); // 6 attempts, 5 sleeps, no real time
    /// ```
    pub fn timer<T2>(self, timer: T2) -> Retry<C, T2, N> {
        Retry {
            policy: self.policy,
            classifier: self.classifier,
            timer,
            notify: self.notify,
            task_id: self.task_id,
            seed: self.seed,
            key: self.key,
            calls: self.calls,
            budget: self.budget,
            breaker: self.breaker,
            urgent: self.urgent,
            levels: self.levels,
        }
    }

    /// Adds a notify hook receiving every [`RetryEvent`](crate::RetryEvent) (beside `tracing`).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use herdless::{AlwaysRetry, ManualTimer, Policy, Retry, RetryEvent};
    /// let scheduled = AtomicU32::new(0);
    /// let hook = |e: &RetryEvent<'_>| {
    ///     if e.name() == "retry_scheduled" { scheduled.fetch_add(1, Ordering::Relaxed); }
    /// };
    /// let _ = Retry::new(Policy::default(), AlwaysRetry)
    ///     .timer(ManualTimer::new())
    ///     .notify(hook)
    ///     .call(|_| Err::<(), _>(()));
    /// assert_eq!(scheduled.load(Ordering::Relaxed), 5);
    /// ```
    pub fn notify<N2>(self, notify: N2) -> Retry<C, T, N2> {
        Retry {
            policy: self.policy,
            classifier: self.classifier,
            timer: self.timer,
            notify,
            task_id: self.task_id,
            seed: self.seed,
            key: self.key,
            calls: self.calls,
            budget: self.budget,
            breaker: self.breaker,
            urgent: self.urgent,
            levels: self.levels,
        }
    }
}

impl<C, T, N> Retry<C, T, N> {
    /// Shares a [`RetryBudget`] with every other retrier holding the same
    /// `Arc`: each retry must be admitted by it, successes refund it. A denied
    /// retry ends the call with [`GiveUp::RetryBudget`](crate::GiveUp::RetryBudget). See
    /// [`retry_budget`](crate::fleet::budget).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use herdless::{AlwaysRetry, GiveUp, ManualTimer, Policy, Retry, RetryBudget};
    /// let budget = Arc::new(RetryBudget::builder().aws().max_tokens(12.0).spread(0.0).build()?);
    /// let retry = Retry::new(Policy::default(), AlwaysRetry)
    ///     .timer(ManualTimer::new())
    ///     .budget(budget.clone());
    /// let err = retry.call(|_| Err::<(), _>("503")).unwrap_err();
    /// assert_eq!(err.reason(), GiveUp::RetryBudget);
    /// assert_eq!(err.attempts(), 3); // two retries at 5 tokens each, then 2 < 5
    /// # Ok::<(), herdless::RetryBudgetError>(())
    /// ```
    pub fn budget(mut self, budget: Arc<RetryBudget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Shares a half-open probe [`Breaker`]: while it is open, this retrier's
    /// retries wait (jittered) until they may probe or it closes. See
    /// [`breaker`](crate::fleet::breaker).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use herdless::{AlwaysRetry, Breaker, ManualTimer, Policy, Retry};
    /// let breaker = Arc::new(Breaker::new(3));
    /// let retry = Retry::new(Policy::default(), AlwaysRetry)
    ///     .timer(ManualTimer::new())
    ///     .breaker(breaker.clone());
    /// let _ = retry.call(|a| if a.number() < 3 { Err("503") } else { Ok(()) });
    /// assert_eq!(breaker.consecutive_failures(), 0); // the success closed it
    /// ```
    pub fn breaker(mut self, breaker: Arc<Breaker>) -> Self {
        self.breaker = Some(breaker);
        self
    }

    /// Marks this retrier's calls urgent: the escape lane. See
    /// [`escape_lane`](crate::fleet::escape_lane).
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::{AlwaysRetry, GiveUp, ManualTimer, Policy, Retry, Urgent};
    /// let timer = ManualTimer::new();
    /// let err = Retry::new(Policy::default(), AlwaysRetry)
    ///     .timer(timer.clone())
    ///     .urgent(Urgent::new(Duration::from_millis(800)))
    ///     .call(|_| Err::<(), _>("503"))
    ///     .unwrap_err();
    /// assert_eq!(err.reason(), GiveUp::MaxElapsed);
    /// assert!(timer.elapsed() <= Duration::from_millis(800));
    /// ```
    pub fn urgent(mut self, urgent: Urgent) -> Self {
        self.urgent = Some(urgent);
        self
    }

    /// Sets the `tracing` level of each event (default:
    /// [`EventLevels::DEFAULT`]; see [`levels`](crate::engine::levels)).
    ///
    /// ```
    /// use herdless::{engine::EventLevels, AlwaysRetry, Policy, Retry};
    /// use tracing::Level;
    /// let r = Retry::new(Policy::default(), AlwaysRetry)
    ///     .event_levels(EventLevels::default().retry_scheduled(Level::DEBUG));
    /// assert_eq!(r.levels().get("retry_scheduled"), Some(Level::DEBUG));
    /// ```
    pub fn event_levels(mut self, levels: EventLevels) -> Self {
        self.levels = levels;
        self
    }

    /// The event levels in force.
    ///
    /// ```
    /// let r = herdless::Retry::new(herdless::Policy::default(), herdless::AlwaysRetry);
    /// assert_eq!(r.levels(), herdless::engine::EventLevels::DEFAULT);
    /// ```
    pub fn levels(&self) -> EventLevels {
        self.levels
    }

    /// The shared retry budget, if any.
    ///
    /// ```
    /// assert!(herdless::Retry::new(herdless::Policy::default(), herdless::AlwaysRetry).shared_budget().is_none());
    /// ```
    pub fn shared_budget(&self) -> Option<&Arc<RetryBudget>> {
        self.budget.as_ref()
    }

    /// The shared breaker, if any.
    ///
    /// ```
    /// assert!(herdless::Retry::new(herdless::Policy::default(), herdless::AlwaysRetry).shared_breaker().is_none());
    /// ```
    pub fn shared_breaker(&self) -> Option<&Arc<Breaker>> {
        self.breaker.as_ref()
    }

    /// The urgency, if the calls are urgent.
    ///
    /// ```
    /// assert!(herdless::Retry::new(herdless::Policy::default(), herdless::AlwaysRetry).urgency().is_none());
    /// ```
    pub fn urgency(&self) -> Option<Urgent> {
        self.urgent
    }
}

impl<C, T, N> Retry<C, T, N> {
    /// The engine's view of this retrier: policy, guards, task id, hook.
    #[inline]
    pub(crate) fn context(&self) -> Context<'_, N> {
        let cx = Context::new(&self.policy)
            .task_id(&self.task_id)
            .event_levels(self.levels)
            .notify(&self.notify);
        let cx = match &self.budget {
            Some(b) => cx.budget(b),
            None => cx,
        };
        let cx = match &self.breaker {
            Some(b) => cx.breaker(b),
            None => cx,
        };
        match self.urgent {
            Some(u) => cx.urgent(u),
            None => cx,
        }
    }
}
