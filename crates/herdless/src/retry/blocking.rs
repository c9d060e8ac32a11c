//! The blocking executor: retries on the calling thread, sleeping with
//! [`Sleep`] (`std::thread::sleep` by default).
//!
//! Use it in synchronous code and worker threads. In async code use
//! [`call_async`](crate::Retry::call_async): a blocking sleep would stall the
//! runtime's thread.
//!
//! # Deadlines: passed in, not enforced
//!
//! A blocking call cannot be preempted: this executor never interrupts an
//! attempt, with or without the policy's
//! [`attempt_timeout`](crate::Policy::attempt_timeout). It gives each attempt
//! its deadline instead ([`Attempt::deadline`](crate::Attempt::deadline),
//! [`Attempt::remaining`](crate::Attempt::remaining)): an attempt that passes
//! `remaining()` to its own I/O (`TcpStream::set_read_timeout`, a client's
//! timeout, `recv_timeout`) keeps the call within `max_elapsed`. One that
//! ignores it runs as long as it runs; its result is taken as it comes (a
//! late success is a success), and no retry starts past the limit.

use crate::classify::Classify;
use crate::engine::call::{Decision, Gate};
use crate::engine::context::Context;
use crate::events::Notify;
use crate::retry::RetryError;
use crate::retry::run::{BlockingClock, First, Run};
use crate::retry::{Attempt, Retry};
use crate::timer::Sleep;

impl<C, T: Sleep, N: Notify> Retry<C, T, N> {
    /// Runs `op` until it succeeds, fails terminally or exhausts the budget.
    ///
    /// # Errors
    ///
    /// A [`RetryError`] saying why it stopped (terminal, max attempts, max
    /// elapsed), after how many attempts and how long, with the last error.
    ///
    /// ```
    /// use std::io;
    /// use herdless::{ByTrait, ManualTimer, Policy, Retry};
    /// let timer = ManualTimer::new();
    /// let mut failures = 2;
    /// let out = Retry::builder()
    ///     .policy(Policy::default())
    ///     .classifier(ByTrait)
    ///     .timer(timer.clone())
    ///     .build()
    ///     .call(|_| {
    ///         if failures > 0 { failures -= 1; Err(io::Error::from(io::ErrorKind::TimedOut)) }
    ///         else { Ok("captured") }
    ///     });
    /// assert_eq!(out.unwrap(), "captured");
    /// assert_eq!(timer.sleeps().len(), 2);
    /// ```
    pub fn call<F, R, E>(&self, mut op: F) -> Result<R, RetryError<E>>
    where
        F: FnMut(Attempt) -> Result<R, E>,
        C: Classify<E>,
    {
        if self.throttle.is_some() {
            return throttled(self, Run::new(self), op);
        }
        // The first attempt runs before the call's state exists: a first-try
        // success builds only what it reads. Whether a metrics recorder is
        // installed is asked before it (fewer values live than after it:
        // 4 instructions fewer a retried call).
        let metered = crate::events::metrics::installed();
        let first = First::start::<C, T, N, BlockingClock>(self);
        match op(first.attempt(self)) {
            Ok(value) => {
                let mut cx = self.context();
                cx.metrics_known(metered);
                first.succeeded::<C, T, N, BlockingClock>(self, &cx);
                Ok(value)
            }
            // Unthrottled: the retrier's context is the run's, and only a
            // breaker gates a due retry.
            Err(error) => {
                let gated = self.breaker.is_some();
                let mut cx = self.context();
                cx.metrics_known(metered);
                retries(self, Run::after_first(self, first), &cx, gated, op, error)
            }
        }
    }
}

/// The call's attempts, the first on its own: a first-try success builds
/// only what it reads; the retries share one context.
#[inline(always)]
fn attempts<C, T: Sleep, N: Notify, F, R, E>(
    retry: &Retry<C, T, N>,
    mut run: Run<'_, C, T, N, BlockingClock>,
    mut op: F,
) -> Result<R, RetryError<E>>
where
    F: FnMut(Attempt) -> Result<R, E>,
    C: Classify<E>,
{
    match op(run.begin()) {
        Ok(value) => {
            run.succeeded(&run.context());
            Ok(value)
        }
        Err(error) => {
            let mut cx = run.context();
            cx.ask_metrics();
            let gated = run.gated();
            retries(retry, run, &cx, gated, op, error)
        }
    }
}

/// The call's retries, after its first attempt failed with `error`;
/// `gated`: whether a due retry asks a gate (a breaker or a throttle), asked
/// once (without either every due retry may start).
#[inline(always)]
fn retries<C, T: Sleep, N: Notify, F, R, E>(
    retry: &Retry<C, T, N>,
    mut run: Run<'_, C, T, N, BlockingClock>,
    cx: &Context<'_, N>,
    gated: bool,
    mut op: F,
    mut error: E,
) -> Result<R, RetryError<E>>
where
    F: FnMut(Attempt) -> Result<R, E>,
    C: Classify<E>,
{
    loop {
        match run.failed(cx, &error, false) {
            Decision::Retry { delay, .. } => retry.timer.sleep(delay),
            Decision::GiveUp(reason) => return Err(run.error(reason, error)),
        }
        if gated {
            loop {
                match run.ready(cx) {
                    Gate::Go => break,
                    Gate::Wait(wait) => retry.timer.sleep(wait),
                    Gate::GiveUp(reason) => return Err(run.error(reason, error)),
                }
            }
        }
        match op(run.begin()) {
            Ok(value) => {
                run.succeeded(cx);
                return Ok(value);
            }
            Err(e) => error = e,
        }
    }
}

/// A throttled call: its first attempt waits for its turn, then the call
/// goes on as any other. A path of its own, out of line: were it to rejoin
/// the unthrottled path before the first attempt, the compiler would no
/// longer know that attempt to be the first (its count and flags would be
/// read from memory, and a first-try success would build the whole context
/// for the event a retry's success emits).
#[cold]
#[inline(never)]
fn throttled<C, T: Sleep, N: Notify, F, R, E>(
    retry: &Retry<C, T, N>,
    mut run: Run<'_, C, T, N, BlockingClock>,
    op: F,
) -> Result<R, RetryError<E>>
where
    F: FnMut(Attempt) -> Result<R, E>,
    C: Classify<E>,
{
    let cx = run.context();
    while let Some(wait) = run.first_gate(&cx)? {
        retry.timer.sleep(wait);
    }
    attempts(retry, run, op)
}
