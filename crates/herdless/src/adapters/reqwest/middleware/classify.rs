//! Classifying what comes back up a `reqwest-middleware` stack: a
//! `reqwest::Error`, or a middleware's own error.

use crate::adapters::reqwest::transport::{classify_io, classify_transport, is_transport_timeout};
use crate::classify::Classification;

/// Classifies an error from further down a `reqwest-middleware` stack: a
/// `reqwest::Error` as a transport error ([`classify_transport`]); a
/// middleware's own error by the first `reqwest::Error` or `io::Error` in its
/// chain ([`classify_io`]); anything else is unknown (fails closed: not
/// retried).
///
/// ```
/// use herdless::adapters::reqwest::middleware::classify_middleware;
/// use std::io;
/// let reset = reqwest_middleware::Error::middleware(io::Error::from(io::ErrorKind::ConnectionReset));
/// assert!(classify_middleware(&reset).is_retryable());
/// let other = reqwest_middleware::Error::middleware(std::fmt::Error);
/// assert_eq!(classify_middleware(&other), herdless::Classification::Unknown);
/// ```
pub fn classify_middleware(error: &reqwest_middleware::Error) -> Classification {
    match error {
        reqwest_middleware::Error::Reqwest(e) => classify_transport(e),
        reqwest_middleware::Error::Middleware(e) => {
            for cause in e.chain() {
                if let Some(e) = cause.downcast_ref::<reqwest::Error>() {
                    return classify_transport(e);
                }
                if let Some(io) = cause.downcast_ref::<std::io::Error>() {
                    return classify_io(io);
                }
            }
            Classification::Unknown
        }
    }
}

/// Whether an error from further down the stack is a timeout: a
/// `reqwest::Error` that is one ([`is_transport_timeout`]), or an
/// `io::ErrorKind::TimedOut` in a middleware error's chain.
///
/// ```
/// use herdless::adapters::reqwest::middleware::is_middleware_timeout;
/// use std::io;
/// let slow = reqwest_middleware::Error::middleware(io::Error::from(io::ErrorKind::TimedOut));
/// assert!(is_middleware_timeout(&slow));
/// ```
pub fn is_middleware_timeout(error: &reqwest_middleware::Error) -> bool {
    match error {
        reqwest_middleware::Error::Reqwest(e) => is_transport_timeout(e),
        reqwest_middleware::Error::Middleware(e) => e.chain().any(|cause| {
            cause
                .downcast_ref::<reqwest::Error>()
                .is_some_and(is_transport_timeout)
                || cause
                    .downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
        }),
    }
}
