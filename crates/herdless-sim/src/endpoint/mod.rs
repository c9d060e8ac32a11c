//! Simulated endpoints: what answers a call, and when it says 503.
//!
//! An [`Endpoint`] sees each call's virtual time, client and attempt number and
//! answers with a [`Reply`]. Calls take no virtual time (the answer is
//! immediate): in the spread and outage scenarios what matters is *when* the
//! fleet calls, and adding a constant latency would only shift every curve.
//! The one exception is a call the endpoint **holds** ([`Reply::Held`]): its
//! answer comes later, when the endpoint says so ([`Endpoint::next_answer`],
//! [`Endpoint::answer`]); the fleet loop parks the client until then.
//!
//! Every call that reaches the handler itself ([`OutageEndpoint`], the
//! capacity) is counted per 100 ms ([`Endpoint::service_load`]): the load on
//! the service, its own refusals included, which a pushback front end keeps
//! below what the clients send.
//!
//! * [`FailFirst`] is a stub controller: it fails each worker's first `k`
//!   calls and answers the rest.
//! * [`OutageEndpoint`] is an endpoint recovering from an outage: it fails
//!   everything until the outage ends at `T`, then serves at most `C` calls
//!   per second ([`TokenBucket`]) and answers the rest 503 (no Retry-After).
//! * [`AdaptiveEndpoint`] is the same endpoint behind the library's adaptive
//!   server pushback ([`AdaptiveAllocator`](herdless::pushback::AdaptiveAllocator)):
//!   every 503 carries a Retry-After slot, and the allocator learns the
//!   capacity and the outage's end from the handler's answers
//!   ([`pushback`] module).
//! * [`PushbackEndpoint`] is the same endpoint behind the static
//!   [`SlotAllocator`](herdless::pushback::SlotAllocator), told the capacity and
//!   (or at) the outage's end.
//! * [`HoldEndpoint`] is the same endpoint behind the adaptive allocator
//!   with a hold: a call may be held open ([`Reply::Held`]) and answered
//!   later, when the allocator releases it ([`hold`] module).
//! * [`WaveEndpoint`] is the same endpoint behind the library's wave
//!   planner: every rejection announces a plan of waves ([`waves`] module).
//! * [`Replicas`] spreads the calls over several such endpoints, each with
//!   its share of the capacity and its own allocator or planner
//!   ([`replicas`] module).
//! * [`Honoring`] wraps any of them: the clients that ignore Retry-After get
//!   the answer without it (they use their own backoff), and the calls and
//!   successes of the clients that honor it are counted apart ([`honor`]
//!   module).
//!
//! # The capacity model
//!
//! After the outage the endpoint admits calls through a token bucket that
//! refills at `C` tokens per second, holds at most `burst` tokens (default
//! `C / 10`, one 100 ms bucket's worth: the slack a real server's accept queue
//! gives) and **starts empty at `T`**. A call is served when a whole token is
//! available, otherwise answered 503. Because the bucket starts empty, the
//! number of calls served by time `t ≥ T` is at most `C · (t − T)`, so `N`
//! clients cannot all be served before `T + N / C`: the physical limit is a
//! hard bound of the model, not an approximation (a fixed per-second window
//! would let the last window's calls finish early and "beat" the limit).
//!
//! Tokens are counted in integer units of `1 / 10⁹` token, so refills are
//! exact and a run is the same on every platform.
//!
//! The bucket is its own type, [`TokenBucket`], driven by any clock in
//! nanoseconds: virtual time here, time since start in `herdless stub`, so
//! the real stub and the simulator admit calls by the same rule.

use std::time::Duration;

use crate::strategy::Reply;

pub mod hold;
mod hold_replicas;
pub mod honor;
pub mod pushback;
pub mod replicas;
pub mod server;
pub mod waves;

pub use hold::{HoldEndpoint, Setup};
pub use honor::{HonorStats, Honoring};
pub use pushback::{AdaptiveEndpoint, OutageEnd, PushbackEndpoint};
pub use replicas::Replicas;
pub use server::{Coordination, MAX_REPLICAS, ServerParams, Split};
pub use waves::WaveEndpoint;

use crate::metrics::Histogram;

/// Something that answers simulated calls.
pub trait Endpoint {
    /// Answers call number `attempt` (1-based) of `client` at `now_ns`.
    fn call(&mut self, now_ns: u64, client: u32, attempt: u32) -> Reply;

    /// [`call`](Self::call) from a client that waits `wait_ns` for its
    /// answer at most (the rest of its elapsed limit: what herdless's HTTP
    /// clients tell a server as `Prefer: wait=N`). Only an endpoint with a
    /// hold uses it.
    #[inline]
    fn call_waiting(&mut self, now_ns: u64, client: u32, attempt: u32, wait_ns: u64) -> Reply {
        let _ = wait_ns;
        self.call(now_ns, client, attempt)
    }

    /// When the endpoint next has an answer for a call it held (or work
    /// towards one), in nanoseconds; `None` when it holds nothing.
    fn next_answer(&self) -> Option<u64> {
        None
    }

