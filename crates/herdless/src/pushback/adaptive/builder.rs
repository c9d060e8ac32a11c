//! [`AdaptiveBuilder`]: the adaptive allocator's settings and their ranges.

use std::time::Duration;

use super::estimate::Estimate;
use super::{AdaptiveAllocator, Mode};
use crate::pushback::tuning::{DEFAULT_MIN_HOLD, HOLD_GROWTH, HOLD_MAX_SPAN, RELEASE_START};
use crate::pushback::{PushbackError, ns};

/// The lowest capacity the estimate can fall to, in requests per second.
pub const MIN_CAPACITY: f64 = 1.0;
/// The highest capacity the estimate can reach, in requests per second.
pub const MAX_CAPACITY: f64 = 1e9;

/// Settings of an [`AdaptiveAllocator`], validated by [`build`](Self::build).
///
/// | setting | default | range |
/// |---|---|---|
/// | [`estimate`](Self::estimate): the starting capacity, requests/s | none: 10/s and a slow start | `1..=1e9` |
/// | [`horizon`](Self::horizon): the longest delay handed out | 60 s | 1 s ..= 1 day |
/// | [`burst`](Self::burst): admissions tolerated back to back, as time at the estimate | 100 ms | 1 ms ..= 10 s |
/// | [`min_hold`](Self::min_hold): the shortest delay while the service is down with an unknown end | 2 s (or the horizon, if shorter) | 0 ..= horizon |
/// | [`probe_interval`](Self::probe_interval): one request let through per interval while down | 50 ms | 1 ms ..= 1 h |
/// | [`window`](Self::window): the learning window | 100 ms | 10 ms ..= 1 min |
/// | [`down_after`](Self::down_after): consecutive refusals, with no success in the window, that mean "down" | 5 | `1..` |
/// | [`client_spread`](Self::client_spread): how late callers come back after their slot, as a share of the delay | 0.1 (herdless clients' `retry_after_spread`) | `0..=1` |
/// | [`callers`](Self::callers): callers numbered `0..n`, tracked in a table allocated up front | 0 (every key in a hash map) | `0..=100_000_000` |
/// | [`hold`](Self::hold): hold requests open instead of answering them (a capacity-aware reconnect queue) | off | |
/// | [`hold_max`](Self::hold_max): the most requests held at once (turns the hold on) | 12 s of the estimate at the default `hold_for_max` (120,000 at 10,000/s): what the starting release rate serves in 0.4 `hold_for_max` | `1..=10_000_000` |
/// | [`hold_for`](Self::hold_for): the longest a request is held when its caller says nothing of its patience (turns the hold on) | 10 s (below common clients' per-attempt timeouts) | 10 ms ..= 1 h |
/// | [`hold_for_max`](Self::hold_for_max): the longest a request is held when its caller says it waits longer (`Prefer: wait=N`, N at least this and 1 s more) (turns the hold on) | 50 s (below the 60 s idle timeout of common proxies and load balancers), at least `hold_for` | `hold_for` ..= 1 h |
///
/// ```
/// use std::time::Duration;
/// use herdless::pushback::AdaptiveAllocator;
/// let a = AdaptiveAllocator::builder()
///     .estimate(10_000.0)
///     .horizon(Duration::from_secs(60))
///     .build()?;
/// assert_eq!(a.capacity(), 10_000.0);
/// assert!(AdaptiveAllocator::builder().horizon(Duration::from_millis(5)).build().is_err());
/// # Ok::<(), herdless::pushback::PushbackError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[must_use]
pub struct AdaptiveBuilder {
    estimate: Option<f64>,
    horizon: Duration,
    burst: Duration,
    /// `None`: the default (2 s, at most the horizon).
    min_hold: Option<Duration>,
    probe_interval: Duration,
    window: Duration,
    down_after: u32,
    client_spread: f64,
    callers: usize,
    hold: bool,
    hold_max: Option<usize>,
    hold_for: Option<Duration>,
    hold_for_max: Option<Duration>,
}

impl Default for AdaptiveBuilder {
    fn default() -> Self {
        AdaptiveBuilder {
            estimate: None,
            horizon: Duration::from_secs(60),
            burst: Duration::from_millis(100),
            min_hold: None,
            probe_interval: Duration::from_millis(50),
            window: Duration::from_millis(100),
            down_after: 5,
            client_spread: crate::Policy::DEFAULT_RETRY_AFTER_SPREAD,
            callers: 0,
            hold: false,
            hold_max: None,
            hold_for: None,
            hold_for_max: None,
        }
    }
}

