//! The outage endpoint behind server pushback: the library's allocators in
//! front of the same capacity-limited handler as every other strategy.
//!
//! Both endpoints put an allocator where a pushback tower layer sits: it
//! decides first; what it admits reaches the handler ([`OutageEndpoint`]: down
//! until `T`, then a token bucket of `C` per second that starts empty at `T`),
//! which still has only its own capacity. The capacity model is therefore
//! every strategy's, and the physical limit `T + N / C` holds: pushback only
//! changes *when* rejected clients come back. Rejections carry the slot as
//! the layer sends it (`Retry-After-Ms`: rounded up to the millisecond).
//!
//! * [`AdaptiveEndpoint`] drives the
//!   [`AdaptiveAllocator`]: each client is
//!   named by its index (the `X-Worker-Id` of the real stub), the handler's
//!   answer to every admitted call is reported back (`served` / `refused`),
//!   and a refused call gets its slot too. It starts from an estimate
//!   `capacity_estimate · C`; with [`OutageEnd::Known`] it is told the end
//!   (`outage_until(T)`), with [`OutageEnd::Unknown`] it is told nothing and
//!   finds the outage and its end from the handler's answers (probes).
//! * [`PushbackEndpoint`] drives the static
//!   [`SlotAllocator`] as it shipped first: told a capacity and, with a known
//!   end, `outage_until(T)`; with an unknown end it starts in `outage()` and
//!   an operator's `recover()` arrives at `T` exactly. The handler's 503s carry
//!   no Retry-After.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use herdless::pushback::AdaptiveAllocator;
use herdless::pushback::{Allotment, SlotAllocator};

use super::{Endpoint, OutageEndpoint};
use crate::error::SimError;
use crate::strategy::Reply;

/// Whether the server's allocator knows when the outage ends.
///
/// ```
/// use herdless_sim::endpoint::OutageEnd;
/// assert_eq!("known".parse::<OutageEnd>(), Ok(OutageEnd::Known));
/// assert_eq!(OutageEnd::default(), OutageEnd::Unknown);
/// assert!("soon".parse::<OutageEnd>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OutageEnd {
    /// The allocator is told the end (an oracle).
    Known,
    /// The allocator is not told (the realistic case, the default).
    #[default]
    Unknown,
}

impl OutageEnd {
    /// `known` or `unknown`.
    ///
    /// ```
    /// assert_eq!(herdless_sim::endpoint::OutageEnd::Unknown.name(), "unknown");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            OutageEnd::Known => "known",
            OutageEnd::Unknown => "unknown",
        }
    }
}

impl fmt::Display for OutageEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for OutageEnd {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "known" => Ok(OutageEnd::Known),
            "unknown" => Ok(OutageEnd::Unknown),
            _ => Err(format!(
                "unknown outage end {:?} (expected known or unknown)",
                s.chars().take(64).collect::<String>()
            )),
        }
    }
}