    /// The next answer due at `now_ns` for a call it held: the client and
    /// its reply (never [`Reply::Held`]). Called until `None`.
    fn answer(&mut self, _now_ns: u64) -> Option<(u32, Reply)> {
        None
    }

    /// Every call that reached the service itself, per 100 ms (`None` for an
    /// endpoint without a service behind it).
    fn service_load(&self) -> Option<&Histogram> {
        None
    }

    /// The most calls held open at once.
    fn max_held(&self) -> u64 {
        0
    }
}

pub(crate) const REJECT: Reply = Reply::Rejected { retry_after: None };

/// Fails each client's first `k` calls (a stub controller).
///
/// ```
/// use herdless_sim::endpoint::{Endpoint, FailFirst};
/// use herdless_sim::Reply;
/// let mut c = FailFirst::new(3);
/// assert!(matches!(c.call(0, 0, 3), Reply::Rejected { .. }));
/// assert_eq!(c.call(0, 0, 4), Reply::Ok);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct FailFirst {
    k: u32,
}

impl FailFirst {
    /// A controller failing each client's first `k` calls.
    ///
    /// ```
    /// let _ = herdless_sim::endpoint::FailFirst::new(0); // never fails
    /// ```
    pub fn new(k: u32) -> Self {
        Self { k }
    }
}

impl Endpoint for FailFirst {
    #[inline]
    fn call(&mut self, _now_ns: u64, _client: u32, attempt: u32) -> Reply {
        if attempt <= self.k { REJECT } else { Reply::Ok }
    }
}

const UNIT: u64 = 1_000_000_000;

/// The capacity model: a token bucket refilling at `C` tokens per second,
/// holding at most `burst` tokens, **empty at its start time `T`** (see the
/// [module documentation](self#the-capacity-model)). A call takes one whole
/// token or is refused; before `T` nothing is admitted.
///
/// Time is nanoseconds on any clock that never goes backwards (a time earlier
/// than one already seen is treated as that time). Because the bucket starts
/// empty, at most `⌊C · (t − T)⌋` calls are admitted by time `t`, and at most
/// `burst + C · w` in any window of width `w`.
///
/// ```
/// use herdless_sim::endpoint::TokenBucket;
/// let mut b = TokenBucket::new(1_000_000_000, 10, 2); // T = 1 s, 10/s, burst 2
/// assert!(!b.try_take(500_000_000));   // before T
/// assert!(!b.try_take(1_000_000_000)); // empty at T
/// assert!(b.try_take(1_100_000_000));  // one token after 0.1 s
/// assert!(!b.try_take(1_100_000_000)); // spent
/// // Idle for a minute: at most the burst is saved up.
/// assert_eq!((0..5).filter(|_| b.try_take(61_000_000_000)).count(), 2);
/// ```
#[derive(Debug, Clone)]
pub struct TokenBucket {
    rate: u64,
    max_units: u64,
    units: u64,
    last_ns: u64,
}

impl TokenBucket {
    /// A bucket empty at `start_ns`, refilling at `per_second` tokens per
    /// second up to `burst` tokens (both at least 1).
    ///
    /// ```
    /// let mut b = herdless_sim::endpoint::TokenBucket::new(0, 1_000, 100);
    /// assert!(b.try_take(1_000_000)); // 1 ms: one token
    /// ```
    pub fn new(start_ns: u64, per_second: u32, burst: u32) -> Self {
        Self {
            rate: u64::from(per_second.max(1)),
            max_units: u64::from(burst.max(1)).saturating_mul(UNIT),
            units: 0,
            last_ns: start_ns,
        }
    }

    /// The default burst for a capacity of `per_second`: 100 ms worth of
    /// capacity (the slack a real server's accept queue gives), at least 1.
    ///
    /// ```
    /// use herdless_sim::endpoint::TokenBucket;
    /// assert_eq!(TokenBucket::default_burst(500), 50);
    /// assert_eq!(TokenBucket::default_burst(5), 1);
    /// ```
    pub fn default_burst(per_second: u32) -> u32 {
        (per_second / 10).max(1)
    }

    /// Takes one token at `now_ns` if a whole one is there; `false` (nothing
    /// taken) otherwise.
    ///
    /// ```
    /// let mut b = herdless_sim::endpoint::TokenBucket::new(0, 1, 1);
    /// assert!(!b.try_take(999_999_999));
    /// assert!(b.try_take(1_000_000_000));
    /// ```
    #[inline]
    pub fn try_take(&mut self, now_ns: u64) -> bool {
        if now_ns > self.last_ns {
            let refill = (now_ns - self.last_ns).saturating_mul(self.rate);
            self.units = self.units.saturating_add(refill).min(self.max_units);
            self.last_ns = now_ns;
        }
        if self.units >= UNIT {
            self.units -= UNIT;
            true
        } else {
            false
        }
    }
}