/// The most requests [`AdaptiveBuilder::hold_max`] accepts.
pub const MAX_HOLD: usize = 10_000_000;

/// How long a request is held at most, by default.
pub const DEFAULT_HOLD_FOR: Duration = Duration::from_secs(10);

/// The default longest hold of a request whose caller says it waits longer
/// ([`AdaptiveBuilder::hold_for_max`]): 50 s, below the 60 s idle timeout of
/// common proxies and load balancers (nginx's `proxy_read_timeout`, AWS's
/// application load balancer), which would cut a held connection.
pub const DEFAULT_HOLD_FOR_MAX: Duration = Duration::from_secs(50);

/// The default bound: what the starting release rate (`RELEASE_START` of
/// the estimate) lets through in `HOLD_MAX_SPAN` of the longest hold,
/// `hold_for_max` (see `pushback/tuning.rs`), so that a hold filled at an
/// outage's start with patient callers is drained before the first of them
/// runs out of time when the outage lasts up to `1 − HOLD_MAX_SPAN` of it,
/// even at the starting rate.
fn default_hold_max(estimate: f64, longest: Duration) -> usize {
    let n = RELEASE_START * estimate * HOLD_MAX_SPAN * longest.as_secs_f64();
    (n.round() as usize).clamp(1, MAX_HOLD)
}

/// The most callers [`AdaptiveBuilder::callers`] allocates a table for.
pub const MAX_CALLERS: usize = 100_000_000;

/// The starting capacity without an estimate.
const NO_ESTIMATE: f64 = 10.0;

impl AdaptiveBuilder {
    /// The starting capacity estimate, requests per second. Without one the
    /// allocator starts at 10/s and doubles while the service keeps up.
    ///
    /// ```
    /// let b = herdless::pushback::AdaptiveAllocator::builder().estimate(0.0);
    /// assert!(b.build().is_err());
    /// ```
    pub fn estimate(mut self, per_second: f64) -> Self {
        self.estimate = Some(per_second);
        self
    }

