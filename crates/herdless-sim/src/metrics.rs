//! Metrics: arrival histograms in fixed-width time buckets, and the busiest
//! sliding window of recorded event times.
//!
//! Every scenario counts calls in 100 ms buckets ([`BUCKET`]): fine enough to
//! show a retry wave as one spike, coarse enough that a run of minutes is a
//! few thousand numbers. A bucket is a `u32` count in a `Vec` that grows on
//! demand, so a run of a few minutes of virtual time costs a few kilobytes and
//! one bounds check per call.
//!
//! Fixed buckets can split a spike across a boundary (half of it in each
//! bucket), so the busiest moment is measured separately, from the event
//! times themselves: [`Timeline::peak`] slides a window of any width over them
//! and reports the largest count any position holds ([`Peak`]).
//!
//! Times are integer nanoseconds (virtual time in the simulator, time since
//! start for a real fleet), so bucket and window boundaries are exact: an
//! event at 300 ms is in bucket 3, and two events exactly one width apart are
//! never in one half-open window.

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

    /// Adds `other`'s counts, bucket by bucket (the load of several
    /// servers as one).
    ///
    /// ```
    /// let (mut a, mut b) = (herdless_sim::metrics::Histogram::new(), herdless_sim::metrics::Histogram::new());
    /// a.add(0);
    /// b.add(0);
    /// b.add(150_000_000);
    /// a.merge(&b);
    /// assert_eq!(a.counts(), &[2, 1]);
    /// ```
    pub fn merge(&mut self, other: &Histogram) {
        if other.counts.len() > self.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (mine, &theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine = mine.saturating_add(theirs);
        }
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
            .filter(|&(_, &c)| c > 0)
            .fold(None, |best: Option<(usize, u32)>, (i, &c)| match best {
                Some((_, b)) if b >= c => best,
                _ => Some((i, c)),
            })
    }
}

/// The start of bucket `i`, `i · 100 ms`.
///
/// ```
/// use std::time::Duration;
/// assert_eq!(herdless_sim::metrics::bucket_start(3), Duration::from_millis(300));
/// ```
pub fn bucket_start(i: usize) -> Duration {
    Duration::from_nanos((i as u64).saturating_mul(BUCKET_NS))
}

/// The busiest window found by [`Timeline::peak`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Peak {
    /// Events in the window.
    pub count: u64,
    /// Where the window starts (the time of its first event), in nanoseconds;
    /// 0 when there are no events.
    pub start_ns: u64,
}

/// Recorded event times (nanoseconds), kept sorted, for measurements that
/// need the times themselves rather than bucket counts.
///
/// ```
/// use std::time::Duration;
/// use herdless_sim::metrics::{Peak, Timeline};
/// // Four events straddle the 100 ms bucket boundary: fixed buckets see 2 + 2,
/// // a sliding 100 ms window sees all four.
/// let t: Timeline = [50, 90, 110, 140, 500].map(|ms| ms * 1_000_000).into_iter().collect();
/// assert_eq!(t.histogram().counts(), &[2, 2, 0, 0, 0, 1]);
/// assert_eq!(t.peak(Duration::from_millis(100)), Peak { count: 4, start_ns: 50_000_000 });
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    sorted_ns: Vec<u64>,
}

impl FromIterator<u64> for Timeline {
    fn from_iter<I: IntoIterator<Item = u64>>(times_ns: I) -> Self {
        let mut sorted_ns: Vec<u64> = times_ns.into_iter().collect();
        sorted_ns.sort_unstable();
        Self { sorted_ns }
    }
}

impl Timeline {
    /// The number of events.
    ///
    /// ```
    /// let t: herdless_sim::metrics::Timeline = [3, 1, 2].into_iter().collect();
    /// assert_eq!(t.len(), 3);
    /// ```
    pub fn len(&self) -> usize {
        self.sorted_ns.len()
    }

