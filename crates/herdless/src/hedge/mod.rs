//! Hedged requests that can never become a storm.
//!
//! A **hedge** is a second copy of a slow request, sent after a delay; the
//! first success wins and the other copies are dropped (cancelled). It cuts
//! the latency tail when a few answers are slow for reasons that do not
//! repeat (a GC pause, a cold cache, a slow replica): the copy goes to a
//! server that is not in that state. It does nothing for a backend that is
//! slow for everyone, and there it does harm: a hedge is a retry sent
//! *before* the failure, so an unbounded hedger doubles the load exactly when
//! the backend is slow — a storm by another door (tower's `hedge` has no
//! bound; gRPC's design bounds hedges with its retry throttle).
//!
//! herdless hedges through the same engine as its retries, so every hedge is
//! a decision with the same guards ([`Hedging::send`](crate::engine::Hedging::send),
//! in this order):
//!
//! 1. a server that pushed back (a `Retry-After` or gRPC pushback answer,
//!    [`Classification::DoNotRetry`](crate::Classification::DoNotRetry))
//!    stops hedging for the rest of the call;
//! 2. at most [`max_hedges`](HedgeBuilder::max_hedges) extra copies per call,
//!    and never more copies than `max_attempts` (hedges count as attempts);
//! 3. a request that is not idempotent is not hedged unless
//!    [allowed](HedgeBuilder::allow_non_idempotent);
//! 4. none once the elapsed limit is spent;
//! 5. none while the shared [`Breaker`](crate::Breaker) is open;
//! 6. the shared [`RetryBudget`](crate::RetryBudget) must admit it, as a
//!    retry: it costs a retry's tokens
//!    ([`RetryBudget::try_hedge`](crate::RetryBudget::try_hedge)). During an
//!    outage the failures drain the budget and the hedges stop; while the
//!    backend is healthy the successes refund it.
//!
//! The delay is fixed ([`HedgeBuilder::delay`]) or follows the endpoint: a
//! quantile of the last answers' latencies ([`HedgeBuilder::percentile`],
//! p95 of the last 1000 by default), never below a floor
//! ([`HedgeBuilder::min_delay`]). Only the winning copy's latency is recorded
//! (the losers are dropped before they answer), from its own start.
//!
//! Drivers: [`Retry::hedge_async`](crate::Retry::hedge_async) (any async
//! operation) and the tower [`HedgeLayer`](crate::adapters::tower::HedgeLayer)
//! (feature `tower`); the fleet simulator's `latency-tail` scenario drives the
//! same decisions. Events: `hedge_sent` and `hedge_won` (see
//! [`events`](crate::events)); metrics: `herdless_hedges_total`,
//! `herdless_hedge_wins_total`.
//!
//! Where hedging lives, one file per layer: this folder, the policy
//! ([`Hedge`], its builder, the latency window); `engine/call/hedge.rs`, the
//! engine's decisions ([`Hedging`](crate::engine::Hedging) and its gates,
//! sans-IO like every decision); `retry/hedged.rs`, the async executor
//! ([`Retry::hedge_async`](crate::Retry::hedge_async)); and, with the
//! `tower` feature, `adapters/tower/hedge.rs`
//! ([`HedgeLayer`](crate::adapters::tower::HedgeLayer)).
//!
//! ```
//! use std::time::Duration;
//! use herdless::hedge::Hedge;
//! let fixed = Hedge::builder().delay(Duration::from_millis(20)).build()?;
//! assert_eq!(fixed.delay(), Duration::from_millis(20));
//! let tracked = Hedge::builder().percentile(0.95).min_delay(Duration::from_millis(5)).build()?;
//! assert_eq!(tracked.delay(), Duration::from_millis(5)); // nothing recorded yet: the floor
//! # Ok::<(), herdless::hedge::HedgeError>(())
//! ```

use std::fmt;
use std::time::Duration;

mod window;

use window::LatencyWindow;

/// How a hedged call spaces its copies, and how many it may send; shared by
/// every call of a driver (behind an `Arc`, or borrowed). See the [module
/// documentation](self).
///
/// ```
/// use std::time::Duration;
/// let h = herdless::hedge::Hedge::builder().delay(Duration::from_millis(10)).max_hedges(2).build()?;
/// assert_eq!(h.max_hedges(), 2);
/// assert!(!h.allows_non_idempotent());
/// # Ok::<(), herdless::hedge::HedgeError>(())
/// ```
#[derive(Debug)]
pub struct Hedge {
    delay: Delay,
    min_delay: Duration,
    max_hedges: u32,
    allow_non_idempotent: bool,
}

