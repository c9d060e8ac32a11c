//! The slot being drained: its chunks as they were filled, and the order in
//! which they pop.
//!
//! When the clock reaches a slot, its entries must come out in time order.
//! They used to be copied into one vector and sorted there, each 32-byte
//! entry moved a dozen times by the sort. Now an 8-byte [`Key`] per entry
//! (its offset and its position in the slot's chunks) is sorted instead, and
//! the entries are then moved once, in key order, from the chunks into the
//! vector pops take from. A slot of the first wave of a 4,000,000-client
//! storm (83,000 entries) sorts 664 KB of keys, which stay in a core's
//! cache, instead of 2.6 MB of entries. (Pops that followed the keys into the
//! chunks, with no vector, made the run 40 % slower: each waited for its
//! entry's cache miss, where the one pass has many in flight.)
//!
//! # The same order, ties included
//!
//! Entries with the same offset (the same nanosecond: hundreds per slot of a
//! storm of millions) must pop in the order they always did, or a run would
//! no longer be reproducible across this change. The keys are sorted with the
//! same call and the same comparison as the entries were
//! (`sort_unstable_by_key` on the offset alone, latest first; for the first
//! slot, `sort_by_key` on the entries in reverse), so the sort makes the same
//! comparisons and the same moves: `std`'s unstable sort chooses its steps by
//! comparisons alone, and by the element type only between steps that give
//! the same result (a stable small sort for every non-`Copy` element of at
//! most 85 bytes, a branchless partition for at most 96). [`Key`] is not
//! `Copy`, as the fleet's entries are not: `Copy` elements of 8 bytes or less
//! would take a sorting network instead, whose ties fall differently. A test
//! (`keys_sort_as_the_entries_did`) checks the permutation against a direct
//! sort of 32-byte entries, on slots full of ties.

use super::list::List;
use super::{CHUNK, KEEP, Payload};

/// An entry of the slot being drained, as the sort sees it. Not `Copy` (see
/// the [module documentation](self)).
#[derive(Debug)]
pub(super) struct Key {
    /// The entry's offset within its period.
    pub(super) offset: u32,
    /// Its position in the slot: chunk `at / CHUNK`, entry `at % CHUNK`.
    at: u32,
}

/// The slot being drained (see the [module documentation](self)).
#[derive(Debug, Clone)]
pub(super) struct Batch<P> {
    /// The slot's chunks while it is sorted, every one full but the last.
    chunks: Vec<Vec<P>>,
    /// The sort's keys.
    keys: Vec<Key>,
    /// What is left to pop, latest first.
    ready: Vec<P>,
}

impl Clone for Key {
    fn clone(&self) -> Self {
        Key {
            offset: self.offset,
            at: self.at,
        }
    }
}

impl<P> Batch<P> {
    /// An empty batch.
    pub(super) fn new() -> Self {
        Batch {
            chunks: Vec::new(),
            keys: Vec::new(),
            ready: Vec::new(),
        }
    }

    /// Room for `n` entries.
    pub(super) fn reserve(&mut self, n: usize) {
        self.keys.reserve(n);
        self.ready.reserve(n);
    }

    /// The next entry to pop.
    #[inline]
    pub(super) fn peek(&self) -> Option<&P> {
        self.ready.last()
    }

    /// Removes and returns the next entry (the earliest).
    #[inline]
    pub(super) fn pop(&mut self) -> Option<P> {
        self.ready.pop()
    }

    /// Gives the drained chunks back to `pool`.
    fn recycle(&mut self, pool: &mut Vec<Vec<P>>) {
        for mut chunk in self.chunks.drain(..) {
            chunk.clear();
            pool.push(chunk);
        }
        if self.chunks.capacity() > KEEP {
            self.chunks = Vec::new();
        }
    }
}