/// The allocator's answer as it goes on the wire: the slot rounded up to the
/// millisecond (`Retry-After-Ms`).
pub(crate) fn on_the_wire(decision: Allotment) -> Reply {
    Reply::Rejected {
        retry_after: decision.retry_after_ms().map(Duration::from_millis),
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The outage endpoint behind the library's [`AdaptiveAllocator`] (see the
/// [module documentation](self)).
///
/// ```
/// use std::time::Duration;
/// use herdless_sim::endpoint::{AdaptiveEndpoint, Endpoint, OutageEnd};
/// use herdless_sim::Reply;
/// // Down 5 s, then 10/s; the allocator starts from 10/s and is told the end.
/// let mut e = AdaptiveEndpoint::new(Duration::from_secs(5), 10, 1, 10.0, OutageEnd::Known, Duration::from_secs(60))?;
/// assert_eq!(e.call(1_000_000_000, 0, 1), Reply::Rejected { retry_after: Some(Duration::from_secs(4)) });
/// // The next caller is expected 0.1 s later (clients come back up to 10 %
/// // after their slot: on average 5 %), so its slot is a little before 5.1 s.
/// let Reply::Rejected { retry_after: Some(d) } = e.call(1_000_000_000, 1, 1) else { panic!() };
/// assert!(d > Duration::from_millis(4_090) && d < Duration::from_millis(4_100), "{d:?}");
/// # Ok::<(), herdless_sim::SimError>(())
/// ```
#[derive(Debug, Clone)]
pub struct AdaptiveEndpoint {
    allocator: AdaptiveAllocator,
    handler: OutageEndpoint,
}

impl AdaptiveEndpoint {
    /// An endpoint down for `outage`, then serving `capacity` calls per second
    /// (bucket of `burst`), behind an adaptive allocator starting from
    /// `estimate` calls per second, told the end or not, never handing out a
    /// delay past `horizon`.
    ///
    /// # Errors
    ///
    /// [`SimError::Invalid`] when the allocator refuses the estimate or the
    /// horizon.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless_sim::endpoint::{AdaptiveEndpoint, OutageEnd};
    /// assert!(AdaptiveEndpoint::new(Duration::ZERO, 1, 1, 0.0, OutageEnd::Unknown, Duration::from_secs(9)).is_err());
    /// ```
    pub fn new(
        outage: Duration,
        capacity: u32,
        burst: u32,
        estimate: f64,
        end: OutageEnd,
        horizon: Duration,
    ) -> Result<Self, SimError> {
        Self::with_callers(outage, capacity, burst, estimate, end, horizon, 0)
    }

    /// As [`new`](Self::new), for clients numbered `0..callers`: the
    /// allocator tracks them in its table
    /// ([`AdaptiveBuilder::callers`](herdless::pushback::AdaptiveBuilder::callers)),
    /// 8 bytes per client instead of a hash map's 17 to 40. The decisions
    /// are the same.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new), and for more callers than the allocator takes.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless_sim::endpoint::{AdaptiveEndpoint, Endpoint, OutageEnd};
    /// let args = (Duration::from_secs(5), 10, 1, 10.0, OutageEnd::Known, Duration::from_secs(60));
    /// let mut a = AdaptiveEndpoint::new(args.0, args.1, args.2, args.3, args.4, args.5)?;
    /// let mut b = AdaptiveEndpoint::with_callers(args.0, args.1, args.2, args.3, args.4, args.5, 100)?;
    /// for (t, client) in [(0, 3), (1_000_000_000, 3), (1_000_000_000, 150)] {
    ///     assert_eq!(a.call(t, client, 1), b.call(t, client, 1));
    /// }
    /// # Ok::<(), herdless_sim::SimError>(())
    /// ```
    pub fn with_callers(
        outage: Duration,
        capacity: u32,
        burst: u32,
        estimate: f64,
        end: OutageEnd,
        horizon: Duration,
        callers: u32,
    ) -> Result<Self, SimError> {
        Ok(Self {
            allocator: adaptive_allocator(outage, estimate, end, horizon, callers, None)?,
            handler: OutageEndpoint::new(outage, capacity, burst),
        })
    }

    /// The allocator (its estimate and counts).
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless_sim::endpoint::{AdaptiveEndpoint, OutageEnd};
    /// let e = AdaptiveEndpoint::new(Duration::ZERO, 10, 1, 20.0, OutageEnd::Unknown, Duration::from_secs(9))?;
    /// assert_eq!(e.allocator().capacity(), 20.0);
    /// # Ok::<(), herdless_sim::SimError>(())
    /// ```
    pub fn allocator(&self) -> &AdaptiveAllocator {
        &self.allocator
    }
}

impl Endpoint for AdaptiveEndpoint {
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
                _ => on_the_wire(self.allocator.refused(now, Some(key))),
            },
            rejected => on_the_wire(rejected),
        }
    }

    fn service_load(&self) -> Option<&crate::metrics::Histogram> {
        self.handler.service_load()
    }
}

/// The outage endpoint behind the static [`SlotAllocator`] (see the [module
/// documentation](self)).
///
/// ```
/// use std::time::Duration;
/// use herdless_sim::endpoint::{Endpoint, PushbackEndpoint};
/// use herdless_sim::Reply;
/// let mut e = PushbackEndpoint::new(Duration::from_secs(5), 10, 1, Duration::from_secs(60))?;
/// // during the outage: the first slot is T, the next 1 / C later
/// assert_eq!(e.call(1_000_000_000, 0, 1), Reply::Rejected { retry_after: Some(Duration::from_secs(4)) });
/// assert_eq!(e.call(1_000_000_000, 1, 1), Reply::Rejected { retry_after: Some(Duration::from_millis(4_100)) });
/// # Ok::<(), herdless_sim::SimError>(())
/// ```
#[derive(Debug, Clone)]
pub struct PushbackEndpoint {
    allocator: SlotAllocator,
    handler: OutageEndpoint,
    /// With an unknown end: when the operator's `recover()` arrives (ns).
    recover_at: Option<u64>,
}

