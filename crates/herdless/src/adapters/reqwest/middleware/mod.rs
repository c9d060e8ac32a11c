//! A `reqwest_middleware::Middleware` that retries through the engine
//! (feature `reqwest-middleware`).
//!
//! ```no_run
//! use herdless::adapters::reqwest::middleware::RetryMiddleware;
//! use herdless::Policy;
//!
//! let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
//!     .with(RetryMiddleware::new(Policy::default()))
//!     .build();
//! // client.get(url).send().await? — every request through the stack is retried.
//! # let _ = client;
//! ```
//!
//! # One configuration, one engine
//!
//! [`RetryMiddleware`] is an [`HttpRetry`] put in a stack: build an
//! `HttpRetry` (a [`Retry`](crate::Retry) with an [`ReqwestClassifier`]: policy,
//! status sets, shared budget, breaker, task id, seed, notify hook, event
//! levels; `Idempotency-Key`; non-idempotent retries) and convert it with
//! `RetryMiddleware::from`. Each request through the stack is one call of
//! the [engine](crate::engine), driven by
//! [`Retry::call_async`](crate::Retry::call_async): the same
//! classification (HTTP statuses, `Retry-After-Ms` preferred to
//! `Retry-After`, both clamped to `max_retry_after` and spread), limits,
//! budget, breaker and events as every other executor. Each attempt runs the
//! rest of the stack (`Next::run`) with the same `Extensions`, so the
//! middlewares after this one see every attempt, those before it see one
//! call.
//!
//! # Timeouts
//!
//! As [`HttpRetry`]'s: with the policy's
//! [`attempt_timeout`](crate::Policy::attempt_timeout) (or a request that has
//! a timeout of its own), each attempt goes down the stack with reqwest's
//! per-request timeout set to
//! [`Attempt::remaining`](crate::Attempt::remaining), so the middlewares
//! after this one and the client see the attempt's deadline
//! (`request.timeout()`); see [`HttpRetry`]'s "Timeouts follow the attempt's
//! deadline".
//!
//! # What comes back
//!
//! A stack's callers expect an error status as `Ok(response)` (and turn it
//! into an error with `error_for_status` if they want), so the middleware
//! returns what the last attempt got, as it came:
//!
//! * a status below 400: `Ok(response)`;
//! * an error status the call stopped at (terminal, or a limit reached):
//!   `Ok(response)`, with a [`Stopped`] in the response's extensions saying why
//!   (reason, attempts, elapsed time, and whether the request could not be
//!   replayed at all);
//! * a transport error or an inner middleware's error: `Err`, unchanged. The
//!   engine's events (`retry_abandoned_terminal`, `retry_budget_exhausted`)
//!   carry the reason.
//!
//! # Requests sent once
//!
//! * **Only idempotent methods are retried** (RFC 9110 §9.2.2: GET, HEAD,
//!   OPTIONS, TRACE, PUT, DELETE) unless
//!   [`HttpRetry::retry_non_idempotent`] opts in; any other request is sent
//!   once and its failure is final ([`NotRetried::NonIdempotent`]).
//! * **A body that cannot be cloned** (a stream: `reqwest::Request::try_clone`
//!   returns `None`) is sent once, never retried: the `retry_not_clonable`
//!   event (DEBUG, as the tower policy's) is emitted before it is sent, and a
//!   failed status carries [`NotRetried::BodyNotCloneable`] in its
//!   [`Stopped`]. `HttpRetry::send` refuses such a request outright, because
//!   its caller asked for retries; a middleware serves every request of the
//!   client, uploads never meant to be retried included, so it sends them
//!   once rather than break them.
//!
//! [`HttpRetry`]: crate::adapters::reqwest::HttpRetry
//! [`HttpRetry::retry_non_idempotent`]: crate::adapters::reqwest::HttpRetry::retry_non_idempotent
//! [`ReqwestClassifier`]: crate::adapters::reqwest::ReqwestClassifier

use std::fmt;
use std::time::Duration;

use http::Extensions;
use reqwest::{Request, Response};
use reqwest_middleware::{Middleware, Next};

use crate::adapters::reqwest::{HttpError, HttpRetry, Kind, NotRetried, Replay};
use crate::events::GiveUp;
use crate::events::{NoNotify, Notify};
use crate::policy::Policy;
use crate::timer::{AsyncSleep, SystemTimer};

pub mod classify;

pub use classify::{classify_middleware, is_middleware_timeout};

