//! Deterministic parallel map over independent simulation runs.
//!
//! Runs of different strategies (and contention trials) share nothing, so they
//! are spread over scoped threads that pull the next index from an atomic
//! counter. Results are put back in input order, and every run's randomness is
//! derived from the seed and the run's own identity (never from the thread or
//! the order of completion), so the output is the same with 1 thread or 64.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The number of worker threads to use: the machine's available parallelism.
///
/// ```
/// assert!(herdless_sim::parallel::default_threads() >= 1);
/// ```
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Applies `f` to every item on up to `threads` threads; results in input order.
///
/// ```
/// let squares = herdless_sim::parallel::par_map(&[1, 2, 3, 4], 2, |x| x * x);
/// assert_eq!(squares, vec![1, 4, 9, 16]);
/// ```
pub fn par_map<T, R, F>(items: &[T], threads: usize, f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    let threads = threads.clamp(1, items.len().max(1));
    if threads == 1 {
        return items.iter().map(&f).collect();
    }
    let next = AtomicUsize::new(0);
    let mut tagged: Vec<(usize, R)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        mine.push((i, f(item)));
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    tagged.sort_unstable_by_key(|(i, _)| *i);
    tagged.into_iter().map(|(_, r)| r).collect()
}
