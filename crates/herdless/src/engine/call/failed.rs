//! [`Engine::failed`]: the decision after a failed attempt, its checks in
//! the order the engine's module documentation argues.

use std::time::Duration;

use super::*;

impl Engine {
    /// The current attempt failed at `now`: decides whether and when to retry.
    ///
    /// In order: a terminal (or unknown) classification gives up
    /// (`retry_abandoned_terminal`); the breaker learns the failure; a
    /// [`DoNotRetry`](Classification::DoNotRetry) gives up
    /// ([`GiveUp::DoNotRetry`]); `max_attempts` is checked; the delay is drawn (advancing the schedule)
    /// and replaced by the server's delay, clamped and spread, when the
    /// classification carries one; `elapsed + delay` is checked against the
    /// elapsed limit; the shared budget is asked (unless the escape lane
    /// covers this retry). A give-up for any reason but the shared budget
    /// still charges the budget's failure cost. Emits `retry_scheduled` or
    /// `retry_budget_exhausted`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::engine::{Context, Decision, Engine};
    /// use herdless::{Classification, GiveUp, Policy, RetryCause, Rng};
    /// let p = Policy::default();
    /// let cx = Context::new(&p);
    /// let mut call = Engine::new(Duration::ZERO);
    /// call.begin();
    /// let d = call.failed(&cx, Duration::ZERO, Classification::terminal(), RetryCause::Error, &mut Rng::with_seed(1));
    /// assert_eq!(d, Decision::GiveUp(GiveUp::Terminal));
    /// ```
    pub fn failed<N: Notify>(
        &mut self,
        cx: &Context<'_, N>,
        now: Duration,
        classification: Classification,
        cause: RetryCause,
        rng: &mut Rng,
    ) -> Decision {
        self.failed_ns(cx, nanos(now), classification, cause, rng)
    }

    /// [`failed`](Self::failed) with `now` in nanoseconds: what the executors
    /// call (their clocks read nanoseconds, so no `Duration` round trip).
    #[inline]
    pub(crate) fn failed_ns<N: Notify>(
        &mut self,
        cx: &Context<'_, N>,
        now_ns: u64,
        classification: Classification,
        cause: RetryCause,
        rng: &mut Rng,
    ) -> Decision {
        let elapsed_ns = now_ns.saturating_sub(self.start_ns);
        let elapsed = || Duration::from_nanos(elapsed_ns);
        let timed_out = cause == RetryCause::Timeout;
        if let Classification::Requeued { after } = classification {
            if u32::from(self.requeues) < cx.policy.max_requeues() {
                return self.requeued(cx, elapsed_ns, after, rng);
            }
        }
        let pushback = classification == Classification::DoNotRetry;
        if !classification.is_retryable() && !pushback {
            // The endpoint answered: neither a breaker failure nor a success;
            // for the throttle, an answer (it served the call).
            self.throttle_record(cx, now_ns, true);
            self.release_probe(cx);
            cx.emit_with(true, || RetryEvent::AbandonedTerminal {
                task_id: cx.task_id,
                attempt: self.attempts,
                classification,
                timed_out,
                elapsed: elapsed(),
            });
            return Decision::GiveUp(GiveUp::Terminal);
        }
        if let Some(breaker) = cx.breaker {
            breaker.record_failure();
        }
        self.throttle_record(cx, now_ns, false);
        self.release_probe(cx);
        if pushback {
            // The server asked not to be retried: a failure about load.
            return self.denied(cx, GiveUp::DoNotRetry, elapsed(), timed_out);
        }
        let policy = cx.policy;
        if self.attempts >= policy.max_attempts {
            return self.denied(cx, GiveUp::MaxAttempts, elapsed(), timed_out);
        }
        let mut schedule = Schedule {
            retry: self.attempts.saturating_sub(1),
            prev_ns: self.prev_ns,
        };
        let computed_ns = policy.next_delay_ns(&mut schedule, rng);
        self.prev_ns = schedule.prev_ns;
        let wave = match cx.waves {
            Some(guard) => guard.take_delay_ns(rng),
            None => None,
        };
        let (delay_ns, honored) = match (wave, classification.server_delay()) {
            // The client's wave: drawn within it, never spread further.
            (Some(d), _) => (d.min(policy.max_retry_after_ns), true),
            (None, Some(d)) if !d.is_zero() => (policy.server_delay_ns(d, rng), true),
            _ => (computed_ns, false),
        };
        if cx.budget.is_some() && self.flags & LEVEL_SET == 0 {
            self.level = (rng.next_u64() >> 48) as u16;
            self.flags |= LEVEL_SET;
        }
        // `elapsed + delay > max_elapsed`, in nanoseconds (exact: a sum past
        // `u64::MAX` is past every limit). With an attempt timeout the
        // retry's attempt would be cut at the limit: one due exactly at the
        // limit would have no time, so it is not scheduled either.
        let limit = cx.max_elapsed_ns();
        if elapsed_ns
            .checked_add(delay_ns)
            .is_none_or(|due| due > limit || (due == limit && policy.attempt_timeout_ns != 0))
        {
            return self.denied(cx, GiveUp::MaxElapsed, elapsed(), timed_out);
        }
        let delay = Duration::from_nanos(delay_ns);
        if let (Some(budget), false) = (cx.budget, self.bypasses(cx)) {
            let level = f64::from(self.level) / 65_536.0;
            if budget.try_retry(cause, level).is_err() {
                return self.exhausted(cx, GiveUp::RetryBudget, elapsed(), true, timed_out);
            }
            let cause_bits = match cause {
                RetryCause::Timeout => PENDING_TIMEOUT | SPENT_TIMEOUT,
                RetryCause::Error => 0,
            };
            self.flags &= !(SPENT_TIMEOUT | PENDING_TIMEOUT);
            self.flags |= SPENT | PENDING | cause_bits;
        }
        cx.emit_with(true, || RetryEvent::Scheduled {
            task_id: cx.task_id,
            attempt: self.attempts,
            computed_jitter: Duration::from_nanos(computed_ns),
            sleep: delay,
            honored_retry_after: honored,
            timed_out,
            elapsed: elapsed(),
        });
        Decision::Retry {
            delay,
            honored_retry_after: honored,
        }
    }

    /// The server queued the attempt and answered it unprocessed (within
    /// `max_requeues`): not an attempt, so the count goes back and nothing
    /// else hears of it; the wait is the server's delay, clamped and spread,
    /// and must end within the elapsed limit.
    fn requeued<N: Notify>(
        &mut self,
        cx: &Context<'_, N>,
        elapsed_ns: u64,
        after: Duration,
        rng: &mut Rng,
    ) -> Decision {
        let elapsed = Duration::from_nanos(elapsed_ns);
        let delay_ns = cx.policy.server_delay_ns(after, rng);
        let limit = cx.max_elapsed_ns();
        if elapsed_ns
            .checked_add(delay_ns)
            .is_none_or(|due| due > limit || (due == limit && cx.policy.attempt_timeout_ns != 0))
        {
            self.release_probe(cx);
            return self.exhausted(cx, GiveUp::MaxElapsed, elapsed, true, false);
        }
        self.requeues += 1;
        self.attempts = self.attempts.saturating_sub(1);
        let delay = Duration::from_nanos(delay_ns);
        cx.emit_with(false, || RetryEvent::Requeued {
            task_id: cx.task_id,
            attempt: self.attempts + 1,
            sleep: delay,
            requeues: u32::from(self.requeues),
            elapsed,
        });
        Decision::Retry {
            delay,
            honored_retry_after: true,
        }
    }
}
