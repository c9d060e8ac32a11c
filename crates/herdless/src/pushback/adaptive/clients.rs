//! The callers the allocator has booked, by key: who holds which slot, and
//! who has shown that it ignores its slot.
//!
//! A caller that comes back before its slot did not honor its Retry-After (a
//! client from another library, a script with a fixed sleep). It is marked,
//! and from then on it is rejected cheaply: it is told its slot again (or,
//! once its slot has passed, where the next free slot would be) without a new
//! booking, and it is admitted only into capacity nobody booked. The callers
//! that honor their slots keep the schedule they were promised.
//!
//! ## Lifetime of an entry
//!
//! An entry is removed when its caller is admitted, and it **expires** a
//! horizon after its slot: a caller that gave up and comes back much later is
//! a new caller. Expiry is checked on every lookup, so what the allocator
//! decides does not depend on when memory is reclaimed.
//!
//! ## Storage
//!
//! An entry packs into 8 bytes (the slot, and the "ignores" flag in the low
//! bit). Keys below [`callers`](super::AdaptiveBuilder::callers) live in a
//! table allocated up front (8 bytes per caller, no hashing); any other key
//! lives in a hash map (16 bytes per entry plus the map's slack: 17 to 40
//! bytes, twice that while it grows). The map is swept of expired entries
//! after as many insertions as it holds entries (at least 4,096), so a sweep
//! costs O(1) per booking however many callers wait, and memory follows the
//! callers still waiting (at most twice over).

use std::collections::HashMap;

/// A booked caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Its slot, nanoseconds since the epoch.
    pub(crate) slot: u64,
    /// Whether it came back before a slot once.
    pub(crate) ignores: bool,
}

/// A table cell with no entry.
const VACANT: u64 = u64::MAX;
/// The latest slot that packs (292 years of nanoseconds); later is clamped.
const MAX_SLOT: u64 = (u64::MAX >> 1) - 1;
/// Insertions between two sweeps of the map, at least.
const SWEEP_EVERY: u64 = 4_096;

impl Entry {
    fn pack(self) -> u64 {
        (self.slot.min(MAX_SLOT) << 1) | u64::from(self.ignores)
    }

    fn unpack(packed: u64) -> Self {
        Entry {
            slot: packed >> 1,
            ignores: packed & 1 == 1,
        }
    }

    fn live(self, now: u64, horizon: u64) -> bool {
        self.slot >= now.saturating_sub(horizon)
    }
}

/// The booked callers.
#[derive(Debug, Clone, Default)]
pub(crate) struct Clients {
    /// Entries of keys `0..table.len()`, packed; `VACANT` when none.
    table: Vec<u64>,
    map: HashMap<u64, u64>,
    since_sweep: u64,
}

impl Clients {
    /// Storage for `dense` numbered callers up front.
    pub(crate) fn with_table(dense: usize) -> Self {
        Clients {
            table: vec![VACANT; dense],
            ..Clients::default()
        }
    }

    /// The entry of `key`, unless it has none or it expired (its slot is
    /// more than `horizon` before `now`).
    pub(crate) fn get(&self, key: u64, now: u64, horizon: u64) -> Option<Entry> {
        let packed = match self.cell(key) {
            Some(cell) => *cell,
            None => *self.map.get(&key)?,
        };
        let entry = (packed != VACANT).then(|| Entry::unpack(packed))?;
        entry.live(now, horizon).then_some(entry)
    }

    pub(crate) fn remove(&mut self, key: u64) {
        match self.cell_mut(key) {
            Some(cell) => *cell = VACANT,
            None => {
                self.map.remove(&key);
            }
        }
    }

    /// Records `key`'s entry; sweeps expired entries from the map now and then.
    pub(crate) fn set(&mut self, key: u64, entry: Entry, now: u64, horizon: u64) {
        if let Some(cell) = self.cell_mut(key) {
            *cell = entry.pack();
            return;
        }
        self.map.insert(key, entry.pack());
        self.since_sweep += 1;
        if self.since_sweep >= (self.map.len() as u64).max(SWEEP_EVERY) {
            self.since_sweep = 0;
            self.map
                .retain(|_, packed| Entry::unpack(*packed).live(now, horizon));
        }
    }

    /// Entries held (expired ones not yet reclaimed included).
    pub(crate) fn len(&self) -> usize {
        self.map.len() + self.table.iter().filter(|c| **c != VACANT).count()
    }

    fn cell(&self, key: u64) -> Option<&u64> {
        usize::try_from(key).ok().and_then(|i| self.table.get(i))
    }

    fn cell_mut(&mut self, key: u64) -> Option<&mut u64> {
        usize::try_from(key)
            .ok()
            .and_then(|i| self.table.get_mut(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(slot: u64) -> Entry {
        Entry {
            slot,
            ignores: false,
        }
    }

    #[test]
    fn stale_entries_are_swept() {
        let mut c = Clients::default();
        c.set(1, e(10), 0, 100);
        for k in 2..=SWEEP_EVERY {
            c.set(k, e(5_000), 1_000, 100);
        }
        // The sweep at the 4,096th insertion dropped key 1 (slot 10 < 1000 - 100).
        assert_eq!(c.len(), SWEEP_EVERY as usize - 1);
        assert!(c.get(1, 0, 100).is_none(), "reclaimed, not only expired");
        assert!(c.get(2, 1_000, 100).is_some());
    }

    #[test]
    fn an_entry_expires_a_horizon_after_its_slot_in_either_storage() {
        for mut c in [Clients::default(), Clients::with_table(10)] {
            c.set(3, e(1_000), 0, 100);
            assert_eq!(c.get(3, 1_100, 100), Some(e(1_000)));
            assert_eq!(c.get(3, 1_101, 100), None);
        }
    }

    #[test]
    fn table_and_map_hold_the_same_entries() {
        let mut c = Clients::with_table(4);
        let marked = Entry {
            slot: 77,
            ignores: true,
        };
        for key in [0, 3, 4, u64::MAX] {
            c.set(key, marked, 0, 1_000);
            assert_eq!(c.get(key, 0, 1_000), Some(marked), "key {key}");
        }
        assert_eq!(c.len(), 4);
        assert_eq!(c.map.len(), 2, "keys 4 and u64::MAX are past the table");
        for key in [0, 3, 4, u64::MAX] {
            c.remove(key);
            assert_eq!(c.get(key, 0, 1_000), None);
        }
        assert_eq!(c.len(), 0);
    }

    #[test]
    fn a_slot_past_the_packable_range_is_clamped_not_wrapped() {
        let mut c = Clients::default();
        c.set(9, e(u64::MAX), 0, 1);
        assert_eq!(c.get(9, 0, 1).map(|e| e.slot), Some(MAX_SLOT));
    }
}
