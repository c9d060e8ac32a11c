//! The executors: [`Retry`], a configured retrier built by [`RetryBuilder`],
//! and [`Attempt`], what the operation sees; the blocking and async loops
//! (`blocking.rs`, `asynchronous.rs`, `async_mut.rs`, `hedged.rs`, over the
//! shared `run.rs`), the front door ([`IntoRetry`], [`RetryBlocking`],
//! [`RetryAsync`]) and the error a call returns ([`RetryError`]).
//!
//! This layer drives the sans-IO [`engine`](crate::engine) (below it) and
//! reports through [`events`](crate::events) (below that); neither imports
//! it.
//!
//!
//! [`Retry`] holds a [`Policy`], a classifier, a timer, a notify hook and the
//! shared guards. Its [`call`](Retry::call) (blocking) and
//! [`call_async`](Retry::call_async) are thin loops over the sans-IO
//! [`Engine`](crate::engine::Engine): this module only reads the clock, classifies the error, owns
//! the call's generator and idempotency key, and sleeps where the engine says.
//!
//! The success path allocates nothing and draws no randomness: the idempotency
//! key is derived on demand from a per-thread call id, and each call's generator
//! is created lazily at its first failure, by [`Rng::fresh`](crate::Rng::fresh) (or from the
//! explicit seed).

mod async_mut;
mod asynchronous;
mod blocking;
mod builder;
mod error;
mod front;
mod hedged;
pub(crate) mod run;

pub use builder::RetryBuilder;
pub use error::RetryError;
pub use front::{IntoRetry, RetryAsync, RetryBlocking};

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use crate::classify::ByTrait;
use crate::engine::context::Context;
use crate::events::EventLevels;
use crate::events::NoNotify;
use crate::guard::{Breaker, RetryBudget, Throttle, Urgent, WaveGuard};
use crate::policy::Policy;
use crate::rng::IdempotencyKey;
use crate::timer::SystemTimer;

