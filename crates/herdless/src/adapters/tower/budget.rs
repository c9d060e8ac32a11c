//! [`RetryBudget`] as a [`tower::retry::budget::Budget`].
//!
//! tower's own policies (and any policy written against tower's trait) can
//! share a herdless bucket instead of tower's `TpsBudget`. The mapping:
//!
//! | `Budget` | `RetryBudget` |
//! |---|---|
//! | `deposit()`: a request succeeded | [`record_success(None)`](RetryBudget::record_success): adds `success_refund` (gRPC `tokenRatio`, AWS 1), capped at `max_tokens` |
//! | `withdraw()`: may this failed request be retried? | [`try_retry(RetryCause::Error, 0.0)`](RetryBudget::try_retry): charges `failure_cost`, then admits when the level stays strictly above `threshold` and covers `retry_cost`, which is withdrawn |
//!
//! tower's trait carries no call identity, so a withdrawal uses the plain
//! threshold (no per-call spread), no timeout cost and no
//! `refund_retry_cost`; [`RetryPolicy`](crate::adapters::tower::RetryPolicy)
//! does not go through this trait: it hands the budget to the engine, which
//! uses all of them.

use crate::classify::RetryCause;
use crate::guard::RetryBudget;

impl tower::retry::budget::Budget for RetryBudget {
    /// A success: adds the success refund (capped).
    ///
    /// ```
    /// use tower::retry::budget::Budget;
    /// let b = herdless::RetryBudget::grpc(10.0, 0.5)?;
    /// b.record_failure();
    /// b.deposit();
    /// assert_eq!(b.tokens(), 9.5);
    /// # Ok::<(), herdless::guard::RetryBudgetError>(())
    /// ```
    fn deposit(&self) {
        self.record_success(None);
    }

    /// A retry admission: charges the failure cost, then admits (and
    /// withdraws the retry cost) while the level stays above the threshold.
    ///
    /// ```
    /// use tower::retry::budget::Budget;
    /// let b = herdless::RetryBudget::builder().grpc(4.0, 0.1).spread(0.0).build()?;
    /// assert!(b.withdraw()); // 4 → 3 > 2
    /// assert!(!b.withdraw()); // 3 → 2, not above 2
    /// # Ok::<(), herdless::guard::RetryBudgetError>(())
    /// ```
    fn withdraw(&self) -> bool {
        self.try_retry(RetryCause::Error, 0.0).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tower::retry::budget::Budget;

    use crate::RetryBudget;

    #[test]
    fn aws_withdrawals_and_deposits() {
        let b = RetryBudget::builder()
            .aws()
            .max_tokens(12.0)
            .spread(0.0)
            .build()
            .unwrap();
        assert!(b.withdraw()); // 12 → 7
        assert!(b.withdraw()); // 7 → 2
        assert!(!b.withdraw()); // 2 < 5: denied, nothing withdrawn
        assert_eq!(b.tokens(), 2.0);
        b.deposit();
        assert_eq!(b.tokens(), 3.0);
        for _ in 0..100 {
            b.deposit();
        }
        assert_eq!(b.tokens(), 12.0); // capped
    }

    #[test]
    fn grpc_denial_still_charges_the_failure() {
        let b = RetryBudget::builder()
            .grpc(10.0, 0.1)
            .spread(0.0)
            .build()
            .unwrap();
        let admitted = (0..10).filter(|_| b.withdraw()).count();
        assert_eq!(admitted, 4);
        assert_eq!(b.tokens(), 0.0);
    }

    #[test]
    fn shared_through_arc_by_deref() {
        let b = Arc::new(RetryBudget::aws());
        let other = Arc::clone(&b);
        assert!(other.withdraw());
        assert_eq!(b.tokens(), 495.0);
        // Generic code over `B: Budget` takes the bucket itself.
        fn spend<B: Budget>(b: &B) -> bool {
            b.withdraw()
        }
        assert!(spend(&*b));
        assert_eq!(b.tokens(), 490.0);
    }
}
