//! [`Ticket`] and [`Released`]: how an allocator with a hold and its driver
//! name a request the allocator keeps open.
//!
//! The allocator never sees a request, only its arrival: when it decides to
//! hold one ([`Allotment::Hold`]) it hands the driver a [`Ticket`], and the
//! driver parks the request under the ticket's [`id`](Ticket::id) (a waker,
//! a oneshot, a simulated client). Later, as time passes, the driver asks the
//! allocator what to do next
//! ([`AdaptiveAllocator::release`](crate::pushback::AdaptiveAllocator::release)),
//! and the answer, a [`Released`], names the ticket and says whether the
//! request now goes to the service or is answered with a slot.
//!
//! A ticket is 24 bytes and `Copy`: its id (unique per allocator), when its
//! hold began and the caller's key, so that a request the service refuses
//! after its release goes back to the queue with its original start (a hold
//! never lasts longer than `hold_for` from the request's first arrival,
//! whatever the refusals in between).

use std::time::Duration;

use crate::pushback::Allotment;

/// The high bit of `since`: the ticket names a caller (its key is valid).
const NAMED: u64 = 1 << 63;
/// The ticket is held in the long class (its caller said it waits longer).
const PATIENT: u64 = 1 << 62;
/// What of `since` is time.
const TIME: u64 = PATIENT - 1;

/// A held request's name. See the [module documentation](self).
///
/// ```
/// use std::time::Duration;
/// use herdless::pushback::AdaptiveAllocator;
/// let mut a = AdaptiveAllocator::builder().estimate(10.0).hold().build()?.outage();
/// let _probe = a.decide(Duration::ZERO); // the first request probes the service
/// let ticket = a.decide_for(Duration::from_millis(1), 7).ticket().unwrap();
/// assert_eq!(ticket.caller(), Some(7));
/// assert_eq!(ticket.since(), Duration::from_millis(1));
/// # Ok::<(), herdless::pushback::PushbackError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ticket {
    id: u64,
    /// When the hold began (ns since the epoch), the [`NAMED`] bit on top.
    since: u64,
    key: u64,
}

impl Ticket {
    /// A ticket held in the long class when `patient`.
    pub(crate) fn held(id: u64, since_ns: u64, key: Option<u64>, patient: bool) -> Self {
        let since = since_ns.min(TIME) | if patient { PATIENT } else { 0 };
        match key {
            Some(k) => Ticket {
                id,
                since: since | NAMED,
                key: k,
            },
            None => Ticket { id, since, key: 0 },
        }
    }

    /// The ticket's number: unique among the tickets one allocator hands out.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// When the request's hold began, since the allocator's epoch.
    pub fn since(&self) -> Duration {
        Duration::from_nanos(self.since_ns())
    }

    pub(crate) fn since_ns(&self) -> u64 {
        self.since & TIME
    }

    /// Whether its caller said it waits long enough for the long hold.
    pub(crate) fn is_patient(&self) -> bool {
        self.since & PATIENT != 0
    }

    /// The key naming the caller, if the request came with one.
    pub fn caller(&self) -> Option<u64> {
        (self.since & NAMED != 0).then_some(self.key)
    }
}

/// What happens now to a held request: the allocator's answer to
/// [`release`](crate::pushback::AdaptiveAllocator::release).
///
/// `allotment` is [`Allotment::Admit`] (send the request to the service,
/// then report its answer as for any admitted request, with
/// [`refused_held`](crate::pushback::AdaptiveAllocator::refused_held) for a
/// refusal) or [`Allotment::Reject`] (answer it `503` with that slot: its
/// hold ran out).
///
/// ```
/// use std::time::Duration;
/// use herdless::pushback::{AdaptiveAllocator, Allotment};
/// // Told the outage ends at 1 s: held, then released at the end.
/// let mut a = AdaptiveAllocator::builder().estimate(10.0).hold().build()?
///     .outage_until(Duration::from_secs(1));
/// let ticket = a.decide(Duration::ZERO).ticket().unwrap();
/// assert_eq!(a.next_release(), Some(Duration::from_secs(1)));
/// assert_eq!(a.release(Duration::from_millis(999)), None);
/// let r = a.release(Duration::from_secs(1)).unwrap();
/// assert_eq!((r.ticket, r.allotment), (ticket, Allotment::Admit));
/// # Ok::<(), herdless::pushback::PushbackError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Released {
    /// The held request.
    pub ticket: Ticket,
    /// Admit it, or answer it with a slot.
    pub allotment: Allotment,
}

/// What an allocator may know of a request's caller: its key (a client id
/// header, hashed: [`caller_key`](crate::pushback::allocator::caller_key)),
/// and how long it waits for its answer (`Prefer: wait=N`, see
/// [`http::queue`](crate::http::queue)), which lets a hold keep it longer.
///
/// ```
/// use std::time::Duration;
/// use herdless::pushback::Caller;
/// let c = Caller::new().key(7).wait(Duration::from_secs(120));
/// assert_eq!((c.key, c.wait), (Some(7), Some(Duration::from_secs(120))));
/// assert_eq!(Caller::default(), Caller::new());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Caller {
    /// The caller's key, if the front end names callers.
    pub key: Option<u64>,
    /// How long the caller waits for its answer, if it said.
    pub wait: Option<Duration>,
}

impl Caller {
    /// A caller the front end knows nothing of.
    pub const fn new() -> Self {
        Caller {
            key: None,
            wait: None,
        }
    }

    /// A caller named `key` (or unnamed).
    ///
    /// ```
    /// assert_eq!(herdless::pushback::Caller::named(Some(3)).key, Some(3));
    /// ```
    pub const fn named(key: Option<u64>) -> Self {
        Caller { key, wait: None }
    }

    /// With its key.
    pub const fn key(mut self, key: u64) -> Self {
        self.key = Some(key);
        self
    }

    /// With its patience.
    pub const fn wait(mut self, wait: Duration) -> Self {
        self.wait = Some(wait);
        self
    }

    pub(crate) fn wait_ns(&self) -> Option<u64> {
        self.wait.map(crate::pushback::ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ticket_keeps_its_start_and_key_apart() {
        let named = Ticket::held(3, 42, Some(u64::MAX), false);
        assert_eq!(named.since_ns(), 42);
        assert_eq!(named.caller(), Some(u64::MAX));
        let unnamed = Ticket::held(4, u64::MAX, None, false);
        assert_eq!(unnamed.caller(), None);
        assert_eq!(unnamed.since_ns(), TIME, "clamped, not wrapped");
        let patient = Ticket::held(5, 7, Some(1), true);
        assert!(patient.is_patient() && !named.is_patient());
        assert_eq!((patient.since_ns(), patient.caller()), (7, Some(1)));
        assert_eq!(std::mem::size_of::<Ticket>(), 24);
    }
}
