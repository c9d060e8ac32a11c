//! The classifier: is this error even retryable? Asked before "how long to wait".
//!
//! Every error an operation returns is classified as
//! [`Retryable`](Classification::Retryable) (optionally carrying a
//! server-supplied delay), [`Terminal`](Classification::Terminal), or
//! [`Unknown`](Classification::Unknown). Unknown is treated as terminal: the
//! classifier **fails closed**, so a novel error fails loudly after one attempt
//! instead of storming silently: retrying a permanent error spends the whole
//! budget on what will never clear.
//!
//! A classifier is anything implementing [`Classify`]: a closure
//! `Fn(&E) -> Classification`, [`ByTrait`] for error types that implement
//! [`Retryable`] themselves (as [`std::io::Error`] does), or the explicit opt-in
//! [`AlwaysRetry`].

mod by_type;
mod result;
mod timed_out;
mod timeout_as;

pub use by_type::{ByTrait, Retryable};
pub use timed_out::TimedOut;
pub use timeout_as::TimeoutAs;

pub use result::{ByError, ClassifyResult};

use std::time::Duration;

/// The verdict on one error.
///
/// ```
/// use std::time::Duration;
/// use herdless::Classification;
/// assert!(Classification::retryable().is_retryable());
/// assert_eq!(
///     Classification::retry_after(Duration::from_secs(2)),
///     Classification::Retryable { after: Some(Duration::from_secs(2)) },
/// );
/// assert!(!Classification::Unknown.is_retryable()); // fails closed
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Classification {
    /// Transient: retry, after the computed jitter or, when `after` is a positive
    /// duration, after the server-supplied delay (clamped and spread by the
    /// policy). A zero `after` falls back to the computed jitter.
    Retryable {
        /// The server-supplied delay (e.g. from `Retry-After`), if any.
        after: Option<Duration>,
    },
    /// Permanent: never retried; the call returns after this attempt.
    Terminal,
    /// Not known to be either: treated as terminal (fail closed), reported as
    /// such with `classification = "unknown"` in the event.
    Unknown,
    /// The server asked not to be retried at all: gRPC's negative or
    /// unparseable `grpc-retry-pushback-ms` on a retryable status (see
    /// `herdless::grpc`, feature `grpc`). Never retried: the call gives up
    /// with [`GiveUp::DoNotRetry`](crate::GiveUp::DoNotRetry)
    /// (`retry_budget_exhausted`, `reason = "server_pushback"`). Unlike
    /// [`Terminal`](Self::Terminal) it is news about load, not about the
    /// request: the breaker and the shared budget count it as a failure, as
    /// gRPC's retry throttling counts a pushed-back call.
    ///
    /// ```
    /// use herdless::{Classification, GiveUp, ManualTimer, Policy, Retry};
    /// let err = Retry::builder()
    ///     .policy(Policy::default())
    ///     .classifier(|_: &&str| Classification::DoNotRetry)
    ///     .timer(ManualTimer::new())
    ///     .build()
    ///     .call(|_| Err::<(), _>("UNAVAILABLE, pushback -1"))
    ///     .unwrap_err();
    /// assert_eq!(err.reason(), GiveUp::DoNotRetry);
    /// assert_eq!(err.attempts(), 1);
    /// ```
    DoNotRetry,
    /// The server kept the request in its queue and answers it unprocessed:
    /// come back after `after` to be queued again (a reconnect queue's hold
    /// ran out, or it was full; `Herdless-Requeue` on an HTTP 503, see
    /// `herdless::http`). Not an attempt: the call's attempt count does not
    /// move, neither the shared budget nor the breaker nor the throttle
    /// hears of it, and the wait is the server's delay clamped and spread
    /// as any other. It is bounded on its own by the policy's
    /// [`max_requeues`](crate::Policy::max_requeues) (past it a requeue
    /// counts as an ordinary failed attempt) and, like every wait, by
    /// `max_elapsed`. Events: `retry_requeued`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::engine::{Context, Decision, Engine};
    /// use herdless::{Classification, Policy, RetryCause, Rng};
    /// let p = Policy::builder().max_attempts(1).build()?;
    /// let mut call = Engine::new(Duration::ZERO);
    /// call.begin();
    /// let d = call.failed(&Context::new(&p), Duration::ZERO,
    ///     Classification::requeued(Duration::from_secs(2)), RetryCause::Error, &mut Rng::with_seed(1));
    /// assert!(matches!(d, Decision::Retry { .. }), "one attempt allowed, none spent");
    /// assert_eq!(call.begin(), 1);
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    Requeued {
        /// When to come back (clamped by `max_retry_after`, spread as any
        /// server delay).
        after: Duration,
    },
}

