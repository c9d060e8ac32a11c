//! Adaptive server pushback: a slot allocator that learns what the
//! [`SlotAllocator`](crate::pushback::SlotAllocator) is told — the service's
//! capacity and the end of its outage — and keeps its schedule for the
//! callers that honor it when others do not.
//!
//! The [`SlotAllocator`](crate::pushback::SlotAllocator) is exact when the server
//! knows three things: its capacity, when an outage ends, and that every
//! caller honors Retry-After. An [`AdaptiveAllocator`] is told at most a
//! starting estimate and learns the rest from the service's own answers. It
//! sits in front of the service as the slot allocator does, with two more
//! calls: after each request it admitted, the driver reports whether the
//! service [`served`](AdaptiveAllocator::served) it or
//! [`refused`](AdaptiveAllocator::refused) it (a 503 or 429 of its own).
//!
//! ## Admission and slots
//!
//! As in the slot allocator: a GCRA admits up to the current estimate (with
//! a [`burst`](AdaptiveBuilder::burst) of 100 ms of it), and every rejected
//! caller gets its own slot, `1 / estimate` after the previous one, after the
//! capacity already promised, never past the horizon. A refused request gets
//! a slot too ([`refused`](AdaptiveAllocator::refused) returns it), so a
//! caller is never left with a bare 503.
//!
//! ## Learning the capacity
//!
//! Per 100 ms window (see `estimate.rs` for the rule): when the service
//! refused some of what was admitted, its served rate in that window becomes
//! the estimate (verified); when callers were turned away and the service
//! refused nothing, the estimate grows, fast while unverified, gently once
//! verified. An overestimate is corrected within one window of traffic, an
//! underestimate within a few. The allocator's tuned numbers (these
//! growths, the shares below) are in one place, `pushback/tuning.rs`, each
//! with the `herdless simulate` command that justifies it.
//!
//! ## The outage, and its end
//!
//! The allocator takes the service to be **down** after
//! [`down_after`](AdaptiveBuilder::down_after) consecutive refusals with no
//! success in the window (or when told, [`outage`](AdaptiveAllocator::outage)).
//! While down it sheds everything but one **probe** per
//! [`probe_interval`](AdaptiveBuilder::probe_interval) (50 ms), let through to
//! the service: the first probe the service serves ends the outage. On
//! recovery the admission bucket starts empty (a recovering service has
//! nothing saved up) and the estimate is unverified again. With a known end
//! ([`outage_until`](AdaptiveAllocator::outage_until)) there are no probes and
//! the slots start at the end, as in the slot allocator.
//!
//! ### An outage with an unknown end
//!
//! A caller rejected while the service is down is booked no sooner than
//! `hold = max(min_hold, age)`, where `age` is how long the outage has
//! lasted (`min_hold` 2 s): a caller checks back about once per elapsed
//! outage — exponential backoff, but coordinated by the server and spread at
//! the estimate — so a long outage costs each caller a number of calls that
//! grows with the logarithm of its length, not linearly. Callers that come
//! back while the service is still down are rebooked behind the others; when
//! the probe sees the recovery, the schedule already holds the fleet.
//!
//! ### Before the outage is found: a lone caller
//!
//! The refusals that tell the allocator the service is down are callers'
//! attempts. A fleet spends them one per caller; a lone caller spends its
//! own, and a slot of one interval after each (2 ms at 500/s) would use up
//! its attempts before `down_after` is reached. So a **refusal run that
//! outlasts the slot its first refusal was given** (nothing served since,
//! and a caller could have come back: the service refused everything for as
//! long as a caller was told to wait) is held as an outage is: each refused
//! caller is booked no sooner than `max(min_hold, age of the run)`. A lone
//! caller returns at about 0, one interval, 2 s, 4 s, 8 s…: no faster than
//! plain exponential backoff, and when `down_after` is reached the outage's
//! age counts from the run's start. In a fleet the first refused caller's
//! slot lies behind the others', so a run rarely outlasts it.
//!
//! ## Callers that ignore their slot
//!
//! With [`decide_for`](AdaptiveAllocator::decide_for) the driver names the
//! caller (a client id header, an API key). A caller that comes back before
//! its slot is marked: it is told its slot again, without a new booking, and
//! is admitted only into spare capacity (the admission check with half the
//! burst tolerance: the other half is kept for the callers due), so the callers that wait for their slots are not pushed back
//! by those that do not. See `clients.rs`. [`decide`](AdaptiveAllocator::decide)
//! treats every arrival as a new caller.
//!
//! ## The hold: a capacity-aware reconnect queue
//!
//! Every slot the allocator hands out during an outage is an answer given
//! before the end, when nothing has been served: the caller's next arrival
//! is fixed by it, right or wrong, and no schedule of slots, re-checks or
//! ramps can correct it after the service is back ("What learning cannot
//! fix", below). **Holding** a request open across the end — answering it
//! later instead of now — lets the allocator shape arrivals *after* it has
//! learned the capacity. With [`hold`](AdaptiveBuilder::hold) (or
//! [`hold_max`](AdaptiveBuilder::hold_max), [`hold_for`](AdaptiveBuilder::hold_for)):
//!
//! * **What is held.** A request that would be rejected is answered
//!   [`Allotment::Hold`] instead, while fewer than `hold_max` are held and it
//!   would be released within `hold_for` (default 10 s, below common
//!   clients' per-attempt timeouts): always while the service is down with
//!   an unknown end; before a known end, when the end and the queue ahead (at
//!   the starting rate) are that close; while up, when the queue ahead drains
//!   that soon at the estimate. While requests are held, nobody overtakes
//!   them: every arrival joins the back of the queue (first in, first out).
//!   An admitted request the service refuses is held too, at the front.
//! * **Release** ([`release`](AdaptiveAllocator::release), called by the
//!   driver at [`next_release`](AdaptiveAllocator::next_release)): from the
//!   known end, or from the first probe the service serves (while it is down
//!   with an unknown end the probe *is* the first held request, one per
//!   `probe_interval`, so a hold with nobody arriving still probes). After
//!   an outage the estimate restarts at a share of what it was
//!   (`RELEASE_START`), keeps that rate for a few windows
//!   (`SETTLE_WINDOWS`), then grows per window while the service refuses
//!   nothing (`HOLD_GROWTH`: TCP's slow start, gentler, because the whole
//!   queue is behind it), and drops to what the service served when it
//!   refuses (the rule above; a refusal also ends the wait). The wait is
//!   for the slack a service saves while it is back and nobody knows yet
//!   (between two probes, or before a told end): that slack serves the
//!   first windows without a refusal, so they say nothing about the rate. A
//!   released request the service refused goes back to the front
//!   ([`refused_held`](AdaptiveAllocator::refused_held)): its client sees
//!   nothing.
//! * **At `hold_for`** a held request is answered with a slot: behind the
//!   queue at the learned rate; before a known end, a slot that brings it
//!   back shortly before the end, to be held again; during an unknown
//!   outage, as the callers outside the hold.
//! * **Past `hold_max`** callers get slots booked conservatively, at a
//!   share of the estimate below the release's (`OUTSIDE_SHARE`: an
//!   estimate twice the capacity must not bring them back above it): from a
//!   known end (or, while the end is still more than `hold_for / 2` away,
//!   shortly before it, as many as the hold will take then); during an
//!   unknown outage at `HOLD_SHARE` of that (callers rebooked at different
//!   times overlap when they come back), no sooner than `max(min_hold,
//!   age)` but at most `hold_for / 2` later, so that however long the outage a
//!   caller outside the hold is back soon after the end (the callers inside
//!   wait in the queue, not in an ever-longer Retry-After). These are the
//!   only arrivals the allocator cannot correct.
//!
//! The default `hold_max` is what the starting rate releases in a share of
//! `hold_for` (`HOLD_MAX_SPAN`; 2.4 s of the estimate at the default 10 s):
//! a hold filled when an outage begins drains before its first request runs
//! out of time. The design follows TCP's slow start and the
//! loss-based half of Netflix's concurrency-limits (a limit raised while
//! nothing is refused, cut to what was served when something is), with the
//! queue in front as Envoy's adaptive concurrency filter keeps one; the
//! driver owns the requests and the timers, the allocator only their order
//! and their time. A held request costs the allocator 24 bytes (its
//! [`Ticket`](crate::pushback::Ticket)); `docs/fleet-protection.md` measures
//! what it costs a server.
//!
//! ## What learning cannot fix
//!
//! Every caller's first return after the outage was scheduled *before* it,
//! when the service had completed nothing: those returns arrive at the
//! starting estimate, right or wrong. With an estimate twice the capacity and
//! a known end, the first seconds after the end see twice what the service
//! can take (the excess is refused by the allocator at no cost to the
//! service, and rebooked at the learned rate); with half the capacity, the
//! fleet drains at half the rate it could. The hold of an unknown end
//! dilutes both (callers rebooked during the outage are spread further).
//! `docs/fleet-protection.md` measures this matrix.
//!
//! ```
//! use std::time::Duration;
//! use herdless::pushback::AdaptiveAllocator;
//!
//! // Told 2,000/s; the service really serves 1,000/s.
//! let mut alloc = AdaptiveAllocator::builder().estimate(2_000.0).build()?;
//! let mut now = Duration::ZERO;
//! let mut tokens = 0.0f64;
//! for _ in 0..2_000 {
//!     now += Duration::from_micros(250); // 4,000 requests/s offered
//!     tokens = (tokens + 0.25).min(100.0); // the service: 1,000/s, a burst of 100
//!     if alloc.decide(now).is_admit() {
//!         if tokens >= 1.0 { tokens -= 1.0; alloc.served(now); } else { let _slot = alloc.refused(now, None); }
//!     }
//! }
//! assert!((alloc.capacity() - 1_000.0).abs() < 100.0, "{}", alloc.capacity());
//! assert!(alloc.is_verified());
//! # Ok::<(), herdless::pushback::PushbackError>(())
//! ```

