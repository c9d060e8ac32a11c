//! The glue between [`Retry`] and the engine for one executor call: the
//! clock origin, the call's generator and idempotency key, classification,
//! and settling the engine when the call is dropped early.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::pin;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::classify::Classify;
use crate::engine::call::{nanos, Decision, Engine, Gate};
use crate::engine::context::Context;
use crate::engine::events::Notify;
use crate::engine::retry::{Attempt, CallKey, Retry};
use crate::engine::{GiveUp, RetryError};
use crate::rng::{call_seed, next_call_id, Rng};
use crate::timer::{AsyncSleep, Clock, Sleep};

/// Which of the timer's clocks a call reads (the one its sleep runs on), in
/// nanoseconds: a call's times are `u64` nanoseconds since its origin, so
/// measuring one is a subtraction, never `Instant` arithmetic.
pub(crate) trait Reading<T> {
    fn now_ns(timer: &T) -> u64;
}

/// The async executors' clock: [`Clock::now_ns`].
pub(crate) struct AsyncClock;

impl<T: Clock> Reading<T> for AsyncClock {
    #[inline]
    fn now_ns(timer: &T) -> u64 {
        timer.now_ns()
    }
}

/// The blocking executor's clock: [`Sleep::now_blocking_ns`].
pub(crate) struct BlockingClock;

impl<T: Sleep> Reading<T> for BlockingClock {
    #[inline]
    fn now_ns(timer: &T) -> u64 {
        timer.now_blocking_ns()
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
        if T::START_AT_FIRST_WAIT {
            Self::starting(retry, None)
        } else {
            Self::new(retry)
        }
    }

    #[inline]
    fn starting(retry: &'r Retry<C, T, N>, origin: Option<u64>) -> Self {
        Run {
            retry,
            clock: PhantomData,
            origin,
            engine: Engine::new(Duration::ZERO),
            rng: None,
            last: 0,
            key: retry
                .key
                .map_or_else(|| CallKey::Derived(next_call_id()), CallKey::Explicit),
        }
    }

    /// Nanoseconds since the origin; the first reading of a deferred call is
    /// its origin.
    #[inline]
    fn now(&mut self) -> u64 {
        let now = K::now_ns(&self.retry.timer);
        match self.origin {
            Some(origin) => now.saturating_sub(origin),
            None => {
                self.origin = Some(now);
                0
            }
        }
    }

    /// Awaits one attempt's future; a deferred clock starts the first time it
    /// waits.
    #[inline]
    pub(crate) async fn attempt<F: Future>(&mut self, attempt: F) -> F::Output {
        let mut attempt = pin!(attempt);
        std::future::poll_fn(|cx| {
            let polled = attempt.as_mut().poll(cx);
            if polled.is_pending() && self.origin.is_none() {
                self.origin = Some(K::now_ns(&self.retry.timer));
            }
            polled
        })
        .await
    }

    /// Starts the next attempt.
    #[inline]
    pub(crate) fn begin(&mut self) -> Attempt {
        let number = self.engine.begin();
        Attempt {
            number,
            // A retry starts right after `ready` (nothing sleeps in between):
            // its elapsed time is `ready`'s time.
            elapsed_ns: if number == 1 { 0 } else { self.last },
            key: self.key,
        }
    }

    /// Records a success.
    #[inline]
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

    /// Classifies a failure and asks the engine what follows.
    #[inline]
    pub(crate) fn failed<E>(&mut self, cx: &Context<'_, N>, error: &E) -> Decision
    where
        C: Classify<E>,
    {
        let retry = self.retry;
        let (classification, cause) = retry.classifier.classify_cause(error);
        let now = self.now();
        let rng = self.rng.get_or_insert_with(|| match retry.seed {
            Some(seed) => {
                Rng::with_seed(call_seed(seed, retry.calls.fetch_add(1, Ordering::Relaxed)))
            }
            None => Rng::fresh(),
        });
        let decision = self.engine.failed_ns(cx, now, classification, cause, rng);
        self.last = match decision {
            // When the retry comes due: what `ready` and the next attempt see
            // unless a breaker makes `ready` read the clock.
            Decision::Retry { delay, .. } => now.saturating_add(nanos(delay)),
            Decision::GiveUp(_) => now,
        };
        decision
    }

    /// After the backoff wait: may the retry start? Only a breaker's gate
    /// depends on the time; without one the retry's time is when it came due
    /// (the failure's reading plus the delay slept), and no clock is read.
    #[inline(always)]
    pub(crate) fn ready(&mut self, cx: &Context<'_, N>) -> Gate {
        if self.retry.breaker.is_some() {
            self.last = self.now();
        }
        let rng = self.rng.get_or_insert_with(Rng::fresh);
        self.engine.ready_ns(cx, self.last, rng)
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