impl Classification {
    /// Queued and answered unprocessed: come back after `after` (see
    /// [`Requeued`](Self::Requeued)).
    ///
    /// ```
    /// use std::time::Duration;
    /// let c = herdless::Classification::requeued(Duration::from_secs(1));
    /// assert!(c.is_retryable() && c.is_requeue());
    /// ```
    pub const fn requeued(after: Duration) -> Self {
        Classification::Requeued { after }
    }

    /// Whether this is a requeue answer ([`Requeued`](Self::Requeued)).
    ///
    /// ```
    /// assert!(!herdless::Classification::retryable().is_requeue());
    /// ```
    pub const fn is_requeue(&self) -> bool {
        matches!(self, Classification::Requeued { .. })
    }

    /// Retryable after the computed jitter.
    ///
    /// ```
    /// assert!(herdless::Classification::retryable().is_retryable());
    /// ```
    pub const fn retryable() -> Self {
        Classification::Retryable { after: None }
    }

    /// Retryable after a server-supplied delay (zero falls back to the jitter).
    ///
    /// ```
    /// let c = herdless::Classification::retry_after(std::time::Duration::from_secs(5));
    /// assert_eq!(c.server_delay(), Some(std::time::Duration::from_secs(5)));
    /// ```
    pub const fn retry_after(delay: Duration) -> Self {
        Classification::Retryable { after: Some(delay) }
    }

    /// Retryable after a server-supplied delay in seconds. Zero, negative, NaN
    /// and infinite values fall back to the computed jitter; values too large
    /// for a `Duration` saturate (the policy clamps them afterwards).
    ///
    /// ```
    /// use herdless::Classification;
    /// assert_eq!(Classification::retry_after_secs(f64::NAN), Classification::retryable());
    /// assert_eq!(Classification::retry_after_secs(-3.0), Classification::retryable());
    /// assert!(Classification::retry_after_secs(1e300).server_delay().is_some());
    /// ```
    pub fn retry_after_secs(secs: f64) -> Self {
        let after = if secs.is_finite() && secs > 0.0 {
            Some(Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX))
        } else {
            None
        };
        Classification::Retryable { after }
    }

    /// Terminal: never retried.
    ///
    /// ```
    /// assert!(!herdless::Classification::terminal().is_retryable());
    /// ```
    pub const fn terminal() -> Self {
        Classification::Terminal
    }

    /// Whether the executor will retry ([`Retryable`](Self::Retryable) and
    /// [`Requeued`](Self::Requeued)).
    ///
    /// ```
    /// assert!(!herdless::Classification::Unknown.is_retryable());
    /// ```
    pub const fn is_retryable(&self) -> bool {
        matches!(
            self,
            Classification::Retryable { .. } | Classification::Requeued { .. }
        )
    }

    /// The positive server-supplied delay, if any.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::Classification;
    /// assert_eq!(Classification::retry_after(Duration::ZERO).server_delay(), None);
    /// ```
    pub fn server_delay(&self) -> Option<Duration> {
        match self {
            Classification::Retryable { after: Some(d) } if !d.is_zero() => Some(*d),
            Classification::Requeued { after } => Some(*after),
            _ => None,
        }
    }

    /// A short name: `retryable`, `terminal`, `unknown`, `requeued` or `server_pushback`
    /// (the name [`DoNotRetry`](Self::DoNotRetry) had before it was renamed,
    /// kept where it is written down: events, metrics, headers).
    ///
    /// ```
    /// assert_eq!(herdless::Classification::Unknown.as_str(), "unknown");
    /// ```
    pub const fn as_str(&self) -> &'static str {
        match self {
            Classification::Retryable { .. } => "retryable",
            Classification::Terminal => "terminal",
            Classification::Unknown => "unknown",
            Classification::DoNotRetry => "server_pushback",
            Classification::Requeued { .. } => "requeued",
        }
    }

    /// The old name of [`DoNotRetry`](Self::DoNotRetry): "pushback" now
    /// means only the server's "come back later" ([`pushback`](crate::pushback)).
    #[deprecated(
        since = "0.1.0",
        note = "renamed `Classification::DoNotRetry`; this name goes in the next release"
    )]
    #[allow(non_upper_case_globals)]
    pub const ServerPushback: Classification = Classification::DoNotRetry;
}

