//! The retry builder and the decision engine both executors share.
//!
//! [`Retry`] holds a [`Policy`], a classifier, a timer and a notify hook. Its
//! [`call`](Retry::call) (blocking, in [`blocking`](crate::blocking)) and
//! [`call_async`](Retry::call_async) (in [`asynchronous`](crate::asynchronous))
//! drive the same engine, so the two cannot drift apart:
//!
//! 1. run the operation with an [`Attempt`] context;
//! 2. on success, return (emitting `retry_succeeded` if it was a retry);
//! 3. on error, classify it; terminal or unknown: give up (`retry_abandoned_terminal`);
//! 4. draw the computed jitter (this advances the schedule), then replace it by
//!    the server-supplied delay when there is one (clamped, spread);
//! 5. check the budget (attempts, then `elapsed + sleep ≤ max_elapsed`, or the
//!    tighter deadline of an [`Urgent`] call); give up before sleeping if it
//!    fails (`retry_budget_exhausted`);
//! 6. ask the shared [`RetryBudget`], if any, for the retry (an urgent call
//!    within its quota skips this); a denial gives up with
//!    [`GiveUp::RetryBudget`] (`retry_budget_exhausted`, reason `retry_budget`);
//! 7. emit `retry_scheduled`, sleep;
//! 8. with a shared [`Breaker`] that is open, wait (jittered) until this call
//!    may probe or the breaker closes — never past the elapsed budget or the
//!    deadline; go to 1.
//!
//! Outcomes feed the fleet-level pieces: every success refunds the budget and
//! closes the breaker, every retryable failure charges the budget's failure
//! cost and counts toward opening the breaker. Terminal errors touch neither
//! (the endpoint answered).
//!
//! The success path allocates nothing and draws no randomness: the idempotency
//! key is derived on demand from a per-thread call id, and each call's generator
//! is created lazily
//! at its first failure, from OS entropy (or from the explicit seed).

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::breaker::{Admission, Breaker, Probe};
use crate::budget::GiveUp;
use crate::classify::{Classification, Classify};
use crate::error::RetryError;
use crate::escape_lane::Urgent;
use crate::events::{NoNotify, Notify, RetryEvent};
use crate::jitter::Schedule;
use crate::policy::Policy;
use crate::retry_budget::{RetryBudget, RetryCause, Spent};
use crate::rng::{next_call_id, splitmix64, IdempotencyKey, Rng};
use crate::timer::{Clock, SystemTimer};

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
    number: u32,
    elapsed: Duration,
    key: CallKey,
}

/// Where a call's idempotency key comes from: given by the caller, or derived on
/// demand from a per-thread call id (so the success path draws no randomness).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallKey {
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

    /// Time since the call's first attempt started.
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
    /// assert_eq!(r.get_task_id(), "ingest-9");
    /// ```
    pub fn task_id(mut self, task_id: impl Into<Cow<'static, str>>) -> Self {
        self.task_id = task_id.into();
        self
    }

    /// The task id.
    ///
    /// ```
    /// let r = herdless::Retry::new(herdless::Policy::default(), herdless::AlwaysRetry);
    /// assert_eq!(r.get_task_id(), "");
    /// ```
    pub fn get_task_id(&self) -> &str {
        &self.task_id
    }

    /// Makes the delays reproducible: call `k` of this retrier draws from a
    /// generator derived from `(seed, k)`. Without a seed every call's generator
    /// is seeded from OS entropy.
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
        }
    }

    /// Adds a notify hook receiving every [`RetryEvent`] (beside `tracing`).
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
        }
    }
}

impl<C, T, N> Retry<C, T, N> {
    /// Shares a [`RetryBudget`] with every other retrier holding the same
    /// `Arc`: each retry must be admitted by it, successes refund it. A denied
    /// retry ends the call with [`GiveUp::RetryBudget`]. See
    /// [`retry_budget`](crate::retry_budget).
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
    /// [`breaker`](crate::breaker).
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
    /// [`escape_lane`](crate::escape_lane).
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

    /// The shared retry budget, if any.
    ///
    /// ```
    /// assert!(herdless::Retry::new(herdless::Policy::default(), herdless::AlwaysRetry).get_budget().is_none());
    /// ```
    pub fn get_budget(&self) -> Option<&Arc<RetryBudget>> {
        self.budget.as_ref()
    }

    /// The shared breaker, if any.
    ///
    /// ```
    /// assert!(herdless::Retry::new(herdless::Policy::default(), herdless::AlwaysRetry).get_breaker().is_none());
    /// ```
    pub fn get_breaker(&self) -> Option<&Arc<Breaker>> {
        self.breaker.as_ref()
    }

