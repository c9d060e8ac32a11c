//! The hedging executor: [`Retry::hedge_async`]. After a hedge delay with
//! no answer, another copy of the attempt is started; the first success
//! wins and the other copies are dropped. Every decision is the engine's
//! ([`Hedging`], [`Engine`](crate::engine::Engine)): this loop polls the
//! copies and the timers, and does what it is told.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use crate::classify::Classify;
use crate::classify::TimedOut;
use crate::engine::call::{CopyFailed, Hedging};
use crate::events::Notify;
use crate::hedge::Hedge;
use crate::retry::RetryError;
use crate::retry::asynchronous::back_off;
use crate::retry::run::Run;
use crate::retry::{Attempt, Retry};
use crate::timer::AsyncSleep;

/// One copy in flight: its future, when it started, and its deadline wait.
struct Copy<Fut, S, E> {
    attempt: Attempt,
    started: Duration,
    fut: Pin<Box<Fut>>,
    /// Armed when the copy first waits (with an attempt timeout and an
    /// error type that can say "timed out").
    deadline: Option<(Pin<Box<S>>, E)>,
    armed: bool,
}

/// What woke the loop.
enum Woke<R, E> {
    Won(usize, R),
    Failed(usize, E, bool),
    HedgeDue,
}

impl<C, T, N: Notify> Retry<C, T, N> {
    /// Runs `op` with hedges: after `hedge`'s delay without an answer,
    /// another copy of the attempt starts (at most
    /// [`max_hedges`](Hedge::max_hedges) per call, each admitted by the
    /// engine: budget, breaker, server pushback, elapsed and attempt limits;
    /// see [`hedge`](crate::hedge)); the first success wins and the other
    /// copies are dropped. A failed copy waits for the others; when none is
    /// left the failure is decided as any retry's (backoff, then a new round
    /// that may hedge again). A terminal answer, or a server's refusal, ends
    /// the call at once. Every copy is an [`Attempt`] of one call: the same
    /// idempotency key, its own number and deadline.
    ///
    /// `op` must be safe to run twice at once (idempotent): this executor
    /// hedges whatever it is given. Drivers that can tell (the tower
    /// [`HedgeLayer`](crate::adapters::tower::HedgeLayer), by the request's
    /// method) refuse the others unless the [`Hedge`] allows them.
    ///
    /// # Errors
    ///
    /// A [`RetryError`] with the copy's error that ended the call.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::hedge::Hedge;
    /// use herdless::{AlwaysRetry, Policy, Retry};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let hedge = Hedge::builder().delay(Duration::from_millis(10)).build()?;
    /// let retry = Retry::new(Policy::default(), AlwaysRetry);
    /// let started = tokio::time::Instant::now();
    /// let answer = retry
    ///     .hedge_async(&hedge, |attempt| async move {
    ///         // The first copy is stuck behind a slow replica; the hedge is not.
    ///         let took = if attempt.number() == 1 { 1000 } else { 2 };
    ///         tokio::time::sleep(Duration::from_millis(took)).await;
    ///         Ok::<_, std::io::Error>(attempt.number())
    ///     })
    ///     .await?;
    /// assert_eq!(answer, 2); // the hedge won
    /// assert_eq!(started.elapsed(), Duration::from_millis(12));
    /// # Ok(()) }
    /// ```
    pub async fn hedge_async<F, Fut, R, E>(&self, hedge: &Hedge, op: F) -> Result<R, RetryError<E>>
    where
        F: FnMut(Attempt) -> Fut,
        Fut: Future<Output = Result<R, E>>,
        C: Classify<E>,
        T: AsyncSleep,
    {
        self.hedged(hedge, true, op).await
    }