/// Classifies an operation's errors.
///
/// Implemented for every `Fn(&E) -> Classification` closure.
///
/// ```
/// use herdless::{Classification, Classify};
/// #[derive(Debug)]
/// enum ScanError { Timeout, Unauthorized }
///
/// let classifier = |e: &ScanError| match e {
///     ScanError::Timeout => Classification::retryable(),
///     ScanError::Unauthorized => Classification::terminal(),
/// };
/// assert!(classifier.classify(&ScanError::Timeout).is_retryable());
/// ```
pub trait Classify<E: ?Sized> {
    /// The verdict on `error`.
    fn classify(&self, error: &E) -> Classification;

    /// Whether `error` is a timeout. Only a shared
    /// [`RetryBudget`](crate::RetryBudget) asks: a retry after a timeout may
    /// cost more ([`RetryCause::Timeout`](crate::RetryCause)). Default: `false`;
    /// wrap a closure with [`WithTimeouts`] to answer it.
    fn is_timeout(&self, error: &E) -> bool {
        let _ = error;
        false
    }

    /// The error an attempt cut at its deadline ends with, or `None` when
    /// `E` cannot express a timeout (the default). With a policy's
    /// [`attempt_timeout`](crate::Policy::attempt_timeout), the async
    /// executors drop an attempt's future at its deadline and ask this; the
    /// error is then classified like any other ([`classify`](Self::classify):
    /// retryable unless this classifier says otherwise) and counted as a
    /// [`RetryCause::Timeout`]. On `None` the attempt is not cut: it runs to
    /// its own end, so give it [`Attempt::remaining`](crate::Attempt::remaining)
    /// as its own timeout (a deadline-aware attempt).
    ///
    /// [`ByTrait`] asks [`Retryable::timed_out`] (`std::io::Error`:
    /// `ErrorKind::TimedOut`); any classifier can be given one with
    /// [`TimeoutAs`] (or [`RetryBuilder::on_timeout`](crate::RetryBuilder::on_timeout)).
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::{ByTrait, Classify};
    /// use herdless::classify::TimedOut;
    /// let cut = TimedOut::new(1, Duration::from_secs(2));
    /// let e: std::io::Error = ByTrait.timed_out(cut).unwrap();
    /// assert!(ByTrait.classify(&e).is_retryable());
    /// let closure = |_: &u16| herdless::Classification::retryable();
    /// assert_eq!(closure.timed_out(cut), None); // a u16 cannot say "timed out"
    /// ```
    fn timed_out(&self, timed_out: TimedOut) -> Option<E>
    where
        E: Sized,
    {
        let _ = timed_out;
        None
    }

    /// The error a call ends with when its time ran out before its first
    /// attempt could start: a call sharing a [`Throttle`](crate::guard::Throttle)
    /// that waited for its turn until `max_elapsed`. Such a call makes no
    /// attempt (one with no time left would only count as sent) and ends as
    /// exhausted ([`GiveUp::MaxElapsed`](crate::GiveUp::MaxElapsed)) after
    /// 0 attempts, with this error. `unstarted` is
    /// [`TimedOut::unstarted`]. Default: [`timed_out`](Self::timed_out)'s
    /// error for it (`std::io::Error` of kind `TimedOut` with [`ByTrait`]).
    ///
    /// `None` (the default for a type that cannot say "timed out") leaves
    /// the call no error to end with: its first attempt then goes at the
    /// limit with [`Attempt::remaining`](crate::Attempt::remaining) zero.
    /// Give such a classifier one with [`TimeoutAs`] (or
    /// [`RetryBuilder::on_timeout`](crate::RetryBuilder::on_timeout)).
    ///
    /// ```
    /// use herdless::{ByTrait, Classify};
    /// use herdless::classify::TimedOut;
    /// let e: std::io::Error = ByTrait.unstarted(TimedOut::unstarted(1)).unwrap();
    /// assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
    /// ```
    fn unstarted(&self, unstarted: TimedOut) -> Option<E>
    where
        E: Sized,
    {
        self.timed_out(unstarted)
    }

    /// The plan of waves the error's answer announced (a server's
    /// `Herdless-Plan`), for a [`WaveGuard`](crate::guard::waves::WaveGuard):
    /// the executors hand it over before each decision. Default: `None`
    /// (the reqwest classifier and tower's HTTP classifiers read the
    /// header).
    ///
    /// ```
    /// use herdless::{ByTrait, Classify};
    /// assert_eq!(ByTrait.plan(&std::io::Error::other("busy")), None);
    /// ```
    fn plan(&self, error: &E) -> Option<crate::pushback::waves::WavePlan> {
        let _ = error;
        None
    }

