//! The escape lane: urgent calls are not starved by fleet-level protection.
//!
//! A shared retry budget and a breaker protect the endpoint by making calls
//! give up or wait. That is right for bulk work and wrong for the few
//! latency-critical calls (a payment authorization, a health check an operator
//! is watching): fleet protection must not silently starve latency-critical
//! calls, so anything urgent goes to an escape lane rather than backing off
//! with the bulk.
//!
//! A call made through a retrier marked [`Urgent`]
//! ([`Retry::urgent`](crate::Retry::urgent)):
//!
//! * **ignores the shared budget within its own small quota**: its first
//!   [`quota`](Urgent::quota) retries neither ask the shared
//!   [`RetryBudget`](crate::RetryBudget) nor wait behind a
//!   [`Breaker`](crate::Breaker) probe (they still refund the budget on
//!   success). Retries past the quota go through the budget and the breaker
//!   like any other call, so the lane cannot turn into a storm of its own;
//! * **never sleeps past its own deadline**: the deadline (measured from the
//!   call's start on the retrier's monotonic clock) acts as a tighter
//!   `max_elapsed`. Before every sleep the executor checks
//!   `elapsed + sleep ≤ deadline` and otherwise gives up at once with
//!   [`GiveUp::MaxElapsed`](crate::GiveUp) — whether the sleep is computed
//!   jitter, a server's Retry-After or a breaker wait. An urgent call is better
//!   served by a fast, explicit failure than by a late success;
//! * keeps everything else: classification, jitter, `max_attempts`, events.
//!
//! The quota is per call, so the lane's total load is bounded by (urgent calls
//! in flight) × quota: mark few calls urgent. Use one `Retry` for urgent calls
//! and another for bulk calls, both holding the same `Arc<RetryBudget>`.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use herdless::{AlwaysRetry, ManualTimer, Policy, Retry, RetryBudget, Urgent};
//!
//! let budget = Arc::new(RetryBudget::grpc(10.0, 0.1)?);
//! while budget.try_retry(herdless::RetryCause::Error, 0.0).is_ok() {} // drained by bulk calls
//! let timer = ManualTimer::new();
//! let urgent = Retry::builder()
//!     .policy(Policy::default())
//!     .classifier(AlwaysRetry)
//!     .timer(timer.clone())
//!     .budget(budget)
//!     .urgent(Urgent::new(Duration::from_secs(2)).quota(2))
//!     .build();
//! let mut n = 0;
//! let out = urgent.call(|_| { n += 1; if n < 3 { Err("503") } else { Ok("authorized") } });
//! assert_eq!(out, Ok("authorized")); // two retries through the lane
//! assert!(timer.elapsed() <= Duration::from_secs(2));
//! # Ok::<(), herdless::guard::RetryBudgetError>(())
//! ```

use std::time::Duration;

/// Marks a retrier's calls as urgent: a per-call quota of retries that bypass
/// the shared budget and breaker, and a deadline no sleep may pass. See the
/// [module documentation](crate::guard::urgent).
///
/// ```
/// use std::time::Duration;
/// let u = herdless::Urgent::new(Duration::from_millis(300)).quota(1);
/// assert_eq!(u.deadline(), Duration::from_millis(300));
/// assert_eq!(u.retry_quota(), 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Urgent {
    deadline: Duration,
    quota: u32,
}

impl Urgent {
    /// Urgent calls that must end within `deadline` of their start, with a
    /// quota of 2 bypassing retries.
    ///
    /// ```
    /// assert_eq!(herdless::Urgent::new(std::time::Duration::from_secs(1)).retry_quota(), 2);
    /// ```
    pub fn new(deadline: Duration) -> Self {
        Urgent { deadline, quota: 2 }
    }

    /// How many retries of each call bypass the shared budget and breaker.
    ///
    /// ```
    /// let u = herdless::Urgent::new(std::time::Duration::from_secs(1)).quota(0);
    /// assert_eq!(u.retry_quota(), 0); // deadline only
    /// ```
    pub fn quota(mut self, quota: u32) -> Self {
        self.quota = quota;
        self
    }

    /// The deadline, from the call's start.
    ///
    /// ```
    /// assert_eq!(herdless::Urgent::new(std::time::Duration::from_secs(1)).deadline().as_secs(), 1);
    /// ```
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// The per-call quota of bypassing retries.
    ///
    /// ```
    /// assert_eq!(herdless::Urgent::new(std::time::Duration::ZERO).quota(5).retry_quota(), 5);
    /// ```
    pub fn retry_quota(&self) -> u32 {
        self.quota
    }
}
