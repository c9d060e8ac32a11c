//! Classifying `reqwest` outcomes: [`HttpClassifier`] (statuses,
//! `Retry-After-Ms`, `Retry-After`, transport errors), shared by
//! [`HttpRetry`](crate::http::HttpRetry), the tower path and the
//! `reqwest-middleware` middleware.

use std::time::SystemTime;

use reqwest::header::HeaderValue;
use reqwest::Response;

use crate::classify::{Classification, Classify, Retryable};
use crate::fleet::pushback::RETRY_AFTER_MS;
use crate::http::client::error::{HttpError, Kind};
use crate::http::{classify_response_ms, StatusClassifier};

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

impl HttpClassifier {
    /// The classification of a response: `None` below 400, else its status
    /// with its `Retry-After-Ms` or `Retry-After` delay
    /// ([`classify_response_ms`]; the policy clamps and spreads it).
    ///
    /// ```
    /// use herdless::http::client::HttpClassifier;
    /// let busy = http::Response::builder().status(503).header("retry-after", "2").body("").unwrap();
    /// let c = HttpClassifier::default().response(&reqwest::Response::from(busy));
    /// assert_eq!(c, Some(herdless::Classification::retry_after_secs(2.0)));
    /// ```
    pub fn response(&self, response: &Response) -> Option<Classification> {
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
    }
}

impl Classify<HttpError> for HttpClassifier {
    fn classify(&self, error: &HttpError) -> Classification {
        if !error.is_replayable() {
            return Classification::Terminal;
        }
        match error.kind() {
            // A success status is never an HttpError; be safe anyway.
            Kind::Status(response) => self.response(response).unwrap_or(Classification::Unknown),
            Kind::Transport(e) => classify_transport(e),
            #[cfg(feature = "reqwest-middleware")]
            Kind::Middleware(e) => crate::http::middleware::classify_middleware(e),
        }
    }

    /// A per-attempt timeout (the request's own timeout, or a socket timing
    /// out) is a timeout, so a shared [`RetryBudget`](crate::RetryBudget) can
    /// charge its `timeout_cost` (the AWS quota charges 10 instead of 5). An
    /// error status, even 408 or 504, is an answer, not a timeout.
    fn is_timeout(&self, error: &HttpError) -> bool {
        match error.kind() {
            Kind::Transport(e) => is_transport_timeout(e),
            #[cfg(feature = "reqwest-middleware")]
            Kind::Middleware(e) => crate::http::middleware::is_middleware_timeout(e),
            Kind::Status(_) => false,
        }
    }
}

/// The tower path: `reqwest::Client` is a `tower::Service<reqwest::Request>`,
/// so this classifier serves a [`RetryPolicy`](crate::RetryPolicy) in a
/// `tower::retry::RetryLayer` over a `Client` (features `tower` and
/// `reqwest`): a response by [`response`](HttpClassifier::response), a
/// transport error by [`classify_transport`].
#[cfg(feature = "tower")]
impl crate::integrations::ClassifyResult<Response, reqwest::Error> for HttpClassifier {
    fn classify(&self, result: &Result<Response, reqwest::Error>) -> Option<Classification> {
        match result {
            Ok(response) => self.response(response),
            Err(e) => Some(classify_transport(e)),
        }
    }

    fn is_timeout(&self, result: &Result<Response, reqwest::Error>) -> bool {
        result.as_ref().err().is_some_and(is_transport_timeout)
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

#[cfg(test)]
mod tests {
    use std::fmt;

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
