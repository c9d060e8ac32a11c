//! Classifying `reqwest` outcomes: [`ReqwestClassifier`] (statuses,
//! `Retry-After-Ms`, `Retry-After`, transport errors), shared by
//! [`HttpRetry`](crate::adapters::reqwest::HttpRetry), the tower path and the
//! `reqwest-middleware` middleware.

use std::time::SystemTime;

use reqwest::Response;

use crate::adapters::reqwest::error::{HttpError, Kind};
use crate::adapters::reqwest::transport::{classify_transport, is_transport_timeout};
use crate::classify::TimedOut;
use crate::classify::{Classification, Classify};
use crate::http::HERDLESS_PLAN;
use crate::http::{StatusClassifier, classify_headers};
use crate::pushback::waves::WavePlan;

/// Classifies [`HttpError`]s: statuses with a [`StatusClassifier`],
/// `Retry-After` against [`now`](Self::now), transport errors with
/// [`classify_transport`]. A failure of a request that cannot be replayed
/// (non-idempotent method) is always terminal.
///
/// ```
/// use herdless::adapters::reqwest::ReqwestClassifier;
/// use herdless::http::StatusClassifier;
/// let c = ReqwestClassifier::new(StatusClassifier::new().retry(409));
/// assert!(c.statuses().classify(409).is_retryable());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ReqwestClassifier {
    statuses: StatusClassifier,
    now: fn() -> SystemTime,
}

impl Default for ReqwestClassifier {
    fn default() -> Self {
        Self::new(StatusClassifier::default())
    }
}

impl ReqwestClassifier {
    /// A classifier with these status sets and the system wall clock.
    ///
    /// ```
    /// let c = herdless::adapters::reqwest::ReqwestClassifier::new(Default::default());
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
    /// let c = herdless::adapters::reqwest::ReqwestClassifier::default().now(|| SystemTime::UNIX_EPOCH);
    /// # let _ = c;
    /// ```
    pub fn now(mut self, now: fn() -> SystemTime) -> Self {
        self.now = now;
        self
    }

    /// The status sets.
    ///
    /// ```
    /// let c = herdless::adapters::reqwest::ReqwestClassifier::default();
    /// assert!(c.statuses().classify(401) == herdless::http::StatusClass::Terminal);
    /// ```
    pub fn statuses(&self) -> &StatusClassifier {
        &self.statuses
    }
}

impl ReqwestClassifier {
    /// The classification of a response: `None` below 400, else its status
    /// with its `Retry-After-Ms` or `Retry-After` delay, a requeue answer
    /// when it carries `Herdless-Requeue` ([`classify_headers`]; the policy
    /// clamps and spreads the delay).
    ///
    /// ```
    /// use herdless::adapters::reqwest::ReqwestClassifier;
    /// let busy = http::Response::builder().status(503).header("retry-after", "2").body("").unwrap();
    /// let c = ReqwestClassifier::default().response(&reqwest::Response::from(busy));
    /// assert_eq!(c, Some(herdless::Classification::retry_after_secs(2.0)));
    /// ```
    pub fn response(&self, response: &Response) -> Option<Classification> {
        classify_headers(
            &self.statuses,
            response.status().as_u16(),
            response.headers(),
            (self.now)(),
        )
    }
}

impl Classify<HttpError> for ReqwestClassifier {
    fn classify(&self, error: &HttpError) -> Classification {
        if !error.is_replayable() {
            return Classification::Terminal;
        }
        match error.kind() {
            // A success status is never an HttpError; be safe anyway.
            Kind::Status(response) => self.response(response).unwrap_or(Classification::Unknown),
            Kind::Transport(e) => classify_transport(e),
            #[cfg(feature = "reqwest-middleware")]
            Kind::Middleware(e) => {
                crate::adapters::reqwest::middleware::classify::classify_middleware(e)
            }
            // Never sent (not an attempt's outcome): nothing to retry.
            Kind::Unstarted(_) => Classification::Terminal,
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
            Kind::Middleware(e) => {
                crate::adapters::reqwest::middleware::classify::is_middleware_timeout(e)
            }
            Kind::Status(_) | Kind::Unstarted(_) => false,
        }
    }

    /// An error status's `Herdless-Plan`, if it carries a readable one.
    fn plan(&self, error: &HttpError) -> Option<WavePlan> {
        match error.kind() {
            Kind::Status(response) => response_plan(response),
            _ => None,
        }
    }

    /// A request never sent (its call's time ran out at a throttle's gate):
    /// an [`HttpError`] that says so ([`HttpError::unstarted`]). Attempts
    /// are cut by the request's own timeout, not by the executor
    /// ([`timed_out`](Classify::timed_out) stays `None`).
    fn unstarted(&self, unstarted: TimedOut) -> Option<HttpError> {
        Some(HttpError::new(Kind::Unstarted(unstarted), None))
    }
}

/// The tower path: `reqwest::Client` is a `tower::Service<reqwest::Request>`,
/// so this classifier serves a [`RetryPolicy`](crate::adapters::tower::RetryPolicy) in a
/// `tower::retry::RetryLayer` over a `Client` (features `tower` and
/// `reqwest`): a response by [`response`](ReqwestClassifier::response), a
/// transport error by [`classify_transport`].
#[cfg(feature = "tower")]
impl crate::classify::ClassifyResult<Response, reqwest::Error> for ReqwestClassifier {
    fn classify(&self, result: &Result<Response, reqwest::Error>) -> Option<Classification> {
        match result {
            Ok(response) => self.response(response),
            Err(e) => Some(classify_transport(e)),
        }
    }

    fn is_timeout(&self, result: &Result<Response, reqwest::Error>) -> bool {
        result.as_ref().err().is_some_and(is_transport_timeout)
    }

    fn plan(&self, result: &Result<Response, reqwest::Error>) -> Option<WavePlan> {
        response_plan(result.as_ref().ok()?)
    }
}

/// A response's `Herdless-Plan`, if it carries a readable one.
fn response_plan(response: &Response) -> Option<WavePlan> {
    WavePlan::from_headers(
        response
            .headers()
            .get_all(HERDLESS_PLAN)
            .iter()
            .map(|v| v.as_bytes()),
    )
}
