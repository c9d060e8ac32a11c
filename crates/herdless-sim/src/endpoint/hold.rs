//! The outage endpoint behind the adaptive allocator **with a hold**: calls
//! the allocator keeps open are answered later, in virtual time; one
//! replica of the server or several.
//!
//! [`HoldEndpoint`] drives the library's [`AdaptiveAllocator`] as the tower
//! layer and `herdless stub` do, with virtual time instead of timers:
//!
//! * a call the allocator holds ([`Allotment::Hold`]) is parked under its
//!   ticket and answered [`Reply::Held`]: the fleet loop parks the client;
//!   a client tells how long it waits ([`Endpoint::call_waiting`], the
//!   `Prefer: wait=N` of herdless's HTTP clients), which lets the hold keep
//!   it up to `hold_for_max`;
//! * [`next_answer`](Endpoint::next_answer) is the allocators' earliest
//!   [`next_release`](AdaptiveAllocator::next_release), and
//!   [`answer`](Endpoint::answer) calls
//!   [`release`](AdaptiveAllocator::release): an admitted request meets the
//!   handler (the same token bucket as every strategy's), its answer is
//!   reported back, and a refused one goes back to the allocator's queue
//!   ([`refused_held`](AdaptiveAllocator::refused_held)) without reaching
//!   its client; a hold that ran out goes to the client as a requeue answer
//!   ([`Reply::Requeued`]).
//!
//! **Replicas** ([`ServerParams::replicas`]): each its own allocator, told
//! `1 / R` of the estimate, in front of the one device; arrivals are routed
//! per request as a balancer does ([`Split`]); with [`Split::Restart`] the
//! first replica restarts 2 s after the outage's end (its held calls are
//! evicted, each with its own slot, and it comes back with no state); with
//! [`Coordination::Shared`] they publish and read
//! [`ReplicaReport`](herdless::pushback::ReplicaReport)s (see
//! `replicas.rs`).
//!
//! **Plain clients** (`plain`): clients that honor `Retry-After` and know
//! nothing else: they say nothing of their patience and take a requeue
//! answer for an ordinary `503`.
//!
//! Every decision is the library's; this file only carries requests between
//! the allocators, the handler and the clients. A parked call costs the
//! endpoint a map entry (ticket id to client, 16 bytes and the map's slack)
//! beside the allocator's 24-byte ticket; the fleet loop keeps the parked
//! client's 24-byte engine.

use std::time::Duration;

use herdless::pushback::{AdaptiveAllocator, Allotment, Caller};

use super::hold_replicas::{Replica, Route, Sharing};
use super::pushback::{OutageEnd, adaptive_allocator, on_the_wire};
use super::server::{Coordination, ServerParams, Split};
use super::{Endpoint, OutageEndpoint};
use crate::error::SimError;
use crate::metrics::Histogram;
use crate::strategy::Reply;

/// How long after the outage's end the restarting replica restarts.
const RESTART_AFTER: Duration = Duration::from_secs(2);

/// The outage endpoint behind adaptive allocators with a hold (see the
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
    replicas: Vec<Replica>,
    handler: OutageEndpoint,
    route: Route,
    /// When the first replica restarts, and what it restarts as.
    restart: Option<(u64, AdaptiveAllocator)>,
    sharing: Option<Sharing>,
    /// Answers due at once (a restarting replica's evicted calls).
    pending: Vec<(u32, Reply)>,
    plain: bool,
}

