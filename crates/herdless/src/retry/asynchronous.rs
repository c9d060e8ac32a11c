//! The async executor: retries in a future, sleeping with
//! [`AsyncSleep`] (`tokio::time::sleep` with the `tokio`
//! feature).
//!
//! The returned future is `Send` when the operation's futures are (and the
//! classifier, timer and hook are `Sync`), so it can be spawned. Dropping it
//! cancels the call: no further attempt starts, the sleep in progress is
//! dropped. Under `tokio::time::pause` the sleeps auto-advance, so tests of
//! minutes of backoff run in microseconds.
//!
//! # Attempt deadlines
//!
//! With the policy's [`attempt_timeout`](crate::Policy::attempt_timeout),
//! each attempt's future is raced against its deadline
//! ([`Attempt::deadline`]: the timeout or what is left of the elapsed limit,
//! whichever comes first) and **dropped** there. The attempt then fails with
//! the classifier's timeout error ([`Classify::timed_out`]: `std::io::Error`
//! of kind `TimedOut`, or what [`RetryBuilder::on_timeout`](crate::RetryBuilder::on_timeout)
//! makes), classified like any error (retryable unless the classifier says
//! otherwise), counted as a [`RetryCause::Timeout`](crate::RetryCause) by a
//! shared budget and reported with `timed_out = true`. An error type that
//! cannot say "timed out" (the classifier answers `None`) is not cut: give
//! such an attempt [`Attempt::remaining`] as its own timeout. The deadline
//! wait is created only when an attempt first returns `Pending`, in a box
//! (one allocation per attempt that waits), so an attempt that completes at
//! once costs nothing more, the executor's future carries no sleep it may
//! never take, and without an attempt timeout nothing changes. Under a [`ManualTimer`](crate::ManualTimer),
//! whose sleeps end at once, a pending attempt is cut at once.
//!
//! [`Attempt::deadline`]: crate::Attempt::deadline
//! [`Attempt::remaining`]: crate::Attempt::remaining
//! [`Classify::timed_out`]: crate::Classify::timed_out

use std::future::Future;

use crate::classify::Classify;
use crate::engine::call::{Decision, Gate};
use crate::engine::context::Context;
use crate::events::GiveUp;
use crate::events::Notify;
use crate::retry::RetryError;
use crate::retry::run::{Run, await_attempt};
use crate::retry::{Attempt, Retry};
use crate::timer::AsyncSleep;

// `T: AsyncSleep` is on the method, not here, so that a timer without it
// (`SystemTimer` without the `tokio` feature) is reported by the trait's
// `on_unimplemented` hint, naming the feature; on the impl it was rustc's
// bare "method exists but its trait bounds were not satisfied".
impl<C, T, N: Notify> Retry<C, T, N> {
    /// Runs `op` until it succeeds, fails terminally or exhausts the budget.
    ///
    /// # Errors
    ///
    /// A [`RetryError`] saying why it stopped, after how many attempts and how
    /// long, with the last error.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::{Classification, ManualTimer, Policy, Retry};
    ///
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// # rt.block_on(async {
    /// let policy = Policy::builder().base(Duration::from_secs(1)).build()?;
    /// let timer = ManualTimer::new(); // or the default SystemTimer with the `tokio` feature
    /// let retry = Retry::builder()
    /// .policy(policy)
    /// .classifier(|status: &u16| match status {
    ///     503 => Classification::retryable(),
    ///     _ => Classification::terminal(),
    /// })
    /// .timer(timer.clone())
    /// .build();
    /// let body = retry
    ///     .call_async(|attempt| async move {
    ///         if attempt.number() < 3 { Err(503) } else { Ok("ok") }
    ///     })
    ///     .await;
    /// assert_eq!(body, Ok("ok"));
    /// assert_eq!(timer.sleeps().len(), 2);
    /// # Ok::<(), herdless::PolicyError>(())
    /// # }).unwrap();
    /// ```
    pub async fn call_async<F, Fut, R, E>(&self, mut op: F) -> Result<R, RetryError<E>>
    where
        F: FnMut(Attempt) -> Fut,
        Fut: Future<Output = Result<R, E>>,
        C: Classify<E>,
        T: AsyncSleep,
    {
        let mut run = Run::for_async(self);
        if self.throttle.is_some() {
            let cx = run.context();
            while let Some(wait) = run.first_gate(&cx)? {
                self.timer.sleep(wait).await;
            }
        }
        // The first attempt on its own: a first-try success builds only what
        // it reads; the retries share one context.
        let attempt = run.begin();
        let (mut error, mut timed_out) = match await_attempt!(run, attempt, op(attempt)) {
            Ok(value) => {
                run.succeeded(&run.context());
                return Ok(value);
            }
            Err(failed) => failed,
        };
        let mut cx = run.context();
        cx.ask_metrics();
        loop {
            let decision = run.failed(&cx, &error, timed_out);
            if let Err(reason) = back_off(&mut run, &cx, &self.timer, decision).await {
                return Err(run.error(reason, error));
            }
            let attempt = run.begin();
            match await_attempt!(run, attempt, op(attempt)) {
                Ok(value) => {
                    run.succeeded(&cx);
                    return Ok(value);
                }
                Err((e, cut)) => (error, timed_out) = (e, cut),
            }
        }
    }
}

/// After a failed attempt, the engine's `decision` carried out: sleeps the
/// delay, then waits at the gate (the breaker) until the retry may start.
/// `Err(reason)` when the call gives up instead. Shared by every async
/// executor, so none of them decides anything on its own.
pub(super) async fn back_off<C, T: AsyncSleep, N: Notify>(
    run: &mut Run<'_, C, T, N>,
    cx: &Context<'_, N>,
    timer: &T,
    decision: Decision,
) -> Result<(), GiveUp> {
    match decision {
        Decision::Retry { delay, .. } => timer.sleep(delay).await,
        Decision::GiveUp(reason) => return Err(reason),
    }
    // Without a breaker or a throttle every due retry may start.
    while run.gated() {
        match run.ready(cx) {
            Gate::Go => return Ok(()),
            Gate::Wait(wait) => timer.sleep(wait).await,
            Gate::GiveUp(reason) => return Err(reason),
        }
    }
    Ok(())
}