mod allowance;
mod answers;
mod booking;
mod builder;
mod clients;
mod counts;
mod decide;
mod estimate;
mod hold;
mod release;
mod share;
mod waves;

pub use builder::{
    AdaptiveBuilder, DEFAULT_HOLD_FOR, DEFAULT_HOLD_FOR_MAX, MAX_CALLERS, MAX_CAPACITY, MAX_HOLD,
    MIN_CAPACITY,
};
pub use counts::AdaptiveCounts;

use std::fmt;
use std::time::Duration;

use booking::Booking;
use clients::Clients;
use estimate::Estimate;
use hold::Hold;

use crate::pushback::{Allotment, Caller, PushbackError, ns};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Up,
    Down {
        /// When the outage started (set at the first decision when unknown).
        since: Option<u64>,
        /// Its known end, if any.
        until: Option<u64>,
        /// The next probe may go at or after this time.
        next_probe: u64,
    },
}

/// Admits up to a learned capacity and books rejected callers into the
/// capacity to come. See the [module documentation](self).
///
/// ```
/// use std::time::Duration;
/// use herdless::pushback::AdaptiveAllocator;
/// let mut a = AdaptiveAllocator::builder().estimate(10.0).build()?.outage_until(Duration::from_secs(5));
/// assert_eq!(a.decide(Duration::from_secs(1)).retry_after(), Some(Duration::from_secs(4)));
/// # Ok::<(), herdless::pushback::PushbackError>(())
/// ```
#[derive(Clone)]
pub struct AdaptiveAllocator {
    pub(crate) horizon_ns: u64,
    pub(crate) burst_ns: u64,
    pub(crate) min_hold_ns: u64,
    pub(crate) probe_ns: u64,
    pub(crate) down_after: u32,
    pub(crate) mode: Mode,
    pub(crate) estimate: Estimate,
    pub(crate) schedule: Booking,
    pub(crate) clients: Clients,
    pub(crate) counts: AdaptiveCounts,
    pub(crate) hold: Option<Hold>,
    /// The counters at the last [`report`](Self::report).
    pub(crate) mark: share::Mark,
    /// An eviction is booking: the queue is behind it, not ahead.
    pub(crate) evicting: bool,
    /// Bumped by every change of mode: an allowance granted before is not
    /// returned after (`allowance.rs`).
    pub(crate) generation: u64,
}