#[derive(Debug)]
enum Delay {
    Fixed(Duration),
    Tracked(LatencyWindow),
}

impl Hedge {
    /// The most extra copies one call may send.
    pub const MAX_HEDGES: u32 = 10;
    /// The largest latency window.
    pub const MAX_WINDOW: usize = 100_000;

    /// A builder: p95 of the last 1000 latencies (trusted after 20), at
    /// least 1 ms, one hedge per call, idempotent requests only.
    pub fn builder() -> HedgeBuilder {
        HedgeBuilder::default()
    }

    /// The delay before the next copy now: the fixed delay, or the tracked
    /// quantile (at least the floor; the floor until enough latencies were
    /// recorded).
    ///
    /// ```
    /// use std::time::Duration;
    /// let h = herdless::hedge::Hedge::builder().percentile(0.5).window(16, 4).build()?;
    /// for ms in [3, 4, 5, 6] { h.record(Duration::from_millis(ms)); }
    /// assert_eq!(h.delay(), Duration::from_millis(4));
    /// # Ok::<(), herdless::hedge::HedgeError>(())
    /// ```
    #[inline]
    pub fn delay(&self) -> Duration {
        match &self.delay {
            Delay::Fixed(d) => *d,
            Delay::Tracked(w) => w
                .current()
                .map_or(self.min_delay, |q| q.max(self.min_delay)),
        }
    }

    /// Records the latency of a copy that won (the engine does, on a win;
    /// a fixed delay ignores it).
    pub fn record(&self, latency: Duration) {
        if let Delay::Tracked(w) = &self.delay {
            w.record(latency);
        }
    }

    /// The most extra copies one call sends (1 to [`MAX_HEDGES`](Self::MAX_HEDGES)).
    pub fn max_hedges(&self) -> u32 {
        self.max_hedges
    }

    /// Whether requests that are not idempotent may be hedged.
    pub fn allows_non_idempotent(&self) -> bool {
        self.allow_non_idempotent
    }
}

/// Builds a [`Hedge`], validating every setting.
///
/// | setting | default | range |
/// |---|---|---|
/// | [`delay`](Self::delay) (fixed) or [`percentile`](Self::percentile) (tracked) | p95 | delay: 1 ns to `u64::MAX` ns; quantile: `(0, 1)` |
/// | [`window`](Self::window): latencies kept, and recorded before the quantile is trusted | 1000, 20 | 1 to 100 000; 1 to the window |
/// | [`min_delay`](Self::min_delay): the tracked delay's floor | 1 ms | 0 to `u64::MAX` ns |
/// | [`max_hedges`](Self::max_hedges) | 1 | 1 to 10 |
/// | [`allow_non_idempotent`](Self::allow_non_idempotent) | false | |
#[derive(Debug, Clone, Copy, PartialEq)]
#[must_use = "a builder does nothing until it is built"]
pub struct HedgeBuilder {
    fixed: Option<Duration>,
    quantile: f64,
    window: usize,
    min_samples: usize,
    min_delay: Duration,
    max_hedges: u32,
    allow_non_idempotent: bool,
}

impl Default for HedgeBuilder {
    fn default() -> Self {
        HedgeBuilder {
            fixed: None,
            quantile: 0.95,
            window: 1000,
            min_samples: 20,
            min_delay: Duration::from_millis(1),
            max_hedges: 1,
            allow_non_idempotent: false,
        }
    }
}

impl HedgeBuilder {
    /// A fixed delay before each hedge (positive).
    pub fn delay(mut self, delay: Duration) -> Self {
        self.fixed = Some(delay);
        self
    }

    /// A tracked delay: this quantile (strictly between 0 and 1) of the
    /// recent latencies.
    pub fn percentile(mut self, quantile: f64) -> Self {
        self.fixed = None;
        self.quantile = quantile;
        self
    }

    /// The tracked delay's window: the last `size` latencies, trusted once
    /// `min_samples` were recorded (the floor applies until then).
    pub fn window(mut self, size: usize, min_samples: usize) -> Self {
        self.window = size;
        self.min_samples = min_samples;
        self
    }

