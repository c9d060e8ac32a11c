//! [`LatencyWindow`]: the last `n` answer times and one of their quantiles,
//! for a hedge delay that follows the endpoint.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// The last `capacity` latencies (a ring) and their `quantile`, recomputed
/// every few records (a selection, O(capacity), on a scratch buffer kept
/// between computations: no allocation after the first). Reading the
/// quantile is one atomic load.
#[derive(Debug)]
pub(crate) struct LatencyWindow {
    quantile: f64,
    /// The quantile, in nanoseconds; 0 until `min_samples` were recorded.
    current_ns: AtomicU64,
    min_samples: usize,
    ring: Mutex<Ring>,
}

#[derive(Debug)]
struct Ring {
    samples: Vec<u64>,
    capacity: usize,
    next: usize,
    since: usize,
    scratch: Vec<u64>,
}

impl LatencyWindow {
    pub(crate) fn new(quantile: f64, capacity: usize, min_samples: usize) -> Self {
        LatencyWindow {
            quantile,
            current_ns: AtomicU64::new(0),
            min_samples,
            ring: Mutex::new(Ring {
                samples: Vec::new(),
                capacity,
                next: 0,
                since: 0,
                scratch: Vec::new(),
            }),
        }
    }

    /// The quantile of the window, or `None` before `min_samples`.
    #[inline]
    pub(crate) fn current(&self) -> Option<Duration> {
        match self.current_ns.load(Ordering::Relaxed) {
            0 => None,
            ns => Some(Duration::from_nanos(ns)),
        }
    }

    /// Records one latency.
    pub(crate) fn record(&self, latency: Duration) {
        let ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX).max(1);
        let mut ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
        let r = &mut *ring;
        if r.samples.len() < r.capacity {
            r.samples.push(ns);
        } else {
            r.samples[r.next] = ns;
            r.next = (r.next + 1) % r.capacity;
        }
        r.since += 1;
        let filled = r.samples.len();
        // Every record while the window fills, then every 1/32 of it.
        let stride = if filled < r.capacity {
            1
        } else {
            (r.capacity / 32).max(1)
        };
        if filled < self.min_samples || r.since < stride {
            return;
        }
        r.since = 0;
        r.scratch.clear();
        r.scratch.extend_from_slice(&r.samples);
        let rank = ((self.quantile * filled as f64).ceil() as usize).clamp(1, filled) - 1;
        let (_, q, _) = r.scratch.select_nth_unstable(rank);
        self.current_ns.store(*q, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quantile_follows_the_last_samples() {
        let ms = Duration::from_millis;
        let w = LatencyWindow::new(0.9, 32, 10);
        for _ in 0..9 {
            w.record(ms(2));
        }
        assert_eq!(w.current(), None); // fewer than 10 samples
        w.record(ms(2));
        assert_eq!(w.current(), Some(ms(2)));
        // 1 to 32 ms: the 90th percentile is the 29th smallest.
        for i in 1..=32 {
            w.record(ms(i));
        }
        assert_eq!(w.current(), Some(ms(29)));
        // The window forgets: 32 new samples of 7 ms replace them all.
        for _ in 0..32 {
            w.record(ms(7));
        }
        assert_eq!(w.current(), Some(ms(7)));
    }
}
