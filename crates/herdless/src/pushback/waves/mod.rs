//! Cohort-based reactivation: bring a fleet back in planned waves, with no
//! state per client on the server.
//!
//! A server that comes back (a restart that dropped every connection at
//! once, a deploy, a push that wakes every terminal) faces its whole
//! population at the same instant. Jitter decorrelates the fleet without
//! knowing the server's capacity; slots ([`SlotAllocator`](super::SlotAllocator),
//! [`AdaptiveAllocator`](super::AdaptiveAllocator)) book each caller its own
//! time, which costs a booking per caller and, to keep callers that ignore
//! their slot apart, a table of them; a hold keeps a connection per waiting
//! caller. A **plan of waves** costs the server four numbers: the
//! population is cut into `K` waves of spacing `Δ`, each the size the
//! capacity serves in `Δ`, and every caller computes its own wave from its
//! stable id with a hash salted per plan ([`WavePlan`], the cohort hash).
//! It is done by hand in production (Discord's gateway lets shard
//! `id % max_concurrency` identify in its own 5 s bucket; NATS's lame-duck
//! mode spreads evictions over a configured time; AWS IoT Jobs grow a
//! rollout while successes hold); here the plan, its hash and the client's
//! part are in one place, sans-IO.
//!
//! ## The server: [`WavePlanner`]
//!
//! The planner sits where an allocator sits (it is an
//! [`Allocator`], so the tower
//! [`PushbackLayer`](crate::adapters::tower::PushbackLayer) and `herdless
//! stub --waves` drive it) and keeps an
//! [`AdaptiveAllocator`](super::AdaptiveAllocator) inside for
//! what it already does well: admission (a GCRA at the estimate), learning
//! the capacity from the service's refusals, finding an outage and its end.
//! What changes is the answer to a caller turned away: not a slot booked
//! for it but its place in a plan, announced with the rejection.
//!
//! * **A plan of the whole population** when the population is told
//!   ([`population`](WavePlannerBuilder::population): the connections a
//!   broker had, the terminals a deploy will wake). It begins at the first
//!   caller turned away (after the capacity already promised to
//!   admissions, and not before a known outage end) or when
//!   [`announce`](WavePlanner::announce)d; its span is the population over
//!   0.95 of the estimate (the rest is headroom: a 100 ms bucket of uniform
//!   arrivals varies by about its square root), cut in `K` waves of about
//!   [`spacing`](WavePlannerBuilder::spacing) (default 1 s), the spacing
//!   then adjusted so the last wave is as full as the others. Every
//!   replica told the same population, capacity and seed announces the same
//!   plan for the same start, the start read on a clock they share (the
//!   `now` passed in): they agree without talking. Replicas whose clocks
//!   start apart (each `now` from its own process start, as `herdless
//!   stub`'s) or whose seeds differ announce different salts: a caller may
//!   get a different wave from each.
//! * **A counted plan** otherwise: the callers turned away are placed in
//!   turn, in segments of 100 ms of the estimate (longer below 10/s: a
//!   segment holds whole callers, at no more than the rate; each a plan of one
//!   wave, announced as such), one after the other from where everything
//!   planned ends. No population to know; the count is the queue's. A
//!   caller placed twice (refused again) is counted twice, as it should be:
//!   it needs a second place. A caller that ignores its place and comes back
//!   at random is counted each time too, so with a population told the plan
//!   of the whole population is the one to use.
//! * **Named callers** ([`decide_for`](WavePlanner::decide_for), the layer's
//!   `key_header`): under a plan of the whole population the planner computes
//!   a caller's wave from its key, as the caller does, so it needs no table.
//!   A caller that comes before its wave is admitted only into capacity the
//!   plan leaves over (half the burst) and is otherwise told its point again
//!   (`early`); one turned away in or after its wave is told the next wave
//!   (`rejoined`). Its `Retry-After` is its own point in the plan, so plain
//!   clients that know nothing of plans come back in their wave too.
//! * **A capacity told or learned.** Told
//!   ([`capacity`](WavePlannerBuilder::capacity)), it is the capacity:
//!   admission and every plan at it. Learned
//!   ([`estimate`](WavePlannerBuilder::estimate): a starting point, or
//!   none), the inner allocator's estimate moves as it does, and the plans
//!   and segments made later are sized to it: they grow while the service
//!   serves all it is given and callers wait, and shrink to what it served
//!   when it refuses. A plan already announced does not change: callers rely
//!   on it, and replicas must agree. Learning reads a refusal as the
//!   service's limit, so arrivals that bunch for a moment (a loaded client
//!   machine's wake-ups) teach it a rate below the capacity, and callers
//!   then wait for waves the service could have served: a capacity that is
//!   known is better told.
//! * **An outage with an unknown end** leaves nothing to plan from: callers
//!   turned away then get the inner allocator's slots (as long as the
//!   outage has lasted), and the plans start when a probe finds the service
//!   back. With a known end ([`outage_until`](WavePlanner::outage_until))
//!   plans begin at the end.
//!
//! ## The client: [`WaveGuard`](crate::guard::waves::WaveGuard)
//!
//! A client's guard reads the plan from a refusal, computes its wave from
//! its own id, draws its time uniformly within the wave (its jitter, in
//! place of the policy's spread), and when it misses its wave (refused in
//! it, or learning the plan after it) rejoins the next one. See
//! [`guard::waves`](crate::guard::waves).
//!
//! ## What it costs
//!
//! The planner keeps the inner allocator's fixed state (no table of
//! callers: [`WavePlanner`] never names one to it), the plan in force, the
//! current segment and its counters: the same few hundred bytes for ten
//! callers or ten million. A waiting caller costs the server nothing.
//!
//! ```
//! use std::time::Duration;
//! use herdless::pushback::waves::WavePlanner;
//! use herdless::pushback::allocator::caller_key;
//!
//! // 1,000 callers come back to a server that serves 100/s.
//! let mut planner = WavePlanner::builder().capacity(100.0).population(1_000).build()?;
//! let now = Duration::ZERO;
//! let key = caller_key(b"worker-7");
//! let mut first = None;
//! for i in 0..20u32 {
//!     let answer = planner.decide_for(now, caller_key(format!("worker-{i}").as_bytes()));
//!     if !answer.is_admit() && first.is_none() {
//!         first = planner.plan(now);
//!     }
//! }
//! let plan = first.unwrap();
//! assert_eq!(plan.waves(), 11); // 1,000 / 95 per s = 10.5 s, in waves of about 1 s
//! let told = planner.decide_for(now, key).retry_after().unwrap();
//! assert_eq!(told.as_millis() as i64, plan.point_ms(key)); // its own point in the plan
//! # Ok::<(), herdless::pushback::PushbackError>(())
//! ```

