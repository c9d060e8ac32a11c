//! [`RetryBuilder`]: a [`Retry`] being configured.
//!
//! The builder and the retrier are two types so that each name means one
//! thing: the builder's methods set (`task_id("scan-7")`), the retrier's
//! methods of the same names read (`task_id()`), and a built [`Retry`] can no
//! longer change under the calls it serves. Shared guards are taken as
//! `impl Into<Arc<_>>`: the guard itself, or an `Arc` already shared with
//! other retriers (the same rule in every driver).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use crate::classify::{ByTrait, Classification};
use crate::events::EventLevels;
use crate::events::NoNotify;
use crate::guard::{Breaker, RetryBudget, Throttle, Urgent, WaveGuard};
use crate::policy::Policy;
use crate::retry::Retry;
use crate::rng::IdempotencyKey;
use crate::timer::SystemTimer;

/// A [`Retry`] being configured; [`build`](Self::build) it. Start from
/// [`Retry::builder`]: the default policy, the classifier picked by the error
/// type ([`ByTrait`]), the system timer, no hook, no shared guard.
///
/// ```
/// use std::time::Duration;
/// use herdless::{Classification, Policy, Retry, RetryBudget};
///
/// #[derive(Debug)]
/// enum ScanError { Timeout, Unauthorized }
///
/// let retry = Retry::builder()
///     .policy(Policy::builder().base(Duration::from_millis(1)).build()?)
///     .classify(|e| match e {
///         ScanError::Timeout => Classification::retryable(),
///         ScanError::Unauthorized => Classification::terminal(),
///     })
///     .task_id("scan-42")
///     .budget(RetryBudget::aws())
///     .build();
/// assert_eq!(retry.task_id(), "scan-42");
/// let denied = retry.call(|_| Err::<(), _>(ScanError::Unauthorized)).unwrap_err();
/// assert!(denied.is_terminal());
/// # Ok::<(), herdless::PolicyError>(())
/// ```
#[must_use = "a builder does nothing until it is built"]
pub struct RetryBuilder<C = ByTrait, T = SystemTimer, N = NoNotify> {
    retry: Retry<C, T, N>,
}

impl<C, T, N> fmt::Debug for RetryBuilder<C, T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RetryBuilder").field(&self.retry).finish()
    }
}

impl Default for RetryBuilder {
    fn default() -> Self {
        RetryBuilder {
            retry: Retry::new(Policy::default(), ByTrait),
        }
    }
}

impl<C, T, N> RetryBuilder<C, T, N> {
    pub(crate) fn from_retry(retry: Retry<C, T, N>) -> Self {
        RetryBuilder { retry }
    }

    /// The retrier, configured.
    ///
    /// ```
    /// let retry = herdless::Retry::builder().task_id("job").build();
    /// assert_eq!(retry.task_id(), "job");
    /// ```
    pub fn build(self) -> Retry<C, T, N> {
        self.retry
    }

    /// The policy (default: [`Policy::default`]).
    ///
    /// ```
    /// use herdless::{Policy, Retry};
    /// let policy = Policy::builder().max_attempts(3).build()?;
    /// assert_eq!(Retry::builder().policy(policy).build().policy().max_attempts(), 3);
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn policy(mut self, policy: Policy) -> Self {
        self.retry.policy = policy;
        self
    }

    /// Classifies errors with a closure. The closure's argument type is
    /// inferred from the calls (no annotation needed); any other classifier
    /// goes to [`classifier`](Self::classifier).
    ///
    /// ```
    /// use herdless::{Classification, ManualTimer, Retry};
    /// let retry = Retry::builder()
    ///     .classify(|status| match status {
    ///         503 => Classification::retryable(),
    ///         _ => Classification::terminal(),
    ///     })
    ///     .timer(ManualTimer::new())
    ///     .build();
    /// assert_eq!(retry.call(|a| if a.number() < 2 { Err(503) } else { Ok(()) }), Ok(()));
    /// ```
    pub fn classify<E, F>(self, classify: F) -> RetryBuilder<F, T, N>
    where
        F: Fn(&E) -> Classification,
    {
        self.classifier(classify)
    }

