//! A retrying `reqwest` sender (feature `reqwest`).
//!
//! ```no_run
//! use herdless::http::HttpRetry;
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
//! # Why a small wrapper, not middleware or a tower Layer
//!
//! * **reqwest 0.12's `Client` is not a tower `Service`** for whole requests
//!   (tower layers only reach its connector), so a tower Layer would wrap a
//!   hand-written service around `Client::execute` — this wrapper, plus
//!   boilerplate.
//! * **reqwest-middleware** would add a crate and its own error type, erase
//!   types behind `dyn Middleware`, and already has a retry crate with a
//!   different model; herdless's value is in its executor ([`Retry`]: budgets,
//!   classifier, events, seeded randomness), which a middleware would have to
//!   re-drive anyway.
//! * A wrapper that takes a [`reqwest::RequestBuilder`] works with any `Client`
//!   configuration, keeps full static types, and lets each attempt see its
//!   [`Attempt`] (number, idempotency key).
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
//!   (injectable with [`HttpClassifier::now`]), and a valid `Retry-After-Ms`
//!   (a [`pushback`](crate::fleet::pushback) server's millisecond slot) is preferred
//!   to `Retry-After` ([`classify_response_ms`]);
//!   transport errors by [`classify_transport`]; per-attempt timeouts are
//!   reported as timeouts ([`Classify::is_timeout`]) so a shared retry budget
//!   can charge them more. A per-attempt timeout is the request's own
//!   `RequestBuilder::timeout`, which applies to every attempt.

use std::fmt;
use std::time::{Instant, SystemTime};

use reqwest::header::{HeaderName, HeaderValue};
use reqwest::{Method, Request, RequestBuilder, Response, StatusCode};

use crate::classify::{Classification, Classify, Retryable};
use crate::engine::events::{NoNotify, Notify};
use crate::engine::RetryError;
use crate::engine::{Attempt, Retry};
use crate::fleet::pushback::RETRY_AFTER_MS;
use crate::http::{classify_response_ms, parse_retry_after, StatusClassifier};
use crate::policy::Policy;
use crate::timer::{AsyncSleep, SystemTimer};
use std::sync::Mutex;

/// The `Idempotency-Key` header name.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// Classifies [`HttpError`]s: statuses with a [`StatusClassifier`],
/// `Retry-After` against [`now`](Self::now), transport errors with
/// [`classify_transport`]. A failure of a request that cannot be replayed
/// (non-idempotent method) is always terminal.
///
/// ```
/// use herdless::http::{client::HttpClassifier, StatusClassifier};
/// let c = HttpClassifier::new(StatusClassifier::new().retry(409));
/// assert!(c.statuses().classify(409).is_retryable());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct HttpClassifier {
    statuses: StatusClassifier,
    now: fn() -> SystemTime,
}

impl Default for HttpClassifier {
    fn default() -> Self {
        Self::new(StatusClassifier::default())
    }
}

impl HttpClassifier {
    /// A classifier with these status sets and the system wall clock.
    ///
    /// ```
    /// let c = herdless::http::client::HttpClassifier::new(Default::default());
    /// assert!(c.statuses().classify(503).is_retryable());
    /// ```
    pub fn new(statuses: StatusClassifier) -> Self {
        Self {
            statuses,
            now: SystemTime::now,
        }
    }

    /// Replaces the wall clock that `Retry-After` dates are measured against.
    ///
    /// ```
    /// use std::time::SystemTime;
    /// let c = herdless::http::client::HttpClassifier::default().now(|| SystemTime::UNIX_EPOCH);
    /// # let _ = c;
    /// ```
    pub fn now(mut self, now: fn() -> SystemTime) -> Self {
        self.now = now;
        self
    }

    /// The status sets.
    ///
    /// ```
    /// let c = herdless::http::client::HttpClassifier::default();
    /// assert!(c.statuses().classify(401) == herdless::http::StatusClass::Terminal);
    /// ```
    pub fn statuses(&self) -> &StatusClassifier {
        &self.statuses
    }
}

