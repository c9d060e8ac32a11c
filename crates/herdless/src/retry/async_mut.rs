//! The async executor for async closures: [`Retry::call_async_mut`] takes an
//! `AsyncFnMut`, so an attempt may borrow the caller's state mutably (a
//! connection, a buffer, a counter) and the next attempt borrows it again.
//! `call_async`'s `FnMut(Attempt) -> Fut` cannot: its future may not keep a
//! borrow of the closure's captures.
//!
//! The same thin loop over the engine as [`Retry::call_async`]: the same
//! `Run`, the same sleep-then-gate wait; no decision of its own.

use crate::classify::Classify;
use crate::events::Notify;
use crate::retry::RetryError;
use crate::retry::asynchronous::back_off;
use crate::retry::run::{Run, await_attempt};
use crate::retry::{Attempt, Retry};
use crate::timer::AsyncSleep;

// `T: AsyncSleep` is on the method, not here, so that a timer without it
// (`SystemTimer` without the `tokio` feature) is reported by the trait's
// `on_unimplemented` hint, naming the feature; on the impl it was rustc's
// bare "method exists but its trait bounds were not satisfied".
impl<C, T, N: Notify> Retry<C, T, N> {
    /// Runs the async closure `op` until it succeeds, fails terminally or
    /// exhausts the budget, like [`call_async`](Self::call_async), but each
    /// attempt's future may hold `&mut` borrows of the closure's captures:
    /// state that lives across attempts without `Arc<Mutex<_>>` or cloning.
    ///
    /// Dropping the future cancels the call. Unlike `call_async`'s, this
    /// future is not provably `Send` when the closure borrows local state
    /// (the compiler cannot yet bound the futures of an `AsyncFnMut` generic
    /// over the borrow's lifetime), so await it in place; to spawn a call,
    /// use [`call_async`](Self::call_async).
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
    /// /// A connection the attempts reuse, reconnecting through `&mut self`.
    /// struct Conn { reconnects: u32, seen: Vec<u32> }
    /// impl Conn {
    ///     async fn query(&mut self, attempt: u32) -> Result<&'static str, u16> {
    ///         self.seen.push(attempt);
    ///         if attempt < 3 { self.reconnects += 1; Err(503) } else { Ok("row") }
    ///     }
    /// }
    ///
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// # rt.block_on(async {
    /// let policy = Policy::builder().base(Duration::from_millis(100)).build()?;
    /// let retry = Retry::builder()
    /// .policy(policy)
    /// .classifier(|s: &u16| match s {
    ///     503 => Classification::retryable(),
    ///     _ => Classification::terminal(),
    /// })
    /// .timer(ManualTimer::new())
    /// .build();
    ///
    /// let mut conn = Conn { reconnects: 0, seen: Vec::new() };
    /// let row = retry
    ///     .call_async_mut(async |attempt| conn.query(attempt.number()).await)
    ///     .await;
    /// assert_eq!(row, Ok("row"));
    /// assert_eq!(conn.seen, [1, 2, 3]); // the state outlived every attempt
    /// assert_eq!(conn.reconnects, 2);
    /// # Ok::<(), herdless::PolicyError>(())
    /// # }).unwrap();
    /// ```
    pub async fn call_async_mut<R, E>(
        &self,
        mut op: impl AsyncFnMut(Attempt) -> Result<R, E>,
    ) -> Result<R, RetryError<E>>
    where
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::{Classification, GiveUp, Jitter, ManualTimer, Policy, Retry};

    fn retry() -> Retry<fn(&u16) -> Classification, ManualTimer> {
        let policy = Policy::builder()
            .base(Duration::from_secs(1))
            .jitter(Jitter::None)
            .max_attempts(4)
            .build()
            .unwrap();
        let classify: fn(&u16) -> Classification = |s| match s {
            503 => Classification::retryable(),
            _ => Classification::terminal(),
        };
        Retry::builder()
            .policy(policy)
            .classifier(classify)
            .timer(ManualTimer::new())
            .build()
    }

    #[test]
    fn state_borrowed_mutably_survives_every_attempt() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let r = retry();
        let mut log: Vec<u32> = Vec::new();
        let out = rt.block_on(r.call_async_mut(async |a| {
            log.push(a.number());
            Err::<(), u16>(503)
        }));
        let err = out.unwrap_err();
        assert_eq!(err.reason(), GiveUp::MaxAttempts);
        assert_eq!(err.attempts(), 4);
        assert_eq!(log, [1, 2, 3, 4]);
        assert_eq!(r.timer.sleeps().len(), 3);
        // A terminal error ends the call on the spot.
        let mut calls = 0;
        let out = rt.block_on(r.call_async_mut(async |_| {
            calls += 1;
            Err::<(), u16>(400)
        }));
        assert_eq!(out.unwrap_err().reason(), GiveUp::Terminal);
        assert_eq!(calls, 1);
    }
}
