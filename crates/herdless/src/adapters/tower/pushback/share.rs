//! One replica among several: the layer's allocator tells its peers what it
//! learns and hears theirs, through a [`SharedState`] the user gives it
//! ([`PushbackLayer::share`](super::PushbackLayer::share)).
//!
//! The layer has no timer of its own for this: the decision path stays
//! sans-IO. Each time it takes its lock for a request (a decision, or the
//! service's answer to one), it checks whether a
//! [`PERIOD`] has passed since its last report; if so, under that same
//! lock, it asks the allocator for its [`report`](Allocator::report),
//! hands it to [`SharedState::publish`], and gives the allocator
//! [`SharedState::peers`] ([`apply_peers`](Allocator::apply_peers)). Both
//! calls are the store's in-memory side (the store moves the reports in
//! the background, [`KvShared`](crate::adapters::nats::KvShared) with the
//! `nats` feature): no I/O under the lock, and one small allocation (the
//! peers' list) per period.
//!
//! A layer that sees no request reports nothing, which is right: it takes
//! no share of the device, and its peers drop its last report once it is
//! [`STALE`](crate::pushback::replicas::STALE). An allocator that does not
//! share (the static [`SlotAllocator`](crate::pushback::SlotAllocator))
//! reports nothing and ignores its peers. A replica alone (no peer heard)
//! decides exactly as without a store: the allocator leaves its estimate
//! alone without a fresh peer report.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::hold::State;
use crate::pushback::replicas::PERIOD;
use crate::pushback::{Allocator, SharedState};

/// The store, and when the layer last reported to it.
pub(super) struct Sharing {
    store: Arc<dyn SharedState>,
    /// Since the layer's epoch.
    last: Duration,
}

impl fmt::Debug for Sharing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sharing")
            .field("last", &self.last)
            .finish_non_exhaustive()
    }
}

impl Sharing {
    /// Reports to `store` from a period after the epoch on.
    pub(super) fn new(store: Arc<dyn SharedState>) -> Self {
        Sharing {
            store,
            last: Duration::ZERO,
        }
    }
}

impl<A: Allocator> State<A> {
    /// At `now`, a period or more after the last report: publishes the
    /// allocator's report and applies the peers' (see the module
    /// documentation). Call under the layer's lock, on every request.
    #[inline]
    pub(super) fn share_due(&mut self, now: Duration) {
        let Some(sharing) = &mut self.sharing else {
            return;
        };
        if now.saturating_sub(sharing.last) < PERIOD {
            return;
        }
        sharing.last = now;
        if let Some(report) = self.alloc.report(now) {
            sharing.store.publish(&report);
            let peers = sharing.store.peers();
            self.alloc.apply_peers(now, &peers);
        }
    }
}
