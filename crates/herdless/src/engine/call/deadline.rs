//! An attempt's deadline: the smaller of the policy's
//! [`attempt_timeout`](crate::Policy::attempt_timeout) and what is left of
//! the elapsed limit (`max_elapsed`, or an urgent call's tighter deadline).
//! Decided here, with the time passed in, for every driver: the executors
//! put it in each [`Attempt`](crate::Attempt), the tower policy and the
//! reqwest senders turn it into a request's timeout, the hedging executor
//! gives it to every copy.

use std::time::Duration;

use super::{Engine, Gate, nanos};
use crate::engine::context::Context;
use crate::events::GiveUp;
use crate::events::Notify;

/// The deadline, in nanoseconds on the driver's clock, of an attempt that
/// starts at `now_ns` in a call that started at `start_ns`: `now +
/// timeout` (no timeout when `timeout_ns` is 0), or `start + limit` when that
/// comes first, never before `now`.
#[inline]
pub(crate) fn deadline_ns(start_ns: u64, now_ns: u64, timeout_ns: u64, limit_ns: u64) -> u64 {
    let end = start_ns.saturating_add(limit_ns);
    let by_timeout = match timeout_ns {
        0 => u64::MAX,
        t => now_ns.saturating_add(t),
    };
    by_timeout.min(end).max(now_ns)
}

impl Engine {
    /// When an attempt that starts at `now` must end, on the driver's clock:
    /// `now + attempt_timeout`, or the end of the elapsed limit (the call's
    /// start plus `max_elapsed`, or an urgent call's deadline) when that comes
    /// first. Never before `now`: an attempt due after the limit has no time
    /// (and is not started by the executors, see [`failed`](Self::failed)).
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::engine::{Context, Engine};
    /// use herdless::Policy;
    /// let s = Duration::from_secs;
    /// let p = Policy::builder().attempt_timeout(s(2)).max_elapsed(s(5)).build()?;
    /// let call = Engine::new(s(100)); // started at 100 s on the driver's clock
    /// let cx = Context::new(&p);
    /// assert_eq!(call.deadline(&cx, s(100)), s(102)); // the attempt timeout
    /// assert_eq!(call.deadline(&cx, s(104)), s(105)); // what is left of 5 s
    /// assert_eq!(call.deadline(&cx, s(107)), s(107)); // nothing is left
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    #[inline]
    pub fn deadline<N>(&self, cx: &Context<'_, N>, now: Duration) -> Duration {
        Duration::from_nanos(deadline_ns(
            self.start_ns,
            nanos(now),
            cx.policy.attempt_timeout_ns,
            cx.max_elapsed_ns(),
        ))
    }

    /// How long an attempt that starts at `now` may take:
    /// [`deadline`](Self::deadline) `− now`. What a driver sets as a
    /// request's timeout (`grpc-timeout`, reqwest's per-request timeout).
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::engine::{Context, Engine};
    /// use herdless::Policy;
    /// let p = Policy::builder().max_elapsed(Duration::from_secs(10)).build()?;
    /// let call = Engine::new(Duration::ZERO);
    /// // No attempt timeout: what is left of the elapsed limit.
    /// assert_eq!(call.remaining(&Context::new(&p), Duration::from_secs(4)), Duration::from_secs(6));
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    #[inline]
    pub fn remaining<N>(&self, cx: &Context<'_, N>, now: Duration) -> Duration {
        self.deadline(cx, now).saturating_sub(now)
    }
}

