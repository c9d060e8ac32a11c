//! One call's requests: whether a request may be sent again, and what each
//! attempt sends. Shared by [`HttpRetry`](crate::adapters::reqwest::HttpRetry) and the
//! `reqwest-middleware` middleware, so both replay by the same rules.

use reqwest::header::{HeaderName, HeaderValue};
use reqwest::{Method, Request};

use crate::adapters::reqwest::error::NotRetried;
use crate::http::{PREFER, prefer_wait_value};
use crate::retry::Attempt;

/// The `Idempotency-Key` header name.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// RFC 9110 §9.2.2 idempotent methods: GET, HEAD, OPTIONS, TRACE, PUT, DELETE.
///
/// ```
/// use herdless::adapters::reqwest::is_idempotent;
/// assert!(is_idempotent(&reqwest::Method::PUT));
/// assert!(!is_idempotent(&reqwest::Method::POST));
/// ```
pub fn is_idempotent(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE | Method::PUT | Method::DELETE
    )
}

/// One call's request. A replayable one keeps a pristine copy to clone for
/// every attempt; any other is sent once, as it is.
pub(crate) struct Replay {
    template: Option<Request>,
    once: Option<Request>,
    not_retried: Option<NotRetried>,
    key_header: bool,
    prefer_wait: bool,
}

impl Replay {
    /// `request` is replayable when its method is idempotent (or
    /// `retry_non_idempotent` allows any) and its body clones. With
    /// `key_header`, every attempt carries the call's `Idempotency-Key`
    /// (unless the request has its own); with `prefer_wait`, every attempt
    /// tells the server how long it will wait (`Prefer: wait=N`, unless the
    /// request has a `Prefer` of its own).
    pub(crate) fn new(
        request: Request,
        retry_non_idempotent: bool,
        key_header: bool,
        prefer_wait: bool,
    ) -> Self {
        let not_retried = if !retry_non_idempotent && !is_idempotent(request.method()) {
            Some(NotRetried::NonIdempotent)
        } else if request.try_clone().is_none() {
            Some(NotRetried::BodyNotCloneable)
        } else {
            None
        };
        let (template, once) = match not_retried {
            None => (Some(request), None),
            Some(_) => (None, Some(request)),
        };
        Replay {
            template,
            once,
            not_retried,
            key_header,
            prefer_wait,
        }
    }

    /// Why the request is sent once, if it is.
    pub(crate) fn not_retried(&self) -> Option<NotRetried> {
        self.not_retried
    }

    /// The request as given (before its first attempt).
    pub(crate) fn original(&self) -> Option<&Request> {
        self.template.as_ref().or(self.once.as_ref())
    }

    /// The request `attempt` sends: a clone of the template, or the one
    /// request. A non-replayable request's failure is terminal, so the engine
    /// never asks for a second attempt of it.
    ///
    /// Its timeout fits the attempt's deadline: with an attempt timeout
    /// (`bounded`), or when the request has a timeout of its own, the
    /// request's timeout becomes the smaller of its own and
    /// [`Attempt::remaining`]; otherwise it is left alone (the client's own
    /// timeout applies, which a per-request timeout would replace).
    pub(crate) fn request(&mut self, attempt: &Attempt, bounded: bool) -> Request {
        let request = match &self.template {
            Some(template) => template.try_clone(),
            None => self.once.take(),
        };
        // The template was checked to clone; the one request is taken once.
        let Some(mut request) = request else {
            unreachable_attempt()
        };
        let header = HeaderName::from_static(IDEMPOTENCY_KEY);
        if self.key_header && !request.headers().contains_key(&header) {
            if let Ok(v) = HeaderValue::from_str(&attempt.idempotency_key().to_string()) {
                request.headers_mut().insert(header, v);
            }
        }
        let own = request.timeout().copied();
        if bounded || own.is_some() {
            let left = attempt.remaining();
            *request.timeout_mut() = Some(own.map_or(left, |t| t.min(left)));
        }
        if self.prefer_wait && !request.headers().contains_key(PREFER) {
            // What the attempt will wait: its timeout, else what is left of
            // the call (a timeout set on the `Client` is not known here).
            let wait = request
                .timeout()
                .copied()
                .unwrap_or_else(|| attempt.remaining());
            request
                .headers_mut()
                .insert(HeaderName::from_static(PREFER), prefer_wait_value(wait));
        }
        request
    }
}

/// The attempt closure is called again only after a retryable failure, which a
/// non-replayable request never has (its failures are terminal).
#[cold]
pub(crate) fn unreachable_attempt() -> ! {
    unreachable!("a non-replayable request is attempted once")
}