impl fmt::Debug for AdaptiveAllocator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdaptiveAllocator")
            .field("capacity", &self.estimate.capacity)
            .field("verified", &self.estimate.verified)
            .field("mode", &self.mode)
            .field("counts", &self.counts)
            .field("tracked_callers", &self.clients.len())
            .field("held", &self.held())
            .finish_non_exhaustive()
    }
}

impl AdaptiveAllocator {
    /// The settings, with their defaults.
    ///
    /// ```
    /// let a = herdless::pushback::AdaptiveAllocator::builder().estimate(500.0).build()?;
    /// assert!(!a.is_verified());
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn builder() -> AdaptiveBuilder {
        AdaptiveBuilder::default()
    }

    /// An allocator starting from `estimate` requests per second, never
    /// handing out a delay past `horizon`, the other settings at their
    /// defaults.
    ///
    /// # Errors
    ///
    /// As [`AdaptiveBuilder::build`].
    ///
    /// ```
    /// use std::time::Duration;
    /// let a = herdless::pushback::AdaptiveAllocator::new(250.0, Duration::from_secs(30))?;
    /// assert_eq!(a.capacity(), 250.0);
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn new(estimate: f64, horizon: Duration) -> Result<Self, PushbackError> {
        Self::builder().estimate(estimate).horizon(horizon).build()
    }

