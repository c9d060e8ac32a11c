//! Byte offset → line number, for the spans of a policy file.
//!
//! Every key of every table is reported with its line, so a file of `k` keys
//! and `n` bytes asks `k` times. Counting newlines from the start for each
//! (as this once did) costs `O(k · n)`: 5,000 policies (280 KB) took 2.6 s
//! and slowed every `herdless exec` in that directory. The index is built in
//! one pass (`O(n)`, the newline positions) and answers each question by
//! binary search (`O(log n)`), so a whole file costs `O(n + k log n)`.

/// The newline positions of a text, in order.
#[derive(Debug, Clone, Default)]
pub(super) struct Lines {
    newlines: Vec<usize>,
}

impl Lines {
    /// Indexes `text`: one pass over its bytes.
    pub(super) fn new(text: &str) -> Self {
        work::add(text.len());
        Lines {
            newlines: text
                .bytes()
                .enumerate()
                .filter_map(|(i, b)| (b == b'\n').then_some(i))
                .collect(),
        }
    }

    /// The 1-based line of byte `offset` (past the end: the last line).
    pub(super) fn line_at(&self, offset: usize) -> usize {
        // Lines before `offset` end at the newlines before it.
        self.newlines.partition_point(|&nl| {
            work::add(1);
            nl < offset
        }) + 1
    }
}

/// The work the index does, counted in tests (bytes scanned plus probes),
/// so a test can tell linear from quadratic without a clock.
#[cfg(test)]
pub(super) mod work {
    use std::cell::Cell;

    thread_local!(static UNITS: Cell<usize> = const { Cell::new(0) });

    pub(in crate::shared::config) fn add(n: usize) {
        UNITS.with(|u| u.set(u.get() + n));
    }

    /// The work counted on this thread while `f` ran, and its result.
    pub(in crate::shared::config) fn during<T>(f: impl FnOnce() -> T) -> (usize, T) {
        let before = UNITS.with(Cell::get);
        let out = f();
        (UNITS.with(Cell::get) - before, out)
    }
}

#[cfg(not(test))]
mod work {
    #[inline(always)]
    pub(super) fn add(_: usize) {}
}