/// Down until `T`, then at most `C` calls per second (see the [module
/// documentation](self)).
///
/// ```
/// use std::time::Duration;
/// use herdless_sim::endpoint::{Endpoint, OutageEndpoint};
/// use herdless_sim::Reply;
/// let mut e = OutageEndpoint::new(Duration::from_secs(5), 10, 1);
/// assert!(matches!(e.call(4_000_000_000, 0, 1), Reply::Rejected { .. })); // down
/// assert!(matches!(e.call(5_000_000_000, 0, 2), Reply::Rejected { .. })); // bucket empty at T
/// assert_eq!(e.call(5_100_000_000, 0, 3), Reply::Ok);                     // 1 token after 0.1 s
/// assert!(matches!(e.call(5_100_000_000, 1, 1), Reply::Rejected { .. })); // spent
/// ```
#[derive(Debug, Clone)]
pub struct OutageEndpoint {
    recovery_ns: u64,
    bucket: TokenBucket,
    served: u64,
    load: Histogram,
}

impl OutageEndpoint {
    /// An endpoint down for `outage`, then serving `capacity` calls per second
    /// with a bucket of `burst` calls (both at least 1).
    ///
    /// ```
    /// let e = herdless_sim::endpoint::OutageEndpoint::new(std::time::Duration::ZERO, 100, 10);
    /// assert_eq!(e.served(), 0);
    /// ```
    pub fn new(outage: Duration, capacity: u32, burst: u32) -> Self {
        let recovery_ns = u64::try_from(outage.as_nanos()).unwrap_or(u64::MAX);
        Self {
            recovery_ns,
            bucket: TokenBucket::new(recovery_ns, capacity, burst),
            served: 0,
            load: Histogram::new(),
        }
    }

    /// How many calls were served so far.
    ///
    /// ```
    /// use herdless_sim::endpoint::{Endpoint, OutageEndpoint};
    /// let mut e = OutageEndpoint::new(std::time::Duration::ZERO, 1_000, 5);
    /// e.call(1_000_000_000, 0, 1);
    /// assert_eq!(e.served(), 1);
    /// ```
    pub fn served(&self) -> u64 {
        self.served
    }
}

impl Endpoint for OutageEndpoint {
    #[inline]
    fn call(&mut self, now_ns: u64, _client: u32, _attempt: u32) -> Reply {
        self.load.add(now_ns);
        if now_ns < self.recovery_ns {
            return REJECT;
        }
        if self.bucket.try_take(now_ns) {
            self.served += 1;
            Reply::Ok
        } else {
            REJECT
        }
    }

    fn service_load(&self) -> Option<&Histogram> {
        Some(&self.load)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_serves_more_than_capacity_times_time_since_recovery() {
        let mut e = OutageEndpoint::new(Duration::from_secs(5), 10_000, 1_000);
        let mut rng = herdless::Rng::with_seed(9);
        let mut t = 0u64;
        for _ in 0..200_000 {
            t += rng.next_u64() % 200_000; // mean 0.1 ms between calls: 10k/s offered
            e.call(t, 0, 1);
            if t >= 5_000_000_000 {
                let bound = (t - 5_000_000_000) as u128 * 10_000 / 1_000_000_000;
                assert!(u128::from(e.served()) <= bound, "t={t}");
            }
        }
        assert!(e.served() > 0);
    }

    #[test]
    fn an_idle_bucket_holds_at_most_the_burst() {
        let mut e = OutageEndpoint::new(Duration::ZERO, 100, 3);
        let served = (0..10)
            .filter(|_| e.call(60_000_000_000, 0, 1) == Reply::Ok)
            .count();
        assert_eq!(served, 3);
    }

    #[test]
    fn a_bucket_admits_at_most_capacity_times_time_since_its_start() {
        let mut b = TokenBucket::new(2_000_000_000, 1_000, 100);
        let mut rng = herdless::Rng::with_seed(3);
        let (mut t, mut taken) = (0u64, 0u64);
        for _ in 0..100_000 {
            t += rng.next_u64() % 100_000; // 20k/s offered against 1k/s
            if b.try_take(t) {
                taken += 1;
                assert!(t > 2_000_000_000, "nothing before the start");
                let bound = u128::from(t - 2_000_000_000) * 1_000 / 1_000_000_000;
                assert!(u128::from(taken) <= bound, "t={t}");
            }
        }
        // Offered far more than capacity: it admits about C per second.
        let expected = (t - 2_000_000_000) / 1_000_000;
        assert!(
            taken + 2 >= expected && taken <= expected,
            "{taken} vs {expected}"
        );
    }

    #[test]
    fn a_bucket_treats_an_earlier_time_as_the_latest_seen() {
        let mut b = TokenBucket::new(0, 10, 1);
        assert!(b.try_take(100_000_000));
        // Going back to 50 ms neither refills nor underflows.
        assert!(!b.try_take(50_000_000));
        assert!(!b.try_take(150_000_000)); // half a token since 100 ms
        assert!(b.try_take(200_000_000));
    }
}
