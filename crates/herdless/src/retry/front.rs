//! The front door: `.retry(...)` on a closure.
//!
//! ```
//! # #[cfg(feature = "tokio")] {
//! use herdless::prelude::*;
//!
//! # let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
//! # rt.block_on(async {
//! async fn fetch() -> std::io::Result<&'static str> { Ok("page") }
//!
//! let page = fetch.retry(Policy::default()).await?;            // async (feature `tokio`)
//! let size = (|| std::fs::metadata("Cargo.toml")).retry(Policy::default())?; // blocking
//! # assert_eq!(page, "page"); let _ = size;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! # }
//! ```
//!
//! The closure takes no argument (the executors' [`call`](Retry::call) and
//! [`call_async`](Retry::call_async) pass each attempt its [`Attempt`] for an
//! idempotency key or an attempt number). What it retries with is anything
//! [`IntoRetry`]:
//!
//! | `.retry(...)` | classifier | owned or borrowed |
//! |---|---|---|
//! | a [`Policy`] | by the error's type ([`ByTrait`]): `std::io::Error`, and with their features `reqwest::Error`, `http::StatusCode`, `tonic::Status` | a retrier built for this call |
//! | a [`RetryBuilder`] | the builder's | built for this call |
//! | a [`Retry`] | the retrier's | moved in |
//! | a `&Retry` | the retrier's | borrowed: one retrier (its guards, its seed sequence) serves many calls |
//!
//! An error type without a classifier does not compile with a `Policy`
//! (`Retryable` is not implemented for it): herdless never retries what it
//! cannot classify. Give one with [`RetryBuilder::classify`].
//!
//! Why two traits: a blocking closure returns a `Result`, an async one a
//! future, and the two `.retry` methods return different things (the
//! `Result` itself, after the retries; or a future of it). Only one applies to
//! a given closure, so both can be in scope (the [`prelude`](crate::prelude)
//! brings both).

use std::borrow::Borrow;
use std::future::Future;

use crate::classify::{ByTrait, Classify};
use crate::events::Notify;
use crate::policy::Policy;
#[cfg(doc)]
use crate::retry::Attempt;
use crate::retry::Retry;
use crate::retry::RetryError;
use crate::retry::builder::RetryBuilder;
use crate::timer::{AsyncSleep, Sleep, SystemTimer};

/// What `.retry(...)` accepts: a [`Policy`], a [`RetryBuilder`], a [`Retry`]
/// or a `&Retry` (see [`RetryBlocking`] and [`RetryAsync`]).
pub trait IntoRetry {
    /// The retrier's classifier.
    type Classifier;
    /// The retrier's timer.
    type Timer;
    /// The retrier's event hook.
    type Notify;
    /// The retrier, owned or borrowed.
    type Retry: Borrow<Retry<Self::Classifier, Self::Timer, Self::Notify>>;

    /// The retrier this value stands for.
    ///
    /// ```
    /// use herdless::retry::IntoRetry;
    /// use std::borrow::Borrow;
    /// let retry = herdless::Policy::default().into_retry();
    /// assert_eq!(retry.borrow().policy().max_attempts(), 6);
    /// ```
    fn into_retry(self) -> Self::Retry;
}

impl IntoRetry for Policy {
    type Classifier = ByTrait;
    type Timer = SystemTimer;
    type Notify = crate::events::NoNotify;
    type Retry = Retry;

    fn into_retry(self) -> Retry {
        Retry::new(self, ByTrait)
    }
}

impl<C, T, N> IntoRetry for Retry<C, T, N> {
    type Classifier = C;
    type Timer = T;
    type Notify = N;
    type Retry = Self;

    fn into_retry(self) -> Self {
        self
    }
}

impl<C, T, N> IntoRetry for &Retry<C, T, N> {
    type Classifier = C;
    type Timer = T;
    type Notify = N;
    type Retry = Self;

    fn into_retry(self) -> Self {
        self
    }
}

impl<C, T, N> IntoRetry for RetryBuilder<C, T, N> {
    type Classifier = C;
    type Timer = T;
    type Notify = N;
    type Retry = Retry<C, T, N>;

    fn into_retry(self) -> Retry<C, T, N> {
        self.build()
    }
}

/// `.retry(...)` on a blocking closure: runs it until it succeeds, fails
/// terminally or exhausts the policy, sleeping on this thread in between.
///
/// ```
/// use herdless::{ManualTimer, Retry, RetryBlocking};
/// let mut left = 2;
/// let retry = Retry::builder().timer(ManualTimer::new()).build();
/// let read = (|| {
///     if left > 0 { left -= 1; Err(std::io::Error::from(std::io::ErrorKind::TimedOut)) } else { Ok(7) }
/// })
/// .retry(&retry);
/// assert_eq!(read.unwrap(), 7);
/// ```
pub trait RetryBlocking<T, E>: FnMut() -> Result<T, E> + Sized {
    /// Retries this closure with `with` (see [`IntoRetry`]).
    ///
    /// # Errors
    ///
    /// A [`RetryError`]: why it stopped, after how many attempts and how long,
    /// with the last error.
    fn retry<W>(mut self, with: W) -> Result<T, RetryError<E>>
    where
        W: IntoRetry,
        W::Classifier: Classify<E>,
        W::Timer: Sleep,
        W::Notify: Notify,
    {
        with.into_retry().borrow().call(|_| self())
    }
}

impl<F, T, E> RetryBlocking<T, E> for F where F: FnMut() -> Result<T, E> {}

/// `.retry(...)` on a closure returning a future: a future that retries it,
/// sleeping with the timer's [`AsyncSleep`] (tokio's with the `tokio`
/// feature, which the default [`Policy`] and [`Retry::builder`] use).
///
/// ```
/// use herdless::{Classification, ManualTimer, Retry, RetryAsync};
/// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// # rt.block_on(async {
/// let mut calls = 0;
/// let retry = Retry::builder()
///     .classify(|status| match status {
///         503 => Classification::retryable(),
///         _ => Classification::terminal(),
///     })
///     .timer(ManualTimer::new());
/// let fetch = || {
///     calls += 1;
///     let status = if calls < 3 { 503 } else { 200 };
///     async move { if status == 200 { Ok("body") } else { Err(status) } }
/// };
/// assert_eq!(fetch.retry(retry).await, Ok("body"));
/// # });
/// ```
pub trait RetryAsync<Fut: Future>: FnMut() -> Fut + Sized {
    /// Retries this closure's futures with `with` (see [`IntoRetry`]).
    ///
    /// The future's error is a [`RetryError`]: why it stopped, after how many
    /// attempts and how long, with the last error. Dropping it cancels the
    /// call (no further attempt starts).
    fn retry<W, T, E>(mut self, with: W) -> impl Future<Output = Result<T, RetryError<E>>>
    where
        Fut: Future<Output = Result<T, E>>,
        W: IntoRetry,
        W::Classifier: Classify<E>,
        W::Timer: AsyncSleep,
        W::Notify: Notify,
    {
        async move {
            let retry = with.into_retry();
            retry.borrow().call_async(|_| self()).await
        }
    }
}

impl<F, Fut> RetryAsync<Fut> for F
where
    F: FnMut() -> Fut,
    Fut: Future,
{
}
