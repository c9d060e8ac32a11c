//! Time, injectable: a monotonic clock and a way to sleep.
//!
//! Executors read time only through [`Clock`] and wait only through [`Sleep`]
//! (blocking) or [`AsyncSleep`] (async), so tests can replace both:
//!
//! * [`SystemTimer`], the default: `Instant` and `std::thread::sleep`; with the
//!   `tokio` feature it reads tokio's clock and sleeps with `tokio::time::sleep`
//!   in async code, so `tokio::time::pause` makes async tests instant.
//! * [`ManualTimer`]: a virtual clock that a sleep advances instantly and that
//!   records every sleep, for deterministic tests of the blocking and the async
//!   executor alike.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A monotonic clock.
///
/// ```
/// use herdless::{Clock, SystemTimer};
/// let t0 = SystemTimer.now();
/// assert!(SystemTimer.now() >= t0);
/// ```
pub trait Clock {
    /// The current instant (monotonic).
    fn now(&self) -> Instant;
}

/// Blocking sleep, for the blocking executor.
///
/// ```
/// use herdless::{ManualTimer, Sleep};
/// let t = ManualTimer::new();
/// t.sleep(std::time::Duration::from_secs(3));
/// assert_eq!(t.elapsed(), std::time::Duration::from_secs(3));
/// ```
pub trait Sleep: Clock {
    /// Blocks the current thread for `duration`.
    fn sleep(&self, duration: Duration);
}

/// Async sleep, for the async executor.
///
/// ```
/// use herdless::{AsyncSleep, ManualTimer};
/// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// # rt.block_on(async {
/// let t = ManualTimer::new();
/// t.sleep(std::time::Duration::from_secs(3)).await;
/// assert_eq!(t.elapsed(), std::time::Duration::from_secs(3));
/// # });
/// ```
pub trait AsyncSleep: Clock {
    /// The future returned by [`sleep`](AsyncSleep::sleep).
    type Sleep: Future<Output = ()> + Send;
    /// A future that completes after `duration`.
    fn sleep(&self, duration: Duration) -> Self::Sleep;
}

/// The real clock and sleep. With the `tokio` feature, `now` reads
/// `tokio::time::Instant` (which honors `tokio::time::pause`) and async sleeps
/// use `tokio::time::sleep`.
///
/// ```
/// use herdless::{Sleep, SystemTimer};
/// SystemTimer.sleep(std::time::Duration::from_millis(1));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemTimer;

impl Clock for SystemTimer {
    #[inline]
    fn now(&self) -> Instant {
        #[cfg(feature = "tokio")]
        {
            tokio::time::Instant::now().into_std()
        }
        #[cfg(not(feature = "tokio"))]
        {
            Instant::now()
        }
    }
}

impl Sleep for SystemTimer {
    fn sleep(&self, duration: Duration) {
        std::thread::sleep(duration);
    }
}

#[cfg(feature = "tokio")]
impl AsyncSleep for SystemTimer {
    type Sleep = tokio::time::Sleep;

    fn sleep(&self, duration: Duration) -> Self::Sleep {
        tokio::time::sleep(duration)
    }
}

/// A virtual clock for tests: sleeping advances it instantly, and every sleep is
/// recorded. Clones share the same clock.
///
/// ```
/// use std::time::Duration;
/// use herdless::{Clock, ManualTimer, Sleep};
/// let t = ManualTimer::new();
/// let start = t.now();
/// t.sleep(Duration::from_secs(2));
/// t.advance(Duration::from_millis(500)); // e.g. the operation's own time
/// assert_eq!(t.now() - start, Duration::from_millis(2500));
/// assert_eq!(t.sleeps(), vec![Duration::from_secs(2)]);
/// ```
#[derive(Clone)]
pub struct ManualTimer {
    start: Instant,
    offset_ns: Arc<AtomicU64>,
    sleeps: Arc<Mutex<Vec<Duration>>>,
}

impl fmt::Debug for ManualTimer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualTimer")
            .field("elapsed", &self.elapsed())
            .finish_non_exhaustive()
    }
}

impl Default for ManualTimer {
    fn default() -> Self {
        Self::new()
    }
}

impl ManualTimer {
    /// A virtual clock at offset zero.
    ///
    /// ```
    /// assert_eq!(herdless::ManualTimer::new().elapsed(), std::time::Duration::ZERO);
    /// ```
    pub fn new() -> Self {
        Self {
            start: Instant::now(),
            offset_ns: Arc::new(AtomicU64::new(0)),
            sleeps: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Moves the clock forward without recording a sleep (saturating at about
    /// 584 years).
    ///
    /// ```
    /// let t = herdless::ManualTimer::new();
    /// t.advance(std::time::Duration::from_secs(1));
    /// assert_eq!(t.elapsed().as_secs(), 1);
    /// ```
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let _ = self
            .offset_ns
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| {
                Some(v.saturating_add(by))
            });
    }

    /// Virtual time since creation.
    ///
    /// ```
    /// assert!(herdless::ManualTimer::new().elapsed().is_zero());
    /// ```
    pub fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.offset_ns.load(Ordering::SeqCst))
    }

    /// Every sleep so far, in order.
    ///
    /// ```
    /// assert!(herdless::ManualTimer::new().sleeps().is_empty());
    /// ```
    pub fn sleeps(&self) -> Vec<Duration> {
        self.sleeps.lock().map(|v| v.clone()).unwrap_or_default()
    }

    fn record(&self, d: Duration) {
        if let Ok(mut v) = self.sleeps.lock() {
            v.push(d);
        }
        self.advance(d);
    }
}

impl Clock for ManualTimer {
    fn now(&self) -> Instant {
        let offset = self.elapsed();
        self.start.checked_add(offset).unwrap_or(self.start)
    }
}

impl Sleep for ManualTimer {
    fn sleep(&self, duration: Duration) {
        self.record(duration);
    }
}

impl AsyncSleep for ManualTimer {
    type Sleep = std::future::Ready<()>;

    fn sleep(&self, duration: Duration) -> Self::Sleep {
        self.record(duration);
        std::future::ready(())
    }
}

impl<T: Clock + ?Sized> Clock for &T {
    fn now(&self) -> Instant {
        (**self).now()
    }
}

impl<T: Sleep + ?Sized> Sleep for &T {
    fn sleep(&self, duration: Duration) {
        (**self).sleep(duration)
    }
}

impl<T: AsyncSleep + ?Sized> AsyncSleep for &T {
    type Sleep = T::Sleep;
    fn sleep(&self, duration: Duration) -> Self::Sleep {
        (**self).sleep(duration)
    }
}
