//! Clients that ignore Retry-After, and the figures of those that honor it.
//!
//! In the field not every caller honors a server's delay: a client from
//! another library, a script with a fixed sleep. Such a client ignores a
//! plan of waves too: it gets neither. [`Honoring`] models a fleet
//! in which a share `fraction` of the clients honor Retry-After and the rest
//! use their own backoff: it wraps the endpoint and, on the way back to a
//! client that ignores the header, drops it. The client's engine then draws
//! its own delay, exactly as `herdless::Retry` does for an answer without
//! Retry-After. Nothing else changes: the server still sees every call.
//!
//! Which clients honor is a pure function of the seed and the client's index
//! ([`honors`]), so it costs no per-client memory, and every strategy of a
//! run faces the same honoring clients (common random numbers).
//!
//! The wrapper also counts, for the honoring clients alone, their calls,
//! their successes and the last success: the drain of the clients a
//! pushback server can actually schedule ([`HonorStats`]); and, when some
//! clients do not honor, the honoring clients' arrivals per 100 ms
//! ([`arrivals`](Honoring::arrivals)): the load a server's schedule shapes,
//! apart from the load it cannot.

use super::Endpoint;
use crate::metrics::Histogram;
use crate::strategy::Reply;

/// Which clients honor Retry-After: client `i` honors when a hash of
/// `(seed, i)` falls below `fraction` (every client at 1, none at 0).
///
/// ```
/// use herdless_sim::endpoint::honor::honors;
/// assert!(honors(1.0, 7, 3));
/// assert!(!honors(0.0, 7, 3));
/// let share = (0..10_000).filter(|&i| honors(0.9, 7, i)).count();
/// assert!((8_800..9_200).contains(&share), "{share}");
/// ```
pub fn honors(fraction: f64, seed: u64, client: u32) -> bool {
    if fraction >= 1.0 {
        return true;
    }
    if fraction <= 0.0 {
        return false;
    }
    let h = crate::stream_seed(seed ^ 0x484f_4e4f_5552, u64::from(client));
    ((h >> 11) as f64) * (1.0 / (1u64 << 53) as f64) < fraction
}

/// What the honoring clients did.
///
/// ```
/// assert_eq!(herdless_sim::endpoint::HonorStats::default().clients, 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HonorStats {
    /// Clients that honor Retry-After.
    pub clients: u64,
    /// Their calls.
    pub calls: u64,
    /// Those of them that succeeded.
    pub succeeded: u64,
    /// The virtual time of their last success (ns; 0 when none).
    pub last_success_ns: u64,
    /// Clients that do not honor it and succeeded.
    pub ignoring_succeeded: u64,
    /// The virtual time of their last success (ns; 0 when none).
    pub ignoring_last_success_ns: u64,
}

/// An endpoint whose answers reach only a share of the clients with their
/// Retry-After (see the [module documentation](self)).
///
/// ```
/// use std::time::Duration;
/// use herdless_sim::endpoint::{Endpoint, Honoring, PushbackEndpoint};
/// use herdless_sim::Reply;
/// let inner = PushbackEndpoint::new(Duration::from_secs(5), 10, 1, Duration::from_secs(60))?;
/// let mut e = Honoring::new(inner, 0.0, 1, 2); // nobody honors
/// assert_eq!(e.call(0, 0, 1), Reply::Rejected { retry_after: None });
/// assert_eq!(e.stats().clients, 0);
/// # Ok::<(), herdless_sim::SimError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Honoring<E> {
    inner: E,
    fraction: f64,
    seed: u64,
    stats: HonorStats,
    /// The honoring clients' calls per 100 ms, kept only when some clients
    /// do not honor (otherwise they are every call).
    arrivals: Option<Histogram>,
}

impl<E> Honoring<E> {
    /// Wraps `inner` for a fleet of `clients` of which a share `fraction`
    /// (clamped to `0..=1`) honors Retry-After, chosen from `seed`.
    ///
    /// ```
    /// let e = herdless_sim::endpoint::Honoring::new(herdless_sim::endpoint::FailFirst::new(1), 0.5, 3, 1_000);
    /// assert!((400..600).contains(&e.stats().clients));
    /// ```
    pub fn new(inner: E, fraction: f64, seed: u64, clients: u32) -> Self {
        let fraction = if fraction.is_nan() {
            1.0
        } else {
            fraction.clamp(0.0, 1.0)
        };
        let honoring = (0..clients).filter(|&i| honors(fraction, seed, i)).count() as u64;
        Honoring {
            inner,
            fraction,
            seed,
            stats: HonorStats {
                clients: honoring,
                ..HonorStats::default()
            },
            arrivals: (fraction < 1.0).then(Histogram::new),
        }
    }

