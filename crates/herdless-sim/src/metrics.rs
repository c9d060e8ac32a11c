//! Metrics: arrival histograms in fixed-width time buckets.
//!
//! Every scenario counts calls in 100 ms buckets ([`BUCKET`]), the resolution
//! the first seed prescribes ("histogram the retry timestamps in 100 ms
//! buckets"). A bucket is a `u32` count in a `Vec` that grows on demand, so a
//! run of a few minutes of virtual time costs a few kilobytes and one bounds
//! check per call.

use std::time::Duration;

/// The width of a histogram bucket: 100 ms.
pub const BUCKET: Duration = Duration::from_millis(100);

const BUCKET_NS: u64 = 100_000_000;

/// Counts of events per [`BUCKET`] of virtual time, from time 0.
///
/// ```
/// use herdless_sim::metrics::Histogram;
/// let mut h = Histogram::new();
/// h.add(50_000_000);   // 0.05 s → bucket 0
/// h.add(250_000_000);  // 0.25 s → bucket 2
/// h.add(260_000_000);
/// assert_eq!(h.counts(), &[1, 0, 2]);
/// assert_eq!(h.max_bucket(), Some((2, 2)));
/// assert_eq!(h.total(), 3);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Histogram {
    counts: Vec<u32>,
}

impl Histogram {
    /// An empty histogram.
    ///
    /// ```
    /// assert_eq!(herdless_sim::metrics::Histogram::new().total(), 0);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one event at `at_ns` nanoseconds.
    ///
    /// ```
    /// let mut h = herdless_sim::metrics::Histogram::new();
    /// h.add(1_000_000_000);
    /// assert_eq!(h.counts().len(), 11);
    /// ```
    #[inline]
    pub fn add(&mut self, at_ns: u64) {
        let i = usize::try_from(at_ns / BUCKET_NS).unwrap_or(usize::MAX);
        if i >= self.counts.len() {
            self.grow(i);
        }
        self.counts[i] = self.counts[i].saturating_add(1);
    }

    #[cold]
    fn grow(&mut self, i: usize) {
        // Far-future events (beyond ~1 day of virtual time) are folded into the
        // last bucket rather than allocating gigabytes.
        let i = i.min(864_000);
        self.counts.resize(i + 1, 0);
    }

    /// The counts, bucket `i` covering `[i · 100 ms, (i + 1) · 100 ms)`.
    ///
    /// ```
    /// assert!(herdless_sim::metrics::Histogram::new().counts().is_empty());
    /// ```
    pub fn counts(&self) -> &[u32] {
        &self.counts
    }

    /// The total number of events counted.
    ///
    /// ```
    /// let mut h = herdless_sim::metrics::Histogram::new();
    /// h.add(0);
    /// h.add(0);
    /// assert_eq!(h.total(), 2);
    /// ```
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|&c| u64::from(c)).sum()
    }

    /// The largest bucket as `(index, count)` (the earliest on ties); `None`
    /// when empty.
    ///
    /// ```
    /// assert_eq!(herdless_sim::metrics::Histogram::new().max_bucket(), None);
    /// ```
    pub fn max_bucket(&self) -> Option<(usize, u32)> {
        self.max_bucket_from(0)
    }

    /// The largest bucket among those starting at or after bucket `first`.
    ///
    /// ```
    /// let mut h = herdless_sim::metrics::Histogram::new();
    /// h.add(0); h.add(0); h.add(150_000_000);
    /// assert_eq!(h.max_bucket_from(1), Some((1, 1)));
    /// ```
    pub fn max_bucket_from(&self, first: usize) -> Option<(usize, u32)> {
        self.counts
            .iter()
            .enumerate()
            .skip(first)
            .filter(|(_, &c)| c > 0)
            .fold(None, |best: Option<(usize, u32)>, (i, &c)| match best {
                Some((_, b)) if b >= c => best,
                _ => Some((i, c)),
            })
    }
}

/// The index of the first bucket that starts at or after `at`.
///
/// ```
/// use std::time::Duration;
/// use herdless_sim::metrics::first_bucket_at_or_after;
/// assert_eq!(first_bucket_at_or_after(Duration::from_secs(5)), 50);
/// assert_eq!(first_bucket_at_or_after(Duration::from_millis(5_050)), 51);
/// ```
pub fn first_bucket_at_or_after(at: Duration) -> usize {
    let ns = u64::try_from(at.as_nanos()).unwrap_or(u64::MAX);
    usize::try_from(ns.div_ceil(BUCKET_NS)).unwrap_or(usize::MAX)
}
