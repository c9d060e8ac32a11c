//! Allowances from the adaptive allocator: admissions granted ahead of time
//! while it is up, holds nothing and has half its burst to spare (the
//! bounds in [`allowance`](crate::pushback::allowance)).

use std::time::Duration;

use super::{AdaptiveAllocator, Mode};
use crate::pushback::allowance::{Allowance, grantable};
use crate::pushback::ns;

impl AdaptiveAllocator {
    /// Up to `want` admissions at `now`; empty unless up, nothing held,
    /// and half the burst to spare once they are promised. A request that
    /// names its caller may be admitted from it only when no caller is
    /// tracked (none was told a slot it may come back early for).
    pub(crate) fn allowance(&mut self, now: Duration, want: u32) -> Allowance {
        let now_ns = ns(now);
        self.tick(now_ns);
        if self.mode != Mode::Up || self.queued() {
            return Allowance::default();
        }
        let i = self.interval();
        let n = grantable(self.schedule.promised(), now_ns, self.tolerance(i), i, want);
        if n == 0 {
            return Allowance::default();
        }
        self.schedule.promise(now_ns, n, i);
        let end = self.schedule.promised();
        Allowance::new(n, now, self.clients.len() == 0, (i, end), self.generation)
    }

    /// Settles `allowance` at `now`: `used` admissions counted (as arrivals
    /// admitted), what is still ahead of the rest given back unless the
    /// allocator changed since;
    /// `served` requests counted as served.
    pub(crate) fn settle(&mut self, now: Duration, allowance: Allowance, used: u32, served: u32) {
        let now_ns = ns(now);
        self.tick(now_ns);
        let used = used.min(allowance.count());
        self.counts.arrivals += u64::from(used);
        self.counts.admitted += u64::from(used);
        let back = allowance.unspent_ns(used, now_ns, self.interval(), self.generation);
        self.schedule.give_back(back);
        self.served_many(now_ns, served);
    }
}
