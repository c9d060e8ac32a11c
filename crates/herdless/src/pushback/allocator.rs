//! [`Allocator`]: what a pushback front end (the tower layer, `herdless
//! stub`) needs from a slot allocator, so that it can drive either the static
//! [`SlotAllocator`] or the [`AdaptiveAllocator`].
//!
//! A front end asks [`decide`](Allocator::decide) for every request; for
//! every request it admitted, it reports the service's answer:
//! [`served`](Allocator::served), or [`refused`](Allocator::refused) when the
//! service answered 503 or 429 itself, which returns the slot to attach to
//! that answer (the adaptive allocator books one; the static one has none).
//! Time is a [`Duration`] since the front end's epoch, as everywhere in
//! [`fleet`](crate::guard).
//!
//! An allocator with a hold may answer [`Allotment::Hold`]: the front end
//! parks the request under its ticket and, as time passes, asks
//! [`next_release`](Allocator::next_release) when to call
//! [`release`](Allocator::release); a released request the service refused
//! is reported with [`refused_held`](Allocator::refused_held), a parked one
//! whose caller went away with [`cancel`](Allocator::cancel). The static
//! allocator never holds (the defaults do nothing).
//!
//! A front end whose allocator is one replica among several asks it for a
//! [`report`](Allocator::report) about once a
//! [`PERIOD`](crate::pushback::replicas::PERIOD), publishes it through a
//! [`SharedState`](crate::pushback::SharedState) and hands the peers'
//! reports to [`apply_peers`](Allocator::apply_peers). An allocator that
//! does not share (the static one) reports nothing and ignores its peers
//! (the defaults).
//!
//! A front end on several threads may ask for an [`allowance`](Allocator::allowance)
//! (admissions decided ahead of time, while the allocator has room to
//! spare) and spend it without the allocator's lock, then
//! [`settle`](Allocator::settle) what it spent (see [`allowance`](super::allowance)
//! for the bounds). An allocator that grants none (the default) is asked
//! for every request.

use std::time::Duration;

use crate::pushback::adaptive::AdaptiveAllocator;
use crate::pushback::{
    Allotment, Allowance, Caller, PeerReport, Released, ReplicaReport, SlotAllocator, Ticket,
};

