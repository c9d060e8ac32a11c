//! [`ClassifyResult`]: classifying a whole result, for drivers whose failures
//! are not all `Err` (to a tower or reqwest client an HTTP 503 is an `Ok`).

use super::{Classification, Classify, RetryCause};

/// Classifies a whole result (`Ok` responses included, since an HTTP 503 is an
/// `Ok` to a tower client): `None` is a success, `Some` a failure's
/// [`Classification`] (an `Unknown` fails closed: not retried).
///
/// Implemented for every `Fn(&Result<Res, E>) -> Option<Classification>`
/// closure, for [`ByError`], and by the adapters' response classifiers
/// (tower's `HttpClassifier` and `GrpcClassifier`, reqwest's
/// `ReqwestClassifier`).
///
/// ```
/// use herdless::classify::ClassifyResult;
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
    /// use herdless::classify::ClassifyResult;
    /// let c = |_: &Result<(), ()>| None;
    /// assert!(!c.is_timeout(&Err(())));
    /// ```
    fn is_timeout(&self, result: &Result<Res, E>) -> bool {
        let _ = result;
        false
    }

    /// The plan of waves the failure's answer announced (a server's
    /// `Herdless-Plan`), for a [`WaveGuard`](crate::guard::waves::WaveGuard).
    /// Default: `None`.
    ///
    /// ```
    /// use herdless::classify::ClassifyResult;
    /// let c = |_: &Result<(), ()>| None;
    /// assert_eq!(c.plan(&Err(())), None);
    /// ```
    fn plan(&self, result: &Result<Res, E>) -> Option<crate::pushback::waves::WavePlan> {
        let _ = result;
        None
    }

    /// `None` for a success, or the failure's classification and cause:
    /// [`RetryCause::Timeout`] only for a retryable failure that
    /// [`is_timeout`](Self::is_timeout) says is a timeout (the same rule as
    /// [`Classify::classify_cause`]).
    ///
    /// ```
    /// use herdless::classify::ClassifyResult;
    /// use herdless::{Classification, RetryCause};
    /// let c = |r: &Result<u16, ()>| r.is_err().then(Classification::retryable);
    /// assert_eq!(c.classify_cause(&Ok(200)), None);
    /// assert_eq!(c.classify_cause(&Err(())), Some((Classification::retryable(), RetryCause::Error)));
    /// ```
    #[inline]
    fn classify_cause(&self, result: &Result<Res, E>) -> Option<(Classification, RetryCause)> {
        let classification = self.classify(result)?;
        let cause = if classification.is_retryable() && self.is_timeout(result) {
            RetryCause::Timeout
        } else {
            RetryCause::Error
        };
        Some((classification, cause))
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
/// [`AlwaysRetry`](crate::AlwaysRetry), [`WithTimeouts`](crate::classify::WithTimeouts)).
///
/// ```
/// use herdless::classify::{ByError, ClassifyResult};
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

    fn plan(&self, result: &Result<Res, E>) -> Option<crate::pushback::waves::WavePlan> {
        result.as_ref().err().and_then(|e| self.0.plan(e))
    }
}
