//! Latency measured from each client's intended send time: when it wanted
//! to call, not when a gate, a hold or a plan let it.
//!
//! A load generator that measures from when a request actually went out
//! hides every wait its own pacing imposed (coordinated omission). A
//! client told to come back in 3 s, or held 3 s, or paced by its own
//! throttle, waited those 3 s all the same: here its latency runs from the
//! time it first meant to call (its engine's start) to its success. Counts
//! are kept in 10 ms buckets, so a quantile is exact to 10 ms.

use std::time::Duration;

const BUCKET_NS: u64 = 10_000_000;
/// The last bucket (about 2.4 h): later latencies are counted there.
const LAST: usize = 864_000;

/// Latencies in 10 ms buckets.
///
/// ```
/// use std::time::Duration;
/// use herdless_sim::latency::Latency;
/// let mut l = Latency::default();
/// for ms in [5u64, 15, 25, 35] {
///     l.add(ms * 1_000_000);
/// }
/// assert_eq!(l.count(), 4);
/// assert_eq!(l.quantile(0.5), Some(Duration::from_millis(20)));
/// assert_eq!(l.max(), Some(Duration::from_millis(40)));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Latency {
    counts: Vec<u32>,
    total: u64,
}

impl Latency {
    /// Counts one latency of `ns` nanoseconds.
    #[inline]
    pub fn add(&mut self, ns: u64) {
        let i = usize::try_from(ns / BUCKET_NS).unwrap_or(LAST).min(LAST);
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] = self.counts[i].saturating_add(1);
        self.total += 1;
    }

    /// How many latencies were counted.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The `q` quantile (`0..=1`): the upper edge of the bucket holding
    /// it; `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        if self.total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += u64::from(c);
            if seen >= rank {
                return Some(Duration::from_nanos((i as u64 + 1) * BUCKET_NS));
            }
        }
        None
    }

    /// The largest latency, to the bucket's upper edge.
    pub fn max(&self) -> Option<Duration> {
        self.quantile(1.0)
    }
}
