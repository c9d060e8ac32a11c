//! A retrying `reqwest` sender (feature `reqwest`).
//!
//! ```no_run
//! use herdless::adapters::reqwest::HttpRetry;
//! use herdless::Policy;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = reqwest::Client::new();
//! let http = HttpRetry::new(Policy::default()).idempotency_key_header(true);
//! let response = http.send(client.get("http://127.0.0.1:8080/scan/7")).await?;
//! println!("{}", response.text().await?);
//! # Ok(()) }
//! ```
//!
//! # Three ways to retry reqwest, one engine
//!
//! * **[`HttpRetry`]** (this module): takes a [`reqwest::RequestBuilder`].
//! * **tower**: reqwest's `Client` is a `tower::Service<reqwest::Request>`
//!   (reqwest 0.12 and later), so a `tower::retry::RetryLayer` with a
//!   [`RetryPolicy`](crate::adapters::tower::RetryPolicy) wraps it; this module's
//!   [`ReqwestClassifier`] classifies its `Result<reqwest::Response,
//!   reqwest::Error>` (features `tower` + `reqwest`) and
//!   `reqwest::Request::try_clone` copies requests (a streaming body is sent
//!   once, never retried):
//!
//!   ```no_run
//!   # #[cfg(feature = "tower")] {
//!   use herdless::adapters::reqwest::ReqwestClassifier;
//!   use herdless::{Policy, Retry};
//!   use herdless::adapters::tower::RetryPolicy;
//!   use tower::{retry::RetryLayer, Service, ServiceBuilder};
//!
//!   let retry = Retry::builder().policy(Policy::default()).classifier(ReqwestClassifier::default()).task_id("scan-7").build();
//!   let policy = RetryPolicy::with_cloner(retry, |r: &reqwest::Request| r.try_clone());
//!   let client = ServiceBuilder::new()
//!       .layer(RetryLayer::new(policy))
//!       .service(reqwest::Client::new());
//!   // client.ready().await?.call(request).await? — a Service<reqwest::Request>.
//!   fn is_client<S: Service<reqwest::Request, Response = reqwest::Response>>(_: &S) {}
//!   is_client(&client);
//!   # }
//!   ```
//! * **reqwest-middleware**: [`RetryMiddleware`](crate::adapters::reqwest::middleware::RetryMiddleware)
//!   in a `ClientWithMiddleware` stack (feature `reqwest-middleware`).
//!
//! All three classify with [`ReqwestClassifier`] and decide in the
//! [engine](crate::engine): the same policy, `Retry-After` handling, shared
//! budget, breaker and events. A tower layer or a middleware returns when the
//! response's headers arrive, so `HttpRetry` stays for what they cannot do:
//!
//! * **The body inside the attempt**: [`send_to`](HttpRetry::send_to)
//!   streams the body to a [`BodySink`] (a file, stdout, [`Discard`]) in
//!   each attempt, in constant memory, and [`send_buffered`](HttpRetry::send_buffered)
//!   collects it, so a connection that breaks or stalls mid-body is a failed
//!   attempt (retried unless part of the body went where it cannot be taken
//!   back: see [`stream`](self#streaming-a-body)); a layer or middleware
//!   hands the response back before its body is read, and a failure while
//!   reading it is the caller's.
//! * **A typed outcome**: [`SendError::Retry`] carries why the call stopped,
//!   after how many attempts and how long, with the last error (and the last
//!   error status's response); a layer or middleware returns the last result
//!   as it came.
//! * **A body that cannot be cloned is refused, not sent once**; each attempt
//!   can be observed ([`send_observed`](HttpRetry::send_observed)); and no
//!   extra crate or boxed stack: any `Client` configuration, static types.
//!
//! # Rules
//!
//! * **Only idempotent methods are retried by default** (RFC 9110 §9.2.2: GET,
//!   HEAD, OPTIONS, TRACE, PUT, DELETE). Any other method (POST, PATCH, …) is
//!   sent once, and its failure is final (`retry_abandoned_terminal`), unless
//!   [`retry_non_idempotent`](HttpRetry::retry_non_idempotent) opts in — best
//!   together with an `Idempotency-Key` the server honors.
//! * **A body that cannot be cloned is refused, clearly, before anything is
//!   sent**: a retryable request whose body is a stream fails with
//!   [`SendError::BodyNotCloneable`] instead of being sent once and silently not
//!   retried. Buffer the body (`Body::from(bytes)`) to make it retryable. (A
//!   non-retried method needs no clone, so a streaming POST is sent once.)
//! * **`Idempotency-Key`** ([`idempotency_key_header`](HttpRetry::idempotency_key_header)):
//!   every attempt of one call carries the same key (the call's
//!   [`IdempotencyKey`](crate::IdempotencyKey), a UUID), a new call gets a new
//!   one, and a key the request already carries is kept. The value is the bare
//!   UUID, as Stripe-style APIs expect.
//! * **Statuses** are classified by [`StatusClassifier`] (retryable and terminal sets
//!   that fail closed), `Retry-After` by [`parse_retry_after`] against the wall clock
//!   (injectable with [`ReqwestClassifier::now`]), and a valid `Retry-After-Ms`
//!   (a [`pushback`](crate::pushback) server's millisecond slot) is preferred
//!   to `Retry-After` ([`classify_response_ms`]);
//!   transport errors by [`classify_transport`]; per-attempt timeouts are
//!   reported as timeouts ([`Classify::is_timeout`]) so a shared retry budget
//!   can charge them more.
//! * **Timeouts follow the attempt's deadline**: with the policy's
//!   [`attempt_timeout`](crate::Policy::attempt_timeout), every attempt's
//!   request is sent with reqwest's per-request timeout set to
//!   [`Attempt::remaining`] (the timeout, or what is left of `max_elapsed`,
//!   whichever is smaller), so reqwest itself ends a hanging attempt and the
//!   call ends within `max_elapsed`. A request built with its own
//!   `RequestBuilder::timeout` keeps it, tightened to `remaining()` as the
//!   elapsed limit runs out. Without either, the request carries no timeout
//!   and the `Client`'s own (`ClientBuilder::timeout`) applies: reqwest lets
//!   a per-request timeout *replace* the client's, so herdless sets one only
//!   when asked. reqwest's timeout runs until the body is read: after
//!   [`send`](HttpRetry::send) returns, the caller's read of the body is
//!   still bounded by it. See docs/library.md, "Timeouts: which one wins".
//!
//!
//! # Streaming a body
//!
//! [`send_to`](HttpRetry::send_to) reads the successful response's body
//! chunk by chunk, as the connection delivers them, and hands each to a
//! [`BodySink`] at once: memory holds one chunk, however long the body. The
//! body is part of the attempt: a connection that breaks or stalls
//! (per-attempt timeout) mid-body is a failed attempt
//! ([`AttemptRecord::timed_out`] says which).
//!
//! * A failure **before the first byte** was written (connect, status,
//!   headers, an empty body cut short) is retried whatever the sink.
//! * A failure **after** it: a sink that [can restart](BodySink::can_restart)
//!   (a buffer, a regular file it may truncate, [`Discard`]) is
//!   [restarted](BodySink::restart) before the next attempt writes, and the
//!   failure is retried like any other; with any other sink (a pipe, a
//!   terminal) the failure is final: its error carries
//!   [`NotRetried::PartialBody`], which the classifier calls terminal
//!   (`retry_abandoned_terminal`), and the caller learns that part of a body
//!   was delivered.
//! * A failure **of the sink** (a closed pipe, a full disk) is neither the
//!   server's nor a retry decision: the call stops at once, without another
//!   attempt or a retry event, with [`SendError::Sink`].
//!
//! [`send_buffered`](HttpRetry::send_buffered) is `send_to` into a
//! `Vec<u8>` (restartable, without a size limit).
//!
//! [`StatusClassifier`]: crate::http::StatusClassifier
//! [`parse_retry_after`]: crate::http::parse_retry_after
//! [`classify_response_ms`]: crate::http::classify_response_ms
//! [`Classify::is_timeout`]: crate::Classify::is_timeout
//! [`Attempt::remaining`]: crate::Attempt::remaining

