//! A shared retry budget: one token bucket for every call in a process.
//!
//! Per-call backoff decorrelates a fleet but does not bound it: during an
//! outage every call keeps retrying until its own attempts or time run out. A
//! retry budget caps the *process's* retry traffic instead. It is the
//! mechanism behind gRPC's retry throttling and the AWS SDKs' retry quota, and
//! [`RetryBudget`] expresses both (and anything in between) with one set of
//! knobs, in tokens:
//!
//! | knob | gRPC retry throttling | AWS SDK retry quota |
//! |---|---|---|
//! | [`max_tokens`](RetryBudgetBuilder::max_tokens) (also the initial level) | `maxTokens` (≤ 1000) | 500 |
//! | [`failure_cost`](RetryBudgetBuilder::failure_cost): charged on every retryable failure | 1 | 0 |
//! | [`retry_cost`](RetryBudgetBuilder::retry_cost): charged when a retry is admitted | 0 | 5 |
//! | [`timeout_cost`](RetryBudgetBuilder::timeout_cost): instead of `retry_cost` after a timeout | 0 | 10 |
//! | [`success_refund`](RetryBudgetBuilder::success_refund): added on a success | `tokenRatio` | 1 (first-try successes) |
//! | [`refund_retry_cost`](RetryBudgetBuilder::refund_retry_cost): a success after a retry returns that retry's cost instead | no | yes |
//! | [`threshold`](RetryBudgetBuilder::threshold): a retry is admitted only while the level (after the failure cost) exceeds it | `maxTokens / 2` | 0 |
//!
//! A retry is admitted when, after charging the failure cost, the level is
//! **strictly above** the call's threshold and covers the retry's cost; the
//! cost is then withdrawn. Otherwise the call ends with
//! [`GiveUp::RetryBudget`](crate::GiveUp::RetryBudget) (`retry_budget` in the
//! error and in the `retry_budget_exhausted` event). Successes refund. The level
//! never leaves `[0, max_tokens]`. In the executors, a retry that was admitted
//! but never started (the call gave up waiting behind a breaker probe, or its
//! future was dropped during the backoff sleep) is refunded in full.
//!
//! ## Concurrency
//!
//! The level is one `AtomicU64` in thousandths of a token (gRPC specifies
//! `tokenRatio` to three decimals, so the arithmetic is exact), updated with a
//! compare-and-swap loop: every admission is a single atomic read-decide-write,
//! so two calls can never both spend the last tokens (no overdraw) and a
//! refund is never overwritten by a concurrent withdrawal (no lost refunds).
//! There is no lock; `tests/guard_budget.rs` hammers one bucket from many
//! threads and checks both properties exactly.
//!
//! ## Avoiding a synchronized give-up
//!
//! A plain threshold is a cliff: while the level is above it every call
//! retries, and the instant it crosses, *every* call in flight gives up at its
//! next failure. Across a fleet whose processes drain their buckets at similar
//! rates during one outage, that is a synchronized give-up — and a synchronized
//! wave of re-submissions from whatever sits above the callers.
//!
//! herdless turns the cliff into a ramp. Each call draws, once, a **level**
//! `u` uniform in `[0, 1)` from its own generator (OS entropy, or the
//! retrier's seed), and its personal threshold is `threshold + u · spread`
//! tokens. As the bucket drains through the `spread` band, calls drop out one
//! by one instead of all at once; the give-ups are spread over the time the
//! fleet takes to burn `spread` tokens. The draw is per *call*, not per
//! decision, on purpose: a call that is admitted keeps being admitted while the
//! level holds, so the tokens go to calls that can finish rather than to many
//! partial chains that all give up later. The guarantee of the plain
//! threshold is kept — no retry is ever admitted at or below `threshold` — the
//! ramp only gives up *earlier*, never later. With `spread(0.0)` the budget is
//! exactly gRPC's or AWS's cliff. The presets use `spread = (max_tokens −
//! threshold) / 2`.
//!
//! The give-ups then spread over about `spread / (failures per second ×
//! failure cost)` seconds, on top of the spread the calls' own jittered
//! backoff already gives their failure times; a wider band spreads them more
//! at the price of giving up earlier.
//!
//! While the endpoint is healthy, successes keep the bucket full (every
//! success refunds, failures are rare), so the budget never denies a retry.
//!
//! ```
//! use std::sync::Arc;
//! use herdless::{AlwaysRetry, GiveUp, ManualTimer, Policy, Retry, RetryBudget};
//!
//! // gRPC-style: 4 tokens, each failure costs 1, retries only while > 2 remain.
//! let budget = Arc::new(RetryBudget::builder().grpc(4.0, 0.1).spread(0.0).build()?);
//! let retry = Retry::builder()
//!     .policy(Policy::default())
//!     .classifier(AlwaysRetry)
//!     .timer(ManualTimer::new())
//!     .budget(budget.clone())
//!     .build();
//! let err = retry.call(|_| Err::<(), _>("503")).unwrap_err();
//! assert_eq!(err.reason(), GiveUp::RetryBudget);
//! assert_eq!(err.attempts(), 2); // 4 → 3 admitted, 3 → 2 denied
//! assert_eq!(budget.tokens(), 2.0);
//! # Ok::<(), herdless::guard::RetryBudgetError>(())
//! ```

