//! The glue between [`Retry`] and the engine for one executor call: the
//! clock origin, the call's generator and idempotency key, classification,
//! and settling the engine when the call is dropped early.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::classify::Classify;
use crate::engine::call::{Decision, Engine, Gate};
use crate::engine::events::Notify;
use crate::engine::retry::{Attempt, CallKey, Retry};
use crate::engine::{GiveUp, RetryError};
use crate::fleet::RetryCause;
use crate::rng::{call_seed, next_call_id, Rng};
use crate::timer::Clock;

/// One call in an executor: the engine's state plus what the executor owns
/// (the clock origin, the generator, the key). Dropping it early (a cancelled
/// future, a panic) settles the engine: an admitted retry is refunded, a held
/// probe released.
pub(crate) struct Run<'r, C, T, N> {
    retry: &'r Retry<C, T, N>,
    origin: Instant,
    engine: Engine,
    rng: Option<Rng>,
    key: CallKey,
    /// The time of the last decision: the elapsed time a give-up reports.
    last: Duration,
}

impl<C, T, N> Drop for Run<'_, C, T, N> {
    fn drop(&mut self) {
        self.engine.cancel(&self.retry.context());
    }
}

impl<'r, C, T: Clock, N: Notify> Run<'r, C, T, N> {
    pub(crate) fn new(retry: &'r Retry<C, T, N>) -> Self {
        Run {
            retry,
            origin: retry.timer.now(),
            engine: Engine::new(Duration::ZERO),
            rng: None,
            last: Duration::ZERO,
            key: retry
                .key
                .map_or_else(|| CallKey::Derived(next_call_id()), CallKey::Explicit),
        }
    }

    fn now(&self) -> Duration {
        self.retry
            .timer
            .now()
            .saturating_duration_since(self.origin)
    }

    /// Starts the next attempt.
    #[inline]
    pub(crate) fn begin(&mut self) -> Attempt {
        let number = self.engine.begin();
        Attempt {
            number,
            // A retry starts right after `ready` read the clock (nothing
            // sleeps in between): its elapsed time is that reading.
            elapsed: if number == 1 {
                Duration::ZERO
            } else {
                self.last
            },
            key: self.key,
        }
    }

    /// Records a success.
    #[inline]
    pub(crate) fn succeeded(&mut self) {
        let now = if self.engine.attempts() > 1 {
            self.now()
        } else {
            Duration::ZERO
        };
        self.engine.succeeded(&self.retry.context(), now);
    }

    /// Classifies a failure and asks the engine what follows.
    pub(crate) fn failed<E>(&mut self, error: &E) -> Decision
    where
        C: Classify<E>,
    {
        let retry = self.retry;
        let classification = retry.classifier.classify(error);
        let cause = if classification.is_retryable() && retry.classifier.is_timeout(error) {
            RetryCause::Timeout
        } else {
            RetryCause::Error
        };
        let now = self.now();
        self.last = now;
        let rng = self.rng.get_or_insert_with(|| match retry.seed {
            Some(seed) => {
                Rng::with_seed(call_seed(seed, retry.calls.fetch_add(1, Ordering::Relaxed)))
            }
            None => Rng::fresh(),
        });
        self.engine
            .failed(&retry.context(), now, classification, cause, rng)
    }

    /// After the backoff wait: may the retry start?
    pub(crate) fn ready(&mut self) -> Gate {
        let now = self.now();
        self.last = now;
        let rng = self.rng.get_or_insert_with(Rng::fresh);
        self.engine.ready(&self.retry.context(), now, rng)
    }

    /// The error the call ends with.
    pub(crate) fn error<E>(&self, reason: GiveUp, last: E) -> RetryError<E> {
        RetryError {
            reason,
            attempts: self.engine.attempts(),
            elapsed: self.last,
            last,
        }
    }
}
