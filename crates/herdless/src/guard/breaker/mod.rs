//! A half-open probe breaker: when the endpoint looks down, one caller probes
//! and the rest wait.
//!
//! Backoff spreads a fleet's retries in time but every caller still probes the
//! endpoint on its own schedule, so a long outage is met by a steady drizzle of
//! retries that cannot succeed. The "Half-Open Circuit Probe" sibling of
//! backoff detects recovery with *one* request instead: after `threshold`
//! consecutive failures the [`Breaker`] opens; from then on it admits exactly
//! one probe at a time, and every other caller waits a jittered
//! [`probe_wait`](Breaker::probe_wait) and asks again. The first probe that
//! succeeds closes the breaker and the waiting callers go through on their
//! next check, spread by their own jitter.
//!
//! Design choices:
//!
//! * **No timer inside.** The breaker is two atomics (a failure counter and a
//!   probe flag); it never sleeps and never reads a clock. Callers own their
//!   waiting, so the same type serves the executors, the simulator and
//!   hand-written loops alike.
//! * **The probe is a guard.** [`Admission::Probe`] carries a [`Probe`] that
//!   must be resolved with [`Probe::succeeded`] or [`Probe::failed`]; dropping
//!   it unresolved (a cancelled future, a panic) frees the probe slot without
//!   changing the count, so a lost probe can never wedge the breaker.
//! * **Waits are jittered** uniformly in `[probe_wait / 2, probe_wait]`, so the
//!   callers parked behind a probe do not all re-check at one instant.
//! * **No wall-clock "open for N seconds" state.** A fixed open interval
//!   synchronizes every caller's re-check; probing continuously (one at a time)
//!   detects recovery as soon as one request can see it.
//! * **A spread release** ([`release_window`](Breaker::release_window)). When
//!   the probe succeeds, every caller parked behind it would go at its next
//!   re-check, all within one probe wait: a process's whole backlog lands on
//!   a service that has just come back. With a release window `W`, a retry
//!   that was held behind the probe and finds the breaker closed within `W`
//!   of its closing waits a uniform share of the rest of the window first, so
//!   the held callers come back spread over `W`. Size `W` to the capacity:
//!   the callers a process holds divided by its share of the service's
//!   capacity (in the simulator, `N / C`). The closing time is the one the
//!   driver passes to the engine with the probe's success; the breaker still
//!   reads no clock. Default: no window (released at once).
//!
//! In the executors ([`Retry::breaker`](crate::Retry::breaker)) the breaker
//! gates *retries*: a call's first attempt always goes out (herdless decides
//! whether to retry, not whether to call), and its outcome feeds the breaker.
//! Waiting counts against the call's elapsed budget; a call whose wait would
//! pass `max_elapsed` gives up with [`GiveUp::MaxElapsed`](crate::GiveUp).
//! Code that wants to gate first attempts too can use [`Breaker::admit`]
//! directly.
//!
//! ```
//! use std::sync::Arc;
//! use herdless::guard::breaker::{Admission, Breaker};
//!
//! let breaker = Arc::new(Breaker::new(2));
//! breaker.record_failure();
//! breaker.record_failure(); // two consecutive failures: open
//! let Admission::Probe(probe) = breaker.admit() else { panic!("the first caller probes") };
//! assert!(matches!(breaker.admit(), Admission::Wait)); // the others wait
//! probe.succeeded();
//! assert!(matches!(breaker.admit(), Admission::Closed));
//! ```

mod builder;
#[cfg(feature = "serde")]
mod serde;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use crate::rng::Rng;

pub use builder::{BreakerBuilder, BreakerError};

/// A shared half-open probe breaker. See the [module documentation](crate::guard::breaker).
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// let breaker = Arc::new(herdless::Breaker::new(5).probe_wait(Duration::from_millis(200)));
/// assert!(!breaker.is_open());
/// ```
pub struct Breaker {
    threshold: u32,
    wait: Duration,
    release: Duration,
    failures: AtomicU32,
    probing: AtomicBool,
    /// When the breaker last closed, nanoseconds on the driver's clock, plus
    /// one (0: not since it was built).
    closed_at: AtomicU64,
}

impl fmt::Debug for Breaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Breaker")
            .field("threshold", &self.threshold)
            .field("probe_wait", &self.wait)
            .field("release_window", &self.release)
            .field("consecutive_failures", &self.consecutive_failures())
            .field("probing", &self.probing.load(Ordering::Acquire))
            .finish()
    }
}

/// What [`Breaker::admit`] decided.
///
/// ```
/// let b = std::sync::Arc::new(herdless::Breaker::new(1));
/// assert!(matches!(b.admit(), herdless::guard::breaker::Admission::Closed));
/// ```
#[derive(Debug)]
#[must_use = "a probe must be resolved, or dropped to release it"]
pub enum Admission {
    /// The breaker is closed: go ahead (and report the outcome with
    /// [`Breaker::record_success`] / [`Breaker::record_failure`]).
    Closed,
    /// The breaker is open and this caller is the one probe: go ahead and
    /// resolve the guard.
    Probe(Probe),
    /// The breaker is open and another caller is probing: wait
    /// ([`Breaker::wait_for`]) and ask again.
    Wait,
}