/// What the operation sees on each attempt.
///
/// ```
/// use herdless::{AlwaysRetry, ManualTimer, Policy, Retry};
/// let mut keys = Vec::new();
/// let out = Retry::builder()
///     .policy(Policy::default())
///     .classifier(AlwaysRetry)
///     .timer(ManualTimer::new())
///     .build()
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
    pub(super) elapsed_ns: u64,
    /// The policy's attempt timeout (0: none) and the elapsed limit in
    /// force, in nanoseconds: the deadline is computed when it is asked for,
    /// so an attempt nobody asks costs nothing.
    pub(super) timeout_ns: u64,
    pub(super) limit_ns: u64,
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
    /// let e = Retry::builder()
    ///     .policy(Policy::default())
    ///     .classifier(AlwaysRetry)
    ///     .timer(ManualTimer::new())
    ///     .build()
    ///     .call(|a| Ok::<_, ()>(a.elapsed()));
    /// assert_eq!(e, Ok(std::time::Duration::ZERO));
    /// ```
    pub fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.elapsed_ns)
    }

    /// When this attempt must end, as time since the call's first attempt
    /// started (the clock of [`elapsed`](Self::elapsed)): the smaller of
    /// `elapsed() +` the policy's
    /// [`attempt_timeout`](crate::Policy::attempt_timeout) and the elapsed
    /// limit (`max_elapsed`, or an urgent call's deadline). Decided by the
    /// engine ([`Engine::deadline`](crate::engine::Engine::deadline)).
    ///
    /// The async executors drop an attempt at its deadline when the policy
    /// has an attempt timeout (see
    /// [`Classify::timed_out`](crate::Classify::timed_out)); the blocking
    /// executor cannot preempt an attempt: it gives it this deadline, and an
    /// attempt that wants the call to end within `max_elapsed` must respect
    /// it (pass [`remaining`](Self::remaining) to its client).
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::{AlwaysRetry, ManualTimer, Policy, Retry};
    /// let policy = Policy::builder()
    ///     .attempt_timeout(Duration::from_secs(2))
    ///     .max_elapsed(Duration::from_secs(3))
    ///     .base(Duration::from_millis(1500))
    ///     .jitter(herdless::Jitter::None)
    ///     .build()?;
    /// let mut seen = Vec::new();
    /// let retry = Retry::builder().policy(policy).classifier(AlwaysRetry).timer(ManualTimer::new()).build();
    /// let _ = retry.call(|a| { seen.push((a.elapsed(), a.deadline())); Err::<(), _>("busy") });
    /// let s = Duration::from_millis;
    /// assert_eq!(seen, [(s(0), s(2000)), (s(1500), s(3000))]); // the second: what is left of 3 s
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn deadline(&self) -> Duration {
        Duration::from_nanos(self.deadline_ns())
    }

    /// [`deadline`](Self::deadline) in nanoseconds since the call started.
    #[inline]
    pub(super) fn deadline_ns(&self) -> u64 {
        crate::engine::call::deadline_ns(0, self.elapsed_ns, self.timeout_ns, self.limit_ns)
    }

    /// The time this attempt may take, from when it started:
    /// [`deadline`](Self::deadline) `−` [`elapsed`](Self::elapsed). It
    /// shrinks as the call spends its elapsed limit. Give it to the
    /// operation's own timeout (`tokio::time::timeout`, reqwest's
    /// `RequestBuilder::timeout`, gRPC's deadline) to keep the call within
    /// `max_elapsed` without preemption.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::{ByTrait, ManualTimer, Policy, Retry};
    /// let policy = Policy::builder().max_elapsed(Duration::from_secs(10)).build()?;
    /// let retry = Retry::builder().policy(policy).classifier(ByTrait).timer(ManualTimer::new()).build();
    /// let left = retry.call(|a| Ok::<_, std::io::Error>(a.remaining()));
    /// assert_eq!(left.unwrap(), Duration::from_secs(10)); // no attempt timeout: the elapsed limit
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn remaining(&self) -> Duration {
        self.deadline().saturating_sub(self.elapsed())
    }

    /// The call's idempotency key: the same for every attempt of one call.
    ///
    /// ```
    /// # use herdless::{AlwaysRetry, IdempotencyKey, Policy, Retry};
    /// let key = IdempotencyKey::random();
    /// let seen = Retry::builder()
    ///     .policy(Policy::default())
    ///     .classifier(AlwaysRetry)
    ///     .idempotency_key(key)
    ///     .build()
    ///     .call(|a| Ok::<_, ()>(a.idempotency_key()));
    /// assert_eq!(seen, Ok(key));
    /// ```
    pub fn idempotency_key(&self) -> IdempotencyKey {
        self.key.key()
    }
}

/// A configured retrier: policy, classifier, timer, notify hook, task id and
/// shared guards. Build one with [`Retry::new`] (a policy and a classifier),
/// [`Retry::builder`] (everything else), or [`Retry::default`].
///
/// One `Retry` serves many calls (`call` takes `&self`); each call gets its
/// own attempt count, idempotency key and random generator, and shares the
/// guards.
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
/// let retry = Retry::builder()
///     .policy(policy)
///     .classify(|e| match e {
///         ScanError::Timeout => Classification::retryable(),
///         ScanError::Unauthorized => Classification::terminal(),
///     })
///     .task_id("scan-42")
///     .build();
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
pub struct Retry<C = ByTrait, T = SystemTimer, N = NoNotify> {
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
    pub(crate) throttle: Option<Arc<Throttle>>,
    pub(crate) waves: Option<Arc<WaveGuard>>,
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
            .field("throttle", &self.throttle)
            .field("waves", &self.waves)
            .field("urgent", &self.urgent)
            .field("levels", &self.levels)
            .finish_non_exhaustive()
    }
}

impl<C> Retry<C> {
    /// A retrier with `policy` and `classifier`, the system timer, no hook and
    /// no shared guard. For a closure classifier whose argument type should be
    /// inferred, use [`RetryBuilder::classify`].
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
            throttle: None,
            waves: None,
            urgent: None,
            levels: EventLevels::DEFAULT,
        }
    }
}

impl Retry {
    /// A builder from the defaults: [`Policy::default`], errors classified by
    /// their type ([`ByTrait`]: `std::io::Error`, and with their features
    /// `reqwest::Error`, `http::StatusCode`, `tonic::Status`), the system
    /// timer, no hook, no shared guard.
    ///
    /// ```
    /// let retry = herdless::Retry::builder().task_id("capture").seed(7).build();
    /// assert_eq!(retry.seed(), Some(7));
    /// ```
    pub fn builder() -> RetryBuilder {
        RetryBuilder::default()
    }
}