mod builder;
mod plan;
mod planner;

pub use builder::{MAX_POPULATION, WavePlannerBuilder};
pub use plan::{MAX_SPACING_MS, MAX_START_MS, MAX_WAVES, SALT_LIMIT, WavePlan, WavePlanError};
pub use planner::{WaveCounts, WavePlanner};

use std::time::Duration;

use crate::pushback::allocator::Allocator;
use crate::pushback::{Allotment, PushbackError, ns};

impl WavePlanner {
    /// A planner told a capacity of `capacity` requests per second,
    /// counting its population, the other settings at their defaults.
    ///
    /// # Errors
    ///
    /// As [`WavePlannerBuilder::build`].
    ///
    /// ```
    /// assert!(herdless::pushback::waves::WavePlanner::new(0.0).is_err());
    /// ```
    pub fn new(capacity: f64) -> Result<Self, PushbackError> {
        Self::builder().capacity(capacity).build()
    }

    /// The settings, with their defaults.
    pub fn builder() -> WavePlannerBuilder {
        WavePlannerBuilder::default()
    }

    /// Starts in an outage that ends at `until` (since the epoch): plans
    /// begin there.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::pushback::waves::WavePlanner;
    /// let mut p = WavePlanner::new(10.0)?.outage_until(Duration::from_secs(5));
    /// let slot = p.decide(Duration::from_secs(1)).retry_after().unwrap();
    /// assert!(slot >= Duration::from_secs(4) && slot < Duration::from_millis(4_100));
    /// assert_eq!(p.plan(Duration::from_secs(1)).unwrap().start_ms(), 4_000);
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn outage_until(mut self, until: Duration) -> Self {
        self.inner.start_outage(Some(until));
        self
    }

    /// Starts in an outage with an unknown end: probes find it.
    pub fn outage(mut self) -> Self {
        self.inner.start_outage(None);
        self
    }

    /// Decides a request from an unnamed caller at `now` (since the epoch).
    pub fn decide(&mut self, now: Duration) -> Allotment {
        self.decide_ns(ns(now), None)
    }

