//! A slot's or a bucket's entries: a list of chunks of [`CHUNK`] entries,
//! the last one (being filled) kept apart.
//!
//! A push writes to the end of one of a few hundred lists, chosen by the
//! event's time: with millions of events pending, what it reads on the way
//! is rarely in the cache. When the list was a vector of chunks, a push read
//! the list's header, then the last chunk's header in the list's buffer, then
//! wrote the entry into the chunk: three dependent reads, each a likely cache
//! miss. The chunk being filled now sits in the list itself, in the queue's
//! array of lists: a push reads one header and writes the entry.

use super::{CHUNK, KEEP};

/// Entries in push order: those of `full` (each chunk exactly [`CHUNK`]
/// entries), then those of `tail` (fewer; no capacity when nothing was pushed
/// since the list was last drained).
#[derive(Debug, Clone)]
pub(super) struct List<P> {
    full: Vec<Vec<P>>,
    tail: Vec<P>,
}

impl<P> Default for List<P> {
    fn default() -> Self {
        List {
            full: Vec::new(),
            tail: Vec::new(),
        }
    }
}

impl<P> List<P> {
    /// Whether the list holds no entry.
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.tail.is_empty() && self.full.is_empty()
    }

    /// Appends `packed`, in a chunk from `pool` when the tail is full.
    ///
    /// Always inlined, and the entry has one destination (room is made
    /// first): it is then written straight into the chunk. Passed to a call,
    /// it was written to the stack field by field and read back 16 bytes at a
    /// time, a load that waits for those stores to complete (no store-to-load
    /// forwarding across several stores).
    #[inline(always)]
    pub(super) fn push(&mut self, pool: &mut Vec<Vec<P>>, packed: P) {
        if self.tail.len() == self.tail.capacity().min(CHUNK) {
            self.roll(pool);
        }
        self.tail.push(packed);
    }

    /// Files the full tail and starts a new one from `pool` (one push in
    /// [`CHUNK`]).
    #[inline(never)]
    fn roll(&mut self, pool: &mut Vec<Vec<P>>) {
        let fresh = pool.pop().unwrap_or_else(|| Vec::with_capacity(CHUNK));
        let done = std::mem::replace(&mut self.tail, fresh);
        if !done.is_empty() {
            self.full.push(done);
        }
    }

    /// Moves every chunk, in order, into `chunks` (empty), leaving the list
    /// empty.
    pub(super) fn take_into(&mut self, chunks: &mut Vec<Vec<P>>) {
        debug_assert!(chunks.is_empty());
        std::mem::swap(&mut self.full, chunks);
        if !self.tail.is_empty() {
            chunks.push(std::mem::take(&mut self.tail));
        }
    }

    /// Empties the list, passing each chunk in order to `each`.
    pub(super) fn drain(&mut self, mut each: impl FnMut(Vec<P>)) {
        for chunk in self.full.drain(..) {
            each(chunk);
        }
        if self.full.capacity() > KEEP {
            self.full = Vec::new();
        }
        if !self.tail.is_empty() {
            each(std::mem::take(&mut self.tail));
        }
    }
}