    /// Starts in an outage that ends at `until` (since the epoch): no probes,
    /// slots from `until` on, at the estimate.
    ///
    /// ```
    /// use std::time::Duration;
    /// let a = herdless::pushback::AdaptiveAllocator::new(10.0, Duration::from_secs(60))?
    ///     .outage_until(Duration::from_secs(2));
    /// assert!(a.in_outage(Duration::from_secs(1)));
    /// assert!(!a.in_outage(Duration::from_secs(2)));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn outage_until(mut self, until: Duration) -> Self {
        self.start_outage(Some(until));
        self
    }

    /// Starts in an outage with an unknown end: probes find it.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut a = herdless::pushback::AdaptiveAllocator::new(10.0, Duration::from_secs(60))?.outage();
    /// assert!(a.decide(Duration::ZERO).is_admit()); // the first probe
    /// assert!(!a.decide(Duration::ZERO).is_admit());
    /// a.served(Duration::ZERO); // the probe was served: the outage is over
    /// assert!(!a.in_outage(Duration::ZERO));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn outage(mut self) -> Self {
        self.start_outage(None);
        self
    }

    /// Switches to outage mode now, until `until` (since the epoch) or, with
    /// `None`, until a probe is served (or [`recover`](Self::recover)).
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut a = herdless::pushback::AdaptiveAllocator::new(10.0, Duration::from_secs(60))?;
    /// a.start_outage(None);
    /// assert!(a.in_outage(Duration::from_secs(100)));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn start_outage(&mut self, until: Option<Duration>) {
        self.mode = Mode::Down {
            since: None,
            until: until.map(ns),
            next_probe: 0,
        };
        self.generation += 1;
    }

    /// Leaves outage mode at `now`: the admission bucket starts empty and the
    /// estimate is unverified.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut a = herdless::pushback::AdaptiveAllocator::new(10.0, Duration::from_secs(60))?.outage();
    /// a.recover(Duration::from_secs(3));
    /// assert!(!a.in_outage(Duration::from_secs(3)));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn recover(&mut self, now: Duration) {
        self.recover_at(ns(now));
    }

    /// Whether the allocator sheds everything (but probes) at `now`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let a = herdless::pushback::AdaptiveAllocator::new(10.0, Duration::from_secs(60))?;
    /// assert!(!a.in_outage(Duration::ZERO));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn in_outage(&self, now: Duration) -> bool {
        match self.mode {
            Mode::Up => false,
            Mode::Down { until: None, .. } => true,
            Mode::Down { until: Some(u), .. } => ns(now) < u,
        }
    }

    /// The current capacity estimate, requests per second.
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(herdless::pushback::AdaptiveAllocator::new(42.0, Duration::from_secs(9))?.capacity(), 42.0);
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn capacity(&self) -> f64 {
        self.estimate.capacity
    }

    /// Whether the estimate was measured (a window in which the service
    /// refused part of what was admitted) since the start or the last
    /// recovery.
    ///
    /// ```
    /// use std::time::Duration;
    /// assert!(!herdless::pushback::AdaptiveAllocator::new(42.0, Duration::from_secs(9))?.is_verified());
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn is_verified(&self) -> bool {
        self.estimate.verified
    }

    /// The longest delay ever handed out.
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(herdless::pushback::AdaptiveAllocator::new(1.0, Duration::from_secs(7))?.horizon().as_secs(), 7);
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn horizon(&self) -> Duration {
        Duration::from_nanos(self.horizon_ns)
    }

    /// What the allocator has done so far.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut a = herdless::pushback::AdaptiveAllocator::new(1.0, Duration::from_secs(7))?;
    /// let _ = a.decide(Duration::ZERO);
    /// assert_eq!(a.counts().admitted, 1);
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn counts(&self) -> AdaptiveCounts {
        self.counts
    }

    /// Decides a request from an unnamed caller arriving at `now` (since the
    /// epoch; times should not decrease from call to call).
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut a = herdless::pushback::AdaptiveAllocator::builder()
    ///     .estimate(2.0).burst(Duration::from_millis(1)).client_spread(0.0).build()?;
    /// assert!(a.decide(Duration::ZERO).is_admit());
    /// assert_eq!(a.decide(Duration::ZERO).retry_after(), Some(Duration::from_millis(500)));
    /// assert_eq!(a.decide(Duration::ZERO).retry_after(), Some(Duration::from_millis(1000)));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn decide(&mut self, now: Duration) -> Allotment {
        self.decide_key(ns(now), None, None)
    }

    /// Decides a request from the caller named `key` (see the [module
    /// documentation](self#callers-that-ignore-their-slot)).
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut a = herdless::pushback::AdaptiveAllocator::new(10.0, Duration::from_secs(60))?
    ///     .outage_until(Duration::from_secs(5));
    /// let slot = a.decide_for(Duration::ZERO, 7).retry_after().unwrap();
    /// assert_eq!(slot, Duration::from_secs(5));
    /// // Back after one second instead of five: told the same slot, nothing booked.
    /// assert_eq!(a.decide_for(Duration::from_secs(1), 7).retry_after(), Some(Duration::from_secs(4)));
    /// assert_eq!(a.counts().early, 1);
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn decide_for(&mut self, now: Duration, key: u64) -> Allotment {
        self.decide_key(ns(now), Some(key), None)
    }

    /// Decides a request from `caller`: its key, as
    /// [`decide_for`](Self::decide_for), and its patience, which lets the
    /// hold keep it up to `hold_for_max` instead of `hold_for` (or not at
    /// all, when it waits less than `hold_for`; see
    /// [`AdaptiveBuilder::hold_for_max`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::pushback::{AdaptiveAllocator, Caller};
    /// let mut a = AdaptiveAllocator::builder().estimate(10.0).hold().build()?
    ///     .outage_until(Duration::from_secs(40));
    /// let patient = Caller::new().wait(Duration::from_secs(120));
    /// assert!(a.decide_caller(Duration::ZERO, patient).is_hold(), "held: its end is within 50 s");
    /// // One that says nothing would not be released within 10 s: queued, to come back.
    /// assert!(a.decide_caller(Duration::ZERO, Caller::new()).is_requeue());
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn decide_caller(&mut self, now: Duration, caller: Caller) -> Allotment {
        self.decide_key(ns(now), caller.key, caller.wait_ns())
    }
}