    /// Wraps the classifier in a [`TimeoutAs`](crate::classify::TimeoutAs):
    /// an attempt cut at its deadline (the policy's
    /// [`attempt_timeout`](crate::Policy::attempt_timeout)) ends with
    /// `make(timed_out)`, which the classifier then classifies. Needed for an
    /// error type with no timeout of its own (see
    /// [`Classify::timed_out`](crate::Classify::timed_out)).
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::{Classification, Policy, Retry};
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), herdless::PolicyError> {
    /// let policy = Policy::builder()
    ///     .attempt_timeout(Duration::from_millis(100))
    ///     .base(Duration::from_millis(10))
    ///     .build()?;
    /// let retry = Retry::builder()
    ///     .policy(policy)
    ///     .classify(|_: &&str| Classification::retryable())
    ///     .on_timeout(|_| "timed out")
    ///     .build();
    /// let out = retry
    ///     .call_async(|a| async move {
    ///         if a.number() == 1 { std::future::pending::<()>().await } // hangs: cut at 100 ms
    ///         Ok::<_, &str>(a.number())
    ///     })
    ///     .await;
    /// assert_eq!(out, Ok(2));
    /// # Ok(()) }
    /// ```
    pub fn on_timeout<F>(self, make: F) -> RetryBuilder<crate::classify::TimeoutAs<C, F>, T, N> {
        self.map_classifier(|c| crate::classify::TimeoutAs::new(c, make))
    }

    /// Classifies errors with any [`Classify`](crate::Classify): [`ByTrait`]
    /// (the default), [`AlwaysRetry`](crate::AlwaysRetry), a protocol's
    /// classifier, a [`WithTimeouts`](crate::classify::WithTimeouts).
    ///
    /// ```
    /// use herdless::{AlwaysRetry, ManualTimer, Retry};
    /// let retry = Retry::builder().classifier(AlwaysRetry).timer(ManualTimer::new()).build();
    /// assert_eq!(retry.call(|a| if a.number() < 3 { Err("busy") } else { Ok(a.number()) }), Ok(3));
    /// ```
    pub fn classifier<C2>(self, classifier: C2) -> RetryBuilder<C2, T, N> {
        self.map_classifier(|_| classifier)
    }

    /// The same builder with its classifier replaced by `f` of it.
    fn map_classifier<C2>(self, f: impl FnOnce(C) -> C2) -> RetryBuilder<C2, T, N> {
        let r = self.retry;
        RetryBuilder {
            retry: Retry {
                policy: r.policy,
                classifier: f(r.classifier),
                timer: r.timer,
                notify: r.notify,
                task_id: r.task_id,
                seed: r.seed,
                key: r.key,
                calls: r.calls,
                budget: r.budget,
                breaker: r.breaker,
                throttle: r.throttle,
                waves: r.waves,
                urgent: r.urgent,
                levels: r.levels,
            },
        }
    }

    /// The timer (clock and sleep): [`ManualTimer`](crate::ManualTimer) in tests.
    ///
    /// ```
    /// use herdless::{AlwaysRetry, ManualTimer, Retry};
    /// let t = ManualTimer::new();
    /// let retry = Retry::builder().classifier(AlwaysRetry).timer(t.clone()).build();
    /// let _ = retry.call(|_| Err::<(), _>(()));
    /// assert_eq!(t.sleeps().len(), 5); // 6 attempts, 5 sleeps, no real time
    /// ```
    pub fn timer<T2>(self, timer: T2) -> RetryBuilder<C, T2, N> {
        let r = self.retry;
        RetryBuilder {
            retry: Retry {
                policy: r.policy,
                classifier: r.classifier,
                timer,
                notify: r.notify,
                task_id: r.task_id,
                seed: r.seed,
                key: r.key,
                calls: r.calls,
                budget: r.budget,
                breaker: r.breaker,
                throttle: r.throttle,
                waves: r.waves,
                urgent: r.urgent,
                levels: r.levels,
            },
        }
    }

    /// A hook receiving every [`RetryEvent`](crate::RetryEvent) (beside `tracing`).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use herdless::{AlwaysRetry, ManualTimer, Retry, RetryEvent};
    /// let scheduled = AtomicU32::new(0);
    /// let hook = |e: &RetryEvent<'_>| {
    ///     if e.name() == "retry_scheduled" { scheduled.fetch_add(1, Ordering::Relaxed); }
    /// };
    /// let retry = Retry::builder().classifier(AlwaysRetry).timer(ManualTimer::new()).notify(hook).build();
    /// let _ = retry.call(|_| Err::<(), _>(()));
    /// assert_eq!(scheduled.load(Ordering::Relaxed), 5);
    /// ```
    pub fn notify<N2>(self, notify: N2) -> RetryBuilder<C, T, N2> {
        let r = self.retry;
        RetryBuilder {
            retry: Retry {
                policy: r.policy,
                classifier: r.classifier,
                timer: r.timer,
                notify,
                task_id: r.task_id,
                seed: r.seed,
                key: r.key,
                calls: r.calls,
                budget: r.budget,
                breaker: r.breaker,
                throttle: r.throttle,
                waves: r.waves,
                urgent: r.urgent,
                levels: r.levels,
            },
        }
    }

    /// The task id every event carries.
    ///
    /// ```
    /// assert_eq!(herdless::Retry::builder().task_id("ingest-9").build().task_id(), "ingest-9");
    /// ```
    pub fn task_id(mut self, task_id: impl Into<Cow<'static, str>>) -> Self {
        self.retry.task_id = task_id.into();
        self
    }

    /// Makes the delays reproducible: call `k` of the retrier draws from a
    /// generator derived from `(seed, k)`. Without a seed every call's generator
    /// is its own ([`Rng::fresh`](crate::Rng::fresh): a per-thread generator
    /// seeded once from OS entropy seeds it, no system call per call).
    ///
    /// ```
    /// use herdless::{AlwaysRetry, ManualTimer, Retry};
    /// let run = |seed| {
    ///     let t = ManualTimer::new();
    ///     let retry = Retry::builder().classifier(AlwaysRetry).seed(seed).timer(t.clone()).build();
    ///     let _ = retry.call(|_| Err::<(), _>(()));
    ///     t.sleeps()
    /// };
    /// assert_eq!(run(7), run(7));
    /// ```
    pub fn seed(mut self, seed: u64) -> Self {
        self.retry.seed = Some(seed);
        self
    }

    /// One idempotency key for every call (e.g. a redelivered task's original
    /// key) instead of a fresh one per call.
    ///
    /// ```
    /// use herdless::{IdempotencyKey, Retry};
    /// let key: IdempotencyKey = "00000000-0000-4000-8000-00000000002a".parse()?;
    /// let retry = Retry::builder().idempotency_key(key).build();
    /// assert_eq!(retry.call(|a| Ok::<_, std::io::Error>(a.idempotency_key())).unwrap(), key);
    /// # Ok::<(), herdless::rng::ParseIdempotencyKeyError>(())
    /// ```
    pub fn idempotency_key(mut self, key: IdempotencyKey) -> Self {
        self.retry.key = Some(key);
        self
    }

    /// A [`RetryBudget`] shared with every other retrier holding the same
    /// one: each retry must be admitted by it, successes refund it. A denied
    /// retry ends the call with [`GiveUp::RetryBudget`](crate::GiveUp::RetryBudget).
    /// See [`budget`](crate::guard::budget).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use herdless::{AlwaysRetry, GiveUp, ManualTimer, Retry, RetryBudget};
    /// let budget = Arc::new(RetryBudget::builder().aws().max_tokens(12.0).spread(0.0).build()?);
    /// let retry = Retry::builder()
    ///     .classifier(AlwaysRetry)
    ///     .timer(ManualTimer::new())
    ///     .budget(budget.clone()) // or a RetryBudget by value, if this retrier is its only user
    ///     .build();
    /// let err = retry.call(|_| Err::<(), _>("503")).unwrap_err();
    /// assert_eq!(err.reason(), GiveUp::RetryBudget);
    /// assert_eq!(err.attempts(), 3); // two retries at 5 tokens each, then 2 < 5
    /// # Ok::<(), herdless::guard::RetryBudgetError>(())
    /// ```
    pub fn budget(mut self, budget: impl Into<Arc<RetryBudget>>) -> Self {
        self.retry.budget = Some(budget.into());
        self
    }

    /// A half-open probe [`Breaker`] shared with every other retrier holding
    /// the same one: while it is open, retries wait (jittered) until they may
    /// probe or it closes. See [`breaker`](crate::guard::breaker).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use herdless::{AlwaysRetry, Breaker, ManualTimer, Retry};
    /// let breaker = Arc::new(Breaker::new(3));
    /// let retry = Retry::builder()
    ///     .classifier(AlwaysRetry)
    ///     .timer(ManualTimer::new())
    ///     .breaker(breaker.clone())
    ///     .build();
    /// let _ = retry.call(|a| if a.number() < 3 { Err("503") } else { Ok(()) });
    /// assert_eq!(breaker.consecutive_failures(), 0); // the success closed it
    /// ```
    pub fn breaker(mut self, breaker: impl Into<Arc<Breaker>>) -> Self {
        self.retry.breaker = Some(breaker.into());
        self
    }

    /// A client-side adaptive [`Throttle`] shared with every other retrier
    /// holding the same one: every attempt, the first included, waits for
    /// its turn at the process's rate, which follows what the endpoint
    /// answers. See [`throttle`](crate::guard::throttle). Driven by the
    /// blocking and async executors (`call`, `call_async`,
    /// `call_async_mut`), so by the reqwest adapter and middleware too. Not
    /// yet elsewhere: the hedging executor gates and records its retries
    /// only (not its first attempt, nor its hedges), and the tower retry
    /// layer and the NATS adapter do not consult it.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use herdless::guard::Throttle;
    /// use herdless::{AlwaysRetry, ManualTimer, Retry};
    /// let throttle = Arc::new(Throttle::new());
    /// let retry = Retry::builder()
    ///     .classifier(AlwaysRetry)
    ///     .timer(ManualTimer::new())
    ///     .throttle(throttle.clone())
    ///     .build();
    /// let _ = retry.call(|a| if a.number() < 2 { Err("503") } else { Ok(()) });
    /// assert!(!throttle.is_probing()); // one refusal is not an outage
    /// ```
    pub fn throttle(mut self, throttle: impl Into<Arc<Throttle>>) -> Self {
        self.retry.throttle = Some(throttle.into());
        self
    }

    /// The client's [`WaveGuard`]: after a failure whose answer announced a
    /// plan of waves (the classifier's [`plan`](crate::Classify::plan); the
    /// reqwest and tower HTTP classifiers read the `Herdless-Plan` header),
    /// the retry waits for the client's own wave of it, or the next one when
    /// it missed its own. See [`guard::waves`](crate::guard::waves). Driven
    /// by the blocking and async executors, the tower retry policy and the
    /// reqwest adapter.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use herdless::guard::waves::WaveGuard;
    /// use herdless::pushback::waves::WavePlan;
    /// use herdless::{Classification, Classify, ManualTimer, Retry};
    ///
    /// // A classifier that reads plans from its errors (here: the error is one).
    /// struct Planned;
    /// impl Classify<WavePlan> for Planned {
    ///     fn classify(&self, _: &WavePlan) -> Classification { Classification::retry_after_secs(1.0) }
    ///     fn plan(&self, plan: &WavePlan) -> Option<WavePlan> { Some(*plan) }
    /// }
    /// let timer = ManualTimer::new();
    /// let retry = Retry::builder().classifier(Planned).timer(timer.clone())
    ///     .waves(Arc::new(WaveGuard::new("worker-3"))).build();
    /// let plan: WavePlan = "start=2, waves=1, spacing=0.5, salt=1".parse().unwrap();
    /// let _ = retry.call(|a| if a.number() < 2 { Err(plan) } else { Ok(()) });
    /// let slept = timer.sleeps()[0];
    /// assert!(slept >= Duration::from_secs(2) && slept < Duration::from_millis(2_500)); // its wave, not Retry-After
    /// ```
    pub fn waves(mut self, guard: impl Into<Arc<WaveGuard>>) -> Self {
        self.retry.waves = Some(guard.into());
        self
    }

    /// Marks the calls urgent: the escape lane. See
    /// [`urgent`](crate::guard::urgent).
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::{AlwaysRetry, GiveUp, ManualTimer, Retry, Urgent};
    /// let timer = ManualTimer::new();
    /// let retry = Retry::builder()
    ///     .classifier(AlwaysRetry)
    ///     .timer(timer.clone())
    ///     .urgent(Urgent::new(Duration::from_millis(800)))
    ///     .build();
    /// let err = retry.call(|_| Err::<(), _>("503")).unwrap_err();
    /// assert_eq!(err.reason(), GiveUp::MaxElapsed);
    /// assert!(timer.elapsed() <= Duration::from_millis(800));
    /// ```
    pub fn urgent(mut self, urgent: Urgent) -> Self {
        self.retry.urgent = Some(urgent);
        self
    }

    /// The `tracing` level of each event (default: [`EventLevels::DEFAULT`];
    /// see [`levels`](crate::events::levels)).
    ///
    /// ```
    /// use herdless::{events::EventLevels, Retry};
    /// use tracing::Level;
    /// let retry = Retry::builder()
    ///     .event_levels(EventLevels::default().retry_scheduled(Level::DEBUG))
    ///     .build();
    /// assert_eq!(retry.event_levels().get("retry_scheduled"), Some(Level::DEBUG));
    /// ```
    pub fn event_levels(mut self, levels: EventLevels) -> Self {
        self.retry.levels = levels;
        self
    }
}
