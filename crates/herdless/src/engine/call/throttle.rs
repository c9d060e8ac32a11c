//! The adaptive throttle's part in a call's decisions: a gate before every
//! attempt, the first included, and the outcome after each (see
//! [`fleet::throttle`](crate::guard::throttle)).

use std::time::Duration;

use crate::engine::call::Engine;
use crate::engine::context::Context;
use crate::events::GiveUp;
use crate::events::Notify;
use crate::guard::Throttle;
use crate::rng::Rng;

use super::Gate;

impl Engine {
    /// The throttle's gate at `now_ns` (the call's clock): `None` to go on
    /// to the breaker's gate, `Some(gate)` when the throttle has decided (a
    /// wait, or a give-up when waiting would pass the elapsed limit). An
    /// urgent call's lane skips it, as it skips the breaker. A first attempt
    /// never gives up here (no attempt has failed): the throttle's wait is
    /// cut to what is left before the limit, and at the limit it goes.
    #[cold]
    #[inline(never)]
    pub(super) fn throttle_gate<N: Notify>(
        &mut self,
        cx: &Context<'_, N>,
        now_ns: u64,
        rng: &mut Rng,
    ) -> Option<Gate> {
        let throttle = cx.throttle?;
        if self.bypasses(cx) {
            return None;
        }
        let wait = throttle
            .acquire_ns(
                now_ns.saturating_add(cx.throttle_epoch_ns),
                rng,
                self.attempts() > 0,
            )
            .err()?;
        if self.attempts() == 0 {
            let elapsed = now_ns.saturating_sub(self.start_ns);
            let left = cx.max_elapsed_ns().saturating_sub(elapsed);
            return (left > 0).then(|| Gate::Wait(wait.min(Duration::from_nanos(left))));
        }
        Some(self.wait_or_give_up(cx, now_ns, wait))
    }

    /// The throttle learns that the endpoint answered (`served`) or refused.
    /// One branch on the path without a throttle; the rest out of line, given
    /// the throttle and the time rather than the context: a context passed
    /// by reference must be in memory, and the compiler would store it there
    /// on every path (an unthrottled first-try success included), not only
    /// on the throttled one.
    #[inline(always)]
    pub(super) fn throttle_record<N>(&self, cx: &Context<'_, N>, now_ns: u64, served: bool) {
        if let Some(throttle) = cx.throttle {
            throttle_tell(
                throttle,
                now_ns.saturating_add(cx.throttle_epoch_ns),
                served,
            );
        }
    }

    /// Waits `wait` at a gate, or gives up when that passes the elapsed
    /// limit (the admitted retry is then refunded).
    pub(super) fn wait_or_give_up<N: Notify>(
        &mut self,
        cx: &Context<'_, N>,
        now_ns: u64,
        wait: Duration,
    ) -> Gate {
        let elapsed = Duration::from_nanos(now_ns.saturating_sub(self.start_ns));
        if elapsed.saturating_add(wait) > cx.max_elapsed() {
            self.refund(cx);
            self.exhausted(cx, GiveUp::MaxElapsed, elapsed, false, false);
            return Gate::GiveUp(GiveUp::MaxElapsed);
        }
        Gate::Wait(wait)
    }
}

#[cold]
#[inline(never)]
fn throttle_tell(throttle: &Throttle, at_ns: u64, served: bool) {
    if served {
        throttle.record_success_ns(at_ns);
    } else {
        throttle.record_failure_ns(at_ns);
    }
}