    /// The urgency, if the calls are urgent.
    ///
    /// ```
    /// assert!(herdless::Retry::new(herdless::Policy::default(), herdless::AlwaysRetry).get_urgent().is_none());
    /// ```
    pub fn get_urgent(&self) -> Option<Urgent> {
        self.urgent
    }
}

impl<C, T, N> Drop for Engine<'_, C, T, N> {
    fn drop(&mut self) {
        if let (Some(budget), Some(spent)) = (&self.retry.budget, self.pending.take()) {
            budget.refund(spent);
        }
    }
}

/// What the engine decided after a failed attempt.
pub(crate) enum Step<E> {
    /// Sleep, then (after [`Engine::gate`]) retry; the error is kept in case the
    /// gate gives up.
    Sleep(Duration, E),
    Stop(RetryError<E>),
}

/// What the engine decided before a retry.
pub(crate) enum Gate {
    Go,
    Wait(Duration),
    Stop(GiveUp),
}

/// The per-call state machine shared by the blocking and the async executor.
pub(crate) struct Engine<'r, C, T, N> {
    retry: &'r Retry<C, T, N>,
    start: Instant,
    attempts: u32,
    key: CallKey,
    rng: Option<(Schedule, Rng)>,
    /// This call's uniform draw for the budget's spread (drawn at first use).
    level: Option<f64>,
    /// What the call's last admitted retry withdrew from the budget.
    last_spent: Option<Spent>,
    /// An admitted retry not yet started: refunded if the call ends first
    /// (breaker wait past the budget, cancelled future).
    pending: Option<Spent>,
    /// Retries that went through the escape lane.
    bypassed: u32,
    /// Whether the upcoming retry goes through the escape lane.
    bypassing: bool,
    /// The breaker probe this call holds, if its current attempt is the probe.
    probe: Option<Probe>,
}

impl<'r, C, T: Clock, N: Notify> Engine<'r, C, T, N> {
    pub(crate) fn new(retry: &'r Retry<C, T, N>) -> Self {
        Engine {
            retry,
            start: retry.timer.now(),
            attempts: 0,
            key: retry
                .key
                .map_or_else(|| CallKey::Derived(next_call_id()), CallKey::Explicit),
            rng: None,
            level: None,
            last_spent: None,
            pending: None,
            bypassed: 0,
            bypassing: false,
            probe: None,
        }
    }

    /// The elapsed budget: `max_elapsed`, or the urgent deadline if tighter.
    fn max_elapsed(&self) -> Duration {
        let max = self.retry.policy.max_elapsed;
        match self.retry.urgent {
            Some(u) => max.min(u.deadline()),
            None => max,
        }
    }

    fn elapsed(&self) -> Duration {
        self.retry.timer.now().saturating_duration_since(self.start)
    }

    fn emit(&self, event: RetryEvent<'_>) {
        event.trace();
        self.retry.notify.notify(&event);
    }

    /// Starts the next attempt.
    #[inline]
    pub(crate) fn begin(&mut self) -> Attempt {
        self.pending = None;
        self.attempts = self.attempts.saturating_add(1);
        Attempt {
            number: self.attempts,
            elapsed: if self.attempts == 1 {
                Duration::ZERO
            } else {
                self.elapsed()
            },
            key: self.key,
        }
    }

    /// Records a success.
    #[inline]
    pub(crate) fn succeeded(&mut self) {
        if let Some(budget) = &self.retry.budget {
            budget.record_success(self.last_spent);
        }
        if let Some(probe) = self.probe.take() {
            probe.succeeded();
        } else if let Some(breaker) = &self.retry.breaker {
            breaker.record_success();
        }
        if self.attempts > 1 {
            self.emit(RetryEvent::Succeeded {
                task_id: &self.retry.task_id,
                attempt: self.attempts,
                elapsed: self.elapsed(),
            });
        }
    }