    /// [`hedge_async`](Self::hedge_async) for an operation whose
    /// idempotency the driver knows: one that is not is hedged only when the
    /// `hedge` allows it.
    pub(crate) async fn hedged<F, Fut, R, E>(
        &self,
        hedge: &Hedge,
        idempotent: bool,
        mut op: F,
    ) -> Result<R, RetryError<E>>
    where
        F: FnMut(Attempt) -> Fut,
        Fut: Future<Output = Result<R, E>>,
        C: Classify<E>,
        T: AsyncSleep,
    {
        let mut run = Run::new(self);
        let mut retries = run.context();
        retries.ask_metrics();
        // A throttled call's first copy waits for its turn, as any first
        // attempt does; its hedges never wait (`HedgeStop::Throttled`).
        while let Some(wait) = run.first_gate(&retries)? {
            self.timer.sleep(wait).await;
        }
        let mut hedging = Hedging::new();
        let mut copies: Vec<Copy<Fut, T::Sleep, E>> = Vec::new();
        let timeouts = self.policy.attempt_timeout().is_some();
        loop {
            let attempt = run.round(&mut hedging);
            let started = run.elapsed();
            copies.push(Copy {
                attempt,
                started,
                fut: Box::pin(op(attempt)),
                deadline: None,
                armed: false,
            });
            let mut timer = self.hedge_timer(&hedging, hedge, started, started);
            let error = loop {
                let woke = std::future::poll_fn(|cx| {
                    for (i, copy) in copies.iter_mut().enumerate() {
                        match copy.fut.as_mut().poll(cx) {
                            Poll::Ready(Ok(v)) => return Poll::Ready(Woke::Won(i, v)),
                            Poll::Ready(Err(e)) => return Poll::Ready(Woke::Failed(i, e, false)),
                            Poll::Pending => {}
                        }
                        if timeouts && !copy.armed {
                            copy.armed = true;
                            let a = copy.attempt;
                            let cut = self
                                .classifier
                                .timed_out(TimedOut::new(a.number(), a.remaining()));
                            if let Some(cut) = cut {
                                let left = a.deadline().saturating_sub(run.elapsed());
                                copy.deadline = Some((Box::pin(self.timer.sleep(left)), cut));
                            }
                        }
                        if let Some((sleep, _)) = &mut copy.deadline {
                            if sleep.as_mut().poll(cx).is_ready() {
                                if let Some((_, cut)) = copy.deadline.take() {
                                    return Poll::Ready(Woke::Failed(i, cut, true));
                                }
                            }
                        }
                    }
                    let due = timer.as_mut().map(|t| t.as_mut().poll(cx));
                    match due {
                        Some(Poll::Ready(())) => Poll::Ready(Woke::HedgeDue),
                        _ => Poll::Pending,
                    }
                })
                .await;
                match woke {
                    Woke::Won(i, value) => {
                        let copy = copies.swap_remove(i);
                        run.hedge_won(
                            &mut hedging,
                            &retries,
                            hedge,
                            copy.attempt.number(),
                            copy.started,
                        );
                        return Ok(value);
                    }
                    Woke::HedgeDue => {
                        timer = None;
                        if let Some(attempt) = run.hedge(&mut hedging, &retries, hedge, idempotent)
                        {
                            let now = run.elapsed();
                            copies.push(Copy {
                                attempt,
                                started: now,
                                fut: Box::pin(op(attempt)),
                                deadline: None,
                                armed: false,
                            });
                            timer = self.hedge_timer(&hedging, hedge, now, now);
                        }
                    }
                    Woke::Failed(i, error, timed_out) => {
                        copies.swap_remove(i);
                        match run.copy_failed(&mut hedging, &retries, &error, timed_out) {
                            (CopyFailed::Wait, _) => {
                                if hedging.stopped() {
                                    timer = None;
                                }
                            }
                            (CopyFailed::Decide(classification), cause) => {
                                // The round is over: the other copies are dropped.
                                copies.clear();
                                let decision = run.decide(&retries, classification, cause);
                                break (error, decision);
                            }
                        }
                    }
                }
            };
            let (error, decision) = error;
            if let Err(reason) = back_off(&mut run, &retries, &self.timer, decision).await {
                return Err(run.error(reason, error));
            }
        }
    }

    /// The wait before the next hedge of a round whose last copy started at
    /// `last_start` (`now` on the call's clock), if one may follow.
    fn hedge_timer(
        &self,
        hedging: &Hedging,
        hedge: &Hedge,
        last_start: Duration,
        now: Duration,
    ) -> Option<Pin<Box<T::Sleep>>>
    where
        T: AsyncSleep,
    {
        let at = hedging.next_at(hedge, last_start)?;
        Some(Box::pin(self.timer.sleep(at.saturating_sub(now))))
    }
}
