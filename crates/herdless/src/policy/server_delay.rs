//! Server-supplied delays (Retry-After style): honored, clamped, spread.
//!
//! A 429 or 503 often says exactly when the server expects to be ready, and the
//! server knows more than any exponential curve, so a positive server delay
//! overrides the computed jitter. Three guards keep that from hurting:
//!
//! 1. **Clamp.** The delay is clamped to [`Policy::max_retry_after`] so a hostile
//!    or misconfigured header cannot park a worker for an hour.
//! 2. **Spread.** A fleet told "retry in 5 s" would come back in one wave 5 s
//!    later, so the delay `r` becomes a uniform draw in `[r, r · (1 + s)]` with
//!    `s` = [`Policy::retry_after_spread`] (default 0.1: at most +10 %). The
//!    spread is *positive*: never earlier than the server asked. When `r` is at or
//!    above the clamp `M`, the draw is uniform in `[M / (1 + s), M]`, so clamped
//!    delays do not pile up on `M` either.
//! 3. **Budget.** The resulting sleep counts against the elapsed budget exactly
//!    like a computed one: if it would carry the call past `max_elapsed`, the
//!    call gives up before sleeping (peers such as backoff let a server delay skip
//!    the budget).
//!
//! Zero, negative, NaN or missing values never reach this module: they fall back
//! to the computed jitter (see [`Classification::retry_after_secs`]).
//!
//! [`Classification::retry_after_secs`]: crate::Classification::retry_after_secs

use std::time::Duration;

use crate::policy::Policy;
use crate::rng::Rng;

impl Policy {
    /// The sleep for a server-supplied delay `requested`: clamped to
    /// [`max_retry_after`](Policy::max_retry_after) and spread by
    /// [`retry_after_spread`](Policy::retry_after_spread). See the [module
    /// documentation](crate::policy::server_delay).
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::{Policy, Rng};
    /// let p = Policy::default(); // clamp 60 s, spread 10 %
    /// let mut rng = Rng::with_seed(1);
    /// let d = p.server_delay(Duration::from_secs(5), &mut rng);
    /// assert!(d >= Duration::from_secs(5) && d <= Duration::from_millis(5500));
    /// let hostile = p.server_delay(Duration::from_secs(86_400), &mut rng);
    /// assert!(hostile <= Duration::from_secs(60));
    /// ```
    pub fn server_delay(&self, requested: Duration, rng: &mut Rng) -> Duration {
        Duration::from_nanos(self.server_delay_ns(requested, rng))
    }

    pub(crate) fn server_delay_ns(&self, requested: Duration, rng: &mut Rng) -> u64 {
        let max = self.max_retry_after_ns;
        let r = u64::try_from(requested.as_nanos()).unwrap_or(u64::MAX);
        let s = self.retry_after_spread;
        if r >= max {
            let lo = (max as f64 / (1.0 + s)) as u64;
            return rng.between(lo.min(max), max);
        }
        let hi = (r as f64 * (1.0 + s)) as u64;
        rng.between(r, hi.min(max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clamped_and_spread_upward_only() {
        let p = Policy::builder()
            .max_retry_after(Duration::from_secs(10))
            .retry_after_spread(0.2)
            .build()
            .unwrap();
        let mut rng = Rng::with_seed(5);
        let mut distinct = std::collections::HashSet::new();
        for _ in 0..5_000 {
            let d = p.server_delay(Duration::from_secs(2), &mut rng);
            assert!(d >= Duration::from_secs(2) && d <= Duration::from_millis(2400));
            distinct.insert(d);
            let big = p.server_delay(Duration::MAX, &mut rng);
            assert!(big <= Duration::from_secs(10));
            assert!(big >= Duration::from_secs_f64(10.0 / 1.2) - Duration::from_nanos(1));
            let near = p.server_delay(Duration::from_millis(9_500), &mut rng);
            assert!(near >= Duration::from_millis(9_500) && near <= Duration::from_secs(10));
        }
        assert!(distinct.len() > 1000, "the spread actually spreads");
    }

    #[test]
    fn zero_spread_is_exact() {
        let p = Policy::builder().retry_after_spread(0.0).build().unwrap();
        let mut rng = Rng::with_seed(5);
        assert_eq!(
            p.server_delay(Duration::from_secs(3), &mut rng),
            Duration::from_secs(3)
        );
        assert_eq!(
            p.server_delay(Duration::from_secs(999), &mut rng),
            p.max_retry_after()
        );
    }
}