impl Classify<HttpError> for HttpClassifier {
    fn classify(&self, error: &HttpError) -> Classification {
        if !error.replayable {
            return Classification::Terminal;
        }
        match &error.kind {
            Kind::Status(response) => {
                let headers = response.headers();
                let retry_after = headers
                    .get(reqwest::header::RETRY_AFTER)
                    .map(HeaderValue::as_bytes);
                let retry_after_ms = headers.get(RETRY_AFTER_MS).map(HeaderValue::as_bytes);
                classify_response_ms(
                    &self.statuses,
                    response.status().as_u16(),
                    retry_after,
                    retry_after_ms,
                    (self.now)(),
                )
                // A success status is never an HttpError; be safe anyway.
                .unwrap_or(Classification::Unknown)
            }
            Kind::Transport(e) => classify_transport(e),
        }
    }

    /// A per-attempt timeout (the request's own timeout, or a socket timing
    /// out) is a timeout, so a shared [`RetryBudget`](crate::RetryBudget) can
    /// charge its `timeout_cost` (the AWS quota charges 10 instead of 5). An
    /// error status, even 408 or 504, is an answer, not a timeout.
    fn is_timeout(&self, error: &HttpError) -> bool {
        match &error.kind {
            Kind::Transport(e) => is_transport_timeout(e),
            Kind::Status(_) => false,
        }
    }
}

/// Whether a transport error is a timeout: reqwest's own, or an
/// `io::ErrorKind::TimedOut` in its source chain.
pub fn is_transport_timeout(error: &reqwest::Error) -> bool {
    if error.is_timeout() {
        return true;
    }
    let mut source = std::error::Error::source(error);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::TimedOut {
                return true;
            }
        }
        source = e.source();
    }
    false
}

/// Classifies a transport-level `reqwest` error (no response).
///
/// * builder and redirect errors: terminal (retrying cannot help);
/// * timeouts: retryable (per-attempt timeout);
/// * an `io::Error` in the source chain decides by its kind (refused, reset,
///   aborted, broken pipe, unexpected EOF such as a body cut short: retryable;
///   e.g. invalid data from a TLS failure: terminal), except that running out
///   of file descriptors (`EMFILE`, `ENFILE`: "too many open files") is a
///   local, transient shortage and retryable ([`classify_io`]);
/// * other decode errors (a body that is not what it claims): terminal;
/// * other connect, request and body errors (e.g. "connection closed before
///   message completed"): retryable;
/// * anything else: unknown (fails closed).
pub fn classify_transport(error: &reqwest::Error) -> Classification {
    if error.is_builder() || error.is_redirect() {
        return Classification::Terminal;
    }
    if error.is_timeout() {
        return Classification::retryable();
    }
    // Before `is_decode`: reqwest reports a body cut short while reading it
    // (`bytes()`, `text()`) as a decode error whose cause is an io::Error.
    let mut source = std::error::Error::source(error);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return classify_io(io);
        }
        source = e.source();
    }
    if error.is_decode() {
        return Classification::Terminal;
    }
    if error.is_connect() || error.is_request() || error.is_body() {
        return Classification::retryable();
    }
    Classification::Unknown
}

/// Classifies an `io::Error` found in a transport error's source chain: by its
/// kind ([`Retryable`] for `io::Error`), except that a process or system out of
/// file descriptors (`EMFILE`, `ENFILE`: "too many open files", which has no
/// `ErrorKind` of its own) is retryable: the shortage is local and passes as
/// other connections close.
///
/// ```
/// use herdless::http::client::classify_io;
/// let emfile = std::io::Error::from_raw_os_error(24);
/// # #[cfg(unix)]
/// assert!(classify_io(&emfile).is_retryable());
/// let invalid = std::io::Error::from(std::io::ErrorKind::InvalidData);
/// assert!(!classify_io(&invalid).is_retryable());
/// ```
pub fn classify_io(error: &std::io::Error) -> Classification {
    error.classification()
}

enum Kind {
    Status(Response),
    Transport(reqwest::Error),
}

/// One failed attempt: an error status (with its response, body unread) or a
/// transport error.
pub struct HttpError {
    kind: Kind,
    replayable: bool,
}

