//! What a failed attempt and a failed send are: [`HttpError`], [`SendError`],
//! and why a request was sent once ([`NotRetried`]).

use std::fmt;
use std::time::SystemTime;

use reqwest::header::HeaderValue;
use reqwest::{Method, Response, StatusCode};

use crate::engine::{RetryError, TimedOut};
use crate::http::parse_retry_after;

/// What went wrong in one attempt.
pub(crate) enum Kind {
    /// An error status; the response's body is unread.
    Status(Response),
    /// No response: a connection, timeout, body or builder error.
    Transport(reqwest::Error),
    /// An error from a middleware further down a `reqwest-middleware` stack.
    #[cfg(feature = "reqwest-middleware")]
    Middleware(reqwest_middleware::Error),
    /// Never sent: the call's time ran out while it waited for its turn at a
    /// throttle ([`Classify::unstarted`](crate::Classify::unstarted)).
    Unstarted(TimedOut),
}

/// Why a request was sent once, without retries, though its failure might
/// have been retryable.
///
/// ```
/// use herdless::adapters::reqwest::NotRetried;
/// assert_eq!(NotRetried::BodyNotCloneable.as_str(), "body_not_cloneable");
/// assert_eq!(NotRetried::NonIdempotent.to_string(), "non-idempotent method");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NotRetried {
    /// The method is not idempotent (POST, PATCH, …) and retrying
    /// non-idempotent methods is off.
    NonIdempotent,
    /// The body is a stream that cannot be cloned for a second attempt
    /// (`reqwest::Request::try_clone` returned `None`).
    BodyNotCloneable,
    /// The response body broke off after part of it was written to a sink
    /// that cannot take it back ([`BodySink::can_restart`](crate::adapters::reqwest::BodySink::can_restart)
    /// is false, e.g. a pipe): a retry would write the start again.
    PartialBody,
}

impl NotRetried {
    /// The reason's name, as in events: `non_idempotent`, `body_not_cloneable`.
    ///
    /// ```
    /// assert_eq!(herdless::adapters::reqwest::NotRetried::NonIdempotent.as_str(), "non_idempotent");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            NotRetried::NonIdempotent => "non_idempotent",
            NotRetried::BodyNotCloneable => "body_not_cloneable",
            NotRetried::PartialBody => "partial_body",
        }
    }
}

impl fmt::Display for NotRetried {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NotRetried::NonIdempotent => "non-idempotent method",
            NotRetried::BodyNotCloneable => "its body is a stream that cannot be cloned",
            NotRetried::PartialBody => {
                "part of the response body was already written and cannot be taken back"
            }
        })
    }
}

/// One failed attempt: an error status (with its response, body unread), a
/// transport error, or (feature `reqwest-middleware`) an inner middleware's
/// error.
pub struct HttpError {
    kind: Kind,
    not_retried: Option<NotRetried>,
}

impl HttpError {
    pub(crate) fn new(kind: Kind, not_retried: Option<NotRetried>) -> Self {
        HttpError { kind, not_retried }
    }

    #[cfg(feature = "reqwest-middleware")]
    pub(crate) fn into_kind(self) -> Kind {
        self.kind
    }

    pub(crate) fn kind(&self) -> &Kind {
        &self.kind
    }

    /// The error status, if the server answered.
    pub fn status(&self) -> Option<StatusCode> {
        match &self.kind {
            Kind::Status(r) => Some(r.status()),
            Kind::Transport(e) => e.status(),
            #[cfg(feature = "reqwest-middleware")]
            Kind::Middleware(e) => e.status(),
            Kind::Unstarted(_) => None,
        }
    }

    /// The response of an error status (its body not yet read).
    pub fn response(&self) -> Option<&Response> {
        match &self.kind {
            Kind::Status(r) => Some(r),
            _ => None,
        }
    }

    /// Consumes the error, returning the response of an error status.
    pub fn into_response(self) -> Option<Response> {
        match self.kind {
            Kind::Status(r) => Some(r),
            _ => None,
        }
    }

    /// The transport error, if no response arrived.
    pub fn transport(&self) -> Option<&reqwest::Error> {
        match &self.kind {
            Kind::Transport(e) => Some(e),
            _ => None,
        }
    }

    /// Set when the request was never sent: the call's time
    /// (`max_elapsed`) ran out while it waited for its turn at a
    /// [throttle](crate::fleet::Throttle), so it ended after 0 attempts.
    ///
    /// ```
    /// use herdless::Classify;
    /// use herdless::adapters::reqwest::ReqwestClassifier;
    /// use herdless::engine::TimedOut;
    /// let e = ReqwestClassifier::default().unstarted(TimedOut::unstarted(1)).unwrap();
    /// assert_eq!(e.unstarted(), Some(TimedOut::unstarted(1)));
    /// assert!(e.status().is_none() && e.transport().is_none());
    /// ```
    pub fn unstarted(&self) -> Option<TimedOut> {
        match &self.kind {
            Kind::Unstarted(t) => Some(*t),
            _ => None,
        }
    }

    /// Whether the request could have been replayed (idempotent method, or
    /// non-idempotent retries allowed, and a body that clones). When false,
    /// the failure was final; [`not_retried`](Self::not_retried) says why.
    pub fn is_replayable(&self) -> bool {
        self.not_retried.is_none()
    }

    /// Why the request was sent once, if it was.
    pub fn not_retried(&self) -> Option<NotRetried> {
        self.not_retried
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
        let mut d = f.debug_struct("HttpError");
        match &self.kind {
            Kind::Status(r) => d
                .field("status", &r.status())
                .field("url", &r.url().as_str()),
            Kind::Transport(e) => d.field("transport", e),
            #[cfg(feature = "reqwest-middleware")]
            Kind::Middleware(e) => d.field("middleware", e),
            Kind::Unstarted(t) => d.field("unstarted", t),
        };
        d.field("not_retried", &self.not_retried).finish()
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
            #[cfg(feature = "reqwest-middleware")]
            Kind::Middleware(reqwest_middleware::Error::Middleware(e)) => write!(f, "{e:#}")?,
            #[cfg(feature = "reqwest-middleware")]
            Kind::Middleware(e) => write!(f, "{e}")?,
            Kind::Unstarted(t) => write!(f, "not sent: {t}")?,
        }
        if let Some(why) = self.not_retried {
            write!(f, " (not retried: {why})")?;
        }
        Ok(())
    }
}

impl std::error::Error for HttpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            Kind::Transport(e) => Some(e),
            #[cfg(feature = "reqwest-middleware")]
            Kind::Middleware(e) => Some(e),
            Kind::Unstarted(t) => Some(t),
            Kind::Status(_) => None,
        }
    }
}

/// Why [`HttpRetry::send`](crate::adapters::reqwest::HttpRetry::send) returned no response.
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
    /// The [`BodySink`](crate::adapters::reqwest::BodySink) of
    /// [`send_to`](crate::adapters::reqwest::HttpRetry::send_to) failed (a closed pipe, a
    /// full disk): the call stopped there, without another attempt.
    Sink(std::io::Error),
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
            SendError::Sink(e) => write!(f, "cannot write the response body: {e}"),
        }
    }
}

impl std::error::Error for SendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SendError::Build(e) => Some(e),
            SendError::Retry(e) => Some(e),
            SendError::Sink(e) => Some(e),
            SendError::BodyNotCloneable { .. } => None,
        }
    }
}
