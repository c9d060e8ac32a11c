//! The adaptive throttle's part in a call's decisions: a gate before every
//! attempt, the first included, and the outcome after each (see
//! [`guard::throttle`](crate::guard::throttle)).

use std::time::Duration;

use crate::engine::call::{Engine, nanos};
use crate::engine::context::Context;
use crate::events::GiveUp;
use crate::events::Notify;
use crate::guard::Throttle;
use crate::rng::Rng;

use super::Gate;

impl Engine {
    /// The throttle's gate at `now_ns` (the call's clock): `None` to go on
    /// to the breaker's gate, `Some(gate)` when the throttle has decided (a
    /// wait, or a give-up). An urgent call's lane skips it, as it skips the
    /// breaker.
    ///
    /// An attempt with no time left is not made, the first included: at
    /// or past the elapsed limit the call gives up (`max_elapsed`) without
    /// asking the throttle (no token is taken), and so it does when its
    /// turn is at or past the limit (a wait that ends there leaves the
    /// attempt no time). A first attempt that gives up here ends the call
    /// after 0 attempts; `tell`: whether that give-up is told (its event)
    /// here, or by the executor once it has the error to end the call with
    /// ([`unstarted`](Self::unstarted)).
    #[cold]
    #[inline(never)]
    pub(super) fn throttle_gate<N: Notify>(
        &mut self,
        cx: &Context<'_, N>,
        now_ns: u64,
        rng: &mut Rng,
        tell: bool,
    ) -> Option<Gate> {
        let throttle = cx.throttle?;
        if self.bypasses(cx) {
            return None;
        }
        let elapsed = now_ns.saturating_sub(self.start_ns);
        let limit = cx.max_elapsed_ns();
        if elapsed >= limit {
            return Some(self.no_time(cx, elapsed, tell));
        }
        let wait = throttle
            .acquire_ns(
                now_ns.saturating_add(cx.throttle_epoch_ns),
                rng,
                self.attempts() > 0,
            )
            .err()?;
        if elapsed.saturating_add(nanos(wait)) >= limit {
            return Some(self.no_time(cx, elapsed, tell));
        }
        Some(Gate::Wait(wait))
    }

    /// The call's time runs out at the gate: a retry's admission is
    /// refunded; a first attempt's give-up is told if `tell`.
    fn no_time<N: Notify>(&mut self, cx: &Context<'_, N>, elapsed_ns: u64, tell: bool) -> Gate {
        if self.attempts() > 0 || tell {
            self.refund(cx);
            let elapsed = Duration::from_nanos(elapsed_ns);
            self.exhausted(cx, GiveUp::MaxElapsed, elapsed, false, false);
        }
        Gate::GiveUp(GiveUp::MaxElapsed)
    }

    /// A call whose first attempt gave up at the throttle's gate (told
    /// nothing there) ends: `retry_budget_exhausted` with attempt 0, at
    /// `now_ns`.
    pub(crate) fn unstarted<N: Notify>(&self, cx: &Context<'_, N>, now_ns: u64) {
        let elapsed = Duration::from_nanos(now_ns.saturating_sub(self.start_ns));
        self.exhausted(cx, GiveUp::MaxElapsed, elapsed, false, false);
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