impl HttpError {
    /// The error status, if the server answered.
    pub fn status(&self) -> Option<StatusCode> {
        match &self.kind {
            Kind::Status(r) => Some(r.status()),
            Kind::Transport(e) => e.status(),
        }
    }

    /// The response of an error status (its body not yet read).
    pub fn response(&self) -> Option<&Response> {
        match &self.kind {
            Kind::Status(r) => Some(r),
            Kind::Transport(_) => None,
        }
    }

    /// Consumes the error, returning the response of an error status.
    pub fn into_response(self) -> Option<Response> {
        match self.kind {
            Kind::Status(r) => Some(r),
            Kind::Transport(_) => None,
        }
    }

    /// The transport error, if no response arrived.
    pub fn transport(&self) -> Option<&reqwest::Error> {
        match &self.kind {
            Kind::Transport(e) => Some(e),
            Kind::Status(_) => None,
        }
    }

    /// Whether the request could have been replayed (idempotent method, or
    /// non-idempotent retries allowed). When false, the failure was final.
    pub fn is_replayable(&self) -> bool {
        self.replayable
    }

    /// The raw `Retry-After` value of an error status, if any.
    pub fn retry_after(&self) -> Option<&HeaderValue> {
        self.response()?.headers().get(reqwest::header::RETRY_AFTER)
    }

    /// The parsed `Retry-After` of an error status relative to `now`, if any.
    pub fn retry_after_delay(
        &self,
        now: SystemTime,
    ) -> Option<Result<std::time::Duration, crate::http::RetryAfterError>> {
        self.retry_after()
            .map(|v| parse_retry_after(v.as_bytes(), now))
    }
}

impl fmt::Debug for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Status(r) => f
                .debug_struct("HttpError")
                .field("status", &r.status())
                .field("url", &r.url().as_str())
                .field("replayable", &self.replayable)
                .finish(),
            Kind::Transport(e) => f
                .debug_struct("HttpError")
                .field("transport", e)
                .field("replayable", &self.replayable)
                .finish(),
        }
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Status(r) => write!(f, "HTTP status {} from {}", r.status(), r.url())?,
            Kind::Transport(e) => {
                write!(f, "{e}")?;
                let mut source = std::error::Error::source(e);
                while let Some(s) = source {
                    write!(f, ": {s}")?;
                    source = s.source();
                }
            }
        }
        if !self.replayable {
            f.write_str(" (not retried: non-idempotent method)")?;
        }
        Ok(())
    }
}

impl std::error::Error for HttpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            Kind::Transport(e) => Some(e),
            Kind::Status(_) => None,
        }
    }
}

/// Why [`HttpRetry::send`] returned no response.
#[derive(Debug)]
#[non_exhaustive]
pub enum SendError {
    /// The request builder held an error (e.g. an invalid URL or header); nothing
    /// was sent.
    Build(reqwest::Error),
    /// The request is retryable but its body is a stream that cannot be cloned
    /// for a retry; nothing was sent. Buffer the body to make it retryable.
    BodyNotCloneable {
        /// The request's method.
        method: Method,
        /// The request's URL.
        url: String,
    },
    /// The retries ended: terminal status or transport error, or budget
    /// exhausted. Carries the attempts, elapsed time and last error.
    Retry(RetryError<HttpError>),
}

impl SendError {
    /// The retry outcome, if requests were sent.
    pub fn retry_error(&self) -> Option<&RetryError<HttpError>> {
        match self {
            SendError::Retry(e) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::Build(e) => write!(f, "invalid request: {e}"),
            SendError::BodyNotCloneable { method, url } => write!(
                f,
                "refusing to send {method} {url}: its body is a stream that cannot be cloned \
                 for a retry (buffer the body, or send it without retries)"
            ),
            SendError::Retry(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SendError::Build(e) => Some(e),
            SendError::Retry(e) => Some(e),
            SendError::BodyNotCloneable { .. } => None,
        }
    }
}

/// What one attempt did, for [`HttpRetry::send_observed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptRecord {
    /// The 1-based attempt number.
    pub number: u32,
    /// When the attempt started (the retrier's clock).
    pub started: Instant,
    /// When it ended.
    pub finished: Instant,
    /// The status received, or `None` after a transport error.
    pub status: Option<u16>,
}

