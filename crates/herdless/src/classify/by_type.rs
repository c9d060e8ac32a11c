//! Classifiers picked by the error's type: [`Retryable`] (an error type that
//! knows whether it is transient) and [`ByTrait`], which asks it.
//!
//! The front door (`(|| op()).retry(policy)`, see [`crate::RetryAsync`]) classifies with
//! [`ByTrait`]: an error type with no [`Retryable`] implementation does not
//! compile there (pass a classifier instead), so no error is retried by
//! accident. Implemented here for [`std::io::Error`]; with their features, for
//! `reqwest::Error`, `http::StatusCode` and `tonic::Status` (in the adapters).

use super::Classification;
use super::Classify;
use crate::classify::TimedOut;

/// An error type that knows whether it is transient. Use with [`ByTrait`].
///
/// Implemented for [`std::io::Error`]: `TimedOut`, `ConnectionRefused`,
/// `ConnectionReset`, `ConnectionAborted`, `NotConnected`, `BrokenPipe`,
/// `Interrupted`, `WouldBlock`, `UnexpectedEof` and `AddrInUse` are retryable;
/// every other kind is terminal.
///
/// ```
/// use herdless::{Classification, Retryable};
/// struct Busy;
/// impl Retryable for Busy {
///     fn classification(&self) -> Classification { Classification::retryable() }
/// }
/// assert!(Busy.classification().is_retryable());
/// let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
/// assert!(refused.classification().is_retryable());
/// let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
/// assert!(!denied.classification().is_retryable());
/// ```
#[diagnostic::on_unimplemented(
    message = "herdless cannot tell whether `{Self}` is transient: it does not implement `Retryable`",
    label = "no classifier for this error type",
    note = "give one: `Retry::builder().classify(|e| ...)` (or implement `herdless::Retryable` for `{Self}`); herdless never retries an error it cannot classify"
)]
pub trait Retryable {
    /// This error's verdict.
    fn classification(&self) -> Classification;

    /// Whether this error is a timeout (see [`Classify::is_timeout`]). Default:
    /// `false`; `std::io::Error` answers `true` for `TimedOut`.
    fn is_timeout(&self) -> bool {
        false
    }

    /// This type's error for an attempt cut at its deadline (see
    /// [`Classify::timed_out`]), or `None` (the default) when it has none:
    /// `std::io::Error` answers `ErrorKind::TimedOut` (retryable). `tonic::Status`,
    /// `http::StatusCode` and `reqwest::Error` answer `None`: a status is the
    /// server's word and reqwest's errors cannot be made, so give those
    /// attempts [`Attempt::remaining`](crate::Attempt::remaining) as their
    /// own timeout instead (`tonic::Request::set_timeout`,
    /// `RequestBuilder::timeout`).
    ///
    /// ```
    /// use herdless::Retryable;
    /// let cut = herdless::classify::TimedOut::new(1, std::time::Duration::from_secs(1));
    /// assert!(<std::io::Error as Retryable>::timed_out(cut).unwrap().is_timeout());
    /// ```
    fn timed_out(timed_out: TimedOut) -> Option<Self>
    where
        Self: Sized,
    {
        let _ = timed_out;
        None
    }

    /// The plan of waves this error's answer announced (see
    /// [`Classify::plan`]). Default: `None`; `tonic::Status` reads its
    /// `herdless-plan` metadata (a trailer, as its pushback is).
    ///
    /// ```
    /// use herdless::Retryable;
    /// assert_eq!(std::io::Error::other("busy").plan(), None);
    /// ```
    fn plan(&self) -> Option<crate::pushback::waves::WavePlan> {
        None
    }
}

/// Out of file descriptors (`EMFILE`: this process's limit, `ENFILE`: the
/// system's): a local, transient shortage that clears as other connections
/// close, so it is retryable.
impl Retryable for std::io::Error {
    fn classification(&self) -> Classification {
        use std::io::ErrorKind as K;
        if is_out_of_descriptors(self) {
            return Classification::retryable();
        }
        match self.kind() {
            K::TimedOut
            | K::ConnectionRefused
            | K::ConnectionReset
            | K::ConnectionAborted
            | K::NotConnected
            | K::BrokenPipe
            | K::Interrupted
            | K::WouldBlock
            | K::UnexpectedEof
            | K::AddrInUse => Classification::retryable(),
            _ => Classification::terminal(),
        }
    }

    fn is_timeout(&self) -> bool {
        self.kind() == std::io::ErrorKind::TimedOut
    }

    fn timed_out(timed_out: TimedOut) -> Option<Self> {
        Some(timed_out.into())
    }
}

/// Whether `error` is `EMFILE` (this process's descriptor limit) or `ENFILE`
/// (the system's).
pub(crate) fn is_out_of_descriptors(error: &std::io::Error) -> bool {
    // The same numbers on Linux, the BSDs and macOS; WSAEMFILE on Windows.
    #[cfg(unix)]
    const CODES: &[i32] = &[23, 24];
    #[cfg(windows)]
    const CODES: &[i32] = &[10024];
    #[cfg(not(any(unix, windows)))]
    const CODES: &[i32] = &[];
    error.raw_os_error().is_some_and(|c| CODES.contains(&c))
}

/// Classifies with the error type's own [`Retryable`] implementation.
///
/// ```
/// use herdless::{ByTrait, Classify};
/// let e = std::io::Error::from(std::io::ErrorKind::TimedOut);
/// assert!(ByTrait.classify(&e).is_retryable());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ByTrait;

impl<E: Retryable + ?Sized> Classify<E> for ByTrait {
    fn classify(&self, error: &E) -> Classification {
        error.classification()
    }

    fn is_timeout(&self, error: &E) -> bool {
        error.is_timeout()
    }

    fn timed_out(&self, timed_out: TimedOut) -> Option<E>
    where
        E: Sized,
    {
        E::timed_out(timed_out)
    }

    fn plan(&self, error: &E) -> Option<crate::pushback::waves::WavePlan> {
        error.plan()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn out_of_file_descriptors_is_retryable() {
        for code in [23, 24] {
            let e = std::io::Error::from_raw_os_error(code);
            assert!(ByTrait.classify(&e).is_retryable(), "os error {code}");
        }
        let other = std::io::Error::from_raw_os_error(13); // EACCES
        assert!(!ByTrait.classify(&other).is_retryable());
    }
}