/// A slot allocator a pushback front end can drive. See the [module
/// documentation](self).
///
/// ```
/// use std::time::Duration;
/// use herdless::pushback::{Allocator, AdaptiveAllocator, SlotAllocator};
/// fn first<A: Allocator>(mut a: A) -> bool { a.decide(Duration::ZERO, None).is_admit() }
/// assert!(first(SlotAllocator::new(10.0, Duration::from_secs(9))?));
/// assert!(first(AdaptiveAllocator::new(10.0, Duration::from_secs(9))?));
/// # Ok::<(), herdless::pushback::PushbackError>(())
/// ```
pub trait Allocator: Send + 'static {
    /// Whether [`served`](Self::served) does anything: a front end may skip
    /// telling an allocator that does not learn (the static one) about each
    /// request it served, a clock read and a lock per request. Default: yes.
    const LEARNS_FROM_SERVED: bool = true;

    /// Whether the service's answers to admitted requests mean anything to
    /// it ([`served`](Self::served), [`refused`](Self::refused) and its
    /// kin): a front end may skip reporting them, and keeping what a report
    /// needs, for an allocator that neither learns from them nor books a
    /// refusal a slot (the static one). Default: yes.
    const HEARS_ANSWERS: bool = true;

    /// Decides a request at `now` from `caller` (a key naming it, when the
    /// front end has one).
    fn decide(&mut self, now: Duration, caller: Option<u64>) -> Allotment;

    /// Decides a request from `caller`, knowing how long it waits (an
    /// allocator with a hold may keep it longer). Defaults to
    /// [`decide`](Self::decide) with its key.
    fn decide_caller(&mut self, now: Duration, caller: Caller) -> Allotment {
        self.decide(now, caller.key)
    }

    /// The service served a request this allocator admitted.
    fn served(&mut self, now: Duration);

    /// The service refused a request this allocator admitted (its own 503 or
    /// 429): the slot to tell the caller, if the allocator gives one.
    fn refused(&mut self, now: Duration, caller: Option<u64>) -> Option<Allotment>;

    /// [`refused`](Self::refused) for a front end that no longer has the
    /// request (the service consumed it): the slot to tell the caller, never
    /// [`Allotment::Hold`]. The default is `refused` (for allocators that
    /// never hold).
    fn refused_unheld(&mut self, now: Duration, caller: Option<u64>) -> Option<Allotment> {
        self.refused(now, caller)
    }

    /// [`refused`](Self::refused) for a request from `caller` (held again,
    /// it is kept as long as its patience allows). Defaults to `refused`
    /// with its key.
    fn refused_caller(&mut self, now: Duration, caller: Caller) -> Option<Allotment> {
        self.refused(now, caller.key)
    }

    /// Sheds everything from `now` until `until` (since the epoch), or, with
    /// `None`, until the allocator sees the service back (or is told).
    fn start_outage(&mut self, now: Duration, until: Option<Duration>);

    /// Leaves outage mode at `now`.
    fn recover(&mut self, now: Duration);

    /// Requests admitted and rejected so far.
    fn counts(&self) -> (u64, u64);

    /// When to call [`release`](Self::release) next (since the epoch);
    /// `None` while nothing is held.
    fn next_release(&self) -> Option<Duration> {
        None
    }

    /// The next held request whose turn has come at `now`.
    fn release(&mut self, _now: Duration) -> Option<Released> {
        None
    }

    /// The service refused a request [`release`](Self::release) let through:
    /// [`Allotment::Hold`] (keep it parked under the same ticket) or a slot.
    fn refused_held(&mut self, now: Duration, ticket: Ticket) -> Option<Allotment> {
        self.refused(now, ticket.caller())
    }

    /// A held request's caller went away.
    fn cancel(&mut self, _ticket: Ticket) {}

    /// Answers a held request unprocessed, whatever its turn (the front end
    /// is going away): call until `None`. Nothing by default.
    fn evict(&mut self, _now: Duration) -> Option<Released> {
        None
    }

    /// Requests held now.
    fn held(&self) -> usize {
        0
    }

    /// The plan of waves announced with the last caller this allocator
    /// turned away (a rejection or a refusal), as seen at `now`: what a
    /// front end writes beside the slot (the `Herdless-Plan` header). Only
    /// a [`WavePlanner`](crate::pushback::waves::WavePlanner) has one.
    fn plan(&self, _now: Duration) -> Option<crate::pushback::waves::WavePlan> {
        None
    }

    /// This replica's report on the period since its last one, at `now`,
    /// for its peers; `None` (the default) for an allocator that does not
    /// share what it learns.
    fn report(&mut self, _now: Duration) -> Option<ReplicaReport> {
        None
    }

    /// Takes the peers' latest reports into account at `now`. Nothing by
    /// default.
    fn apply_peers(&mut self, _now: Duration, _peers: &[PeerReport]) {}

    /// Whether [`allowance`](Self::allowance) ever grants anything: a front end may
    /// skip keeping allowances for an allocator that does not. Default: no.
    const ALLOWANCES: bool = false;

    /// Up to `want` admissions decided at `now`, to spend before
    /// [`Allowance::until`] (see [`allowance`](super::allowance)): empty unless the
    /// allocator has room to spare. Empty by default.
    fn allowance(&mut self, _now: Duration, _want: u32) -> Allowance {
        Allowance::default()
    }

    /// Settles `allowance` at `now`: `used` of its admissions were spent
    /// (counted as admitted), the rest go back; `served` requests it
    /// admitted (this allowance's or earlier ones') were served (as many calls
    /// of [`served`](Self::served)). The default reports the served ones.
    fn settle(&mut self, now: Duration, allowance: Allowance, used: u32, served: u32) {
        let _ = (allowance, used);
        for _ in 0..served {
            self.served(now);
        }
    }
}

/// The static allocator: no learning, no slot for a refusal, no caller keys.
///
/// ```
/// use std::time::Duration;
/// use herdless::pushback::{Allocator, SlotAllocator};
/// let mut a = SlotAllocator::new(10.0, Duration::from_secs(9))?;
/// assert_eq!(Allocator::refused(&mut a, Duration::ZERO, None), None);
/// # Ok::<(), herdless::pushback::PushbackError>(())
/// ```
impl Allocator for SlotAllocator {
    const LEARNS_FROM_SERVED: bool = false;
    // `refused` gives no slot and `served` learns nothing.
    const HEARS_ANSWERS: bool = false;
    const ALLOWANCES: bool = true;

    fn allowance(&mut self, now: Duration, want: u32) -> Allowance {
        SlotAllocator::allowance(self, now, want)
    }

    fn settle(&mut self, now: Duration, allowance: Allowance, used: u32, _served: u32) {
        SlotAllocator::settle(self, now, allowance, used);
    }

