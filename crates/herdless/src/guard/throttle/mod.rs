//! A client-side adaptive throttle: one process paces its calls by what the
//! endpoint answers, with no help from the server.
//!
//! Server pushback needs the server's cooperation. A fleet calling someone
//! else's endpoint has only its own backoff, which decorrelates the fleet
//! but does not bound it. A [`Throttle`] is shared by every call of one
//! process (an `Arc`, like the [`RetryBudget`](crate::RetryBudget)) and
//! consulted by the [engine](crate::engine) before **every** attempt, the
//! first included: a call that may not go yet waits
//! ([`Gate::Wait`](crate::engine::Gate), not an attempt), as behind a
//! breaker's probe.
//!
//! It is a token bucket whose rate follows the endpoint's answers:
//!
//! | phase | the rate | leaves when |
//! |---|---|---|
//! | start | `initial` calls per window (10 per 100 ms), doubling per window while calls wait and nothing is refused (TCP's slow start) | a refusal: ×0.7, steady; or "down": probe |
//! | probe | one call per probe interval, the interval doubling from `probe_min` (500 ms) to `probe_max` (3 s) per refused probe, each jittered within its upper half | a call is served: ramp; the first probe served (the endpoint was never down: a busy moment, or a process with a few calls left, whose window held nothing served): 0.7 of the rate before, steady |
//! | ramp | from the rate that would send every call the process has waiting within 10 s (its waiters counted by how often they ask while it probes), at least one call per `probe_min` (the first probe's rate: the interval grew with the outage, not with the endpoint), growing while calls wait and nothing is refused as `(1 + k / 80)³` over the `k` windows since it began: a cubic in time, ever gentler (3.75 % per window at first, 2.5 % 4 s in) | a refusal: ×0.7 (CUBIC's β), steady |
//! | steady | ×1.1 per window while calls wait and nothing is refused; a window whose refusals reach 2 % sets it to what the endpoint served (at least half); after 3 windows without a refusal it ramps again | |
//!
//! Why a cubic ramp, and not TCP's doubling: the endpoint's own bucket (a
//! server that was idle banks a burst) hides the overshoot until the bank is
//! spent, so the only signal, a refusal, comes late. Doubling per window
//! reaches twice the capacity before the first refusal; a growth that slows
//! with time reaches the capacity a few seconds after the recovery with a
//! step of a few percent, so the overshoot stays near the bank's size. The
//! figures, against plain full jitter and an AWS-adaptive CUBIC bucket, are
//! in the repository's `docs/fleet-protection.md` (section "A client-side
//! adaptive throttle").
//!
//! * **Every retryable failure counts**, whatever the classification: a 503
//!   of an outage, a timeout and a 429 alike ([`threshold`](ThrottleBuilder::threshold)
//!   consecutive failures, 1 by default, with nothing served for a window,
//!   mean the endpoint refuses everything). A throttle that needs the outage's 503 to
//!   be classified as throttling does nothing in an outage. A terminal
//!   answer (a 404) is an answer: it counts as served.
//! * **A probe costs a fresh call's attempt**: while probing, a call that was
//!   refused before leaves a due probe to a call not yet refused for up to
//!   `max_wait`, when one has asked since the last probe (otherwise the
//!   callers back from a refused probe spend their attempts on probe after
//!   probe, and give up in a long outage).
//! * **A refused probe is a probe's refusal**: the calls that went before
//!   the probing began and are refused after it (a burst refused together,
//!   a slow call timing out) neither double the interval nor push the next
//!   probe back (ten refused together used to put the first probe 1.5 to
//!   3 s away, `probe_max`, instead of within `probe_min`).
//! * **The rate grows only while calls wait for it**: over the time up to
//!   which a waiting caller was told to come back, never over an idle
//!   spell or a clock stepped forward (10 s idle after one window of
//!   waiters used to take the rate to the maximum, 1e9/s, and let every
//!   call go).
//! * **It cannot tell refusals that do not follow the rate**: an endpoint
//!   failing a steady share of its calls whatever the load (one in 20) is
//!   taken for one at its capacity in every window, and the rate falls
//!   toward its floor. Use it where failures mean overload (figures in the
//!   repository's `docs/fleet-protection.md`).
//! * **It never deadlocks**: while the endpoint refuses everything one call
//!   per probe interval still goes, so a recovery is seen within `probe_max`.
//! * **Waiting calls are spread**: each is given its own turn, one interval
//!   apart at the current rate, so the calls of a process do not wake
//!   together; a turn further than `max_wait` (500 ms) away is not booked:
//!   the call waits `max_wait` and asks again (so waiters that re-ask never
//!   push the later turns back).
//! * The decrease is measured, not guessed (the rate the endpoint served, as
//!   in BBR); the probe is the breaker's, without its all-or-nothing release.
//!
//! * **A call with no time left is not made.** A call waits at the gate
//!   while its turn is within its elapsed limit; when the turn is at or past
//!   it (or the limit has come), the call gives up there (`max_elapsed`),
//!   its first attempt included: it then ends after 0 attempts, nothing
//!   sent, with its classifier's [`unstarted`](crate::Classify::unstarted)
//!   error. An attempt started with no time left would only be counted as
//!   sent (a connection opened and dropped at once).
//!
//! Time is the driver's: every call takes `now` since an epoch of the
//! driver's choosing, shared by every caller of the throttle. The executors
//! all read the timer's [`Clock::now_ns`](crate::Clock::now_ns), the blocking
//! one included (its own clock, the coarse one, has another epoch); the
//! simulator, virtual time. A time earlier than the last seen never makes a
//! caller wait: a step back within a window (two clocks a tick apart) is
//! read as the last time seen, a longer one (a clock set back) as no time
//! passing, the times that follow counting from it. The state sits behind a
//! mutex held for a few arithmetic operations; a poisoned lock is recovered.
//!
//! ```
//! use std::time::Duration;
//! use herdless::guard::Throttle;
//! use herdless::Rng;
//!
//! let t = Throttle::new();
//! let mut rng = Rng::with_seed(1);
//! let now = Duration::ZERO;
//! // A refusal with nothing served (the default threshold is 1): the
//! // endpoint is down, probe.
//! assert!(t.acquire(now, &mut rng).is_ok());
//! t.record_failure(now);
//! assert!(t.is_probing());
//! let wait = t.acquire(now, &mut rng).unwrap_err(); // the next call waits for the probe
//! assert!(wait <= Duration::from_millis(500));
//! let later = Duration::from_millis(500);
//! assert!(t.acquire(later, &mut rng).is_ok()); // the probe, refused
//! t.record_failure(later);
//! let again = later + Duration::from_secs(1);
//! assert!(t.acquire(again, &mut rng).is_ok()); // the next, served
//! t.record_success(again);
//! assert!(!t.is_probing());
//! assert_eq!(t.rate(), 2.0); // the ramp starts at one call per probe_min
//! ```