impl<P> Batch<P> {
    /// Takes the entries of the slot's `list` of chunks (giving the chunks
    /// to `pool`, leaving `list` empty) in time order; `first`: the queue's
    /// first slot, whose equal offsets pop in push order. Returns the number
    /// of entries.
    pub(super) fn load<T>(
        &mut self,
        list: &mut List<P>,
        pool: &mut Vec<Vec<P>>,
        first: bool,
    ) -> usize
    where
        T: Payload<Packed = P>,
    {
        debug_assert!(self.ready.is_empty() && self.chunks.is_empty());
        list.take_into(&mut self.chunks);
        let keys = &mut self.keys;
        for (c, chunk) in self.chunks.iter().enumerate() {
            debug_assert!(chunk.len() == CHUNK || c + 1 == self.chunks.len());
            let base = c * CHUNK;
            keys.extend(chunk.iter().enumerate().map(|(i, p)| Key {
                offset: T::offset(p),
                at: (base + i) as u32,
            }));
        }
        if first {
            // Equal times pop in the order they were pushed (as if each had
            // been inserted into the sorted slot; the order the queue always
            // gave its first slot).
            keys.reverse();
            keys.sort_by_key(|k| std::cmp::Reverse(k.offset));
        } else {
            keys.sort_unstable_by_key(|k| std::cmp::Reverse(k.offset));
        }
        // One pass in key order: the reads are independent, so many are in
        // flight at once (a pop that followed its key would wait for each).
        let chunks = &mut self.chunks;
        self.ready.extend(keys.drain(..).map(|k| {
            let at = k.at as usize;
            T::take(&mut chunks[at / CHUNK][at % CHUNK])
        }));
        self.recycle(pool);
        self.ready.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 32-byte entry, not `Copy`, like the fleet's.
    #[derive(Debug, PartialEq)]
    struct Wide {
        offset: u32,
        tag: u32,
        rest: [u64; 3],
    }

    impl Payload for Wide {
        type Packed = Wide;
        fn pack(self, offset: u32) -> Wide {
            Wide { offset, ..self }
        }
        fn unpack(w: Wide) -> (Wide, u32) {
            let offset = w.offset;
            (w, offset)
        }
        fn offset(w: &Wide) -> u32 {
            w.offset
        }
        fn take(w: &mut Wide) -> Wide {
            std::mem::replace(
                w,
                Wide {
                    offset: 0,
                    tag: u32::MAX,
                    rest: [0; 3],
                },
            )
        }
    }

    fn wide(offsets: &[u32]) -> impl Iterator<Item = Wide> + '_ {
        offsets.iter().enumerate().map(|(i, &offset)| Wide {
            offset,
            tag: i as u32,
            rest: [0; 3],
        })
    }

    /// The batch pops a slot in the order the queue gave it when it sorted
    /// the entries themselves, equal offsets included.
    #[test]
    fn keys_sort_as_the_entries_did() {
        let mut rng = herdless::Rng::with_seed(11);
        let mut pool = Vec::new();
        let mut batch = Batch::new();
        for round in 0..80u32 {
            let n = match round % 8 {
                0..=2 => (rng.next_u64() % 40) as usize,
                3..=5 => (rng.next_u64() % 2_000) as usize,
                6 => (rng.next_u64() % 30_000) as usize,
                _ => 100_000,
            };
            // Few distinct offsets: ties everywhere.
            let spread = 1 + rng.next_u64() % (n as u64 + 1);
            let offsets: Vec<u32> = (0..n).map(|_| (rng.next_u64() % spread) as u32).collect();
            for first in [false, true] {
                let mut direct: Vec<Wide> = wide(&offsets).collect();
                if first {
                    direct.reverse();
                    direct.sort_by_key(|w| std::cmp::Reverse(w.offset));
                } else {
                    direct.sort_unstable_by_key(|w| std::cmp::Reverse(w.offset));
                }
                let want: Vec<u32> = direct.iter().rev().map(|w| w.tag).collect();

                let mut list = List::default();
                for w in wide(&offsets) {
                    list.push(&mut pool, w);
                }
                assert_eq!(batch.load::<Wide>(&mut list, &mut pool, first), n);
                let got: Vec<u32> = std::iter::from_fn(|| batch.pop()).map(|w| w.tag).collect();
                assert_eq!(got, want, "round {round}, {n} entries, first {first}");
            }
        }
    }
}
