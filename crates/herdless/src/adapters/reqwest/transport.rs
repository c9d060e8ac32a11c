//! Classifying a `reqwest::Error` (no response: connect, timeout, body, TLS):
//! [`classify_transport`], and `reqwest::Error` as a [`Retryable`] error type,
//! so `(|| client.get(url).send()).retry(policy)` needs no classifier.

use crate::classify::{Classification, Retryable};

/// A transport error knows whether it is transient: [`classify_transport`],
/// and a timeout by [`is_transport_timeout`]. (A response with an error
/// status is not a `reqwest::Error` until `error_for_status`; classify
/// responses with [`ReqwestClassifier`](super::ReqwestClassifier) or
/// [`HttpRetry`](super::HttpRetry).)
///
/// ```
/// use herdless::Retryable;
/// fn transient(e: &reqwest::Error) -> bool { e.classification().is_retryable() }
/// # let _ = transient;
/// ```
impl Retryable for reqwest::Error {
    fn classification(&self) -> Classification {
        classify_transport(self)
    }

    fn is_timeout(&self) -> bool {
        is_transport_timeout(self)
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
/// use herdless::adapters::reqwest::classify_io;
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