    /// The verdict and, for a retryable error, what caused it: the one
    /// classify-then-cause step every driver takes before asking the engine
    /// ([`Engine::failed`](crate::engine::Engine::failed)). The cause is
    /// [`RetryCause::Timeout`] only for a retryable error that
    /// [`is_timeout`](Self::is_timeout) says is a timeout.
    ///
    /// ```
    /// use herdless::{ByTrait, Classify, RetryCause};
    /// let timeout = std::io::Error::from(std::io::ErrorKind::TimedOut);
    /// let (verdict, cause) = ByTrait.classify_cause(&timeout);
    /// assert!(verdict.is_retryable());
    /// assert_eq!(cause, RetryCause::Timeout);
    /// ```
    #[inline]
    fn classify_cause(&self, error: &E) -> (Classification, RetryCause) {
        let classification = self.classify(error);
        let cause = if classification.is_retryable() && self.is_timeout(error) {
            RetryCause::Timeout
        } else {
            RetryCause::Error
        };
        (classification, cause)
    }
}

/// What caused a retryable failure, for the cost of the retry it asks for
/// (a shared [`RetryBudget`](crate::RetryBudget) may charge a timeout more).
///
/// ```
/// assert_ne!(herdless::RetryCause::Error, herdless::RetryCause::Timeout);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RetryCause {
    /// Any retryable error except a timeout: costs
    /// [`RetryBudgetBuilder::retry_cost`](crate::guard::RetryBudgetBuilder::retry_cost).
    #[default]
    Error,
    /// A timeout: costs
    /// [`RetryBudgetBuilder::timeout_cost`](crate::guard::RetryBudgetBuilder::timeout_cost).
    Timeout,
}

/// A classifier plus a timeout detector, for retry budgets that charge more
/// for retries after timeouts (the AWS quota).
///
/// ```
/// use herdless::{Classification, Classify, classify::WithTimeouts};
/// #[derive(Debug)]
/// enum E { Timeout, Busy }
/// let c = WithTimeouts::new(|_: &E| Classification::retryable(), |e: &E| matches!(e, E::Timeout));
/// assert!(c.is_timeout(&E::Timeout));
/// assert!(!c.is_timeout(&E::Busy));
/// assert!(c.classify(&E::Busy).is_retryable());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct WithTimeouts<C, F> {
    classifier: C,
    is_timeout: F,
}

impl<C, F> WithTimeouts<C, F> {
    /// Classifies with `classifier`; `is_timeout` says which errors are timeouts.
    ///
    /// ```
    /// let _ = herdless::classify::WithTimeouts::new(herdless::AlwaysRetry, |_: &()| true);
    /// ```
    pub fn new(classifier: C, is_timeout: F) -> Self {
        WithTimeouts {
            classifier,
            is_timeout,
        }
    }
}

impl<E: ?Sized, C: Classify<E>, F: Fn(&E) -> bool> Classify<E> for WithTimeouts<C, F> {
    fn classify(&self, error: &E) -> Classification {
        self.classifier.classify(error)
    }

    fn is_timeout(&self, error: &E) -> bool {
        (self.is_timeout)(error)
    }

    fn timed_out(&self, timed_out: TimedOut) -> Option<E>
    where
        E: Sized,
    {
        self.classifier.timed_out(timed_out)
    }

    fn unstarted(&self, unstarted: TimedOut) -> Option<E>
    where
        E: Sized,
    {
        self.classifier.unstarted(unstarted)
    }

    fn plan(&self, error: &E) -> Option<crate::pushback::waves::WavePlan> {
        self.classifier.plan(error)
    }
}

impl<E: ?Sized, F> Classify<E> for F
where
    F: Fn(&E) -> Classification,
{
    fn classify(&self, error: &E) -> Classification {
        self(error)
    }
}

/// Treats every error as retryable: an explicit opt-in for operations whose
/// every failure is known to be transient. Prefer a real classifier.
///
/// ```
/// use herdless::{AlwaysRetry, Classify};
/// assert!(AlwaysRetry.classify("anything").is_retryable());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct AlwaysRetry;

impl<E: ?Sized> Classify<E> for AlwaysRetry {
    fn classify(&self, _error: &E) -> Classification {
        Classification::retryable()
    }
}

/// An error classifier that knows nothing: every error is
/// [`Unknown`](Classification::Unknown), so it is never retried (fail
/// closed). The default for transport errors in
/// tower's `HttpClassifier` (`herdless::adapters::tower`, feature `tower`).
///
/// ```
/// use herdless::{Classification, Classify};
/// use herdless::classify::FailClosed;
/// assert_eq!(FailClosed.classify(&"connection reset"), Classification::Unknown);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct FailClosed;

impl<E: ?Sized> Classify<E> for FailClosed {
    fn classify(&self, _: &E) -> Classification {
        Classification::Unknown
    }
}
