//! The HTTP flavour: [`HttpClassifier`] for `http::Response<B>` results and
//! [`CloneBody`] for `http::Request<B>` requests (features `tower` + `http`).

use std::time::SystemTime;

use http::{Request, Response};

use crate::adapters::tower::clone::CloneRequest;
use crate::classify::{Classification, Classify};
use crate::classify::{ClassifyResult, FailClosed};
use crate::http::HERDLESS_PLAN;
use crate::http::{StatusClassifier, classify_headers};
use crate::pushback::waves::WavePlan;

/// Classifies `Result<http::Response<B>, E>`: a response by its status
/// ([`StatusClassifier`]: statuses below 400 succeed, unknown ones fail
/// closed) with its `Retry-After-Ms` or `Retry-After` delay
/// ([`classify_response_ms`](crate::http::classify_response_ms): the
/// policy then clamps and spreads it); a
/// transport error by an error classifier (default [`FailClosed`]: not
/// retried).
///
/// ```
/// use herdless::adapters::tower::HttpClassifier;
/// use herdless::classify::ClassifyResult;
/// use herdless::Classification;
/// let c = HttpClassifier::new();
/// let busy = http::Response::builder().status(503).header("retry-after", "3").body(()).unwrap();
/// let ok: Result<_, ()> = Ok(busy);
/// assert_eq!(c.classify(&ok), Some(Classification::retry_after_secs(3.0)));
/// assert_eq!(c.classify(&Err::<http::Response<()>, _>(())), Some(Classification::Unknown));
/// ```
#[derive(Debug, Clone, Default)]
pub struct HttpClassifier<C = FailClosed> {
    statuses: StatusClassifier,
    errors: C,
}

impl HttpClassifier {
    /// The default status sets; transport errors are not retried.
    ///
    /// ```
    /// use herdless::adapters::tower::HttpClassifier;
    /// use herdless::classify::ClassifyResult;
    /// let not_found = http::Response::builder().status(404).body(()).unwrap();
    /// let r: Result<_, ()> = Ok(not_found);
    /// assert_eq!(HttpClassifier::new().classify(&r), Some(herdless::Classification::terminal()));
    /// ```
    pub fn new() -> Self {
        Self::default()
    }
}

impl<C> HttpClassifier<C> {
    /// Replaces the status sets.
    ///
    /// ```
    /// use herdless::http::StatusClassifier;
    /// use herdless::adapters::tower::HttpClassifier;
    /// let _c = HttpClassifier::new().statuses(StatusClassifier::new());
    /// ```
    pub fn statuses(mut self, statuses: StatusClassifier) -> Self {
        self.statuses = statuses;
        self
    }

    /// Classifies transport errors with `errors` (e.g. a closure over the
    /// client's error type: connection refused is usually safe to retry).
    ///
    /// ```
    /// use herdless::adapters::tower::HttpClassifier;
    /// use herdless::classify::ClassifyResult;
    /// use herdless::Classification;
    /// let c = HttpClassifier::new().errors(|_: &std::io::Error| Classification::retryable());
    /// let refused = Err::<http::Response<()>, _>(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
    /// assert_eq!(c.classify(&refused), Some(Classification::retryable()));
    /// ```
    pub fn errors<C2>(self, errors: C2) -> HttpClassifier<C2> {
        HttpClassifier {
            statuses: self.statuses,
            errors,
        }
    }
}

impl<B, E, C: Classify<E>> ClassifyResult<Response<B>, E> for HttpClassifier<C> {
    fn classify(&self, result: &Result<Response<B>, E>) -> Option<Classification> {
        match result {
            Ok(response) => classify_headers(
                &self.statuses,
                response.status().as_u16(),
                response.headers(),
                SystemTime::now(),
            ),
            Err(e) => Some(self.errors.classify(e)),
        }
    }

    fn is_timeout(&self, result: &Result<Response<B>, E>) -> bool {
        result
            .as_ref()
            .err()
            .is_some_and(|e| self.errors.is_timeout(e))
    }

    /// The response's `Herdless-Plan`, if it carries a readable one.
    fn plan(&self, result: &Result<Response<B>, E>) -> Option<WavePlan> {
        let lines = result.as_ref().ok()?.headers().get_all(HERDLESS_PLAN);
        WavePlan::from_headers(lines.iter().map(|v| v.as_bytes()))
    }
}

/// Copies an `http::Request<B>` — method, URI, version, headers, extensions —
/// with a body copied by the closure, which returns `None` for a body that
/// cannot be sent twice (a stream): that request is then not retried.
///
/// ```
/// use herdless::adapters::tower::{CloneBody, CloneRequest};
/// let buffered = CloneBody(|b: &Option<String>| b.clone().map(Some));
/// let req = http::Request::post("http://127.0.0.1/x").header("x-k", "1").body(Some("{}".to_string())).unwrap();
/// let copy = buffered.clone_request(&req).unwrap();
/// assert_eq!(copy.method(), http::Method::POST);
/// assert_eq!(copy.headers()["x-k"], "1");
/// assert!(buffered.clone_request(&http::Request::new(None)).is_none()); // "a stream"
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct CloneBody<F>(pub F);

impl<B, F: Fn(&B) -> Option<B>> CloneRequest<Request<B>> for CloneBody<F> {
    fn clone_request(&self, req: &Request<B>) -> Option<Request<B>> {
        let body = (self.0)(req.body())?;
        let mut copy = Request::new(body);
        *copy.method_mut() = req.method().clone();
        *copy.uri_mut() = req.uri().clone();
        *copy.version_mut() = req.version();
        *copy.headers_mut() = req.headers().clone();
        *copy.extensions_mut() = req.extensions().clone();
        Some(copy)
    }
}