    fn decide(&mut self, now: Duration, _caller: Option<u64>) -> Allotment {
        SlotAllocator::decide(self, now)
    }

    fn served(&mut self, _now: Duration) {}

    fn refused(&mut self, _now: Duration, _caller: Option<u64>) -> Option<Allotment> {
        None
    }

    fn start_outage(&mut self, _now: Duration, until: Option<Duration>) {
        SlotAllocator::start_outage(self, until);
    }

    fn recover(&mut self, _now: Duration) {
        SlotAllocator::recover(self);
    }

    fn counts(&self) -> (u64, u64) {
        SlotAllocator::counts(self)
    }
}

/// The adaptive allocator: learns from `served` and `refused`, books a slot
/// for each refusal, tracks named callers.
///
/// ```
/// use std::time::Duration;
/// use herdless::pushback::{Allocator, AdaptiveAllocator};
/// let mut a = AdaptiveAllocator::new(10.0, Duration::from_secs(9))?;
/// assert!(Allocator::refused(&mut a, Duration::ZERO, Some(1)).is_some());
/// # Ok::<(), herdless::pushback::PushbackError>(())
/// ```
impl Allocator for AdaptiveAllocator {
    const ALLOWANCES: bool = true;

    fn allowance(&mut self, now: Duration, want: u32) -> Allowance {
        AdaptiveAllocator::allowance(self, now, want)
    }

    fn settle(&mut self, now: Duration, allowance: Allowance, used: u32, served: u32) {
        AdaptiveAllocator::settle(self, now, allowance, used, served);
    }

    fn decide(&mut self, now: Duration, caller: Option<u64>) -> Allotment {
        match caller {
            Some(key) => self.decide_for(now, key),
            None => AdaptiveAllocator::decide(self, now),
        }
    }

    fn decide_caller(&mut self, now: Duration, caller: Caller) -> Allotment {
        AdaptiveAllocator::decide_caller(self, now, caller)
    }

    fn refused_caller(&mut self, now: Duration, caller: Caller) -> Option<Allotment> {
        Some(AdaptiveAllocator::refused_caller(self, now, caller))
    }

    fn evict(&mut self, now: Duration) -> Option<Released> {
        AdaptiveAllocator::evict(self, now)
    }

    fn served(&mut self, now: Duration) {
        AdaptiveAllocator::served(self, now);
    }

    fn refused(&mut self, now: Duration, caller: Option<u64>) -> Option<Allotment> {
        Some(AdaptiveAllocator::refused(self, now, caller))
    }

    fn refused_unheld(&mut self, now: Duration, caller: Option<u64>) -> Option<Allotment> {
        Some(AdaptiveAllocator::refused_unheld(self, now, caller))
    }

    fn start_outage(&mut self, _now: Duration, until: Option<Duration>) {
        AdaptiveAllocator::start_outage(self, until);
    }

    fn recover(&mut self, now: Duration) {
        AdaptiveAllocator::recover(self, now);
    }

    fn counts(&self) -> (u64, u64) {
        let c = AdaptiveAllocator::counts(self);
        (c.admitted, c.rejected + c.refused)
    }

    fn next_release(&self) -> Option<Duration> {
        AdaptiveAllocator::next_release(self)
    }

    fn release(&mut self, now: Duration) -> Option<Released> {
        AdaptiveAllocator::release(self, now)
    }

    fn refused_held(&mut self, now: Duration, ticket: Ticket) -> Option<Allotment> {
        Some(AdaptiveAllocator::refused_held(self, now, ticket))
    }

    fn cancel(&mut self, ticket: Ticket) {
        AdaptiveAllocator::cancel(self, ticket);
    }

    fn held(&self) -> usize {
        AdaptiveAllocator::held(self)
    }

    fn report(&mut self, now: Duration) -> Option<ReplicaReport> {
        Some(AdaptiveAllocator::report(self, now))
    }

    fn apply_peers(&mut self, now: Duration, peers: &[PeerReport]) {
        AdaptiveAllocator::apply_peers(self, now, peers);
    }
}

/// A caller key from any identifier (a header value, an API key): FNV-1a,
/// 64 bits.
///
/// ```
/// use herdless::pushback::allocator::caller_key;
/// assert_eq!(caller_key(b"worker-7"), caller_key(b"worker-7"));
/// assert_ne!(caller_key(b"worker-7"), caller_key(b"worker-8"));
/// ```
pub fn caller_key(id: &[u8]) -> u64 {
    id.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