    /// What the honoring clients did so far.
    ///
    /// ```
    /// let e = herdless_sim::endpoint::Honoring::new(herdless_sim::endpoint::FailFirst::new(1), 1.0, 3, 10);
    /// assert_eq!(e.stats().clients, 10);
    /// ```
    pub fn stats(&self) -> HonorStats {
        self.stats
    }

    /// The honoring clients' calls per 100 ms bucket; `None` when every
    /// client honors (then they are all the calls).
    ///
    /// ```
    /// use herdless_sim::endpoint::{Endpoint, FailFirst, Honoring};
    /// let mut e = Honoring::new(FailFirst::new(0), 0.5, 3, 1_000);
    /// let honoring = (0..1_000).filter(|&c| herdless_sim::endpoint::honor::honors(0.5, 3, c)).count();
    /// for c in 0..1_000 {
    ///     e.call(0, c, 1);
    /// }
    /// assert_eq!(e.arrivals().map(|h| h.total()), Some(honoring as u64));
    /// assert!(Honoring::new(FailFirst::new(0), 1.0, 3, 10).arrivals().is_none());
    /// ```
    pub fn arrivals(&self) -> Option<&Histogram> {
        self.arrivals.as_ref()
    }

    /// The wrapped endpoint.
    ///
    /// ```
    /// let e = herdless_sim::endpoint::Honoring::new(herdless_sim::endpoint::FailFirst::new(1), 1.0, 3, 10);
    /// let _inner: &herdless_sim::endpoint::FailFirst = e.inner();
    /// ```
    pub fn inner(&self) -> &E {
        &self.inner
    }
}

impl<E> Honoring<E> {
    /// What reaches `client` of `reply` at `now_ns`, counted for it.
    #[inline]
    fn deliver(&mut self, now_ns: u64, client: u32, reply: Reply) -> Reply {
        if honors(self.fraction, self.seed, client) {
            if reply == Reply::Ok {
                self.stats.succeeded += 1;
                self.stats.last_success_ns = self.stats.last_success_ns.max(now_ns);
            }
            reply
        } else {
            if reply == Reply::Ok {
                self.stats.ignoring_succeeded += 1;
                self.stats.ignoring_last_success_ns =
                    self.stats.ignoring_last_success_ns.max(now_ns);
            }
            match reply {
                Reply::Rejected { .. } | Reply::Planned { .. } | Reply::Requeued { .. } => {
                    Reply::Rejected { retry_after: None }
                }
                other => other,
            }
        }
    }
}

impl<E: Endpoint> Endpoint for Honoring<E> {
    #[inline]
    fn call(&mut self, now_ns: u64, client: u32, attempt: u32) -> Reply {
        let reply = self.inner.call(now_ns, client, attempt);
        self.count(now_ns, client);
        self.deliver(now_ns, client, reply)
    }

    /// Only a client that honors the server's answers says how long it
    /// waits (a client that ignores them is another library's).
    #[inline]
    fn call_waiting(&mut self, now_ns: u64, client: u32, attempt: u32, wait_ns: u64) -> Reply {
        let reply = if honors(self.fraction, self.seed, client) {
            self.inner.call_waiting(now_ns, client, attempt, wait_ns)
        } else {
            self.inner.call(now_ns, client, attempt)
        };
        self.count(now_ns, client);
        self.deliver(now_ns, client, reply)
    }

    fn next_answer(&self) -> Option<u64> {
        self.inner.next_answer()
    }

    fn answer(&mut self, now_ns: u64) -> Option<(u32, Reply)> {
        let (client, reply) = self.inner.answer(now_ns)?;
        Some((client, self.deliver(now_ns, client, reply)))
    }

    fn service_load(&self) -> Option<&crate::metrics::Histogram> {
        self.inner.service_load()
    }

    fn max_held(&self) -> u64 {
        self.inner.max_held()
    }
}

impl<E> Honoring<E> {
    /// Counts a call of an honoring client.
    #[inline]
    fn count(&mut self, now_ns: u64, client: u32) {
        if honors(self.fraction, self.seed, client) {
            self.stats.calls += 1;
            if let Some(h) = self.arrivals.as_mut() {
                h.add(now_ns);
            }
        }
    }
}