mod classify;
mod error;
#[cfg(feature = "reqwest-middleware")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest-middleware")))]
pub mod middleware;
mod replay;
mod stream;
mod transport;

use std::fmt;
use std::sync::Mutex;
use std::time::Instant;

use reqwest::{RequestBuilder, Response, StatusCode};

use crate::events::{NoNotify, Notify};
use crate::policy::Policy;
use crate::retry::{Attempt, Retry};
use crate::timer::{AsyncSleep, SystemTimer};

pub use classify::ReqwestClassifier;
pub(crate) use error::Kind;
pub use error::{HttpError, NotRetried, SendError};
pub(crate) use replay::Replay;
pub use replay::{IDEMPOTENCY_KEY, is_idempotent};
pub use stream::{AttemptWatch, BodySink, Discard, Streamed};
pub use transport::{classify_io, classify_transport, is_transport_timeout};

/// What one attempt did, for [`HttpRetry::send_observed`] and the other
/// `_observed` senders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AttemptRecord {
    /// The 1-based attempt number.
    pub number: u32,
    /// When the attempt started (the retrier's clock).
    pub started: Instant,
    /// When it ended.
    pub finished: Instant,
    /// The status received, or `None` after a transport error.
    pub status: Option<u16>,
    /// Whether the attempt ended by a timeout (the request's per-attempt
    /// timeout, or a socket's), before or while reading the body.
    pub timed_out: bool,
    /// Body bytes the attempt wrote to its sink ([`HttpRetry::send_to`];
    /// 0 for [`send`](HttpRetry::send), which leaves the body unread).
    pub body_bytes: u64,
}