mod control;

use std::fmt;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use control::{Phase, State};

use crate::rng::Rng;

/// The settings, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Settings {
    pub(crate) initial: u32,
    pub(crate) window: u64,
    pub(crate) probe_min: u64,
    pub(crate) probe_max: u64,
    pub(crate) threshold: u32,
    pub(crate) max_wait: u64,
}

impl Settings {
    /// The lowest rate: one call per `probe_max`.
    pub(crate) fn floor(&self) -> f64 {
        1e9 / self.probe_max as f64
    }
}

/// A process's adaptive throttle. See the [module documentation](self).
pub struct Throttle {
    settings: Settings,
    state: Mutex<State>,
}

impl fmt::Debug for Throttle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.lock();
        f.debug_struct("Throttle")
            .field("rate", &s.rate)
            .field("phase", &s.phase)
            .finish_non_exhaustive()
    }
}

impl Default for Throttle {
    fn default() -> Self {
        Self::new()
    }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Throttle {
    /// A throttle with the default settings.
    ///
    /// ```
    /// assert_eq!(herdless::guard::Throttle::new().rate(), 100.0); // 10 per 100 ms
    /// ```
    pub fn new() -> Self {
        ThrottleBuilder::default().build_unchecked()
    }

    /// The settings, validated by [`ThrottleBuilder::build`].
    ///
    /// ```
    /// use std::time::Duration;
    /// let t = herdless::guard::Throttle::builder().probe_max(Duration::from_secs(5)).build()?;
    /// # let _ = t;
    /// # Ok::<(), herdless::guard::ThrottleError>(())
    /// ```
    pub fn builder() -> ThrottleBuilder {
        ThrottleBuilder::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// May a call go at `now`? `Err(wait)`: not yet; wait that long (its
    /// turn, or the probe's; beyond `max_wait`, a share of `[max_wait / 2,
    /// max_wait]` drawn from `rng`) and ask again. Each admission also draws
    /// the jitter of the next probe interval (within its upper half).
    ///
    /// ```
    /// use std::time::Duration;
    /// let t = herdless::guard::Throttle::builder().initial(1).build()?;
    /// let mut rng = herdless::Rng::with_seed(1);
    /// assert!(t.acquire(Duration::ZERO, &mut rng).is_ok());
    /// // 10/s: the next token in 100 ms
    /// assert_eq!(t.acquire(Duration::ZERO, &mut rng), Err(Duration::from_millis(100)));
    /// # Ok::<(), herdless::guard::ThrottleError>(())
    /// ```
    pub fn acquire(&self, now: Duration, rng: &mut Rng) -> Result<(), Duration> {
        self.acquire_ns(ns(now), rng, false)
    }

    /// [`acquire`](Self::acquire) at `now` nanoseconds, for a call that was
    /// `refused` before (or a hedge): what the engine calls. While probing,
    /// such a call leaves a due probe to a call not yet refused for up to
    /// `max_wait`, when one has asked since the last probe.
    #[inline]
    pub(crate) fn acquire_ns(
        &self,
        now: u64,
        rng: &mut Rng,
        refused: bool,
    ) -> Result<(), Duration> {
        self.lock().acquire(now, &self.settings, rng, refused)
    }

    /// A call that went was served (any answer that is not a refusal).
    ///
    /// ```
    /// let t = herdless::guard::Throttle::new();
    /// t.record_success(std::time::Duration::ZERO);
    /// ```
    pub fn record_success(&self, now: Duration) {
        self.record_success_ns(ns(now));
    }

    #[inline]
    pub(crate) fn record_success_ns(&self, now: u64) {
        self.lock().success(now, &self.settings);
    }

    /// A call that went failed retryably (refused, timed out, unreachable).
    ///
    /// ```
    /// use std::time::Duration;
    /// let t = herdless::guard::Throttle::new();
    /// t.record_success(Duration::ZERO);
    /// t.record_failure(Duration::from_millis(10));
    /// assert!(!t.is_probing()); // served 10 ms ago: not an outage
    /// t.record_failure(Duration::from_millis(200));
    /// assert!(t.is_probing()); // refused, and nothing served for a window
    /// ```
    pub fn record_failure(&self, now: Duration) {
        self.record_failure_ns(ns(now));
    }

    #[inline]
    pub(crate) fn record_failure_ns(&self, now: u64) {
        self.lock().failure(now, &self.settings);
    }

    /// The current rate, calls per second.
    pub fn rate(&self) -> f64 {
        self.lock().rate
    }

    /// Whether the throttle takes the endpoint to refuse everything (one
    /// probe per interval).
    pub fn is_probing(&self) -> bool {
        matches!(self.lock().phase, Phase::Probe { .. })
    }
}

/// A [`Throttle`]'s settings.
///
/// | setting | default | range |
/// |---|---|---|
/// | [`initial`](Self::initial): calls per window at the start | 10 | `1..=1_000_000` |
/// | [`window`](Self::window): the measuring window | 100 ms | 10 ms ..= 10 s |
/// | [`probe_min`](Self::probe_min) / [`probe_max`](Self::probe_max): the probe interval's range | 500 ms / 3 s | 1 ms ..= 1 h, `min ≤ max` |
/// | [`threshold`](Self::threshold): consecutive refusals, nothing served for a window, that mean "down" | 1 | `1..` |
/// | [`max_wait`](Self::max_wait): the longest a waiting call waits before asking again | 500 ms | 1 ms ..= 1 h |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct ThrottleBuilder {
    initial: u32,
    window: Duration,
    probe_min: Duration,
    probe_max: Duration,
    threshold: u32,
    max_wait: Duration,
}

impl Default for ThrottleBuilder {
    fn default() -> Self {
        ThrottleBuilder {
            initial: 10,
            window: Duration::from_millis(100),
            probe_min: Duration::from_millis(500),
            probe_max: Duration::from_secs(3),
            threshold: 1,
            max_wait: Duration::from_millis(500),
        }
    }
}

/// A throttle setting out of its range (the message names it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottleError(&'static str);

impl fmt::Display for ThrottleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid throttle setting: {}", self.0)
    }
}