/// Sends `reqwest` requests with retries; see the [module documentation](self).
///
/// Wraps a [`Retry`] with an [`HttpClassifier`], so everything `Retry`
/// configures (task id, seed, timer, notify hook) applies, and every decision
/// emits the usual events.
pub struct HttpRetry<T = SystemTimer, N = NoNotify> {
    retry: Retry<HttpClassifier, T, N>,
    idempotency_header: bool,
    retry_non_idempotent: bool,
}

impl<T, N> fmt::Debug for HttpRetry<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpRetry")
            .field("retry", &self.retry)
            .field("idempotency_header", &self.idempotency_header)
            .field("retry_non_idempotent", &self.retry_non_idempotent)
            .finish()
    }
}

impl HttpRetry {
    /// A sender with `policy`, the default status sets, the system timer and
    /// no notify hook.
    ///
    /// ```
    /// let h = herdless::http::HttpRetry::new(herdless::Policy::default());
    /// assert_eq!(h.retry().policy().max_attempts(), 6);
    /// ```
    pub fn new(policy: Policy) -> Self {
        Self::from_retry(Retry::new(policy, HttpClassifier::default()))
    }
}

impl<T, N> HttpRetry<T, N> {
    /// A sender around a configured [`Retry`].
    ///
    /// ```
    /// use herdless::http::{client::HttpClassifier, HttpRetry, StatusClassifier};
    /// use herdless::{Policy, Retry};
    /// let retry = Retry::new(Policy::default(), HttpClassifier::new(StatusClassifier::new().retry(409)))
    ///     .task_id("scan-7");
    /// let h = HttpRetry::from_retry(retry);
    /// assert_eq!(h.retry().task(), "scan-7");
    /// ```
    pub fn from_retry(retry: Retry<HttpClassifier, T, N>) -> Self {
        Self {
            retry,
            idempotency_header: false,
            retry_non_idempotent: false,
        }
    }

    /// Sends the call's idempotency key as `Idempotency-Key` on every attempt
    /// (unless the request already has one).
    pub fn idempotency_key_header(mut self, on: bool) -> Self {
        self.idempotency_header = on;
        self
    }

    /// Retries non-idempotent methods (POST, PATCH, …) too. Only do this when
    /// the server deduplicates them (e.g. by `Idempotency-Key`).
    pub fn retry_non_idempotent(mut self, on: bool) -> Self {
        self.retry_non_idempotent = on;
        self
    }

    /// The wrapped retrier.
    pub fn retry(&self) -> &Retry<HttpClassifier, T, N> {
        &self.retry
    }
}

