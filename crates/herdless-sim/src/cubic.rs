//! The `full+cubic` baseline: an AWS-SDK-adaptive-style client rate limiter,
//! written here as a baseline to compare the library's
//! [`Throttle`](herdless::guard::Throttle) with (it is not a library guard).
//!
//! What the AWS SDKs' `adaptive` retry mode does (botocore's
//! `ClientRateLimiter`, the other SDKs alike), per process:
//!
//! * a **token bucket** gates every attempt, the first included; it is off
//!   until the first throttling answer, then on for good;
//! * the **sending rate is measured** in half-second buckets, smoothed
//!   (`0.8 · this bucket + 0.2 · before`);
//! * on a **throttling answer** the rate is cut to `0.7 ×` the measured rate
//!   (the bucket's rate, if lower) and that becomes CUBIC's `W_max`; on any
//!   other answer it follows CUBIC, `0.4 · (t − K)³ + W_max` with
//!   `K = ∛(W_max · 0.3 / 0.4)`, `t` since the last throttle;
//! * the bucket's rate is then the new rate, at most twice the measured rate,
//!   at least 0.5 per second; its capacity is the rate (at least 1 token).
//!
//! Whether it reacts to an outage at all depends on the classification: the
//! AWS SDKs count 429s and throttling error codes, not a 503. The simulator's
//! endpoint answers 503; [`GuardParams::cubic_counts_503`](crate::guard::GuardParams::cubic_counts_503)
//! (default `true`, the baseline at its best) says whether the limiter takes
//! it as throttling. With `false` it never turns on: `full+cubic` is then
//! plain full jitter.
//!
//! Retry decisions stay the library's: the limiter only makes an attempt wait
//! (a re-check, not a call), as the library's throttle does.

/// CUBIC's scale constant.
const SCALE: f64 = 0.4;
/// CUBIC's multiplicative decrease.
const BETA: f64 = 0.7;
/// The lowest fill rate, tokens per second.
const MIN_RATE: f64 = 0.5;
/// The measured rate's smoothing.
const SMOOTHING: f64 = 0.8;
/// The measuring bucket, nanoseconds (half a second).
const BUCKET_NS: u64 = 500_000_000;

/// One process's limiter, in virtual time (nanoseconds).
///
/// ```
/// use herdless_sim::cubic::CubicLimiter;
/// let mut c = CubicLimiter::new(0);
/// assert_eq!(c.acquire(0), Ok(())); // off until the first throttle
/// c.answer(0, true);
/// assert_eq!(c.acquire(0), Ok(())); // the one token
/// assert!(c.acquire(0).is_err()); // 0.5 per second from now on
/// ```
#[derive(Debug, Clone)]
pub struct CubicLimiter {
    enabled: bool,
    fill_rate: f64,
    capacity: f64,
    tokens: f64,
    last_refill: u64,
    w_max: f64,
    k: f64,
    last_fail: u64,
    measured: f64,
    count: f64,
    last_bucket: u64,
}

impl CubicLimiter {
    /// A limiter whose clock starts at `now` (nanoseconds).
    pub fn new(now: u64) -> Self {
        CubicLimiter {
            enabled: false,
            fill_rate: MIN_RATE,
            capacity: 1.0,
            tokens: 1.0,
            last_refill: now,
            w_max: 0.0,
            k: 0.0,
            last_fail: now,
            measured: 0.0,
            count: 0.0,
            last_bucket: now / BUCKET_NS * BUCKET_NS,
        }
    }

    /// The bucket's fill rate, per second (meaningful once on).
    pub fn rate(&self) -> f64 {
        self.fill_rate
    }

    fn refill(&mut self, now: u64) {
        if now > self.last_refill {
            let add = (now - self.last_refill) as f64 / 1e9 * self.fill_rate;
            self.tokens = (self.tokens + add).min(self.capacity);
            self.last_refill = now;
        }
    }

    /// May an attempt go at `now`? `Err(wait_ns)`: not before the next token.
    pub fn acquire(&mut self, now: u64) -> Result<(), u64> {
        if !self.enabled {
            return Ok(());
        }
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Ok(());
        }
        let wait = (1.0 - self.tokens) / self.fill_rate * 1e9;
        Err((wait.ceil() as u64).max(1))
    }

    /// The smoothed sending rate, counting this answer's call.
    fn record(&mut self, now: u64) -> f64 {
        let bucket = now / BUCKET_NS * BUCKET_NS;
        self.count += 1.0;
        if bucket > self.last_bucket {
            let rate = self.count / ((bucket - self.last_bucket) as f64 / 1e9);
            self.measured = rate * SMOOTHING + self.measured * (1.0 - SMOOTHING);
            self.count = 0.0;
            self.last_bucket = bucket;
        }
        self.measured
    }

    fn zero_point(&self) -> f64 {
        (self.w_max * (1.0 - BETA) / SCALE).cbrt()
    }

    /// An answer at `now`: `throttled` if it counts as throttling.
    pub fn answer(&mut self, now: u64, throttled: bool) {
        let measured = self.record(now);
        let new_rate = if throttled {
            let rate = if self.enabled {
                measured.min(self.fill_rate)
            } else {
                measured
            };
            self.w_max = rate;
            self.k = self.zero_point();
            self.last_fail = now;
            self.enabled = true;
            rate * BETA
        } else {
            let dt = now.saturating_sub(self.last_fail) as f64 / 1e9;
            SCALE * (dt - self.k).powi(3) + self.w_max
        };
        self.refill(now);
        let rate = new_rate.min(2.0 * measured).max(MIN_RATE);
        self.fill_rate = rate;
        self.capacity = rate.max(1.0);
        self.tokens = self.tokens.min(self.capacity);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn off_until_throttled_then_cut_to_the_measured_rate() {
        let mut c = CubicLimiter::new(0);
        // 100 calls per second for 2 s, all served: never limited.
        for i in 0..200u64 {
            let now = i * S / 100;
            assert_eq!(c.acquire(now), Ok(()));
            c.answer(now, false);
        }
        // The first throttle: 0.7 × the measured ~100/s.
        c.answer(2 * S, true);
        assert!((c.rate() - 70.0).abs() < 5.0, "{}", c.rate());
    }

    #[test]
    fn the_rate_follows_cubic_back_to_w_max_and_beyond() {
        let mut c = CubicLimiter::new(0);
        for i in 0..200u64 {
            c.answer(i * S / 100, false);
        }
        c.answer(2 * S, true);
        let w_max = c.rate() / BETA;
        let k = (w_max * (1.0 - BETA) / SCALE).cbrt();
        // Keep sending at the bucket's rate so the measured rate does not cap it.
        let mut now = 2 * S;
        while now < 2 * S + (k * 1e9) as u64 {
            now += S / 200;
            if c.acquire(now).is_ok() {
                c.answer(now, false);
            }
        }
        assert!(
            (c.rate() - w_max).abs() / w_max < 0.1,
            "{} vs {w_max}",
            c.rate()
        );
    }
}