/// The single in-flight probe of an open [`Breaker`].
///
/// ```
/// use std::sync::Arc;
/// use herdless::guard::breaker::{Admission, Breaker};
/// let b = Arc::new(Breaker::new(1));
/// b.record_failure();
/// if let Admission::Probe(p) = b.admit() { p.failed(); }
/// assert_eq!(b.consecutive_failures(), 2);
/// ```
#[must_use = "dropping a probe releases it without recording an outcome"]
pub struct Probe {
    breaker: Arc<Breaker>,
}

impl fmt::Debug for Probe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Probe { .. }")
    }
}

impl Probe {
    /// The probe succeeded: the breaker closes.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use herdless::guard::breaker::{Admission, Breaker};
    /// let b = Arc::new(Breaker::new(1));
    /// b.record_failure();
    /// let Admission::Probe(p) = b.admit() else { unreachable!() };
    /// p.succeeded();
    /// assert!(!b.is_open());
    /// ```
    pub fn succeeded(self) {
        self.breaker.record_success();
        // Drop releases the probe slot.
    }

    /// The probe failed: the breaker stays open, the next caller may probe.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use herdless::guard::breaker::{Admission, Breaker};
    /// let b = Arc::new(Breaker::new(1));
    /// b.record_failure();
    /// let Admission::Probe(p) = b.admit() else { unreachable!() };
    /// p.failed();
    /// assert!(matches!(b.admit(), Admission::Probe(_)));
    /// ```
    pub fn failed(self) {
        self.breaker.record_failure();
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.breaker.probing.store(false, Ordering::Release);
    }
}

impl Breaker {
    /// The shortest probe wait: [`probe_wait`](Self::probe_wait) raises any
    /// shorter value (zero included) to 1 ms, so a caller parked behind a held
    /// probe re-checks at most about once per 0.5–1 ms instead of spinning.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::Breaker;
    /// assert_eq!(Breaker::MIN_PROBE_WAIT, Duration::from_millis(1));
    /// let b = Breaker::new(1).probe_wait(Duration::ZERO);
    /// assert_eq!(b.probe_wait_time(), Breaker::MIN_PROBE_WAIT);
    /// ```
    pub const MIN_PROBE_WAIT: Duration = Duration::from_millis(1);

    /// A closed breaker that opens after `threshold` consecutive failures (0 is
    /// taken as 1), with a probe wait of 1 s.
    ///
    /// ```
    /// assert_eq!(herdless::Breaker::new(0).threshold(), 1);
    /// ```
    pub fn new(threshold: u32) -> Self {
        Breaker {
            threshold: threshold.max(1),
            wait: Duration::from_secs(1),
            release: Duration::ZERO,
            failures: AtomicU32::new(0),
            probing: AtomicBool::new(false),
            closed_at: AtomicU64::new(0),
        }
    }

    /// A validating builder (threshold 5, probe wait 1 s): for settings that
    /// come from outside the program, where an invalid value must be an
    /// error rather than adjusted.
    ///
    /// ```
    /// let b = herdless::Breaker::builder().threshold(3).build()?;
    /// assert_eq!(b.threshold(), 3);
    /// # Ok::<(), herdless::guard::breaker::BreakerError>(())
    /// ```
    pub fn builder() -> BreakerBuilder {
        BreakerBuilder::new()
    }

    /// Spreads the callers held behind a probe over `window` after the
    /// breaker closes (see the [module documentation](self)); zero (the
    /// default) releases them at their next re-check.
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = herdless::Breaker::new(5).release_window(Duration::from_secs(4));
    /// assert_eq!(b.release_window_time(), Duration::from_secs(4));
    /// ```
    pub fn release_window(mut self, window: Duration) -> Self {
        self.release = window;
        self
    }

    /// The configured release window.
    ///
    /// ```
    /// assert_eq!(herdless::Breaker::new(3).release_window_time(), std::time::Duration::ZERO);
    /// ```
    pub fn release_window_time(&self) -> Duration {
        self.release
    }

    /// Records a success at `now_ns` (the driver's clock): as
    /// [`record_success`](Self::record_success), and when this closes an
    /// open breaker, the release window starts now.
    pub(crate) fn record_success_at(&self, now_ns: u64) {
        let was_open = self.failures.swap(0, Ordering::AcqRel) >= self.threshold;
        if was_open && !self.release.is_zero() {
            self.closed_at
                .store(now_ns.saturating_add(1), Ordering::Release);
        }
    }

    /// For a retry that was held behind the probe and finds the breaker
    /// closed at `now_ns`: how long to wait first, uniform over the rest of
    /// the release window (`None` outside it).
    pub(crate) fn release_wait(&self, now_ns: u64, rng: &mut Rng) -> Option<Duration> {
        let closed = self.closed_at.load(Ordering::Acquire).checked_sub(1)?;
        let window = u64::try_from(self.release.as_nanos()).unwrap_or(u64::MAX);
        let end = closed.saturating_add(window);
        (now_ns < end).then(|| Duration::from_nanos(rng.between(0, end - now_ns)))
    }