mod builder;
#[cfg(feature = "serde")]
mod serde;

pub use builder::{RetryBudgetBuilder, RetryBudgetError};

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::classify::RetryCause;

/// Thousandths of a token per token.
const SCALE: f64 = 1000.0;

/// The largest `max_tokens` accepted (keeps every sum far from `u64::MAX`).
pub const MAX_TOKENS: f64 = 1e12;

/// Tokens withdrawn for one admitted retry (returned on success when
/// [`refund_retry_cost`](RetryBudgetBuilder::refund_retry_cost) is set).
///
/// ```
/// let b = herdless::RetryBudget::aws();
/// let spent = b.try_retry(herdless::RetryCause::Timeout, 0.0).unwrap();
/// assert_eq!(spent.tokens(), 10.0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Spent(u64);

impl Spent {
    /// The sum of two amounts.
    pub(crate) fn plus(self, other: Spent) -> Spent {
        Spent(self.0.saturating_add(other.0))
    }

    /// The amount, in tokens.
    ///
    /// ```
    /// assert_eq!(herdless::guard::Spent::default().tokens(), 0.0);
    /// ```
    pub fn tokens(self) -> f64 {
        self.0 as f64 / SCALE
    }
}

/// The budget denied a retry.
///
/// ```
/// let b = herdless::RetryBudget::builder().aws().max_tokens(5.0).spread(0.0).build()?;
/// assert!(b.try_retry(herdless::RetryCause::Error, 0.0).is_ok());
/// assert_eq!(b.try_retry(herdless::RetryCause::Error, 0.0), Err(herdless::guard::Denied));
/// # Ok::<(), herdless::guard::RetryBudgetError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Denied;

impl fmt::Display for Denied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the retry budget denied the retry")
    }
}

impl std::error::Error for Denied {}

/// A token bucket shared (through `Arc`) by every call of a process. See the
/// [module documentation](crate::guard::budget).
///
/// ```
/// use std::sync::Arc;
/// use herdless::{RetryBudget, RetryCause};
/// let budget = Arc::new(RetryBudget::aws()); // 500 tokens, retry 5, timeout 10
/// let spent = budget.try_retry(RetryCause::Error, 0.3).expect("full bucket admits");
/// assert_eq!(budget.tokens(), 495.0);
/// budget.record_success(Some(spent)); // AWS: a success after a retry returns its cost
/// assert_eq!(budget.tokens(), 500.0);
/// ```
pub struct RetryBudget {
    level: AtomicU64,
    cfg: Config,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Config {
    max: u64,
    failure_cost: u64,
    retry_cost: u64,
    timeout_cost: u64,
    success_refund: u64,
    refund_retry_cost: bool,
    threshold: u64,
    spread: u64,
}

impl fmt::Debug for RetryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryBudget")
            .field("tokens", &self.tokens())
            .field("max_tokens", &self.max_tokens())
            .field("threshold", &(self.cfg.threshold as f64 / SCALE))
            .field("spread", &(self.cfg.spread as f64 / SCALE))
            .finish_non_exhaustive()
    }
}

impl RetryBudget {
    /// A builder with gRPC's defaults for 10 tokens and a 0.1 ratio (see
    /// [`RetryBudgetBuilder::grpc`]).
    ///
    /// ```
    /// let b = herdless::RetryBudget::builder().build()?;
    /// assert_eq!(b.max_tokens(), 10.0);
    /// # Ok::<(), herdless::guard::RetryBudgetError>(())
    /// ```
    pub fn builder() -> RetryBudgetBuilder {
        RetryBudgetBuilder::new()
    }