    /// Decides a request from the caller named `key` ([`caller_key`] of its
    /// id) at `now`.
    ///
    /// [`caller_key`]: crate::pushback::allocator::caller_key
    pub fn decide_for(&mut self, now: Duration, key: u64) -> Allotment {
        self.decide_ns(ns(now), Some(key))
    }

    /// The service served a request this planner admitted.
    pub fn served(&mut self, now: Duration) {
        self.inner.served(now);
    }

    /// The service refused a request this planner admitted (its own 503 or
    /// 429): the caller's place in a plan (or a slot while the service is
    /// down with an unknown end).
    pub fn refused(&mut self, now: Duration, key: Option<u64>) -> Allotment {
        self.refused_ns(ns(now), key)
    }

    /// Announces the plan of the whole population now, beginning at
    /// `start` (since the epoch; no earlier than the capacity already
    /// promised): what a server going away hands out in its last answers,
    /// so that every caller's first return is already in its wave. `None`
    /// without a [`population`](WavePlannerBuilder::population), or when
    /// the plan begins more than a day from `now` (the wire's range; the
    /// plan is in force all the same, and callers are told their times).
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::pushback::waves::WavePlanner;
    /// let mut p = WavePlanner::builder().capacity(1_000.0).population(3_800).build()?;
    /// let plan = p.announce(Duration::ZERO, Duration::from_secs(1)).unwrap();
    /// assert_eq!((plan.start_ms(), plan.waves(), plan.spacing_ms()), (1_000, 4, 1_000));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn announce(&mut self, now: Duration, start: Duration) -> Option<WavePlan> {
        let n = self.population?;
        let floor = self.inner.plan_floor(ns(now)).max(ns(start));
        let plan = self.whole_plan(floor, n);
        self.set_whole(plan);
        plan.seen_at(ns(now))
    }

    /// The plan the last caller turned away was given, as seen at `now`
    /// (the `Herdless-Plan` header of its answer); `None` when it got a
    /// plain slot, nobody was turned away yet, or the plan's start is more
    /// than a day from `now` (the wire's range: its `Retry-After` alone).
    pub fn plan(&self, now: Duration) -> Option<WavePlan> {
        self.last_seen(now)
    }

    /// The plan of the whole population in force at `now`, if any.
    pub fn whole(&self, now: Duration) -> Option<WavePlan> {
        self.whole
            .filter(|p| ns(now) < p.end_ns())
            .and_then(|p| p.seen_at(ns(now)))
    }

    /// What the planner has done so far.
    pub fn counts(&self) -> WaveCounts {
        self.counts
    }

    /// The capacity plans are sized to, requests per second (told, or the
    /// current estimate).
    pub fn capacity(&self) -> f64 {
        self.inner.capacity()
    }

    /// Whether the planner sheds everything (but probes) at `now`.
    pub fn in_outage(&self, now: Duration) -> bool {
        self.inner.in_outage(now)
    }
}

/// The planner behind one interface with the allocators: a front end
/// drives it as it drives them, and writes [`plan`](Allocator::plan) beside
/// each rejection.
///
/// ```
/// use std::time::Duration;
/// use herdless::pushback::Allocator;
/// use herdless::pushback::waves::WavePlanner;
/// let mut p = WavePlanner::builder().capacity(1.0).burst(Duration::from_millis(1)).build()?;
/// assert!(Allocator::decide(&mut p, Duration::ZERO, None).is_admit());
/// assert!(!Allocator::decide(&mut p, Duration::ZERO, None).is_admit());
/// assert!(Allocator::plan(&p, Duration::ZERO).is_some());
/// # Ok::<(), herdless::pushback::PushbackError>(())
/// ```
impl Allocator for WavePlanner {
    fn decide(&mut self, now: Duration, caller: Option<u64>) -> Allotment {
        self.decide_ns(ns(now), caller)
    }

    fn served(&mut self, now: Duration) {
        WavePlanner::served(self, now);
    }

    fn refused(&mut self, now: Duration, caller: Option<u64>) -> Option<Allotment> {
        Some(self.refused_ns(ns(now), caller))
    }

    fn start_outage(&mut self, _now: Duration, until: Option<Duration>) {
        self.inner.start_outage(until);
    }

    fn recover(&mut self, now: Duration) {
        self.inner.recover(now);
    }

    fn counts(&self) -> (u64, u64) {
        let c = self.counts;
        (c.admitted, c.planned + c.unplanned)
    }

    fn plan(&self, now: Duration) -> Option<WavePlan> {
        self.last_seen(now)
    }
}

#[cfg(test)]
mod tests;
