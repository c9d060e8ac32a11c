//! [`TimeoutAs`]: a classifier plus the error an attempt cut at its deadline
//! becomes.

use super::{Classification, Classify};
use crate::classify::TimedOut;

/// A classifier plus `make`, the error an attempt cut at its deadline ends
/// with ([`Classify::timed_out`]): what lets the async executors drop a
/// hanging attempt of an error type that has no timeout of its own. The
/// made error is classified by the inner classifier (so it decides whether
/// a cut attempt is retried) and is a timeout for a shared budget.
///
/// [`RetryBuilder::on_timeout`](crate::RetryBuilder::on_timeout) wraps a
/// retrier's classifier in one.
///
/// ```
/// use std::time::Duration;
/// use herdless::classify::TimeoutAs;
/// use herdless::classify::TimedOut;
/// use herdless::{Classification, Classify};
///
/// #[derive(Debug, PartialEq)]
/// enum ScanError { Busy, Slow }
/// let c = TimeoutAs::new(
///     |e: &ScanError| match e { ScanError::Busy | ScanError::Slow => Classification::retryable() },
///     |_: TimedOut| ScanError::Slow,
/// );
/// let cut = TimedOut::new(1, Duration::from_secs(2));
/// assert_eq!(c.timed_out(cut), Some(ScanError::Slow));
/// assert!(c.classify(&ScanError::Slow).is_retryable());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct TimeoutAs<C, F> {
    classifier: C,
    make: F,
}

impl<C, F> TimeoutAs<C, F> {
    /// Classifies with `classifier`; an attempt cut at its deadline ends with
    /// `make(timed_out)`.
    ///
    /// ```
    /// use herdless::classify::TimedOut;
    /// let _ = herdless::classify::TimeoutAs::new(herdless::AlwaysRetry, |_: TimedOut| "timed out");
    /// ```
    pub fn new(classifier: C, make: F) -> Self {
        TimeoutAs { classifier, make }
    }

    /// The inner classifier.
    pub fn classifier(&self) -> &C {
        &self.classifier
    }
}

impl<E, C, F> Classify<E> for TimeoutAs<C, F>
where
    C: Classify<E>,
    F: Fn(TimedOut) -> E,
{
    fn classify(&self, error: &E) -> Classification {
        self.classifier.classify(error)
    }

    /// The inner classifier's answer (a cut attempt is counted as a
    /// timeout whatever this says).
    fn is_timeout(&self, error: &E) -> bool {
        self.classifier.is_timeout(error)
    }

    fn timed_out(&self, timed_out: TimedOut) -> Option<E> {
        Some((self.make)(timed_out))
    }

    fn plan(&self, error: &E) -> Option<crate::pushback::waves::WavePlan> {
        self.classifier.plan(error)
    }
}
