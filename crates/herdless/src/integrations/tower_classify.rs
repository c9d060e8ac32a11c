//! What the tower policy asks about each result and each request: is it a
//! success, and can it be sent again?

use crate::classify::{Classification, Classify};

/// Classifies a whole result (`Ok` responses included, since an HTTP 503 is an
/// `Ok` to a tower client): `None` is a success, `Some` a failure's
/// [`Classification`] (an `Unknown` fails closed: not retried).
///
/// Implemented for every `Fn(&Result<Res, E>) -> Option<Classification>`
/// closure, for [`ByError`], with the `http` feature for
/// [`HttpClassifier`](crate::integrations::HttpClassifier) and with the
/// `grpc` feature for [`GrpcClassifier`](crate::integrations::GrpcClassifier).
///
/// ```
/// use herdless::integrations::ClassifyResult;
/// use herdless::Classification;
/// let c = |r: &Result<u16, ()>| match r {
///     Ok(200) => None,
///     Ok(503) | Err(()) => Some(Classification::retryable()),
///     Ok(_) => Some(Classification::terminal()),
/// };
/// assert_eq!(c.classify(&Ok(200)), None);
/// assert_eq!(c.classify(&Ok(503)), Some(Classification::retryable()));
/// ```
pub trait ClassifyResult<Res, E> {
    /// `None` for a success, or the failure's classification.
    fn classify(&self, result: &Result<Res, E>) -> Option<Classification>;

    /// Whether the failure is a timeout (a shared
    /// [`RetryBudget`](crate::RetryBudget) may charge more for its retry).
    /// Default: `false`.
    ///
    /// ```
    /// use herdless::integrations::ClassifyResult;
    /// let c = |_: &Result<(), ()>| None;
    /// assert!(!c.is_timeout(&Err(())));
    /// ```
    fn is_timeout(&self, result: &Result<Res, E>) -> bool {
        let _ = result;
        false
    }
}

impl<Res, E, F> ClassifyResult<Res, E> for F
where
    F: Fn(&Result<Res, E>) -> Option<Classification>,
{
    fn classify(&self, result: &Result<Res, E>) -> Option<Classification> {
        self(result)
    }
}

/// Every `Ok` is a success; an `Err` is classified by an error classifier
/// (any [`Classify<E>`](Classify): a closure, [`ByTrait`](crate::ByTrait),
/// [`AlwaysRetry`](crate::AlwaysRetry), [`WithTimeouts`](crate::WithTimeouts)).
///
/// ```
/// use herdless::integrations::{ByError, ClassifyResult};
/// use herdless::{Classification, ByTrait};
/// use std::io;
/// let c = ByError(ByTrait);
/// assert_eq!(ClassifyResult::<u8, io::Error>::classify(&c, &Ok(1)), None);
/// let refused = Err(io::Error::from(io::ErrorKind::ConnectionRefused));
/// assert_eq!(ClassifyResult::<u8, _>::classify(&c, &refused), Some(Classification::retryable()));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ByError<C>(pub C);

impl<Res, E, C: Classify<E>> ClassifyResult<Res, E> for ByError<C> {
    fn classify(&self, result: &Result<Res, E>) -> Option<Classification> {
        result.as_ref().err().map(|e| self.0.classify(e))
    }

    fn is_timeout(&self, result: &Result<Res, E>) -> bool {
        result.as_ref().err().is_some_and(|e| self.0.is_timeout(e))
    }
}

/// An error classifier that knows nothing: every error is
/// [`Unknown`](Classification::Unknown), so it is never retried (fail
/// closed). The default for transport errors in
/// [`HttpClassifier`](crate::integrations::HttpClassifier).
///
/// ```
/// use herdless::{Classification, Classify};
/// use herdless::integrations::FailClosed;
/// assert_eq!(FailClosed.classify(&"connection reset"), Classification::Unknown);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct FailClosed;

impl<E: ?Sized> Classify<E> for FailClosed {
    fn classify(&self, _: &E) -> Classification {
        Classification::Unknown
    }
}

/// Copies a request for a possible retry; `None` means "this request cannot
/// be sent twice" (a streaming body): it is sent once and never retried (see
/// the [module documentation](crate::integrations#requests-that-cannot-be-cloned)).
///
/// Implemented by [`Cloned`] (any `Req: Clone`) and by every
/// `Fn(&Req) -> Option<Req>` closure.
///
/// ```
/// use herdless::integrations::{CloneRequest, Cloned};
/// assert_eq!(Cloned.clone_request(&"GET /"), Some("GET /"));
/// let never = |_: &String| None;
/// assert_eq!(never.clone_request(&"upload".to_string()), None);
/// ```
pub trait CloneRequest<Req> {
    /// A copy of `req` to send again, or `None` when it cannot be copied.
    fn clone_request(&self, req: &Req) -> Option<Req>;
}

/// Clones requests with `Clone` (every `http::Request<B>` whose body `B` is
/// `Clone`, e.g. a buffered `Full<Bytes>` or a `String`).
///
/// ```
/// use herdless::integrations::{CloneRequest, Cloned};
/// let req = http::Request::new(String::from("{}"));
/// assert_eq!(Cloned.clone_request(&req).unwrap().body(), "{}");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Cloned;

impl<Req: Clone> CloneRequest<Req> for Cloned {
    fn clone_request(&self, req: &Req) -> Option<Req> {
        Some(req.clone())
    }
}

impl<Req, F> CloneRequest<Req> for F
where
    F: Fn(&Req) -> Option<Req>,
{
    fn clone_request(&self, req: &Req) -> Option<Req> {
        self(req)
    }
}
