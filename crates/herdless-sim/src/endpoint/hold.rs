//! The outage endpoint behind the adaptive allocator **with a hold**: calls
//! the allocator keeps open are answered later, in virtual time.
//!
//! [`HoldEndpoint`] drives the library's
//! [`AdaptiveAllocator`] as the tower layer and
//! `herdless stub --pushback hold` do, with virtual time instead of timers:
//!
//! * a call the allocator holds ([`Allotment::Hold`]) is parked under its
//!   ticket and answered [`Reply::Held`]: the fleet loop parks the client;
//! * [`next_answer`](Endpoint::next_answer) is the allocator's
//!   [`next_release`](AdaptiveAllocator::next_release), and
//!   [`answer`](Endpoint::answer) calls
//!   [`release`](AdaptiveAllocator::release): an admitted request meets the
//!   handler (the same token bucket as every strategy's), its answer is
//!   reported back, and a refused one goes back to the allocator's queue
//!   ([`refused_held`](AdaptiveAllocator::refused_held)) without reaching
//!   its client; a slot (the hold ran out) goes to the client as
//!   `Retry-After-Ms` would.
//!
//! Every decision is the library's; this file only carries requests between
//! the allocator, the handler and the clients. A parked call costs the
//! endpoint a map entry (ticket id to client, 16 bytes and the map's slack)
//! beside the allocator's 24-byte ticket; the fleet loop keeps the parked
//! client's 24-byte engine.

use std::collections::HashMap;
use std::time::Duration;

use herdless::pushback::{AdaptiveAllocator, Allotment, Ticket};

use super::pushback::{OutageEnd, adaptive_allocator, on_the_wire};
use super::{Endpoint, OutageEndpoint};
use crate::error::SimError;
use crate::metrics::Histogram;
use crate::strategy::Reply;

/// The outage endpoint behind an adaptive allocator with a hold (see the
/// [module documentation](self)).
///
/// ```
/// use std::time::Duration;
/// use herdless_sim::endpoint::{Endpoint, HoldEndpoint, OutageEnd};
/// use herdless_sim::Reply;
/// // Down 1 s, then 10/s; told the end: the call waits in the hold.
/// let mut e = HoldEndpoint::new(Duration::from_secs(1), 10, 1, 10.0, OutageEnd::Known, Duration::from_secs(60), 0)?;
/// assert_eq!(e.call(0, 7, 1), Reply::Held);
/// assert_eq!(e.next_answer(), Some(1_000_000_000));
/// // The end: released, but the handler's bucket starts empty; a probe later it is served.
/// assert_eq!(e.answer(1_000_000_000), None);
/// let t = e.next_answer().unwrap();
/// assert_eq!(e.answer(t), Some((7, Reply::Ok)));
/// # Ok::<(), herdless_sim::SimError>(())
/// ```
#[derive(Debug, Clone)]
pub struct HoldEndpoint {
    allocator: AdaptiveAllocator,
    handler: OutageEndpoint,
    /// Held calls: ticket id to client.
    parked: HashMap<u64, u32>,
}

impl HoldEndpoint {
    /// An endpoint down for `outage`, then serving `capacity` calls per second
    /// (bucket of `burst`), behind an adaptive allocator with the default
    /// hold, starting from `estimate` calls per second, told the end or not,
    /// never handing out a delay past `horizon`; clients numbered
    /// `0..callers` are tracked in the allocator's table.
    ///
    /// # Errors
    ///
    /// [`SimError::Invalid`] when the allocator refuses a setting.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless_sim::endpoint::{HoldEndpoint, OutageEnd};
    /// let e = HoldEndpoint::new(Duration::ZERO, 1, 1, 10_000.0, OutageEnd::Unknown, Duration::from_secs(60), 0)?;
    /// assert_eq!(e.allocator().hold_settings().map(|h| h.0), Some(24_000));
    /// # Ok::<(), herdless_sim::SimError>(())
    /// ```
    pub fn new(
        outage: Duration,
        capacity: u32,
        burst: u32,
        estimate: f64,
        end: OutageEnd,
        horizon: Duration,
        callers: u32,
    ) -> Result<Self, SimError> {
        Ok(Self {
            allocator: adaptive_allocator(outage, estimate, end, horizon, callers, true)?,
            handler: OutageEndpoint::new(outage, capacity, burst),
            parked: HashMap::new(),
        })
    }

    /// The allocator (its estimate, counts and hold).
    pub fn allocator(&self) -> &AdaptiveAllocator {
        &self.allocator
    }

    fn park(&mut self, ticket: Ticket, client: u32) -> Reply {
        self.parked.insert(ticket.id(), client);
        Reply::Held
    }
}

impl Endpoint for HoldEndpoint {
    #[inline]
    fn call(&mut self, now_ns: u64, client: u32, attempt: u32) -> Reply {
        let now = Duration::from_nanos(now_ns);
        let key = u64::from(client);
        match self.allocator.decide_for(now, key) {
            Allotment::Admit => match self.handler.call(now_ns, client, attempt) {
                Reply::Ok => {
                    self.allocator.served(now);
                    Reply::Ok
                }
                _ => match self.allocator.refused(now, Some(key)) {
                    Allotment::Hold { ticket } => self.park(ticket, client),
                    slot => on_the_wire(slot),
                },
            },
            Allotment::Hold { ticket } => self.park(ticket, client),
            slot => on_the_wire(slot),
        }
    }

    fn next_answer(&self) -> Option<u64> {
        self.allocator
            .next_release()
            .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }

    fn answer(&mut self, now_ns: u64) -> Option<(u32, Reply)> {
        let now = Duration::from_nanos(now_ns);
        loop {
            let released = self.allocator.release(now)?;
            let id = released.ticket.id();
            let Some(client) = self.parked.remove(&id) else {
                continue; // a ticket nobody waits on (none in this model)
            };
            if released.allotment != Allotment::Admit {
                return Some((client, on_the_wire(released.allotment)));
            }
            match self.handler.call(now_ns, client, 0) {
                Reply::Ok => {
                    self.allocator.served(now);
                    return Some((client, Reply::Ok));
                }
                _ => match self.allocator.refused_held(now, released.ticket) {
                    Allotment::Hold { .. } => {
                        self.parked.insert(id, client);
                    }
                    slot => return Some((client, on_the_wire(slot))),
                },
            }
        }
    }

    fn service_load(&self) -> Option<&Histogram> {
        self.handler.service_load()
    }

    fn max_held(&self) -> u64 {
        self.allocator.max_held() as u64
    }
}