/// The default policy, errors classified by their type ([`ByTrait`]).
///
/// ```
/// use herdless::Retry;
/// let retry = Retry::default();
/// let refused = || Err::<(), _>(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
/// assert_eq!(retry.call(|_| refused()).unwrap_err().attempts(), 1); // terminal: not retried
/// ```
impl Default for Retry {
    fn default() -> Self {
        Retry::new(Policy::default(), ByTrait)
    }
}

impl<C, T, N> Retry<C, T, N> {
    /// A builder holding this retrier's configuration, to change some of it.
    ///
    /// ```
    /// let base = herdless::Retry::builder().task_id("scan").build();
    /// let seeded = base.into_builder().seed(3).build();
    /// assert_eq!((seeded.task_id(), seeded.seed()), ("scan", Some(3)));
    /// ```
    pub fn into_builder(self) -> RetryBuilder<C, T, N> {
        RetryBuilder::from_retry(self)
    }

    /// The policy.
    ///
    /// ```
    /// assert_eq!(herdless::Retry::default().policy().cap().as_secs(), 30);
    /// ```
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The classifier.
    pub fn classifier(&self) -> &C {
        &self.classifier
    }

    /// The timer.
    pub fn timer(&self) -> &T {
        &self.timer
    }

    /// The task id every event carries (empty by default).
    ///
    /// ```
    /// assert_eq!(herdless::Retry::default().task_id(), "");
    /// ```
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The seed of the calls' generators, if the delays are reproducible.
    pub fn seed(&self) -> Option<u64> {
        self.seed
    }

    /// The idempotency key every call uses, if one was given.
    pub fn idempotency_key(&self) -> Option<IdempotencyKey> {
        self.key
    }

    /// The shared retry budget, if any.
    ///
    /// ```
    /// assert!(herdless::Retry::default().budget().is_none());
    /// ```
    pub fn budget(&self) -> Option<&Arc<RetryBudget>> {
        self.budget.as_ref()
    }

    /// The shared breaker, if any.
    ///
    /// ```
    /// assert!(herdless::Retry::default().breaker().is_none());
    /// ```
    pub fn breaker(&self) -> Option<&Arc<Breaker>> {
        self.breaker.as_ref()
    }

    /// The shared adaptive throttle, if any.
    ///
    /// ```
    /// assert!(herdless::Retry::builder().build().throttle().is_none());
    /// ```
    pub fn throttle(&self) -> Option<&Arc<Throttle>> {
        self.throttle.as_ref()
    }

    /// The client's wave guard, if any.
    ///
    /// ```
    /// assert!(herdless::Retry::builder().build().waves().is_none());
    /// ```
    pub fn waves(&self) -> Option<&Arc<WaveGuard>> {
        self.waves.as_ref()
    }

    /// The urgency, if the calls are urgent.
    ///
    /// ```
    /// assert!(herdless::Retry::default().urgent().is_none());
    /// ```
    pub fn urgent(&self) -> Option<Urgent> {
        self.urgent
    }

    /// The event levels in force.
    ///
    /// ```
    /// assert_eq!(herdless::Retry::default().event_levels(), herdless::events::EventLevels::DEFAULT);
    /// ```
    pub fn event_levels(&self) -> EventLevels {
        self.levels
    }
}

impl<C, T, N> Retry<C, T, N> {
    /// This retrier with its classifier mapped by `f` (a driver's adapter).
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn map_classifier<C2>(self, f: impl FnOnce(C) -> C2) -> Retry<C2, T, N> {
        Retry {
            policy: self.policy,
            classifier: f(self.classifier),
            timer: self.timer,
            notify: self.notify,
            task_id: self.task_id,
            seed: self.seed,
            key: self.key,
            calls: self.calls,
            budget: self.budget,
            breaker: self.breaker,
            throttle: self.throttle,
            waves: self.waves,
            urgent: self.urgent,
            levels: self.levels,
        }
    }

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
        let cx = match &self.waves {
            Some(w) => cx.waves(w),
            None => cx,
        };
        match self.urgent {
            Some(u) => cx.urgent(u),
            None => cx,
        }
    }
}