/// Retries the requests of a `reqwest_middleware::ClientWithMiddleware`; see
/// the [module documentation](self).
///
/// ```no_run
/// use herdless::adapters::reqwest::{middleware::RetryMiddleware, HttpRetry};
/// use herdless::{Policy, Retry};
///
/// let retry = Retry::builder().policy(Policy::default()).classifier(Default::default()).task_id("billing").build();
/// let http = HttpRetry::from_retry(retry).idempotency_key_header(true);
/// let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
///     .with(RetryMiddleware::from(http))
///     .build();
/// # let _ = client;
/// ```
pub struct RetryMiddleware<T = SystemTimer, N = NoNotify> {
    http: HttpRetry<T, N>,
}

impl<T, N> fmt::Debug for RetryMiddleware<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryMiddleware")
            .field("http", &self.http)
            .finish()
    }
}

impl RetryMiddleware {
    /// A middleware with `policy`, the default status sets, the system timer
    /// and no notify hook.
    ///
    /// ```
    /// let m = herdless::adapters::reqwest::middleware::RetryMiddleware::new(herdless::Policy::default());
    /// assert_eq!(m.http().retry().policy().max_attempts(), 6);
    /// ```
    pub fn new(policy: Policy) -> Self {
        HttpRetry::new(policy).into()
    }
}

impl<T, N> From<HttpRetry<T, N>> for RetryMiddleware<T, N> {
    fn from(http: HttpRetry<T, N>) -> Self {
        RetryMiddleware { http }
    }
}

impl<T, N> RetryMiddleware<T, N> {
    /// The configuration.
    ///
    /// ```
    /// use herdless::adapters::reqwest::{middleware::RetryMiddleware, HttpRetry};
    /// let m = RetryMiddleware::from(HttpRetry::new(herdless::Policy::default()));
    /// assert_eq!(m.http().retry().task_id(), "");
    /// ```
    pub fn http(&self) -> &HttpRetry<T, N> {
        &self.http
    }
}

/// Why the middleware returned an error-status response: put in the
/// response's extensions when a call stops at an error status.
///
/// ```
/// use herdless::adapters::reqwest::middleware::Stopped;
/// # fn check(response: &reqwest::Response) {
/// if let Some(stopped) = response.extensions().get::<Stopped>() {
///     eprintln!("gave up after {} attempts: {}", stopped.attempts, stopped.reason);
/// }
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stopped {
    /// Why the call stopped: `Terminal` (a terminal status, or a request that
    /// could not be replayed) or the limit that ended it.
    pub reason: GiveUp,
    /// Attempts made.
    pub attempts: u32,
    /// Time from the first attempt's start to the decision to stop.
    pub elapsed: Duration,
    /// Set when the request could not be sent again at all.
    pub not_retried: Option<NotRetried>,
}

#[async_trait::async_trait]
impl<T, N> Middleware for RetryMiddleware<T, N>
where
    T: AsyncSleep + Send + Sync + 'static,
    N: Notify + Send + Sync + 'static,
{
    async fn handle(
        &self,
        request: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        let http = &self.http;
        let mut replay = Replay::new(
            request,
            http.retry_non_idempotent,
            http.idempotency_header,
            http.prefer_wait,
        );
        let not_retried = replay.not_retried();
        if not_retried == Some(NotRetried::BodyNotCloneable) {
            crate::events::emit::not_clonable(http.retry.task_id());
        }
        // Each attempt lends the extensions to the rest of the stack for as
        // long as it runs. An async mutex passes that `&mut` borrow from one
        // attempt's future to the next, so the call's future stays `Send`
        // (`call_async_mut` would borrow it directly, but its future cannot
        // yet be proven `Send`, which a middleware's must be).
        let extensions = tokio::sync::Mutex::new(extensions);
        let bounded = http.retry.policy().attempt_timeout().is_some();
        let result = http
            .retry
            .call_async(|attempt| {
                let request = replay.request(&attempt, bounded);
                let (next, extensions) = (next.clone(), &extensions);
                async move {
                    let mut extensions = extensions.lock().await;
                    let kind = match next.run(request, &mut extensions).await {
                        Ok(response) if response.status().as_u16() < 400 => return Ok(response),
                        Ok(response) => Kind::Status(response),
                        Err(reqwest_middleware::Error::Reqwest(e)) => Kind::Transport(e),
                        Err(e) => Kind::Middleware(e),
                    };
                    Err(HttpError::new(kind, not_retried))
                }
            })
            .await;
        let error = match result {
            Ok(response) => return Ok(response),
            Err(error) => error,
        };
        let stopped = Stopped {
            reason: error.reason(),
            attempts: error.attempts(),
            elapsed: error.elapsed(),
            not_retried,
        };
        match error.into_last_error().into_kind() {
            Kind::Status(mut response) => {
                response.extensions_mut().insert(stopped);
                Ok(response)
            }
            Kind::Transport(e) => Err(e.into()),
            Kind::Middleware(e) => Err(e),
            Kind::Unstarted(t) => Err(reqwest_middleware::Error::middleware(t)),
        }
    }
}
