//! Time, injectable: a monotonic clock and a way to sleep.
//!
//! Executors read time only through [`Clock`] and wait only through [`Sleep`]
//! (blocking) or [`AsyncSleep`] (async), so tests can replace both:
//!
//! * [`SystemTimer`], the default: the [`CoarseClock`] (the monotonic clock at
//!   the kernel's tick, a quarter of `Instant::now()`'s cost: see
//!   [`coarse`] for the measurements and why a tick suffices) and
//!   `std::thread::sleep`; with the `tokio` feature it reads tokio's clock and
//!   sleeps with `tokio::time::sleep`, so `tokio::time::pause` makes async
//!   tests instant and the elapsed limit follows the paused clock.
//! * [`ManualTimer`]: a virtual clock that a sleep advances instantly and that
//!   records every sleep, for deterministic tests of the blocking and the async
//!   executor alike.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub mod coarse;
pub use coarse::CoarseClock;

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

    /// The current time in nanoseconds since an epoch of the clock's choosing,
    /// fixed for the life of the process (only differences mean anything):
    /// what the executors read to measure a call's elapsed time. The default
    /// measures [`now`](Clock::now) from a process-wide anchor; clocks that
    /// count nanoseconds themselves ([`CoarseClock`], [`ManualTimer`]) return
    /// them without `Instant` arithmetic.
    ///
    /// ```
    /// use herdless::{Clock, ManualTimer};
    /// let t = ManualTimer::new();
    /// let t0 = t.now_ns();
    /// t.advance(std::time::Duration::from_millis(3));
    /// assert_eq!(t.now_ns() - t0, 3_000_000);
    /// ```
    #[inline]
    fn now_ns(&self) -> u64 {
        anchored_ns(self.now())
    }
}

/// `at` in nanoseconds since a process-wide anchor a year before the first
/// reading (so instants a clock made earlier in the process still count up
/// from it; earlier than the anchor reads zero).
pub(crate) fn anchored_ns(at: Instant) -> u64 {
    static ANCHOR: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let anchor = *ANCHOR.get_or_init(|| {
        let now = Instant::now();
        now.checked_sub(Duration::from_secs(365 * 86_400))
            .unwrap_or(now)
    });
    u64::try_from(at.saturating_duration_since(anchor).as_nanos()).unwrap_or(u64::MAX)
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

    /// The time on the clock this sleep runs on, which the blocking executor
    /// reads: [`Clock::now`] by default. [`SystemTimer`] sleeps with
    /// `std::thread::sleep`, which a paused tokio clock does not follow, so its
    /// blocking reading is the [`CoarseClock`] with or without the `tokio`
    /// feature.
    ///
    /// ```
    /// use herdless::{Clock, ManualTimer, Sleep};
    /// let t = ManualTimer::new();
    /// assert_eq!(t.now_blocking(), t.now());
    /// ```
    #[inline]
    fn now_blocking(&self) -> Instant {
        self.now()
    }

    /// [`now_blocking`](Sleep::now_blocking) in nanoseconds, as
    /// [`Clock::now_ns`] is for [`now`](Clock::now): what the blocking
    /// executor reads.
    ///
    /// ```
    /// use herdless::{Clock, ManualTimer, Sleep};
    /// let t = ManualTimer::new();
    /// assert_eq!(t.now_blocking_ns(), t.now_ns());
    /// ```
    #[inline]
    fn now_blocking_ns(&self) -> u64 {
        anchored_ns(self.now_blocking())
    }
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
///
/// # Without the `tokio` feature
///
/// The default timer, [`SystemTimer`], implements `AsyncSleep` only with the
/// `tokio` feature, so without it `retry.call_async(..)` does not compile.
/// The error names the feature (`#[diagnostic::on_unimplemented]`); with
/// `herdless = { version = "0.1", default-features = false }` it reads:
///
/// ```text
/// error[E0277]: `SystemTimer` cannot sleep in async code: it does not implement `herdless::AsyncSleep`
///   |
/// 5 |     retry.call_async(|_attempt| async { Ok::<u32, std::io::Error>(1) }).await
///   |           ^^^^^^^^^^ not an async timer
///   |
///   = help: the trait `AsyncSleep` is not implemented for `SystemTimer`
///   = note: herdless's default timer, `SystemTimer`, implements `AsyncSleep` only with the `tokio` feature: `herdless = { version = "0.1", features = ["tokio"] }`
///   = note: or give the retrier a timer that implements it (`RetryBuilder::timer`; `ManualTimer` in tests)
/// ```
///
/// Any timer without it is refused the same way, whatever the features (the
/// test below fails to compile with that error, `E0277`):
///
/// ```compile_fail,E0277
/// use herdless::{Classification, Clock, Retry};
///
/// /// A clock that cannot sleep in async code.
/// struct Wall;
/// impl Clock for Wall {
///     fn now(&self) -> std::time::Instant {
///         std::time::Instant::now()
///     }
/// }
///
/// async fn fetch() {
///     let retry = Retry::builder().classify(|_: &()| Classification::retryable()).timer(Wall).build();
///     let _ = retry.call_async(|_| async { Ok::<(), ()>(()) }).await;
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot sleep in async code: it does not implement `herdless::AsyncSleep`",
    label = "not an async timer",
    note = "herdless's default timer, `SystemTimer`, implements `AsyncSleep` only with the `tokio` feature: `herdless = {{ version = \"0.1\", features = [\"tokio\"] }}`",
    note = "or give the retrier a timer that implements it (`RetryBuilder::timer`; `ManualTimer` in tests)"
)]
pub trait AsyncSleep: Clock {
    /// The future returned by [`sleep`](AsyncSleep::sleep).
    type Sleep: Future<Output = ()> + Send;
    /// A future that completes after `duration`.
    fn sleep(&self, duration: Duration) -> Self::Sleep;