    /// The longest delay ever handed out.
    ///
    /// ```
    /// use std::time::Duration;
    /// let a = herdless::pushback::AdaptiveAllocator::builder().horizon(Duration::from_secs(5)).build()?;
    /// assert_eq!(a.horizon(), Duration::from_secs(5));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn horizon(mut self, horizon: Duration) -> Self {
        self.horizon = horizon;
        self
    }

    /// How much capacity may be admitted back to back, as a time at the
    /// current estimate (100 ms: a tenth of a second's worth).
    ///
    /// ```
    /// use std::time::Duration;
    /// assert!(herdless::pushback::AdaptiveAllocator::builder().burst(Duration::ZERO).build().is_err());
    /// ```
    pub fn burst(mut self, burst: Duration) -> Self {
        self.burst = burst;
        self
    }

    /// The shortest delay handed out while the service is down and the end
    /// of the outage is unknown. The hold grows with the outage's age (see
    /// the [module documentation](super#an-outage-with-an-unknown-end)).
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = herdless::pushback::AdaptiveAllocator::builder().min_hold(Duration::from_secs(120));
    /// assert!(b.build().is_err()); // longer than the 60 s horizon
    /// ```
    pub fn min_hold(mut self, hold: Duration) -> Self {
        self.min_hold = Some(hold);
        self
    }

    /// While the service is down with an unknown end, one request per
    /// interval is let through to see whether it is back.
    ///
    /// ```
    /// use std::time::Duration;
    /// assert!(herdless::pushback::AdaptiveAllocator::builder().probe_interval(Duration::ZERO).build().is_err());
    /// ```
    pub fn probe_interval(mut self, interval: Duration) -> Self {
        self.probe_interval = interval;
        self
    }

    /// The learning window (see the [module documentation](super#learning-the-capacity)).
    ///
    /// ```
    /// use std::time::Duration;
    /// assert!(herdless::pushback::AdaptiveAllocator::builder().window(Duration::from_millis(1)).build().is_err());
    /// ```
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// Consecutive refusals of admitted requests, with no success in the
    /// current window, after which the service is taken to be down.
    ///
    /// ```
    /// assert!(herdless::pushback::AdaptiveAllocator::builder().down_after(0).build().is_err());
    /// ```
    pub fn down_after(mut self, refusals: u32) -> Self {
        self.down_after = refusals;
        self
    }

    /// How late callers come back after their slot, at most, as a share of
    /// their delay (herdless clients: `Policy::retry_after_spread`, 0.1 by
    /// default). Slots are placed so that the callers' *expected* arrivals
    /// are evenly spaced (see the [module documentation](super)); 0 spaces
    /// the slots themselves.
    ///
    /// ```
    /// assert!(herdless::pushback::AdaptiveAllocator::builder().client_spread(1.5).build().is_err());
    /// ```
    pub fn client_spread(mut self, spread: f64) -> Self {
        self.client_spread = spread;
        self
    }

    /// Callers named by [`decide_for`](AdaptiveAllocator::decide_for) with a
    /// key below `n` (a worker index, a tenant number) are tracked in a table
    /// of 8 bytes per caller, allocated here, instead of a hash map that
    /// grows as they arrive (17 to 40 bytes per caller, twice that while it
    /// grows, and a pause to rehash it in the middle of a storm). Other keys
    /// still work, in the map. The decisions are the same either way.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut a = herdless::pushback::AdaptiveAllocator::builder()
    ///     .estimate(10.0).callers(1_000).build()?
    ///     .outage_until(Duration::from_secs(5));
    /// let slot = a.decide_for(Duration::ZERO, 7).retry_after().unwrap();
    /// // Back early: told the same slot again, as with any key.
    /// assert_eq!(a.decide_for(Duration::from_secs(1), 7).retry_after(), Some(slot - Duration::from_secs(1)));
    /// assert!(herdless::pushback::AdaptiveAllocator::builder().callers(usize::MAX).build().is_err());
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn callers(mut self, n: usize) -> Self {
        self.callers = n;
        self
    }

    /// Holds requests instead of answering them, with the default bound and
    /// time limit: while the service is down, or when a caller's slot would
    /// be near, the request waits in a FIFO queue and is let through (or,
    /// at `hold_for`, answered with a slot) later. The driver then calls
    /// [`release`](AdaptiveAllocator::release) as time passes. See the
    /// [module documentation](super#the-hold-a-capacity-aware-reconnect-queue).
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut a = herdless::pushback::AdaptiveAllocator::builder().estimate(10.0).hold().build()?
    ///     .outage_until(Duration::from_secs(2));
    /// assert!(a.decide(Duration::ZERO).is_hold());
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn hold(mut self) -> Self {
        self.hold = true;
        self
    }

    /// The most requests held at once (and turns the hold on); past it,
    /// callers get slots.
    ///
    /// ```
    /// let b = herdless::pushback::AdaptiveAllocator::builder().hold_max(0);
    /// assert!(b.build().is_err());
    /// ```
    pub fn hold_max(mut self, n: usize) -> Self {
        self.hold = true;
        self.hold_max = Some(n);
        self
    }

    /// The longest a request is held, from its first arrival (and turns the
    /// hold on): keep it below the clients' per-attempt timeouts.
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = herdless::pushback::AdaptiveAllocator::builder().hold_for(Duration::from_secs(7_200));
    /// assert!(b.build().is_err());
    /// ```
    pub fn hold_for(mut self, d: Duration) -> Self {
        self.hold = true;
        self.hold_for = Some(d);
        self
    }

    /// The longest a request is held when its caller says it waits longer
    /// than that (and 1 s more for the answer's way back): RFC 7240's
    /// `Prefer: wait=N` on the request, which herdless's HTTP clients send
    /// (see [`http::queue`](crate::http::queue)); turns the hold on. A
    /// caller that says nothing is held `hold_for`; one that says it waits
    /// less than `hold_for` and a second is not held (it gets a slot). It
    /// also sizes the default `hold_max`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let a = herdless::pushback::AdaptiveAllocator::builder().hold_for_max(Duration::from_secs(30)).build()?;
    /// assert_eq!(a.hold_for_max(), Some(Duration::from_secs(30)));
    /// let short = herdless::pushback::AdaptiveAllocator::builder()
    ///     .hold_for(Duration::from_secs(20)).hold_for_max(Duration::from_secs(5));
    /// assert!(short.build().is_err(), "below hold_for");
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn hold_for_max(mut self, d: Duration) -> Self {
        self.hold = true;
        self.hold_for_max = Some(d);
        self
    }

    /// Validates the settings.
    ///
    /// # Errors
    ///
    /// [`PushbackError::Capacity`] for an estimate outside `1..=1e9`,
    /// [`PushbackError::Horizon`] for a horizon outside 1 s ..= 1 day,
    /// [`PushbackError::Setting`] naming any other setting out of range.
    ///
    /// ```
    /// let a = herdless::pushback::AdaptiveAllocator::builder().build()?;
    /// assert_eq!(a.capacity(), 10.0);
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn build(self) -> Result<AdaptiveAllocator, PushbackError> {
        let capacity = match self.estimate {
            Some(c) if !(c.is_finite() && (MIN_CAPACITY..=MAX_CAPACITY).contains(&c)) => {
                return Err(PushbackError::Capacity);
            }
            Some(c) => c,
            None => NO_ESTIMATE,
        };
        let ms = Duration::from_millis(1);
        let day = Duration::from_secs(86_400);
        if !(Duration::from_secs(1)..=day).contains(&self.horizon) {
            return Err(PushbackError::Horizon);
        }
        let bad = |ok: bool, what: &'static str| {
            if ok {
                Ok(())
            } else {
                Err(PushbackError::Setting(what))
            }
        };
        bad(
            (ms..=Duration::from_secs(10)).contains(&self.burst),
            "burst must be within 1 ms..=10 s",
        )?;
        let min_hold = self.min_hold.unwrap_or(DEFAULT_MIN_HOLD.min(self.horizon));
        bad(
            min_hold <= self.horizon,
            "min_hold must be at most the horizon",
        )?;
        bad(
            (ms..=Duration::from_secs(3_600)).contains(&self.probe_interval),
            "probe_interval must be within 1 ms..=1 h",
        )?;
        bad(
            (Duration::from_millis(10)..=Duration::from_secs(60)).contains(&self.window),
            "window must be within 10 ms..=1 min",
        )?;
        bad(self.down_after >= 1, "down_after must be at least 1")?;
        bad(
            (0.0..=1.0).contains(&self.client_spread),
            "client_spread must be within 0..=1",
        )?;
        bad(
            self.callers <= MAX_CALLERS,
            "callers must be at most 100,000,000",
        )?;
        let hold_for = self.hold_for.unwrap_or(DEFAULT_HOLD_FOR);
        bad(
            (Duration::from_millis(10)..=Duration::from_secs(3_600)).contains(&hold_for),
            "hold_for must be within 10 ms..=1 h",
        )?;
        let hold_for_max = self
            .hold_for_max
            .unwrap_or(DEFAULT_HOLD_FOR_MAX.max(hold_for));
        bad(
            (hold_for..=Duration::from_secs(3_600)).contains(&hold_for_max),
            "hold_for_max must be within hold_for..=1 h",
        )?;
        let hold_max = self
            .hold_max
            .unwrap_or_else(|| default_hold_max(capacity, hold_for_max));
        bad(
            (1..=MAX_HOLD).contains(&hold_max),
            "hold_max must be within 1..=10,000,000",
        )?;
        let hold = self
            .hold
            .then(|| super::hold::Hold::new(hold_max, ns(hold_for), ns(hold_for_max)));
        let mut estimate = Estimate::new(capacity, MIN_CAPACITY, MAX_CAPACITY, ns(self.window));
        if hold.is_some() {
            estimate.growth = HOLD_GROWTH;
        }
        Ok(AdaptiveAllocator {
            horizon_ns: ns(self.horizon),
            burst_ns: ns(self.burst),
            min_hold_ns: ns(min_hold),
            probe_ns: ns(self.probe_interval),
            down_after: self.down_after,
            mode: Mode::Up,
            estimate,
            schedule: super::booking::Booking::new(self.client_spread),
            clients: super::clients::Clients::with_table(self.callers),
            counts: Default::default(),
            hold,
            mark: Default::default(),
            evicting: false,
            generation: 0,
        })
    }
}