/// Sends `reqwest` requests with retries; see the [module documentation](self).
///
/// Wraps a [`Retry`] with an [`ReqwestClassifier`], so everything `Retry`
/// configures (task id, seed, timer, notify hook) applies, and every decision
/// emits the usual events.
pub struct HttpRetry<T = SystemTimer, N = NoNotify> {
    pub(crate) retry: Retry<ReqwestClassifier, T, N>,
    pub(crate) idempotency_header: bool,
    pub(crate) retry_non_idempotent: bool,
    pub(crate) prefer_wait: bool,
}

impl<T, N> fmt::Debug for HttpRetry<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpRetry")
            .field("retry", &self.retry)
            .field("idempotency_header", &self.idempotency_header)
            .field("retry_non_idempotent", &self.retry_non_idempotent)
            .field("prefer_wait", &self.prefer_wait)
            .finish()
    }
}

impl HttpRetry {
    /// A sender with `policy`, the default status sets, the system timer and
    /// no notify hook.
    ///
    /// ```
    /// let h = herdless::adapters::reqwest::HttpRetry::new(herdless::Policy::default());
    /// assert_eq!(h.retry().policy().max_attempts(), 6);
    /// ```
    pub fn new(policy: Policy) -> Self {
        Self::from_retry(Retry::new(policy, ReqwestClassifier::default()))
    }
}

impl<T, N> HttpRetry<T, N> {
    /// A sender around a configured [`Retry`].
    ///
    /// ```
    /// use herdless::adapters::reqwest::{HttpRetry, ReqwestClassifier};
    /// use herdless::http::StatusClassifier;
    /// use herdless::{Policy, Retry};
    /// let retry = Retry::builder()
    ///     .policy(Policy::default())
    ///     .classifier(ReqwestClassifier::new(StatusClassifier::new().retry(409)))
    ///     .task_id("scan-7")
    ///     .build();
    /// let h = HttpRetry::from_retry(retry);
    /// assert_eq!(h.retry().task_id(), "scan-7");
    /// ```
    pub fn from_retry(retry: Retry<ReqwestClassifier, T, N>) -> Self {
        Self {
            retry,
            idempotency_header: false,
            retry_non_idempotent: false,
            prefer_wait: true,
        }
    }

    /// Sends the call's idempotency key as `Idempotency-Key` on every attempt
    /// (unless the request already has one).
    pub fn idempotency_key_header(mut self, on: bool) -> Self {
        self.idempotency_header = on;
        self
    }

    /// Tells the server, on every attempt, how long the attempt will wait
    /// for its answer: `Prefer: wait=N` (RFC 7240), `N` the attempt's
    /// timeout or, without one, what is left of `max_elapsed`, in whole
    /// seconds (unless the request has a `Prefer` header of its own). A
    /// server's reconnect queue may then hold the request that long instead
    /// of answering it early (see [`http::queue`](crate::http::queue)). On
    /// by default. A timeout set on the reqwest `Client` is not known here:
    /// set it as the policy's `attempt_timeout` instead, or turn this off.
    ///
    /// ```
    /// let h = herdless::adapters::reqwest::HttpRetry::new(herdless::Policy::default()).prefer_wait(false);
    /// # let _ = h;
    /// ```
    pub fn prefer_wait(mut self, on: bool) -> Self {
        self.prefer_wait = on;
        self
    }

    /// Retries non-idempotent methods (POST, PATCH, …) too. Only do this when
    /// the server deduplicates them (e.g. by `Idempotency-Key`).
    pub fn retry_non_idempotent(mut self, on: bool) -> Self {
        self.retry_non_idempotent = on;
        self
    }

    /// The wrapped retrier.
    pub fn retry(&self) -> &Retry<ReqwestClassifier, T, N> {
        &self.retry
    }
}

impl<T: AsyncSleep, N: Notify> HttpRetry<T, N> {
    /// Sends the request, retrying per the policy. A status below 400 is
    /// success.
    ///
    /// # Errors
    ///
    /// [`SendError`]: an invalid request, a body that cannot be cloned for a
    /// retry, or the retries' outcome (terminal or exhausted).
    pub async fn send(&self, request: RequestBuilder) -> Result<Response, SendError> {
        self.send_observed(request, |_| {}).await
    }