    /// gRPC retry throttling: `max_tokens` tokens, a failure costs 1, a success
    /// refunds `token_ratio`, retries only while more than half remain (with the
    /// default anti-synchronization spread; see the module docs).
    ///
    /// # Errors
    ///
    /// [`RetryBudgetError`] when `max_tokens` is not in `(0, 1e12]` or the ratio is
    /// negative or not finite.
    ///
    /// ```
    /// let b = herdless::RetryBudget::grpc(100.0, 0.1)?;
    /// assert_eq!(b.tokens(), 100.0);
    /// assert!(herdless::RetryBudget::grpc(-1.0, 0.1).is_err());
    /// # Ok::<(), herdless::guard::RetryBudgetError>(())
    /// ```
    pub fn grpc(max_tokens: f64, token_ratio: f64) -> Result<Self, RetryBudgetError> {
        RetryBudgetBuilder::new()
            .grpc(max_tokens, token_ratio)
            .build()
    }

    /// The AWS SDKs' standard retry quota: 500 tokens, a retry costs 5, a retry
    /// after a timeout 10, a first-try success refunds 1 and a success after a
    /// retry returns that retry's cost (with the default anti-synchronization
    /// spread; see the module docs).
    ///
    /// ```
    /// let b = herdless::RetryBudget::aws();
    /// assert_eq!(b.max_tokens(), 500.0);
    /// ```
    pub fn aws() -> Self {
        RetryBudgetBuilder::new()
            .aws()
            .build()
            .expect("the AWS preset is valid")
    }

    /// The current level, in tokens.
    ///
    /// ```
    /// assert_eq!(herdless::RetryBudget::aws().tokens(), 500.0);
    /// ```
    pub fn tokens(&self) -> f64 {
        self.level.load(Ordering::Acquire) as f64 / SCALE
    }

    /// The capacity, in tokens.
    ///
    /// ```
    /// assert_eq!(herdless::RetryBudget::grpc(8.0, 0.5).unwrap().max_tokens(), 8.0);
    /// ```
    pub fn max_tokens(&self) -> f64 {
        self.cfg.max as f64 / SCALE
    }

    /// What one admitted retry of this cause withdraws: exactly what
    /// [`try_retry`](Self::try_retry) returns when it admits it.
    ///
    /// ```
    /// use herdless::{RetryBudget, RetryCause};
    /// let b = RetryBudget::aws();
    /// assert_eq!(b.cost(RetryCause::Timeout), b.try_retry(RetryCause::Timeout, 0.0).unwrap());
    /// ```
    pub fn cost(&self, cause: RetryCause) -> Spent {
        Spent(match cause {
            RetryCause::Error => self.cfg.retry_cost,
            RetryCause::Timeout => self.cfg.timeout_cost,
        })
    }

