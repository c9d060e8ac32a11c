//! Several server replicas behind a load balancer, each deciding alone.
//!
//! [`Replicas`] holds `R` endpoints, each built with its share of the
//! capacity (`C / R`, its own token bucket) and its own allocator, hold or
//! planner: nothing is shared between them, as between processes that do
//! not talk. Each call goes to one replica, picked by a hash of the run's
//! seed, the client and the attempt number (a load balancer spreading calls
//! evenly, with no affinity: a client's retries land anywhere). What the
//! fleet measures is the sum: the service load of every replica, the most
//! calls held at once by all of them.
//!
//! Replicas of a wave planner agree without talking when they plan from
//! the same facts: each told its share of the population and of the
//! capacity computes the same span, the same waves and, from the same seed
//! and start, the same salt; a caller's wave is then the same whichever
//! replica it meets.

use std::cell::OnceCell;

use super::Endpoint;
use crate::metrics::Histogram;
use crate::strategy::Reply;

/// `R` endpoints behind a load balancer (see the [module
/// documentation](self)).
///
/// ```
/// use herdless_sim::endpoint::{Endpoint, FailFirst, Replicas};
/// let mut r = Replicas::new(vec![FailFirst::new(0), FailFirst::new(0), FailFirst::new(0)], 7);
/// assert_eq!(r.call(0, 1, 1), herdless_sim::Reply::Ok);
/// assert_eq!(r.len(), 3);
/// ```
#[derive(Debug)]
pub struct Replicas<E> {
    replicas: Vec<E>,
    seed: u64,
    merged: OnceCell<Histogram>,
}

impl<E> Replicas<E> {
    /// The replicas, calls routed with `seed`.
    ///
    /// # Panics
    ///
    /// With no replica (a programming error: the scenarios build at least
    /// one).
    pub fn new(replicas: Vec<E>, seed: u64) -> Self {
        assert!(!replicas.is_empty(), "at least one replica");
        Replicas {
            replicas,
            seed,
            merged: OnceCell::new(),
        }
    }

    /// How many replicas.
    pub fn len(&self) -> usize {
        self.replicas.len()
    }

    /// Whether there are none (never: see [`new`](Self::new)).
    pub fn is_empty(&self) -> bool {
        self.replicas.is_empty()
    }

    /// The replicas.
    pub fn replicas(&self) -> &[E] {
        &self.replicas
    }

    /// The replicas, to announce before the first call.
    pub fn replicas_mut(&mut self) -> &mut [E] {
        &mut self.replicas
    }

    fn pick(&self, client: u32, attempt: u32) -> usize {
        let h = crate::stream_seed(
            self.seed ^ 0x5245_504c,
            (u64::from(client) << 32) | u64::from(attempt),
        );
        ((u128::from(h) * self.replicas.len() as u128) >> 64) as usize
    }
}

impl<E: Endpoint> Endpoint for Replicas<E> {
    #[inline]
    fn call(&mut self, now_ns: u64, client: u32, attempt: u32) -> Reply {
        let i = self.pick(client, attempt);
        self.replicas[i].call(now_ns, client, attempt)
    }

    fn next_answer(&self) -> Option<u64> {
        self.replicas.iter().filter_map(Endpoint::next_answer).min()
    }

    fn answer(&mut self, now_ns: u64) -> Option<(u32, Reply)> {
        self.replicas.iter_mut().find_map(|r| r.answer(now_ns))
    }

    /// The sum of the replicas' service loads (read once the run is over).
    fn service_load(&self) -> Option<&Histogram> {
        let loads: Vec<&Histogram> = self
            .replicas
            .iter()
            .filter_map(Endpoint::service_load)
            .collect();
        if loads.is_empty() {
            return None;
        }
        Some(self.merged.get_or_init(|| {
            let mut sum = Histogram::new();
            for h in loads {
                sum.merge(h);
            }
            sum
        }))
    }

    fn max_held(&self) -> u64 {
        self.replicas.iter().map(Endpoint::max_held).sum()
    }
}
