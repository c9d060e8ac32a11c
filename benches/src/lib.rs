//! The workloads the benches share, so that criterion (`core.rs`) and the
//! instruction counts (`instructions.rs`) measure exactly the same calls:
//! the operations, the no-op timers and backon's matching schedule.
//! Benchmarks only: see `benches/*.rs` and `docs/performance.md`.

pub mod probe;

use std::hint::black_box;
use std::time::Duration;

use backon::ExponentialBuilder;
use herdless::timer::CoarseClock;
use herdless::{Clock, SystemTimer};

/// An operation that succeeds at once.
///
/// ```
/// assert_eq!(herdless_benches::op().unwrap(), 42);
/// ```
pub fn op() -> Result<u64, std::io::Error> {
    Ok(black_box(42))
}

/// [`op`], as a future.
///
/// ```
/// let out = block_on(herdless_benches::op_async());
/// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// assert_eq!(out.unwrap(), 42);
/// ```
pub async fn op_async() -> Result<u64, std::io::Error> {
    Ok(black_box(42))
}

/// An operation that fails three times (`TimedOut`), then succeeds.
///
/// ```
/// let mut op = herdless_benches::flaky();
/// assert!((0..3).all(|_| op().is_err()));
/// assert_eq!(op().unwrap(), 42);
/// ```
pub fn flaky() -> impl FnMut() -> Result<u64, std::io::Error> {
    let mut left = 3;
    move || {
        if left > 0 {
            left -= 1;
            Err(std::io::Error::from(std::io::ErrorKind::TimedOut))
        } else {
            Ok(black_box(42))
        }
    }
}

/// [`flaky`], each attempt a ready future.
///
/// ```
/// let mut op = herdless_benches::flaky_async();
/// let _ = op(); // a future that is ready at once
/// ```
pub fn flaky_async() -> impl FnMut() -> std::future::Ready<Result<u64, std::io::Error>> {
    let mut f = flaky();
    move || std::future::ready(f())
}

/// backon's exponential backoff with jitter, every delay 1 ns: the schedule
/// that matches herdless's `base = cap = 1 ns` in the retry-path cases.
///
/// ```
/// use backon::BackoffBuilder;
/// let mut delays = herdless_benches::backon_ns().build();
/// assert!(delays.next().unwrap() <= std::time::Duration::from_nanos(2));
/// ```
pub fn backon_ns() -> ExponentialBuilder {
    let ns = Duration::from_nanos(1);
    ExponentialBuilder::default()
        .with_jitter()
        .with_min_delay(ns)
        .with_max_delay(ns)
}

/// backon's exponential backoff with jitter from 500 ms to 30 s, never
/// exhausted: the one-delay cases' schedule (herdless's default base and cap).
///
/// ```
/// use backon::BackoffBuilder;
/// let mut delays = herdless_benches::backon_delays();
/// assert!(delays.next().unwrap() <= std::time::Duration::from_secs(60));
/// ```
pub fn backon_delays() -> backon::ExponentialBackoff {
    use backon::BackoffBuilder;
    ExponentialBuilder::default()
        .with_jitter()
        .with_min_delay(Duration::from_millis(500))
        .with_max_delay(Duration::from_secs(30))
        .without_max_times()
        .build()
}

/// A timer that does not sleep and reads the coarse clock (`SystemTimer`'s
/// blocking clock): the retry path's own cost, without the waiting.
///
/// ```
/// use herdless::{AlwaysRetry, Policy, Retry};
/// let ns = std::time::Duration::from_nanos(1);
/// let policy = Policy::builder().base(ns).cap(ns).build().unwrap();
/// let mut op = herdless_benches::flaky();
/// let r = Retry::builder().policy(policy).classifier(AlwaysRetry).timer(herdless_benches::NoSleep).build();
/// assert_eq!(r.call(|_| op()).unwrap(), 42);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct NoSleep;

impl Clock for NoSleep {
    #[inline]
    fn now(&self) -> std::time::Instant {
        CoarseClock.now()
    }

    #[inline]
    fn now_ns(&self) -> u64 {
        CoarseClock.now_ns()
    }
}

impl herdless::Sleep for NoSleep {
    fn sleep(&self, _: Duration) {}

    #[inline]
    fn now_blocking_ns(&self) -> u64 {
        CoarseClock.now_ns()
    }
}

impl herdless::AsyncSleep for NoSleep {
    type Sleep = std::future::Ready<()>;
    const START_AT_FIRST_WAIT: bool = true;
    fn sleep(&self, _: Duration) -> Self::Sleep {
        std::future::ready(())
    }
}

/// [`NoSleep`] reading tokio's clock, as `SystemTimer` does in async code
/// with the `tokio` feature (so that `tokio::time::pause` moves it).
///
/// ```
/// use herdless::Clock;
/// let _ = herdless_benches::NoSleepTokioClock.now();
/// ```
#[derive(Debug, Clone, Copy)]
pub struct NoSleepTokioClock;

impl Clock for NoSleepTokioClock {
    #[inline]
    fn now(&self) -> std::time::Instant {
        SystemTimer.now()
    }
}

impl herdless::AsyncSleep for NoSleepTokioClock {
    type Sleep = std::future::Ready<()>;
    const START_AT_FIRST_WAIT: bool = true;
    fn sleep(&self, _: Duration) -> Self::Sleep {
        std::future::ready(())
    }
}