impl HoldEndpoint {
    /// An endpoint down for `outage`, then serving `capacity` calls per second
    /// (bucket of `burst`), behind one adaptive allocator with the default
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
    /// assert_eq!(e.allocator().hold_settings().map(|h| h.0), Some(120_000));
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
        let setup = Setup {
            outage,
            estimate,
            end,
            horizon,
            callers,
        };
        Self::with(setup, capacity, burst, &ServerParams::default(), false)
    }

    /// As [`new`](Self::new) with the server's settings (`server`: the hold,
    /// replicas, split, coordination) and, with `plain`, clients that know
    /// nothing but `Retry-After`.
    ///
    /// # Errors
    ///
    /// [`SimError::Invalid`] when a setting is out of range.
    pub fn with(
        setup: Setup,
        capacity: u32,
        burst: u32,
        server: &ServerParams,
        plain: bool,
    ) -> Result<Self, SimError> {
        server.validate()?;
        let r = server.replicas as usize;
        let each = setup.estimate / f64::from(server.replicas);
        let replicas = (0..r)
            .map(|_| {
                adaptive_allocator(
                    setup.outage,
                    each,
                    setup.end,
                    setup.horizon,
                    setup.callers,
                    Some(server),
                )
                .map(Replica::new)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let restart = match server.split {
            Split::Restart => {
                let at = setup.outage.saturating_add(RESTART_AFTER);
                let fresh = adaptive_allocator(
                    Duration::ZERO,
                    each,
                    OutageEnd::Unknown,
                    setup.horizon,
                    setup.callers,
                    Some(server),
                )?;
                Some((nanos(at), fresh))
            }
            _ => None,
        };
        let sharing = (server.coordination == Coordination::Shared && r > 1)
            .then(|| Sharing::new(r, server.coordination_delay));
        Ok(Self {
            replicas,
            handler: OutageEndpoint::new(setup.outage, capacity, burst),
            route: Route::new(r, server.split),
            restart,
            sharing,
            pending: Vec::new(),
            plain,
        })
    }

    /// The first replica's allocator (its estimate, counts and hold).
    pub fn allocator(&self) -> &AdaptiveAllocator {
        &self.replicas[0].alloc
    }

    /// Time passes for the replicas: a restart due, a round of reports.
    fn advance(&mut self, now_ns: u64) {
        if self.restart.as_ref().is_some_and(|(at, _)| now_ns >= *at) {
            if let Some((_, fresh)) = self.restart.take() {
                let now = Duration::from_nanos(now_ns);
                let plain = self.plain;
                let r = &mut self.replicas[0];
                while let Some(out) = r.alloc.evict(now) {
                    if let Some(client) = r.parked.remove(&out.ticket.id()) {
                        self.pending.push((client, wire(plain, out.allotment)));
                    }
                }
                *r = Replica::new(fresh);
                if let Some(s) = self.sharing.as_mut() {
                    s.forget(0);
                }
            }
        }
        if let Some(s) = self.sharing.as_mut() {
            s.tick(now_ns, &mut self.replicas);
        }
    }

    fn decide(&mut self, now_ns: u64, client: u32, attempt: u32, wait_ns: Option<u64>) -> Reply {
        self.advance(now_ns);
        let now = Duration::from_nanos(now_ns);
        let mut caller = Caller::new().key(u64::from(client));
        if let Some(w) = wait_ns.filter(|_| !self.plain) {
            caller = caller.wait(Duration::from_nanos(w));
        }
        let r = self.route.next();
        let rep = &mut self.replicas[r];
        let allotment = match rep.alloc.decide_caller(now, caller) {
            Allotment::Admit => match self.handler.call(now_ns, client, attempt) {
                Reply::Ok => {
                    rep.alloc.served(now);
                    return Reply::Ok;
                }
                _ => rep.alloc.refused_caller(now, caller),
            },
            other => other,
        };
        match allotment {
            Allotment::Hold { ticket } => {
                self.replicas[r].parked.insert(ticket.id(), client);
                Reply::Held
            }
            slot => wire(self.plain, slot),
        }
    }
}

/// What [`HoldEndpoint::with`] needs besides the handler and the server.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    /// How long the device is down.
    pub outage: Duration,
    /// The estimate all replicas together are told.
    pub estimate: f64,
    /// Whether the allocators are told the end.
    pub end: OutageEnd,
    /// The longest delay handed out.
    pub horizon: Duration,
    /// Clients numbered `0..callers` are tracked in a table.
    pub callers: u32,
}

impl Endpoint for HoldEndpoint {
    #[inline]
    fn call(&mut self, now_ns: u64, client: u32, attempt: u32) -> Reply {
        self.decide(now_ns, client, attempt, None)
    }

    #[inline]
    fn call_waiting(&mut self, now_ns: u64, client: u32, attempt: u32, wait_ns: u64) -> Reply {
        self.decide(now_ns, client, attempt, Some(wait_ns))
    }

    fn next_answer(&self) -> Option<u64> {
        if !self.pending.is_empty() {
            return Some(0);
        }
        let mut next = self
            .replicas
            .iter()
            .filter_map(|r| r.alloc.next_release())
            .map(nanos)
            .min();
        if let Some((at, _)) = &self.restart {
            if self.replicas[0].alloc.held() > 0 {
                next = Some(next.map_or(*at, |t| t.min(*at)));
            }
        }
        if let (Some(s), Some(t)) = (&self.sharing, next) {
            next = Some(t.min(s.next_ns));
        }
        next
    }

    fn answer(&mut self, now_ns: u64) -> Option<(u32, Reply)> {
        self.advance(now_ns);
        if let Some(p) = self.pending.pop() {
            return Some(p);
        }
        let now = Duration::from_nanos(now_ns);
        for r in 0..self.replicas.len() {
            while let Some(released) = self.replicas[r].alloc.release(now) {
                let rep = &mut self.replicas[r];
                let id = released.ticket.id();
                let Some(client) = rep.parked.remove(&id) else {
                    continue; // a ticket nobody waits on (none in this model)
                };
                if released.allotment != Allotment::Admit {
                    return Some((client, wire(self.plain, released.allotment)));
                }
                match self.handler.call(now_ns, client, 0) {
                    Reply::Ok => {
                        rep.alloc.served(now);
                        return Some((client, Reply::Ok));
                    }
                    _ => match rep.alloc.refused_held(now, released.ticket) {
                        Allotment::Hold { .. } => {
                            rep.parked.insert(id, client);
                        }
                        slot => return Some((client, wire(self.plain, slot))),
                    },
                }
            }
        }
        None
    }

    fn service_load(&self) -> Option<&Histogram> {
        self.handler.service_load()
    }

    fn max_held(&self) -> u64 {
        self.replicas
            .iter()
            .map(|r| r.alloc.max_held() as u64)
            .sum()
    }
}

/// What a client sees of an allocator's answer (`plain`: a client that takes
/// a requeue answer for an ordinary `503`).
fn wire(plain: bool, a: Allotment) -> Reply {
    match (a, plain) {
        (Allotment::Requeue { retry_after }, false) => Reply::Requeued {
            retry_after: Duration::from_millis(ms(retry_after)),
        },
        _ => on_the_wire(a),
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A delay as `Retry-After-Ms` carries it: whole milliseconds, rounded up.
fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_nanos().div_ceil(1_000_000))
        .unwrap_or(u64::MAX)
        .max(1)
}
