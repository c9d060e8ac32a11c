//! How a call settles what it took from the shared guards: the retry the
//! budget admitted but that never ran, the breaker's probe, and the
//! give-up's events.

use std::time::Duration;

use super::*;

impl Engine {
    /// Whether [`cancel`](Self::cancel) has anything to settle: an admitted
    /// retry not yet begun, or the breaker's probe this call owns.
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
    pub(super) fn bypasses<N>(&self, cx: &Context<'_, N>) -> bool {
        cx.urgent.is_some_and(|u| self.attempts <= u.retry_quota())
    }

    pub(super) fn spent_cause(&self) -> RetryCause {
        if self.flags & SPENT_TIMEOUT != 0 {
            RetryCause::Timeout
        } else {
            RetryCause::Error
        }
    }

    #[inline]
    pub(super) fn refund<N>(&mut self, cx: &Context<'_, N>) {
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
    pub(super) fn release_probe<N>(&mut self, cx: &Context<'_, N>) {
        if self.flags & PROBE != 0 {
            self.flags &= !PROBE;
            if let Some(breaker) = cx.breaker {
                breaker.release_probe();
            }
        }
    }

    /// Gives up for a reason other than the shared budget: the failure still
    /// charges the budget's failure cost (it is news about the endpoint).
    pub(super) fn denied<N: Notify>(
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
    pub(super) fn exhausted<N: Notify>(
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
