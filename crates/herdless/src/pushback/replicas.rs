//! Several replicas in front of one service: what each tells the others,
//! and the trait a shared store implements.
//!
//! A service run as `R` replicas behind a load balancer, each with its own
//! [`AdaptiveAllocator`](crate::pushback::AdaptiveAllocator), in front of one
//! device: each replica sees its share of the arrivals and of the device's
//! refusals, learns on its own, and holds its own queue. Learning alone does
//! not add up to the right total: replicas that learn a little differently
//! (one refused more in an unlucky window) end with unequal shares of the
//! device, and the one left with a long queue at a low share drains it long
//! after the others are idle. The designs that work share a little state
//! through a store every replica already reaches, and fall back to a local
//! view when it is out of reach (Uber Cadence's global rate limiter: weights
//! from an aggregator, a fallback share when it is gone).
//!
//! Here each replica publishes a [`ReplicaReport`] about once a second (what
//! it served and had refused in that period, its estimate, its queue, whether
//! the device is down), and reads its peers' latest reports with their age.
//! [`AdaptiveAllocator::apply_peers`](crate::pushback::AdaptiveAllocator::apply_peers)
//! turns them into this replica's share of the device: the fleet's measured
//! total (or the sum of the estimates while nobody is refused), split by the
//! replicas' backlog. Reports older than [`STALE`] are ignored: a replica
//! that hears from nobody runs on its own view (its last share, which its own
//! learning then moves as before).
//!
//! Everything here is sans-IO: a report is plain numbers, the store is a
//! [`SharedState`] (the simulator's keeps them in memory with a modeled
//! delay; `adapters::nats::KvShared`, feature `nats`, keeps them in a NATS
//! JetStream key-value bucket).
//!
//! ```
//! use std::time::Duration;
//! use herdless::pushback::{AdaptiveAllocator, PeerReport, ReplicaReport};
//!
//! let mut a = AdaptiveAllocator::builder().estimate(500.0).hold().build()?;
//! let mine = a.report(Duration::from_secs(1));
//! // A peer with twice this one's queue, both up and measured.
//! let peer = ReplicaReport { held: 2_000, served_per_s: 600.0, refused: 40, ..mine };
//! let before = a.capacity();
//! a.apply_peers(Duration::from_secs(1), &[PeerReport { report: peer, age: Duration::from_millis(500) }]);
//! assert!(a.capacity() < before, "the peer's backlog takes the larger share");
//! # Ok::<(), herdless::pushback::PushbackError>(())
//! ```

use std::time::Duration;

/// A peer's report older than this is ignored (three missed periods).
pub const STALE: Duration = Duration::from_secs(3);

/// The usual time between two reports of one replica.
pub const PERIOD: Duration = Duration::from_secs(1);

/// What one replica tells the others about its last period.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[cfg_attr(feature = "nats", derive(serde::Serialize, serde::Deserialize))]
pub struct ReplicaReport {
    /// Requests the device served, per second, over the period.
    pub served_per_s: f64,
    /// Requests the device refused in the period (a 503 or 429 of its own).
    pub refused: u64,
    /// Arrivals per second over the period (admitted, held and turned away).
    pub arrivals_per_s: f64,
    /// The replica's capacity estimate (requests per second).
    pub estimate: f64,
    /// Requests held now.
    pub held: u64,
    /// Whether it takes the device to be down.
    pub down: bool,
}

/// A peer's latest report and how old it is (on the reader's clock).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PeerReport {
    /// The report.
    pub report: ReplicaReport,
    /// How long ago it was published (or received).
    pub age: Duration,
}

/// A store the replicas share (sans-IO: no call blocks; the implementation
/// moves the reports in the background).
pub trait SharedState: Send + Sync {
    /// Publishes this replica's report (replacing its previous one).
    fn publish(&self, report: &ReplicaReport);

    /// The latest report of every other replica heard from, with its age.
    fn peers(&self) -> Vec<PeerReport>;
}