    /// Like [`send`](Self::send), calling `observe` after every attempt.
    ///
    /// # Errors
    ///
    /// As for [`send`](Self::send).
    pub async fn send_observed(
        &self,
        request: RequestBuilder,
        observe: impl FnMut(&AttemptRecord) + Send,
    ) -> Result<Response, SendError> {
        self.run(request, observe).await
    }

    /// Sends the request and reads the whole body **inside** each attempt, so
    /// a connection that breaks or stalls mid-body (per-attempt timeout) is
    /// retried like any other transport error. The body is held in memory
    /// without a limit: for a body of unknown size, stream it with
    /// [`send_to`](Self::send_to) (into a file, or [`Discard`]ed).
    ///
    /// # Errors
    ///
    /// As for [`send`](Self::send).
    pub async fn send_buffered(&self, request: RequestBuilder) -> Result<Buffered, SendError> {
        self.send_buffered_observed(request, |_| {}).await
    }

    /// Like [`send_buffered`](Self::send_buffered), calling `observe` after
    /// every attempt.
    ///
    /// # Errors
    ///
    /// As for [`send`](Self::send).
    pub async fn send_buffered_observed(
        &self,
        request: RequestBuilder,
        observe: impl FnMut(&AttemptRecord) + Send,
    ) -> Result<Buffered, SendError> {
        let mut body = Vec::new();
        let got = self.send_to_observed(request, &mut body, observe).await?;
        Ok(Buffered {
            status: got.status,
            version: got.version,
            headers: got.headers,
            url: got.url,
            body: body.into(),
        })
    }

    /// The client and the replayable request, or why nothing may be sent.
    // The public error type, built at most once per call: no boxing.
    #[allow(clippy::result_large_err)]
    pub(crate) fn prepare(
        &self,
        request: RequestBuilder,
    ) -> Result<(reqwest::Client, Replay), SendError> {
        let (client, request) = request.build_split();
        let request = request.map_err(SendError::Build)?;
        let replay = Replay::new(
            request,
            self.retry_non_idempotent,
            self.idempotency_header,
            self.prefer_wait,
        );
        // A retryable method whose body cannot be cloned is refused before
        // anything is sent, rather than sent once and silently not retried.
        if let (Some(NotRetried::BodyNotCloneable), Some(r)) =
            (replay.not_retried(), replay.original())
        {
            return Err(SendError::BodyNotCloneable {
                method: r.method().clone(),
                url: r.url().to_string(),
            });
        }
        Ok((client, replay))
    }

    async fn run(
        &self,
        request: RequestBuilder,
        observe: impl FnMut(&AttemptRecord) + Send,
    ) -> Result<Response, SendError> {
        // Each attempt's future borrows the hook; a Mutex keeps that Send.
        let observe = Mutex::new(observe);
        let (client, mut replay) = self.prepare(request)?;
        let not_retried = replay.not_retried();
        let bounded = self.retry.policy().attempt_timeout().is_some();
        let result = self
            .retry
            .call_async(|attempt: Attempt| {
                let req = replay.request(&attempt, bounded);
                let client = &client;
                let timer = &self.retry.timer;
                let observe = &observe;
                async move {
                    let started = timer.now();
                    let outcome = match client.execute(req).await {
                        Ok(r) if r.status().as_u16() < 400 => Ok(r),
                        Ok(r) => Err((Some(r.status().as_u16()), Kind::Status(r))),
                        Err(e) => Err((None, Kind::Transport(e))),
                    };
                    let record = AttemptRecord {
                        number: attempt.number(),
                        started,
                        finished: timer.now(),
                        status: match &outcome {
                            Ok(r) => Some(r.status().as_u16()),
                            Err((status, _)) => *status,
                        },
                        timed_out: matches!(&outcome, Err((_, Kind::Transport(e)))
                            if is_transport_timeout(e)),
                        body_bytes: 0,
                    };
                    if let Ok(mut hook) = observe.lock() {
                        (*hook)(&record);
                    }
                    outcome.map_err(|(_, kind)| HttpError::new(kind, not_retried))
                }
            })
            .await;
        result.map_err(SendError::Retry)
    }
}

/// A successful response whose body was read inside the attempt
/// ([`HttpRetry::send_buffered`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Buffered {
    /// The status (below 400).
    pub status: StatusCode,
    /// The HTTP version.
    pub version: reqwest::Version,
    /// The response headers.
    pub headers: reqwest::header::HeaderMap,
    /// The final URL (after redirects).
    pub url: reqwest::Url,
    /// The whole body.
    pub body: bytes::Bytes,
}