    /// The tracked delay's floor: never hedge sooner than this.
    pub fn min_delay(mut self, floor: Duration) -> Self {
        self.min_delay = floor;
        self
    }

    /// The most extra copies per call.
    pub fn max_hedges(mut self, n: u32) -> Self {
        self.max_hedges = n;
        self
    }

    /// Whether requests that are not idempotent (by the driver's reading: an
    /// HTTP method outside RFC 9110's idempotent set, without an
    /// `Idempotency-Key`) may be hedged. Only with a server that
    /// deduplicates them.
    pub fn allow_non_idempotent(mut self, allow: bool) -> Self {
        self.allow_non_idempotent = allow;
        self
    }

    /// Validates and builds.
    ///
    /// # Errors
    ///
    /// [`HedgeError`] naming the setting out of its range.
    ///
    /// ```
    /// let err = herdless::hedge::Hedge::builder().max_hedges(0).build().unwrap_err();
    /// assert_eq!(err.to_string(), "invalid max_hedges: 0 is out of range (expected 1 to 10)");
    /// ```
    pub fn build(self) -> Result<Hedge, HedgeError> {
        let err = |setting, message: String| Err(HedgeError { setting, message });
        if !(1..=Hedge::MAX_HEDGES).contains(&self.max_hedges) {
            let n = self.max_hedges;
            return err(
                "max_hedges",
                format!("{n} is out of range (expected 1 to 10)"),
            );
        }
        let too_long = |d: Duration| d > crate::policy::MAX_DURATION;
        if too_long(self.min_delay) {
            return err("min_delay", "is too large (at most u64::MAX ns)".into());
        }
        let delay = match self.fixed {
            Some(d) if d.is_zero() || too_long(d) => {
                return err(
                    "delay",
                    format!("{d:?} is out of range (1 ns to u64::MAX ns)"),
                );
            }
            Some(d) => Delay::Fixed(d),
            None => {
                let q = self.quantile;
                if !(q > 0.0 && q < 1.0) {
                    return err(
                        "percentile",
                        format!("{q} is out of range (expected (0, 1))"),
                    );
                }
                if !(1..=Hedge::MAX_WINDOW).contains(&self.window) {
                    let w = self.window;
                    return err(
                        "window",
                        format!("{w} is out of range (expected 1 to 100000)"),
                    );
                }
                if !(1..=self.window).contains(&self.min_samples) {
                    let (m, w) = (self.min_samples, self.window);
                    return err(
                        "min_samples",
                        format!("{m} is out of range (expected 1 to {w})"),
                    );
                }
                Delay::Tracked(LatencyWindow::new(q, self.window, self.min_samples))
            }
        };
        Ok(Hedge {
            delay,
            min_delay: self.min_delay,
            max_hedges: self.max_hedges,
            allow_non_idempotent: self.allow_non_idempotent,
        })
    }
}

/// A [`HedgeBuilder`] setting out of its range.
///
/// ```
/// let err = herdless::hedge::Hedge::builder().percentile(1.0).build().unwrap_err();
/// assert_eq!(err.setting(), "percentile");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HedgeError {
    setting: &'static str,
    message: String,
}

impl HedgeError {
    /// The setting: `delay`, `percentile`, `window`, `min_samples`,
    /// `min_delay`, `max_hedges`.
    pub fn setting(&self) -> &'static str {
        self.setting
    }
}

impl fmt::Display for HedgeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {}: {}", self.setting, self.message)
    }
}

impl std::error::Error for HedgeError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_out_of_range_is_named() {
        let b = Hedge::builder;
        let cases = [
            (b().delay(Duration::ZERO), "delay"),
            (b().delay(Duration::MAX), "delay"),
            (b().percentile(0.0), "percentile"),
            (b().percentile(f64::NAN), "percentile"),
            (b().window(0, 1), "window"),
            (b().window(100_001, 1), "window"),
            (b().window(10, 11), "min_samples"),
            (b().window(10, 0), "min_samples"),
            (b().min_delay(Duration::MAX), "min_delay"),
            (b().max_hedges(11), "max_hedges"),
        ];
        for (builder, setting) in cases {
            assert_eq!(builder.build().unwrap_err().setting(), setting);
        }
        assert!(b().build().is_ok());
    }
}