impl PushbackEndpoint {
    /// An endpoint down for `outage`, then serving `capacity` calls per second
    /// (bucket of `burst`), behind a slot allocator of that capacity, told the
    /// end, never handing out a delay past `horizon`.
    ///
    /// # Errors
    ///
    /// [`SimError::Invalid`] when the allocator refuses the capacity or the
    /// horizon (shorter than one slot).
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless_sim::endpoint::PushbackEndpoint;
    /// assert!(PushbackEndpoint::new(Duration::ZERO, 1, 1, Duration::from_millis(1)).is_err());
    /// ```
    pub fn new(
        outage: Duration,
        capacity: u32,
        burst: u32,
        horizon: Duration,
    ) -> Result<Self, SimError> {
        Self::with(
            outage,
            capacity,
            burst,
            f64::from(capacity.max(1)),
            OutageEnd::Known,
            horizon,
        )
    }

    /// As [`new`](Self::new), with the allocator's capacity set to `told`
    /// (calls per second) and the end known or signalled at `T`.
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless_sim::endpoint::{Endpoint, OutageEnd, PushbackEndpoint};
    /// use herdless_sim::Reply;
    /// let mut e = PushbackEndpoint::with(Duration::from_secs(5), 10, 1, 20.0, OutageEnd::Unknown, Duration::from_secs(60))?;
    /// // unknown end: slots from now, at the told 20/s
    /// assert_eq!(e.call(0, 0, 1), Reply::Rejected { retry_after: Some(Duration::from_millis(50)) });
    /// # Ok::<(), herdless_sim::SimError>(())
    /// ```
    pub fn with(
        outage: Duration,
        capacity: u32,
        burst: u32,
        told: f64,
        end: OutageEnd,
        horizon: Duration,
    ) -> Result<Self, SimError> {
        let allocator = SlotAllocator::new(told, horizon)
            .map_err(|e| SimError::Invalid(format!("pushback: {e}")))?
            // The handler's burst, scaled to the told capacity.
            .burst((f64::from(burst) * told / f64::from(capacity.max(1))).round() as u32);
        let (allocator, recover_at) = match end {
            OutageEnd::Known => (allocator.outage_until(outage), None),
            OutageEnd::Unknown if outage.is_zero() => (allocator, None),
            OutageEnd::Unknown => (allocator.outage(), Some(nanos(outage))),
        };
        Ok(Self {
            allocator,
            handler: OutageEndpoint::new(outage, capacity, burst),
            recover_at,
        })
    }

    /// Requests the allocator admitted and rejected so far.
    ///
    /// ```
    /// use std::time::Duration;
    /// let e = herdless_sim::endpoint::PushbackEndpoint::new(Duration::ZERO, 10, 1, Duration::from_secs(9))?;
    /// assert_eq!(e.allocator_counts(), (0, 0));
    /// # Ok::<(), herdless_sim::SimError>(())
    /// ```
    pub fn allocator_counts(&self) -> (u64, u64) {
        self.allocator.counts()
    }
}

impl Endpoint for PushbackEndpoint {
    #[inline]
    fn call(&mut self, now_ns: u64, client: u32, attempt: u32) -> Reply {
        if self.recover_at.is_some_and(|t| now_ns >= t) {
            self.recover_at = None;
            self.allocator.recover();
        }
        match self.allocator.decide(Duration::from_nanos(now_ns)) {
            Allotment::Admit => self.handler.call(now_ns, client, attempt),
            rejected => on_the_wire(rejected),
        }
    }

    fn service_load(&self) -> Option<&crate::metrics::Histogram> {
        self.handler.service_load()
    }
}

/// The adaptive allocator a simulated endpoint runs: told `estimate`, booking
/// up to `horizon` ahead for `callers`, holding requests as `hold` says
/// (none without); with a known end it is told when the outage ends.
pub(super) fn adaptive_allocator(
    outage: Duration,
    estimate: f64,
    end: OutageEnd,
    horizon: Duration,
    callers: u32,
    hold: Option<&super::server::ServerParams>,
) -> Result<AdaptiveAllocator, SimError> {
    let mut builder = AdaptiveAllocator::builder()
        .estimate(estimate)
        .horizon(horizon)
        .callers(callers as usize);
    if let Some(s) = hold {
        builder = builder.hold_for(s.hold_for).hold_for_max(s.hold_for_max);
        if let Some(n) = s.hold_max {
            builder = builder.hold_max(n);
        }
    }
    let allocator = builder
        .build()
        .map_err(|e| SimError::Invalid(format!("pushback: {e}")))?;
    Ok(if end == OutageEnd::Known && !outage.is_zero() {
        allocator.outage_until(outage)
    } else {
        allocator
    })
}