    /// How long callers wait behind a probe before asking again: each wait is
    /// uniform in `[wait / 2, wait]`. A `wait` below
    /// [`MIN_PROBE_WAIT`](Self::MIN_PROBE_WAIT) (1 ms, zero included) is raised
    /// to it: a zero wait would make every caller behind an outstanding probe spin.
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = herdless::Breaker::new(3).probe_wait(Duration::from_millis(50));
    /// assert_eq!(b.probe_wait_time().as_millis(), 50);
    /// let floored = herdless::Breaker::new(3).probe_wait(Duration::from_nanos(10));
    /// assert_eq!(floored.probe_wait_time(), Duration::from_millis(1));
    /// ```
    pub fn probe_wait(mut self, wait: Duration) -> Self {
        self.wait = wait.max(Self::MIN_PROBE_WAIT);
        self
    }

    /// The configured probe wait.
    ///
    /// ```
    /// assert_eq!(herdless::Breaker::new(3).probe_wait_time().as_secs(), 1);
    /// ```
    pub fn probe_wait_time(&self) -> Duration {
        self.wait
    }

    /// The consecutive failures that open the breaker.
    ///
    /// ```
    /// assert_eq!(herdless::Breaker::new(4).threshold(), 4);
    /// ```
    pub fn threshold(&self) -> u32 {
        self.threshold
    }

    /// The current run of consecutive failures.
    ///
    /// ```
    /// let b = herdless::Breaker::new(4);
    /// b.record_failure();
    /// assert_eq!(b.consecutive_failures(), 1);
    /// ```
    pub fn consecutive_failures(&self) -> u32 {
        self.failures.load(Ordering::Acquire)
    }

    /// Whether the breaker is open (the run of failures reached the threshold).
    ///
    /// ```
    /// let b = herdless::Breaker::new(1);
    /// b.record_failure();
    /// assert!(b.is_open());
    /// ```
    pub fn is_open(&self) -> bool {
        self.consecutive_failures() >= self.threshold
    }

    /// Asks to make a request: [`Closed`](Admission::Closed) (go),
    /// [`Probe`](Admission::Probe) (go, as the one probe) or
    /// [`Wait`](Admission::Wait). At most one [`Probe`] exists at any time.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use herdless::guard::breaker::{Admission, Breaker};
    /// let b = Arc::new(Breaker::new(1));
    /// b.record_failure();
    /// let first = b.admit();
    /// assert!(matches!(first, Admission::Probe(_)));
    /// assert!(matches!(b.admit(), Admission::Wait));
    /// drop(first); // released without an outcome
    /// assert!(matches!(b.admit(), Admission::Probe(_)));
    /// ```
    pub fn admit(self: &Arc<Self>) -> Admission {
        if !self.is_open() {
            return Admission::Closed;
        }
        match self
            .probing
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => Admission::Probe(Probe {
                breaker: Arc::clone(self),
            }),
            Err(_) => Admission::Wait,
        }
    }

    /// Takes the probe slot of an open breaker without an RAII guard: `true`
    /// when this caller is now the one probe. Pair with
    /// [`release_probe`](Self::release_probe) (the engine does, and
    /// [`Engine::cancel`](crate::engine::Engine::cancel) on early exits).
    pub(crate) fn try_take_probe(&self) -> bool {
        self.probing
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Frees the probe slot taken by [`try_take_probe`](Self::try_take_probe).
    pub(crate) fn release_probe(&self) {
        self.probing.store(false, Ordering::Release);
    }

    /// Records a successful request made while closed: the run of failures
    /// resets and the breaker is closed.
    ///
    /// ```
    /// let b = herdless::Breaker::new(1);
    /// b.record_failure();
    /// b.record_success();
    /// assert!(!b.is_open());
    /// ```
    pub fn record_success(&self) {
        self.failures.store(0, Ordering::Release);
    }

    /// Records a failed request made while closed (saturating).
    ///
    /// ```
    /// let b = herdless::Breaker::new(2);
    /// b.record_failure();
    /// assert!(!b.is_open());
    /// ```
    pub fn record_failure(&self) {
        let _ = self
            .failures
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                Some(n.saturating_add(1))
            });
    }

    /// A jittered wait before asking again: uniform in `[probe_wait / 2,
    /// probe_wait]`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = herdless::Breaker::new(1).probe_wait(Duration::from_secs(2));
    /// let w = b.wait_for(&mut herdless::Rng::with_seed(1));
    /// assert!(w >= Duration::from_secs(1) && w <= Duration::from_secs(2));
    /// ```
    pub fn wait_for(&self, rng: &mut Rng) -> Duration {
        let hi = u64::try_from(self.wait.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(rng.between(hi / 2, hi))
    }
}

#[cfg(test)]
mod tests;
