//! The glue between [`Retry`] and the engine for one executor call: the
//! clock origin, the call's generator and idempotency key, classification,
//! and settling the engine when the call is dropped early.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::Poll;
use std::time::Duration;

use crate::classify::TimedOut;
use crate::classify::{Classification, Classify, RetryCause};
use crate::engine::call::{CopyFailed, Decision, Engine, Gate, HedgeGate, Hedging, nanos};
use crate::engine::context::{Context, max_elapsed};
use crate::events::GiveUp;
use crate::events::Notify;
use crate::hedge::Hedge;
use crate::retry::RetryError;
use crate::retry::{Attempt, CallKey, Retry};
use crate::rng::{Rng, call_seed, next_call_id};
use crate::timer::{AsyncSleep, Clock};

mod first;
mod hedge;
mod reading;

pub(crate) use first::First;
pub(crate) use reading::{AsyncClock, BlockingClock, Reading};

/// An attempt's deadline in an async executor ([`Run::poll_attempt`]).
pub(crate) enum Deadline<S, E> {
    /// Not asked yet: the attempt has not waited, or has no timeout.
    Unarmed,
    /// The wait, and the error the cut ends the attempt with.
    Armed(Pin<Box<S>>, Option<E>),
    /// `E` cannot say "timed out": the attempt runs to its end.
    Off,
}

/// Awaits one attempt in an async executor: `$fut`, the operation's future
/// for `$attempt`, polled by [`Run::poll_attempt`] inside the executor's own
/// future.
macro_rules! await_attempt {
    ($run:expr, $attempt:expr, $fut:expr) => {{
        let attempt = $attempt;
        let mut fut = ::std::pin::pin!($fut);
        let mut deadline = $crate::retry::run::Deadline::Unarmed;
        ::std::future::poll_fn(|cx| $run.poll_attempt(&attempt, fut.as_mut(), &mut deadline, cx))
            .await
    }};
}
pub(crate) use await_attempt;

/// The call's generator: from the retrier's seed and its call count, or
/// [`Rng::fresh`].
fn new_rng<C, T, N>(retry: &Retry<C, T, N>) -> Rng {
    match retry.seed {
        Some(seed) => Rng::with_seed(call_seed(seed, retry.calls.fetch_add(1, Ordering::Relaxed))),
        None => Rng::fresh(),
    }
}

/// The key of a call that starts now: the retrier's, or one derived from a
/// fresh call id.
#[inline]
fn call_key<C, T, N>(retry: &Retry<C, T, N>) -> CallKey {
    retry
        .key
        .map_or_else(|| CallKey::Derived(next_call_id()), CallKey::Explicit)
}

/// Attempt `number` of a call keyed `key`, starting `elapsed_ns` after its
/// origin, with its deadline's terms (what [`Run::attempt_at`] builds; kept
/// apart there, where sharing this changed the async executor's code).
#[inline]
fn attempt<C, T, N>(retry: &Retry<C, T, N>, number: u32, elapsed_ns: u64, key: CallKey) -> Attempt {
    Attempt {
        number,
        elapsed_ns,
        timeout_ns: retry.policy.attempt_timeout_ns,
        limit_ns: match retry.urgent {
            None => retry.policy.max_elapsed_ns,
            Some(u) => nanos(max_elapsed(&retry.policy, Some(u))),
        },
        key,
    }
}

/// One call in an executor: the engine's state plus what the executor owns
/// (the clock origin, the generator, the key). Dropping it early (a cancelled
/// future, a panic) settles the engine: an admitted retry is refunded, a held
/// probe released.
pub(crate) struct Run<'r, C, T, N, K = AsyncClock> {
    retry: &'r Retry<C, T, N>,
    clock: PhantomData<K>,
    /// The clock reading (nanoseconds) the call's elapsed time counts from;
    /// `None` until the first attempt first waits or ends (see
    /// [`Run::for_async`]).
    origin: Option<u64>,
    engine: Engine,
    rng: Option<Rng>,
    key: CallKey,
    /// The time of the last decision, or when the scheduled retry comes due
    /// (nanoseconds since the origin): the elapsed time a give-up reports and
    /// a retry's attempt carries.
    last: u64,
    /// A throttled call's origin on the throttle's clock
    /// ([`Reading::throttle_origin`]); 0 without a throttle.
    throttle_origin: u64,
}