    /// Decides what follows a failed attempt.
    pub(crate) fn failed<E>(&mut self, error: E) -> Step<E>
    where
        C: Classify<E>,
    {
        let retry = self.retry;
        let classification = retry.classifier.classify(&error);
        let elapsed = self.elapsed();
        let task_id: &str = &retry.task_id;
        if !classification.is_retryable() {
            // The endpoint answered: neither a breaker failure nor a success.
            self.probe = None;
            self.emit(RetryEvent::AbandonedTerminal {
                task_id,
                attempt: self.attempts,
                classification,
                elapsed,
            });
            return Step::Stop(self.stop(GiveUp::Terminal, elapsed, error));
        }
        if let Some(probe) = self.probe.take() {
            probe.failed();
        } else if let Some(breaker) = &retry.breaker {
            breaker.record_failure();
        }
        if self.attempts >= retry.policy.max_attempts {
            return self.denied(GiveUp::MaxAttempts, elapsed, error);
        }
        let (schedule, rng) = self.rng.get_or_insert_with(|| {
            let rng = match retry.seed {
                Some(seed) => {
                    let k = retry.calls.fetch_add(1, Ordering::Relaxed);
                    Rng::with_seed(splitmix64(seed ^ splitmix64(k)))
                }
                None => Rng::from_entropy(),
            };
            (Schedule::new(), rng)
        });
        let computed_ns = retry.policy.next_delay_ns(schedule, rng);
        let (sleep_ns, honored) = match classification {
            Classification::Retryable { after: Some(d) } if !d.is_zero() => {
                (retry.policy.server_delay_ns(d, rng), true)
            }
            _ => (computed_ns, false),
        };
        let level = match retry.budget {
            Some(_) => Some(*self.level.get_or_insert_with(|| rng.unit_f64())),
            None => None,
        };
        let sleep = Duration::from_nanos(sleep_ns);
        if let Err(reason) = retry.policy.may_retry(self.attempts, elapsed, sleep) {
            return self.denied(reason, elapsed, error);
        }
        if elapsed.saturating_add(sleep) > self.max_elapsed() {
            return self.denied(GiveUp::MaxElapsed, elapsed, error);
        }
        self.bypassing = match retry.urgent {
            Some(u) if self.bypassed < u.get_quota() => {
                self.bypassed += 1;
                true
            }
            _ => false,
        };
        if let (Some(budget), Some(level), false) = (&retry.budget, level, self.bypassing) {
            let cause = if retry.classifier.is_timeout(&error) {
                RetryCause::Timeout
            } else {
                RetryCause::Error
            };
            match budget.try_retry(cause, level) {
                Ok(spent) => {
                    self.last_spent = Some(spent);
                    self.pending = Some(spent);
                }
                Err(_) => return Step::Stop(self.exhausted(GiveUp::RetryBudget, elapsed, error)),
            }
        }
        self.emit(RetryEvent::Scheduled {
            task_id,
            attempt: self.attempts,
            computed_jitter: Duration::from_nanos(computed_ns),
            sleep,
            honored_retry_after: honored,
            elapsed,
        });
        Step::Sleep(sleep, error)
    }

    /// Decides whether the next retry may start now: with an open breaker,
    /// wait until this call may probe (or give up if the wait would pass the
    /// elapsed budget). Call after the backoff sleep, before [`begin`](Self::begin).
    pub(crate) fn gate(&mut self) -> Gate {
        let Some(breaker) = &self.retry.breaker else {
            return Gate::Go;
        };
        if self.bypassing {
            return Gate::Go;
        }
        match breaker.admit() {
            Admission::Closed => Gate::Go,
            Admission::Probe(probe) => {
                self.probe = Some(probe);
                Gate::Go
            }
            Admission::Wait => {
                let wait = match &mut self.rng {
                    Some((_, rng)) => breaker.wait_for(rng),
                    None => breaker.wait_for(&mut Rng::from_entropy()),
                };
                if self.elapsed().saturating_add(wait) > self.max_elapsed() {
                    Gate::Stop(GiveUp::MaxElapsed)
                } else {
                    Gate::Wait(wait)
                }
            }
        }
    }

    /// Ends the call after [`gate`](Self::gate) gave up.
    pub(crate) fn gave_up<E>(&self, reason: GiveUp, error: E) -> RetryError<E> {
        self.exhausted(reason, self.elapsed(), error)
    }

    /// Gives up for a reason other than the shared budget: the failure still
    /// charges the budget's failure cost (it is news about the endpoint).
    fn denied<E>(&self, reason: GiveUp, elapsed: Duration, error: E) -> Step<E> {
        if let Some(budget) = &self.retry.budget {
            budget.record_failure();
        }
        Step::Stop(self.exhausted(reason, elapsed, error))
    }

    fn exhausted<E>(&self, reason: GiveUp, elapsed: Duration, error: E) -> RetryError<E> {
        self.emit(RetryEvent::BudgetExhausted {
            task_id: &self.retry.task_id,
            attempt: self.attempts,
            elapsed,
            reason,
        });
        self.stop(reason, elapsed, error)
    }

    fn stop<E>(&self, reason: GiveUp, elapsed: Duration, last: E) -> RetryError<E> {
        RetryError {
            reason,
            attempts: self.attempts,
            elapsed,
            last,
        }
    }
}