impl Engine {
    /// A retry that came due after the elapsed limit (see
    /// [`ready`](Engine::ready)): the admitted retry is refunded and the call
    /// gives up with [`GiveUp::MaxElapsed`] (`retry_budget_exhausted`, no
    /// attempt ended since the last event).
    #[cold]
    #[inline(never)]
    pub(super) fn overdue<N: Notify>(&mut self, cx: &Context<'_, N>, now_ns: u64) -> Gate {
        self.refund(cx);
        let elapsed = Duration::from_nanos(now_ns.saturating_sub(self.start_ns));
        self.exhausted(cx, GiveUp::MaxElapsed, elapsed, false, false);
        Gate::GiveUp(GiveUp::MaxElapsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::Urgent;
    use crate::policy::Policy;

    #[test]
    fn the_tighter_of_the_timeout_and_the_limit_wins() {
        let ms = Duration::from_millis;
        let p = Policy::builder()
            .attempt_timeout(ms(300))
            .max_elapsed(ms(1000))
            .build()
            .unwrap();
        let call = Engine::new(Duration::ZERO);
        let cx = Context::new(&p);
        let remaining: Vec<_> = [0, 500, 800, 1000, 1200]
            .map(|t| call.remaining(&cx, ms(t)))
            .to_vec();
        assert_eq!(remaining, [ms(300), ms(300), ms(200), ms(0), ms(0)]);
        // An urgent call's deadline is tighter still.
        let urgent = cx.urgent(Urgent::new(ms(600)));
        assert_eq!(call.remaining(&urgent, ms(500)), ms(100));
        // Without a timeout, the limit alone; huge values saturate.
        let open = Policy::builder()
            .max_elapsed(Duration::MAX)
            .build()
            .unwrap();
        let far = Engine::new(Duration::from_nanos(u64::MAX - 1));
        assert_eq!(
            far.deadline(&Context::new(&open), Duration::from_nanos(u64::MAX - 1)),
            Duration::from_nanos(u64::MAX)
        );
    }

    #[test]
    fn with_an_attempt_timeout_no_retry_is_due_exactly_at_the_limit() {
        use crate::classify::{Classification, RetryCause};
        use crate::engine::call::Decision;
        use crate::events::GiveUp;
        use crate::policy::Jitter;
        use crate::rng::Rng;
        let ms = Duration::from_millis;
        let build = |timeout: Option<Duration>| {
            Policy::builder()
                .jitter(Jitter::None)
                .base(ms(100))
                .max_elapsed(ms(1000))
                .attempt_timeout(timeout)
                .build()
                .unwrap()
        };
        // A failure at 900 ms: the retry would be due at exactly 1000 ms.
        let decide = |p: &Policy| {
            let mut call = Engine::new(Duration::ZERO);
            call.begin();
            let cx = Context::new(p).trace(false);
            let failed = Classification::retryable();
            call.failed(
                &cx,
                ms(900),
                failed,
                RetryCause::Error,
                &mut Rng::with_seed(1),
            )
        };
        // Its attempt would have no time left: refused.
        assert_eq!(
            decide(&build(Some(ms(50)))),
            Decision::GiveUp(GiveUp::MaxElapsed)
        );
        // Without an attempt timeout it starts (and is not cut): as before.
        assert!(matches!(decide(&build(None)), Decision::Retry { .. }));
    }

    /// A retry whose wait overran the elapsed limit (a slow event observer
    /// between the decision and the wait, a late timer) does not start: it
    /// gives up with `max_elapsed`, and the retry the budget admitted is
    /// refunded.
    #[test]
    fn a_retry_due_past_the_limit_gives_up_refunded() {
        use crate::classify::{Classification, RetryCause};
        use crate::engine::{Decision, Gate};
        use crate::events::GiveUp;
        use crate::events::RetryEvent;
        use crate::guard::RetryBudget;
        use crate::rng::Rng;
        use std::cell::RefCell;
        let ms = Duration::from_millis;
        let p = Policy::builder()
            .base(ms(1))
            .cap(ms(1))
            .max_elapsed(ms(1000))
            .build()
            .unwrap();
        let budget = RetryBudget::aws();
        let seen = RefCell::new(Vec::new());
        let notify = |e: &RetryEvent<'_>| seen.borrow_mut().push(e.name());
        let cx = Context::new(&p)
            .trace(false)
            .budget(&budget)
            .notify(&notify);
        let mut rng = Rng::with_seed(1);
        let mut call = Engine::new(Duration::ZERO);
        call.begin();
        let d = call.failed(
            &cx,
            ms(900),
            Classification::retryable(),
            RetryCause::Error,
            &mut rng,
        );
        assert!(matches!(d, Decision::Retry { .. }));
        assert_eq!(budget.tokens(), 495.0);
        // Due at 901 ms; the driver comes back at 1,200 ms.
        assert_eq!(
            call.ready(&cx, ms(1200), &mut rng),
            Gate::GiveUp(GiveUp::MaxElapsed)
        );
        assert_eq!(budget.tokens(), 500.0);
        assert_eq!(
            *seen.borrow(),
            ["retry_scheduled", "retry_budget_exhausted"]
        );
        // On time, it goes.
        let mut call = Engine::new(Duration::ZERO);
        call.begin();
        call.failed(
            &cx,
            ms(900),
            Classification::retryable(),
            RetryCause::Error,
            &mut rng,
        );
        assert_eq!(call.ready(&cx, ms(1000), &mut rng), Gate::Go);
    }
}