impl<C, T, N, K> Drop for Run<'_, C, T, N, K> {
    #[inline]
    fn drop(&mut self) {
        if self.engine.is_unsettled() {
            self.engine.cancel(&self.retry.context());
        }
    }
}

impl<'r, C, T: Clock, N: Notify, K: Reading<T>> Run<'r, C, T, N, K> {
    /// A call whose clock starts now, before its first attempt.
    #[inline]
    pub(crate) fn new(retry: &'r Retry<C, T, N>) -> Self {
        Self::starting(retry, Some(K::now_ns(&retry.timer)))
    }

    /// An async call: its clock starts now, or, when the timer asks for it
    /// ([`AsyncSleep::START_AT_FIRST_WAIT`]), when its first attempt first
    /// waits or ends; drive each attempt through [`attempt`](Self::attempt).
    #[inline]
    pub(crate) fn for_async(retry: &'r Retry<C, T, N>) -> Self
    where
        T: AsyncSleep,
    {
        // A throttle's clock is the timer's from the call's start.
        if T::START_AT_FIRST_WAIT && retry.throttle.is_none() {
            Self::starting(retry, None)
        } else {
            Self::new(retry)
        }
    }

    #[inline]
    fn starting(retry: &'r Retry<C, T, N>, origin: Option<u64>) -> Self {
        let throttle_origin = match (&retry.throttle, origin) {
            (Some(_), Some(origin)) => K::throttle_origin(&retry.timer, origin),
            _ => 0,
        };
        Run {
            retry,
            clock: PhantomData,
            origin,
            engine: Engine::new(Duration::ZERO),
            rng: None,
            last: 0,
            throttle_origin,
            key: retry
                .key
                .map_or_else(|| CallKey::Derived(next_call_id()), CallKey::Explicit),
        }
    }

    /// A call whose first attempt (`first`, begun on its own: see
    /// [`First`]) has failed: the state a [`Run`] that began it would hold.
    #[inline]
    pub(crate) fn after_first(retry: &'r Retry<C, T, N>, first: First) -> Self {
        let mut run = Run {
            retry,
            clock: PhantomData,
            origin: Some(first.origin),
            engine: Engine::new(Duration::ZERO),
            rng: None,
            last: 0,
            throttle_origin: 0,
            key: first.key,
        };
        run.engine.begin();
        run
    }

    /// Nanoseconds since the origin; the first reading of a deferred call is
    /// its origin.
    #[inline]
    pub(crate) fn now(&mut self) -> u64 {
        let now = K::now_ns(&self.retry.timer);
        match self.origin {
            Some(origin) => now.saturating_sub(origin),
            None => {
                self.origin = Some(now);
                0
            }
        }
    }

    /// [`now`](Self::now) as a [`Duration`] (the hedging executor's clock).
    #[inline]
    pub(crate) fn elapsed(&mut self) -> Duration {
        Duration::from_nanos(self.now())
    }

    /// Polls one attempt's future (through [`await_attempt!`]); a deferred
    /// clock starts the first time it waits. With an attempt timeout, the
    /// attempt is dropped at its deadline when the classifier can say so
    /// ([`Classify::timed_out`]): the error comes back with `true` (timed
    /// out). Otherwise, and without an attempt timeout, the attempt runs to
    /// its end.
    ///
    /// A poll function, not an `async fn`: it is inlined into the executor's
    /// own future, so an attempt costs no future of its own, and the
    /// deadline's state is one word until it is armed.
    #[inline(always)]
    pub(crate) fn poll_attempt<F, R, E>(
        &mut self,
        attempt: &Attempt,
        fut: Pin<&mut F>,
        deadline: &mut Deadline<T::Sleep, E>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<Result<R, (E, bool)>>
    where
        F: Future<Output = Result<R, E>>,
        C: Classify<E>,
        T: AsyncSleep,
    {
        if let Poll::Ready(out) = fut.poll(cx) {
            return Poll::Ready(out.map_err(|e| (e, false)));
        }
        if self.origin.is_none() {
            self.origin = Some(K::now_ns(&self.retry.timer));
        }
        if self.retry.policy.attempt_timeout_ns != 0 {
            if let Poll::Ready(error) = self.poll_deadline(attempt, deadline, cx) {
                // Returning drops the attempt's future.
                return Poll::Ready(Err((error, true)));
            }
        }
        Poll::Pending
    }

    /// The attempt's deadline, armed when it first waits: the error the cut
    /// ends it with, if `E` has one (without one nothing is armed and no
    /// timer's sleep taken), and a wait until the deadline, boxed so that an
    /// executor's future does not carry a sleep it may never take.
    #[inline(never)]
    fn poll_deadline<E>(
        &mut self,
        attempt: &Attempt,
        deadline: &mut Deadline<T::Sleep, E>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<E>
    where
        C: Classify<E>,
        T: AsyncSleep,
    {
        if let Deadline::Unarmed = deadline {
            let timed_out = TimedOut::new(attempt.number(), attempt.remaining());
            *deadline = match self.retry.classifier.timed_out(timed_out) {
                Some(error) => {
                    // The deadline is on the call's clock; the wait starts now.
                    let left = attempt.deadline_ns().saturating_sub(self.now());
                    let sleep = self.retry.timer.sleep(Duration::from_nanos(left));
                    Deadline::Armed(Box::pin(sleep), Some(error))
                }
                None => Deadline::Off,
            };
        }
        if let Deadline::Armed(sleep, error) = deadline {
            if sleep.as_mut().poll(cx).is_ready() {
                if let Some(error) = error.take() {
                    return Poll::Ready(error);
                }
            }
        }
        Poll::Pending
    }

    /// Starts the next attempt, with its deadline.
    #[inline]
    pub(crate) fn begin(&mut self) -> Attempt {
        let number = self.engine.begin();
        self.attempt_numbered(number)
    }

    /// The [`Attempt`] of a copy numbered `number` that starts now: a first
    /// attempt at 0, a retry when it came due (`ready`'s time; nothing sleeps
    /// in between).
    #[inline]
    fn attempt_numbered(&self, number: u32) -> Attempt {
        // A throttled first attempt starts when its gate let it go.
        let first_at = if self.retry.throttle.is_some() {
            self.last
        } else {
            0
        };
        self.attempt_at(number, if number == 1 { first_at } else { self.last })
    }

    /// The engine's view of this call: the retrier's
    /// [context](Retry::context), with its throttle on the timer's
    /// [`Clock::now_ns`] (the call's times count from its origin; see
    /// [`Reading::throttle_origin`]). Built once per call and
    /// passed to every decision as it is: one context whether or not there
    /// is a throttle, so each decision is one call into the engine (two,
    /// one per kind of context, would keep the engine's `failed` out of
    /// line) and an unthrottled first-try success reads only the fields it
    /// checks. With a throttle the origin is read when the call starts
    /// ([`for_async`](Self::for_async)), so it is known here.
    #[inline]
    pub(crate) fn context(&self) -> Context<'r, N> {
        let retry: &'r Retry<C, T, N> = self.retry;
        let cx = retry.context();
        match &retry.throttle {
            Some(t) => cx.throttle_at(t, self.throttle_origin),
            None => cx,
        }
    }

    /// A throttled call's first attempt waits for its turn (nothing without
    /// a throttle): `Ok(Some(wait))` to sleep, then ask again; `Ok(None)` to
    /// go; `Err(error)` when the call's time ran out before its turn: it
    /// ends as exhausted (`max_elapsed`) after 0 attempts, with the
    /// classifier's [`unstarted`](Classify::unstarted) error (a classifier
    /// with none lets the attempt go, with no time left).
    #[inline]
    pub(crate) fn first_gate<E>(
        &mut self,
        cx: &Context<'_, N>,
    ) -> Result<Option<Duration>, RetryError<E>>
    where
        C: Classify<E>,
    {
        if self.retry.throttle.is_none() {
            return Ok(None);
        }
        self.last = self.now();
        // The gate may come before any failure made the call's generator:
        // make it from the seed, as a failure would.
        let retry = self.retry;
        let rng = self.rng.get_or_insert_with(|| new_rng(retry));
        match self.engine.first_gate_ns(cx, self.last, rng) {
            Gate::Wait(wait) => Ok(Some(wait)),
            Gate::Go => Ok(None),
            Gate::GiveUp(reason) => match retry.classifier.unstarted(TimedOut::unstarted(1)) {
                Some(error) => {
                    self.engine.unstarted(cx, self.last);
                    Err(self.error(reason, error))
                }
                None => Ok(None),
            },
        }
    }

    #[inline]
    fn attempt_at(&self, number: u32, elapsed_ns: u64) -> Attempt {
        let retry = self.retry;
        Attempt {
            number,
            elapsed_ns,
            timeout_ns: retry.policy.attempt_timeout_ns,
            limit_ns: match retry.urgent {
                None => retry.policy.max_elapsed_ns,
                Some(u) => nanos(max_elapsed(&retry.policy, Some(u))),
            },
            key: self.key,
        }
    }

    /// Records a success (`cx`: this call's [`context`](Self::context)).
    /// Always inlined: at the first attempt's call site the compiler knows
    /// the attempt is the first, and a first-try success then checks only
    /// the guards (no retry's refund, no event, no clock).
    #[inline(always)]
    pub(crate) fn succeeded(&mut self, cx: &Context<'_, N>) {
        let Run {
            engine,
            retry,
            origin,
            ..
        } = self;
        // Read only if the engine needs the time (a breaker, an event).
        engine.succeeded_ns(cx, || match origin {
            Some(origin) => K::now_ns(&retry.timer).saturating_sub(*origin),
            None => 0,
        });
    }

    /// Classifies a failure and asks the engine what follows; an attempt cut
    /// at its deadline (`timed_out`) is a timeout whatever its error says.
    #[inline(always)]
    pub(crate) fn failed<E>(&mut self, cx: &Context<'_, N>, error: &E, timed_out: bool) -> Decision
    where
        C: Classify<E>,
    {
        let (classification, cause) = self.classify(error, timed_out);
        self.decide(cx, classification, cause)
    }

    #[inline]
    fn classify<E>(&self, error: &E, timed_out: bool) -> (Classification, RetryCause)
    where
        C: Classify<E>,
    {
        let classifier = &self.retry.classifier;
        if let Some(guard) = &self.retry.waves {
            guard.observe(classifier.plan(error));
        }
        if timed_out {
            (classifier.classify(error), RetryCause::Timeout)
        } else {
            classifier.classify_cause(error)
        }
    }

    /// Asks the engine what follows a failure classified so.
    #[inline]
    pub(crate) fn decide(
        &mut self,
        cx: &Context<'_, N>,
        classification: Classification,
        cause: RetryCause,
    ) -> Decision {
        let retry = self.retry;
        let now = self.now();
        let rng = self.rng.get_or_insert_with(|| new_rng(retry));
        let decision = self.engine.failed_ns(cx, now, classification, cause, rng);
        self.last = match decision {
            // When the retry comes due: what `ready` and the next attempt see
            // unless a breaker makes `ready` read the clock.
            Decision::Retry { delay, .. } => now.saturating_add(nanos(delay)),
            Decision::GiveUp(_) => now,
        };
        decision
    }

    /// After the backoff wait: may the retry start? Only a breaker's or a
    /// throttle's gate depends on the time; without either the engine's
    /// answer is [`Gate::Go`], given here without asking it, and the retry's
    /// time is when it came due (the failure's reading plus the delay
    /// slept): no clock is read.
    #[inline(always)]
    pub(crate) fn ready(&mut self, cx: &Context<'_, N>) -> Gate {
        if !self.gated() {
            return Gate::Go;
        }
        self.last = self.now();
        // A throttled first attempt's gate may come before any failure made
        // the call's generator: make it from the seed, as a failure would.
        let retry = self.retry;
        let rng = self.rng.get_or_insert_with(|| new_rng(retry));
        self.engine.ready_ns(cx, self.last, rng)
    }

    /// Whether a due retry asks a gate before it starts (a breaker or a
    /// throttle); without one, [`ready`](Self::ready) always says go.
    #[inline(always)]
    pub(crate) fn gated(&self) -> bool {
        self.retry.breaker.is_some() || self.retry.throttle.is_some()
    }

    /// The error the call ends with.
    pub(crate) fn error<E>(&self, reason: GiveUp, last: E) -> RetryError<E> {
        RetryError {
            reason,
            attempts: self.engine.attempts(),
            elapsed: Duration::from_nanos(self.last),
            last,
        }
    }
}