impl std::error::Error for ThrottleError {}

impl ThrottleBuilder {
    /// Calls per window allowed at the start.
    pub fn initial(mut self, calls: u32) -> Self {
        self.initial = calls;
        self
    }

    /// The window the rate is measured and grown over.
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// The first probe interval.
    pub fn probe_min(mut self, d: Duration) -> Self {
        self.probe_min = d;
        self
    }

    /// The longest probe interval: a recovery is seen within it.
    pub fn probe_max(mut self, d: Duration) -> Self {
        self.probe_max = d;
        self
    }

    /// Consecutive refusals, with nothing served in the window, that mean
    /// the endpoint refuses everything.
    pub fn threshold(mut self, n: u32) -> Self {
        self.threshold = n;
        self
    }

    /// The longest a waiting call waits before asking again.
    pub fn max_wait(mut self, d: Duration) -> Self {
        self.max_wait = d;
        self
    }

    /// Validates the settings.
    ///
    /// # Errors
    ///
    /// [`ThrottleError`] naming a setting out of its range.
    ///
    /// ```
    /// use std::time::Duration;
    /// let e = herdless::guard::Throttle::builder().probe_min(Duration::from_secs(9)).build().unwrap_err();
    /// assert!(e.to_string().contains("probe_min"));
    /// ```
    pub fn build(self) -> Result<Throttle, ThrottleError> {
        let ms = Duration::from_millis(1);
        let hour = Duration::from_secs(3_600);
        let check = |ok: bool, what| if ok { Ok(()) } else { Err(ThrottleError(what)) };
        check(
            (1..=1_000_000).contains(&self.initial),
            "initial must be within 1..=1,000,000 calls",
        )?;
        check(
            (Duration::from_millis(10)..=Duration::from_secs(10)).contains(&self.window),
            "window must be within 10 ms..=10 s",
        )?;
        check(
            (ms..=hour).contains(&self.probe_min) && (ms..=hour).contains(&self.probe_max),
            "probe_min and probe_max must be within 1 ms..=1 h",
        )?;
        check(
            self.probe_min <= self.probe_max,
            "probe_min must be at most probe_max",
        )?;
        check(self.threshold >= 1, "threshold must be at least 1")?;
        check(
            (ms..=hour).contains(&self.max_wait),
            "max_wait must be within 1 ms..=1 h",
        )?;
        Ok(self.build_unchecked())
    }

    fn build_unchecked(self) -> Throttle {
        let settings = Settings {
            initial: self.initial,
            window: ns(self.window),
            probe_min: ns(self.probe_min),
            probe_max: ns(self.probe_max),
            threshold: self.threshold,
            max_wait: ns(self.max_wait),
        };
        Throttle {
            state: Mutex::new(State::new(&settings)),
            settings,
        }
    }
}

#[cfg(test)]
mod tests;