    /// Whether the async executors may start a call's clock when its first
    /// attempt first waits (its future returns `Pending`) or ends, instead of
    /// before its first poll. Then a first attempt that completes in one poll
    /// (a first-try success) reads no clock at all; what the elapsed limit no
    /// longer counts is the first poll's own work up to its first `.await`
    /// that waits: CPU time, since waiting is what returns `Pending`.
    ///
    /// `false` by default, and for [`ManualTimer`] (a test may advance it
    /// inside the operation). [`SystemTimer`] says `true`: under
    /// `tokio::time::pause` its clock moves only while a task waits, so the
    /// elapsed limit stays exact there.
    ///
    /// ```
    /// use herdless::{AsyncSleep, ManualTimer, SystemTimer};
    /// assert!(!<ManualTimer as AsyncSleep>::START_AT_FIRST_WAIT);
    /// assert!(<SystemTimer as AsyncSleep>::START_AT_FIRST_WAIT);
    /// ```
    const START_AT_FIRST_WAIT: bool = false;
}

/// The real clock and sleep: [`CoarseClock`] and `std::thread::sleep`. With
/// the `tokio` feature, `now` reads `tokio::time::Instant` (which honors
/// `tokio::time::pause`: a full `Instant::now()` outside a paused runtime) and
/// async sleeps use `tokio::time::sleep`.
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
            CoarseClock.now()
        }
    }

    #[inline]
    fn now_ns(&self) -> u64 {
        #[cfg(feature = "tokio")]
        {
            anchored_ns(self.now())
        }
        #[cfg(not(feature = "tokio"))]
        {
            CoarseClock.now_ns()
        }
    }
}

impl Sleep for SystemTimer {
    fn sleep(&self, duration: Duration) {
        std::thread::sleep(duration);
    }

    #[inline]
    fn now_blocking(&self) -> Instant {
        CoarseClock.now()
    }

    #[inline]
    fn now_blocking_ns(&self) -> u64 {
        CoarseClock.now_ns()
    }
}

#[cfg(feature = "tokio")]
impl AsyncSleep for SystemTimer {
    type Sleep = tokio::time::Sleep;
    const START_AT_FIRST_WAIT: bool = true;

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

    #[inline]
    fn now_ns(&self) -> u64 {
        self.offset_ns.load(Ordering::SeqCst)
    }
}

impl Sleep for ManualTimer {
    fn sleep(&self, duration: Duration) {
        self.record(duration);
    }

    #[inline]
    fn now_blocking_ns(&self) -> u64 {
        self.now_ns()
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

    fn now_blocking(&self) -> Instant {
        (**self).now_blocking()
    }
}

impl<T: AsyncSleep + ?Sized> AsyncSleep for &T {
    type Sleep = T::Sleep;
    const START_AT_FIRST_WAIT: bool = T::START_AT_FIRST_WAIT;
    fn sleep(&self, duration: Duration) -> Self::Sleep {
        (**self).sleep(duration)
    }
}
