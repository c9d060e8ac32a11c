//! Server-supplied delays (Retry-After style): honored, clamped, spread.
//!
//! A 429 or 503 often says exactly when the server expects to be ready, and the
//! server knows more than any exponential curve, so a positive server delay
//! overrides the computed jitter. Three guards keep that from hurting:
//!
//! 1. **Clamp.** The server's delay `r` is first bounded by `M` =
//!    [`Policy::max_retry_after`]: `d = min(r, M)`, so a hostile or
//!    misconfigured header cannot park a worker for an hour.
//! 2. **Spread.** A fleet told "retry in 5 s" would come back in one wave 5 s
//!    later, so the sleep is a uniform draw in `[d, d · (1 + s)]` with `s` =
//!    [`Policy::retry_after_spread`] (default 0.1: +0 to 10 %). The spread is
//!    *added*: the sleep is never shorter than the server asked, nor shorter
//!    than the clamp when the server asked for more. `max_retry_after` bounds
//!    the server's value; the spread is added on top, so the longest sleep is
//!    `max_retry_after · (1 + spread)` (66 s with the defaults), and clamped
//!    delays are spread over `[M, M · (1 + s)]` instead of piling up on `M`.
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
    /// The sleep for a server-supplied delay `requested`: `d =
    /// min(requested, max_retry_after)` plus a uniform spread of +0 to
    /// [`retry_after_spread`](Policy::retry_after_spread) of `d`, so it lies in
    /// `[d, d · (1 + spread)]` and may exceed
    /// [`max_retry_after`](Policy::max_retry_after) by up to the spread. See the
    /// [module documentation](crate::policy::server_delay).
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::{Policy, Rng};
    /// let p = Policy::default(); // clamp 60 s, spread 10 %
    /// let mut rng = Rng::with_seed(1);
    /// let d = p.server_delay(Duration::from_secs(5), &mut rng);
    /// assert!(d >= Duration::from_secs(5) && d <= Duration::from_millis(5500));
    /// let hostile = p.server_delay(Duration::from_secs(86_400), &mut rng);
    /// assert!(hostile >= Duration::from_secs(60) && hostile <= Duration::from_secs(66));
    /// ```
    pub fn server_delay(&self, requested: Duration, rng: &mut Rng) -> Duration {
        Duration::from_nanos(self.server_delay_ns(requested, rng))
    }

    pub(crate) fn server_delay_ns(&self, requested: Duration, rng: &mut Rng) -> u64 {
        let r = u64::try_from(requested.as_nanos()).unwrap_or(u64::MAX);
        let d = r.min(self.max_retry_after_ns);
        // `as` truncates toward zero (and saturates); the sum saturates at
        // `u64::MAX` ns.
        let extra = (d as f64 * self.retry_after_spread) as u64;
        rng.between(d, d.saturating_add(extra))
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
            assert!(big >= Duration::from_secs(10) && big <= Duration::from_secs(12));
            let near = p.server_delay(Duration::from_millis(9_500), &mut rng);
            assert!(near >= Duration::from_millis(9_500) && near <= Duration::from_millis(11_400));
        }
        assert!(distinct.len() > 1000, "the spread actually spreads");
    }

    /// `Retry-After: 120` with a 2 s clamp: every sleep is at least the clamp
    /// (never below it) and at most the clamp plus the 10 % spread.
    #[test]
    fn at_the_clamp_the_spread_is_added_not_subtracted() {
        let p = Policy::builder()
            .max_retry_after(Duration::from_secs(2))
            .build()
            .unwrap();
        let mut rng = Rng::with_seed(11);
        let (mut lo, mut hi) = (Duration::MAX, Duration::ZERO);
        for _ in 0..10_000 {
            let d = p.server_delay(Duration::from_secs(120), &mut rng);
            assert!(d >= Duration::from_secs(2), "{d:?} below the clamp");
            assert!(d <= Duration::from_millis(2200), "{d:?} above clamp · 1.1");
            lo = lo.min(d);
            hi = hi.max(d);
        }
        assert!(lo < Duration::from_millis(2002) && hi > Duration::from_millis(2198));
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