/// RFC 9110 §9.2.2 idempotent methods.
fn is_idempotent(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE | Method::PUT | Method::DELETE
    )
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
        match self.run(request, observe, false).await? {
            Got::Response(r) => Ok(r),
            Got::Buffered(_) => unreachable_attempt(),
        }
    }

    /// Sends the request and reads the whole body **inside** each attempt, so
    /// a connection that breaks or stalls mid-body (per-attempt timeout) is
    /// retried like any other transport error.
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
        match self.run(request, observe, true).await? {
            Got::Buffered(b) => Ok(b),
            Got::Response(_) => unreachable_attempt(),
        }
    }

    async fn run(
        &self,
        request: RequestBuilder,
        observe: impl FnMut(&AttemptRecord) + Send,
        read_body: bool,
    ) -> Result<Got, SendError> {
        // Each attempt's future borrows the hook; a Mutex keeps that Send.
        let observe = Mutex::new(observe);
        let (client, request) = request.build_split();
        let request = request.map_err(SendError::Build)?;
        let replayable = self.retry_non_idempotent || is_idempotent(request.method());
        // A replayable request keeps a pristine copy to clone for every attempt;
        // a non-replayable one is sent once, as it is.
        let (mut once, template) = if replayable {
            match request.try_clone() {
                Some(_) => (None, Some(request)),
                None => {
                    return Err(SendError::BodyNotCloneable {
                        method: request.method().clone(),
                        url: request.url().to_string(),
                    })
                }
            }
        } else {
            (Some(request), None)
        };
        let header = HeaderName::from_static(IDEMPOTENCY_KEY);
        let result = self
            .retry
            .call_async(|attempt: Attempt| {
                let req: Option<Request> = match &template {
                    Some(t) => t.try_clone(),
                    None => once.take(),
                };
                let client = &client;
                let header = &header;
                let timer = &self.retry.timer;
                let add_key = self.idempotency_header;
                let observe = &observe;
                async move {
                    // Both are Some: the template was checked to clone, and a
                    // non-replayable request makes exactly one attempt.
                    let Some(mut req) = req else {
                        unreachable_attempt()
                    };
                    if add_key && !req.headers().contains_key(header) {
                        if let Ok(v) = HeaderValue::from_str(&attempt.idempotency_key().to_string())
                        {
                            req.headers_mut().insert(header.clone(), v);
                        }
                    }
                    let started = timer.now();
                    let outcome = match client.execute(req).await {
                        Ok(r) if read_body && r.status().as_u16() < 400 => {
                            let (status, version) = (r.status(), r.version());
                            let (headers, url) = (r.headers().clone(), r.url().clone());
                            match r.bytes().await {
                                Ok(body) => Ok(Got::Buffered(Buffered {
                                    status,
                                    version,
                                    headers,
                                    url,
                                    body,
                                })),
                                Err(e) => Err((Some(status.as_u16()), Kind::Transport(e))),
                            }
                        }
                        Ok(r) if r.status().as_u16() < 400 => Ok(Got::Response(r)),
                        Ok(r) => Err((Some(r.status().as_u16()), Kind::Status(r))),
                        Err(e) => Err((None, Kind::Transport(e))),
                    };
                    let record = AttemptRecord {
                        number: attempt.number(),
                        started,
                        finished: timer.now(),
                        status: match &outcome {
                            Ok(Got::Response(r)) => Some(r.status().as_u16()),
                            Ok(Got::Buffered(b)) => Some(b.status.as_u16()),
                            Err((status, _)) => *status,
                        },
                    };
                    if let Ok(mut hook) = observe.lock() {
                        (*hook)(&record);
                    }
                    outcome.map_err(|(_, kind)| HttpError { kind, replayable })
                }
            })
            .await;
        result.map_err(SendError::Retry)
    }
}

enum Got {
    Response(Response),
    Buffered(Buffered),
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

/// The attempt closure is called again only after a retryable failure, which a
/// non-replayable request never has (its failures are terminal); and `run`
/// returns the shape its caller asked for.
#[cold]
fn unreachable_attempt() -> ! {
    unreachable!("a non-replayable request is attempted once")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How hyper's connector reports a socket it could not open: the OS error
    /// wrapped in its own error type.
    #[derive(Debug)]
    struct ConnectError(std::io::Error);

    impl fmt::Display for ConnectError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("tcp open error")
        }
    }

    impl std::error::Error for ConnectError {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[cfg(unix)]
    #[test]
    fn too_many_open_files_is_retryable() {
        for code in [23, 24] {
            let io = std::io::Error::from_raw_os_error(code);
            assert!(classify_io(&io).is_retryable(), "errno {code}: {io}");
            // Wrapped, as the connector wraps it; a transport error's chain
            // reaches it the same way.
            let wrapped = ConnectError(std::io::Error::from_raw_os_error(code));
            let inner = std::error::Error::source(&wrapped)
                .and_then(|e| e.downcast_ref::<std::io::Error>())
                .unwrap();
            assert!(classify_io(inner).is_retryable());
        }
        // Other OS errors keep their kind's verdict.
        let denied = std::io::Error::from_raw_os_error(13); // EACCES
        assert!(!classify_io(&denied).is_retryable());
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(classify_io(&refused).is_retryable());
    }
}