    /// After a retryable failure, asks for one retry: charges the failure cost,
    /// then admits the retry if the level is strictly above this call's
    /// threshold (`threshold + level · spread`, `level` clamped to `[0, 1]`; pass
    /// the call's own uniform draw, or `0.0` for the plain threshold) and
    /// covers the retry's cost, which is withdrawn. One atomic update.
    ///
    /// # Errors
    ///
    /// [`Denied`] when the retry is not admitted (the failure cost is still
    /// charged, as in gRPC).
    ///
    /// ```
    /// use herdless::{RetryBudget, RetryCause};
    /// let b = RetryBudget::builder().grpc(10.0, 0.1).spread(0.0).build()?;
    /// let admitted = (0..10).filter(|_| b.try_retry(RetryCause::Error, 0.0).is_ok()).count();
    /// assert_eq!(admitted, 4); // 9, 8, 7, 6 are above half; 5 is not
    /// # Ok::<(), herdless::guard::RetryBudgetError>(())
    /// ```
    pub fn try_retry(&self, cause: RetryCause, level: f64) -> Result<Spent, Denied> {
        let c = &self.cfg;
        let Spent(cost) = self.cost(cause);
        let level = if level.is_nan() {
            0.0
        } else {
            level.clamp(0.0, 1.0)
        };
        let floor = c.threshold + (c.spread as f64 * level) as u64;
        let mut admitted = false;
        let _ = self
            .level
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| {
                let after = cur.saturating_sub(c.failure_cost);
                admitted = after > floor && after >= cost;
                Some(if admitted { after - cost } else { after })
            });
        if admitted {
            Ok(Spent(cost))
        } else {
            Err(Denied)
        }
    }

    /// Asks for one hedge (a copy of a request sent before it failed, see
    /// [`hedge`](crate::hedge)): admitted, as [`try_retry`](Self::try_retry)
    /// admits a retry, while the level is strictly above this call's
    /// threshold and covers a retry's cost, which is withdrawn. No failure
    /// cost is charged: nothing failed yet (each copy that fails charges it
    /// then). One atomic update.
    ///
    /// # Errors
    ///
    /// [`Denied`] when the hedge is not admitted.
    ///
    /// ```
    /// let b = herdless::RetryBudget::builder().aws().max_tokens(12.0).spread(0.0).build()?;
    /// assert!(b.try_hedge(0.0).is_ok()); // 12 → 7
    /// assert!(b.try_hedge(0.0).is_ok()); // 7 → 2
    /// assert_eq!(b.try_hedge(0.0), Err(herdless::guard::Denied));
    /// assert_eq!(b.tokens(), 2.0);
    /// # Ok::<(), herdless::guard::RetryBudgetError>(())
    /// ```
    pub fn try_hedge(&self, level: f64) -> Result<Spent, Denied> {
        let c = &self.cfg;
        let cost = c.retry_cost;
        let level = if level.is_nan() {
            0.0
        } else {
            level.clamp(0.0, 1.0)
        };
        let floor = c.threshold + (c.spread as f64 * level) as u64;
        let admitted = self
            .level
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| {
                (cur > floor && cur >= cost).then(|| cur - cost)
            })
            .is_ok();
        if admitted {
            Ok(Spent(cost))
        } else {
            Err(Denied)
        }
    }

    /// Charges the failure cost for a retryable failure that will not be
    /// retried anyway (e.g. the call's last attempt): the bucket still learns
    /// that the endpoint failed.
    ///
    /// ```
    /// let b = herdless::RetryBudget::grpc(10.0, 0.1)?;
    /// b.record_failure();
    /// assert_eq!(b.tokens(), 9.0);
    /// # Ok::<(), herdless::guard::RetryBudgetError>(())
    /// ```
    pub fn record_failure(&self) {
        let cost = self.cfg.failure_cost;
        if cost > 0 {
            let _ = self
                .level
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| {
                    Some(cur.saturating_sub(cost))
                });
        }
    }

    /// Records a successful call. `last_retry` is what the call's last admitted
    /// retry spent (`None` for a first-try success): with
    /// [`refund_retry_cost`](RetryBudgetBuilder::refund_retry_cost) that amount
    /// is returned, otherwise [`success_refund`](RetryBudgetBuilder::success_refund)
    /// is added. The level never exceeds the capacity.
    ///
    /// ```
    /// let b = herdless::RetryBudget::grpc(10.0, 0.5)?;
    /// b.record_failure();
    /// b.record_success(None);
    /// assert_eq!(b.tokens(), 9.5);
    /// b.record_success(None);
    /// b.record_success(None);
    /// assert_eq!(b.tokens(), 10.0); // capped
    /// # Ok::<(), herdless::guard::RetryBudgetError>(())
    /// ```
    pub fn record_success(&self, last_retry: Option<Spent>) {
        let amount = match last_retry {
            Some(spent) if self.cfg.refund_retry_cost => spent.0,
            _ => self.cfg.success_refund,
        };
        self.deposit(amount);
    }

    /// Returns `spent` to the bucket unconditionally (capped at the capacity):
    /// for a retry that was admitted but never made (e.g. cancelled).
    ///
    /// ```
    /// let b = herdless::RetryBudget::aws();
    /// let s = b.try_retry(herdless::RetryCause::Error, 0.0).unwrap();
    /// b.refund(s);
    /// assert_eq!(b.tokens(), 500.0);
    /// ```
    pub fn refund(&self, spent: Spent) {
        self.deposit(spent.0);
    }

    fn deposit(&self, amount: u64) {
        if amount == 0 {
            return;
        }
        let max = self.cfg.max;
        let _ = self
            .level
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| {
                Some(cur.saturating_add(amount).min(max))
            });
    }
}

#[cfg(test)]
mod tests;
