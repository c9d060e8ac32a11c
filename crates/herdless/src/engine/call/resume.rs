//! Resuming a call from state that travelled with a task (a broker's
//! redelivery): the schedule replayed, the gate a redelivered task passes
//! before its attempt starts, and the warning for refused state. See
//! [`redelivery`](crate::redelivery) for the driver side.

use std::time::Duration;

use crate::engine::call::{Engine, Gate};
use crate::engine::context::Context;
use crate::events::GiveUp;
use crate::events::{Notify, RetryEvent};
use crate::policy::{Jitter, Policy, Schedule};
use crate::rng::Rng;

/// Replayed draws at most: the decorrelated modes forget their start after a
/// few steps (each delay depends on the previous one only).
const MAX_REPLAY: u32 = 1024;

impl Engine {
    /// A call that started at `start` and has made `attempts` attempts,
    /// resumed with its schedule: the decorrelated modes' previous delay is
    /// replayed from the generators the earlier decisions drew from
    /// (`rng_for(n)` is the generator the failure of attempt `n` was decided
    /// with, its first draw the delay). A driver that derives each decision's
    /// generator from a per-task seed and the attempt number therefore needs
    /// no generator state in the message. Other modes need no replay.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::engine::Engine;
    /// use herdless::{Jitter, Policy, Rng};
    /// let p = Policy::builder().jitter(Jitter::Decorrelated).build()?;
    /// let call = Engine::replay(&p, Duration::ZERO, 3, |n| Rng::with_seed(u64::from(n)));
    /// assert_eq!(call.attempts(), 3);
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn replay(
        policy: &Policy,
        start: Duration,
        attempts: u32,
        mut rng_for: impl FnMut(u32) -> Rng,
    ) -> Self {
        let mut engine = Engine::resume(start, attempts);
        if matches!(
            policy.jitter(),
            Jitter::Decorrelated | Jitter::DecorrelatedWindow
        ) {
            let mut schedule = Schedule::new();
            let replayed = attempts.min(policy.max_attempts()).min(MAX_REPLAY);
            for n in 1..=replayed {
                policy.next_delay_ns(&mut schedule, &mut rng_for(n));
            }
            engine.prev_ns = schedule.prev_ns;
        }
        engine
    }

    /// A resumed call's next attempt is due (a broker delivered the task
    /// again, at `now`): may it start? A first attempt always may (it spends
    /// no retry). A retry may not when the attempts made already reach
    /// `max_attempts`, or the elapsed time has passed the elapsed limit — a
    /// worker that died mid-attempt, a redelivery after the broker's ack wait,
    /// state from an earlier chain — and the call gives up
    /// (`retry_budget_exhausted`, no attempt counted, nothing charged to the
    /// budget: the failures were counted when they happened). Otherwise, as
    /// [`ready`](Self::ready): the breaker.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::engine::{Context, Engine, Gate};
    /// use herdless::{GiveUp, Policy, Rng};
    /// let p = Policy::builder().max_attempts(3).build()?;
    /// let cx = Context::new(&p);
    /// let mut rng = Rng::with_seed(1);
    /// assert_eq!(Engine::resume(Duration::ZERO, 2).redelivered(&cx, Duration::ZERO, &mut rng), Gate::Go);
    /// let mut spent = Engine::resume(Duration::ZERO, 3);
    /// assert_eq!(spent.redelivered(&cx, Duration::ZERO, &mut rng), Gate::GiveUp(GiveUp::MaxAttempts));
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn redelivered<N: Notify>(
        &mut self,
        cx: &Context<'_, N>,
        now: Duration,
        rng: &mut Rng,
    ) -> Gate {
        if self.attempts == 0 {
            return Gate::Go;
        }
        let elapsed = self.elapsed(now);
        let reason = if self.attempts >= cx.policy.max_attempts {
            GiveUp::MaxAttempts
        } else if elapsed > cx.max_elapsed() {
            GiveUp::MaxElapsed
        } else {
            return self.ready(cx, now, rng);
        };
        self.exhausted(cx, reason, elapsed, false, false);
        Gate::GiveUp(reason)
    }

    /// Reports that the state this call was to resume from was refused
    /// (`reason`: `too_long`, `unknown_version`, `garbled`): the call goes on
    /// from what the broker vouches for. Emits `retry_state_invalid`.
    ///
    /// ```
    /// use std::cell::Cell;
    /// use std::time::Duration;
    /// use herdless::engine::{Context, Engine};
    /// use herdless::{Policy, RetryEvent};
    /// let seen = Cell::new("");
    /// let hook = |e: &RetryEvent<'_>| seen.set(e.name());
    /// let p = Policy::default();
    /// Engine::resume(Duration::ZERO, 1).state_invalid(&Context::new(&p).notify(&hook), "garbled");
    /// assert_eq!(seen.get(), "retry_state_invalid");
    /// ```
    pub fn state_invalid<N: Notify>(&self, cx: &Context<'_, N>, reason: &str) {
        cx.emit(
            RetryEvent::StateInvalid {
                task_id: cx.task_id,
                attempt: self.attempts.saturating_add(1),
                reason,
            },
            false,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Classification;
    use crate::classify::RetryCause;
    use crate::engine::call::Decision;

    /// Replaying the decorrelated schedule gives the delay the uninterrupted
    /// call would have drawn.
    #[test]
    fn replay_matches_an_uninterrupted_chain() {
        for jitter in [Jitter::Decorrelated, Jitter::DecorrelatedWindow] {
            let p = Policy::builder()
                .jitter(jitter)
                .base(Duration::from_millis(10))
                .cap(Duration::from_secs(60))
                .max_attempts(8)
                .build()
                .unwrap();
            let cx = Context::new(&p).trace(false);
            let rng_for = |n: u32| Rng::with_seed(u64::from(n) * 7919);
            let mut whole = Engine::new(Duration::ZERO);
            let mut delays = Vec::new();
            for n in 1..8 {
                whole.begin();
                let d = whole.failed(
                    &cx,
                    Duration::ZERO,
                    Classification::retryable(),
                    RetryCause::Error,
                    &mut rng_for(n),
                );
                delays.push(d);
            }
            for made in 1..7u32 {
                let mut resumed = Engine::replay(&p, Duration::ZERO, made, rng_for);
                resumed.begin();
                let d = resumed.failed(
                    &cx,
                    Duration::ZERO,
                    Classification::retryable(),
                    RetryCause::Error,
                    &mut rng_for(made + 1),
                );
                assert_eq!(d, delays[made as usize], "{jitter:?} after {made}");
                assert!(matches!(d, Decision::Retry { .. }));
            }
        }
    }

    #[test]
    fn the_gate_refuses_a_retry_past_the_elapsed_limit() {
        let p = Policy::builder()
            .max_elapsed(Duration::from_secs(10))
            .build()
            .unwrap();
        let cx = Context::new(&p).trace(false);
        let mut rng = Rng::with_seed(1);
        let mut late = Engine::resume(Duration::ZERO, 1);
        assert_eq!(
            late.redelivered(&cx, Duration::from_secs(11), &mut rng),
            Gate::GiveUp(GiveUp::MaxElapsed)
        );
        let mut on_time = Engine::resume(Duration::ZERO, 1);
        assert_eq!(
            on_time.redelivered(&cx, Duration::from_secs(10), &mut rng),
            Gate::Go
        );
        // A first attempt always starts, however old the task.
        let mut first = Engine::resume(Duration::ZERO, 0);
        assert_eq!(
            first.redelivered(&cx, Duration::from_secs(99), &mut rng),
            Gate::Go
        );
    }
}