    /// Whether there are no events.
    ///
    /// ```
    /// assert!(herdless_sim::metrics::Timeline::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.sorted_ns.is_empty()
    }

    /// The times, ascending.
    ///
    /// ```
    /// let t: herdless_sim::metrics::Timeline = [3, 1, 2].into_iter().collect();
    /// assert_eq!(t.times_ns(), &[1, 2, 3]);
    /// ```
    pub fn times_ns(&self) -> &[u64] {
        &self.sorted_ns
    }

    /// The events counted in [`BUCKET`]s from time 0.
    ///
    /// ```
    /// let t: herdless_sim::metrics::Timeline = [250_000_000, 0].into_iter().collect();
    /// assert_eq!(t.histogram().counts(), &[1, 0, 1]);
    /// ```
    pub fn histogram(&self) -> Histogram {
        let mut h = Histogram::new();
        for &t in &self.sorted_ns {
            h.add(t);
        }
        h
    }

    /// The largest number of events in any half-open window `[s, s + width)`,
    /// and the earliest start `s` achieving it (a busiest window can always
    /// be slid to start at one of its events, so `s` is an event time).
    ///
    /// The window slides over every position, so a burst is never split
    /// between two fixed buckets; events exactly `width` apart are in
    /// different windows. A zero `width` holds nothing. Linear in the number
    /// of events.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless_sim::metrics::{Peak, Timeline};
    /// let ms = Duration::from_millis(1);
    /// let t: Timeline = [0, 1_000_000].into_iter().collect();
    /// assert_eq!(t.peak(ms).count, 1); // 1 ms apart: two 1 ms windows
    /// assert_eq!(t.peak(2 * ms), Peak { count: 2, start_ns: 0 });
    /// assert_eq!(Timeline::default().peak(ms), Peak::default());
    /// ```
    pub fn peak(&self, width: Duration) -> Peak {
        let width_ns = u64::try_from(width.as_nanos()).unwrap_or(u64::MAX);
        let times = &self.sorted_ns;
        let (mut best, mut lo) = (Peak::default(), 0usize);
        for (hi, &t) in times.iter().enumerate() {
            while lo <= hi && t - times[lo] >= width_ns {
                lo += 1;
            }
            let count = (hi + 1 - lo) as u64;
            if count > best.count {
                best = Peak {
                    count,
                    start_ns: times[lo],
                };
            }
        }
        best
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: &[u64]) -> Timeline {
        v.iter().map(|m| m * 1_000_000).collect()
    }

    /// The brute-force definition: for every start, count the events in
    /// `[start, start + width)`.
    fn peak_by_definition(t: &Timeline, width_ns: u64) -> u64 {
        let times = t.times_ns();
        times
            .iter()
            .map(|&s| {
                times
                    .iter()
                    .filter(|&&x| x >= s && x - s < width_ns)
                    .count() as u64
            })
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn peak_keeps_a_spike_that_straddles_a_bucket_boundary_whole() {
        let t = ms(&[50, 90, 110, 140, 500]);
        assert_eq!(t.histogram().max_bucket(), Some((0, 2)));
        assert_eq!(
            t.peak(BUCKET),
            Peak {
                count: 4,
                start_ns: 50_000_000
            }
        );
    }

    #[test]
    fn peak_windows_are_half_open_and_exact() {
        // 100 ms apart exactly: never one 100 ms window (a float difference
        // 0.3 - 0.2 < 0.1 would say otherwise).
        assert_eq!(ms(&[200, 300]).peak(BUCKET).count, 1);
        assert_eq!(ms(&[200, 299]).peak(BUCKET).count, 2);
        // An event at 300 ms is in bucket 3.
        assert_eq!(ms(&[300]).histogram().counts(), &[0, 0, 0, 1]);
        assert_eq!(ms(&[1, 2]).peak(Duration::ZERO).count, 0);
    }

    #[test]
    fn peak_reports_the_earliest_busiest_window_and_ignores_input_order() {
        let t = ms(&[900, 0, 10, 500, 510]);
        assert_eq!(
            t.peak(BUCKET),
            Peak {
                count: 2,
                start_ns: 0
            }
        );
        // Equal times all count.
        assert_eq!(ms(&[7, 7, 7]).peak(Duration::from_nanos(1)).count, 3);
    }

    #[test]
    fn peak_matches_the_definition_on_random_times() {
        let mut rng = herdless::Rng::with_seed(11);
        for round in 0..200 {
            let n = (rng.next_u64() % 60) as usize;
            let t: Timeline = (0..n).map(|_| rng.next_u64() % 2_000).collect();
            let width = 1 + rng.next_u64() % 300;
            let p = t.peak(Duration::from_nanos(width));
            assert_eq!(p.count, peak_by_definition(&t, width), "round {round}");
            if p.count > 0 {
                let inside = t
                    .times_ns()
                    .iter()
                    .filter(|&&x| x >= p.start_ns && x - p.start_ns < width)
                    .count() as u64;
                assert_eq!(inside, p.count, "the window at start_ns holds the count");
            }
        }
    }
}
