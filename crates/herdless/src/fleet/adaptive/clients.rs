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
//! Entries are removed when their caller is admitted. A caller that gave up
//! leaves its entry behind; every 4,096 bookings the map drops the entries
//! whose slot is more than a horizon in the past, so memory follows the
//! callers still waiting (about 40 bytes each).

use std::collections::HashMap;

/// A booked caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Its slot, nanoseconds since the epoch.
    pub(crate) slot: u64,
    /// Whether it came back before a slot once.
    pub(crate) ignores: bool,
}

/// The booked callers.
#[derive(Debug, Clone, Default)]
pub(crate) struct Clients {
    map: HashMap<u64, Entry>,
    since_sweep: u32,
}

const SWEEP_EVERY: u32 = 4_096;

impl Clients {
    pub(crate) fn get_mut(&mut self, key: u64) -> Option<&mut Entry> {
        self.map.get_mut(&key)
    }

    pub(crate) fn remove(&mut self, key: u64) {
        self.map.remove(&key);
    }

    /// Records `key`'s slot; sweeps stale entries now and then.
    pub(crate) fn set(&mut self, key: u64, entry: Entry, now: u64, horizon: u64) {
        self.map.insert(key, entry);
        self.since_sweep += 1;
        if self.since_sweep >= SWEEP_EVERY {
            self.since_sweep = 0;
            let cutoff = now.saturating_sub(horizon);
            self.map.retain(|_, e| e.slot >= cutoff);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_entries_are_swept() {
        let mut c = Clients::default();
        let e = |slot| Entry {
            slot,
            ignores: false,
        };
        c.set(1, e(10), 0, 100);
        for k in 2..=SWEEP_EVERY as u64 {
            c.set(k, e(5_000), 1_000, 100);
        }
        // The sweep at the 4,096th booking dropped key 1 (slot 10 < 1000 - 100).
        assert_eq!(c.len(), SWEEP_EVERY as usize - 1);
        assert!(c.get_mut(1).is_none());
        assert!(c.get_mut(2).is_some());
    }
}
