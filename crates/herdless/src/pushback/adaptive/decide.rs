//! Deciding one arrival: admit, hold, or reject with a slot; and where a
//! rejected caller's slot goes.
//!
//! The rules are in the [module documentation](super); this file is their
//! arithmetic. Every time is whole nanoseconds since the driver's epoch.

use std::time::Duration;

use super::clients::Entry;
use super::{AdaptiveAllocator, Mode};
use crate::pushback::tuning::{
    EARLY_TOLERANCE, HOLD_SHARE, OUTSIDE_SHARE, RELEASE_START, SETTLE_WINDOWS,
};
use crate::pushback::{Allotment, Ticket, slot_interval_ns};

impl AdaptiveAllocator {
    pub(super) fn interval(&self) -> u64 {
        slot_interval_ns(self.estimate.capacity)
    }

    /// The slot interval at the hold's starting share of the estimate: how
    /// conservatively a hold books the callers it cannot keep.
    pub(super) fn start_interval(&self) -> u64 {
        slot_interval_ns(self.estimate.capacity * RELEASE_START)
    }

    /// The slot interval at which a hold books the callers it cannot keep.
    pub(super) fn outside_interval(&self) -> u64 {
        slot_interval_ns(self.estimate.capacity * OUTSIDE_SHARE)
    }

    pub(super) fn tolerance(&self, interval: u64) -> u64 {
        self.burst_ns.saturating_sub(interval)
    }

    /// Whether requests wait in the hold.
    pub(super) fn queued(&self) -> bool {
        self.hold.as_ref().is_some_and(|h| !h.is_empty())
    }

    /// Time passes: a known outage end, an unknown outage's start, a window.
    pub(super) fn tick(&mut self, now: u64) {
        match &mut self.mode {
            Mode::Down { until: Some(u), .. } if now >= *u => {
                let u = *u;
                self.recover_at(u);
            }
            Mode::Down { since, .. } => {
                since.get_or_insert(now);
            }
            Mode::Up => {}
        }
        if self.queued() {
            self.estimate.backlog = true;
        }
        self.estimate.roll(now);
    }

    pub(super) fn recover_at(&mut self, at: u64) {
        self.mode = Mode::Up;
        self.generation += 1;
        if let Some(hold) = &mut self.hold {
            // Release from a low rate and let the service say how much more
            // it takes (see "The hold" in the module documentation).
            hold.prebooked = 0;
            self.estimate.ceiling = self.estimate.capacity;
            self.estimate.capacity =
                (self.estimate.capacity * RELEASE_START).max(super::MIN_CAPACITY);
        }
        let tolerance = self.tolerance(self.interval());
        self.schedule.empty_at(at, tolerance);
        self.estimate.restart(at);
        // The next report covers the service up (see `share.rs`).
        self.mark.recovered(at, self.counts);
        if self.hold.is_some() {
            // The first windows may be served from slack (module docs).
            self.estimate.settle = SETTLE_WINDOWS;
        }
    }

    /// Whether a request the allocator turns away now is queued rather than
    /// refused: a hold that is holding requests, or a service down.
    fn queueing(&self) -> bool {
        self.hold.is_some() && (self.queued() || matches!(self.mode, Mode::Down { .. }))
    }

    pub(super) fn decide_key(
        &mut self,
        now: u64,
        key: Option<u64>,
        wait: Option<u64>,
    ) -> Allotment {
        self.tick(now);
        self.counts.arrivals += 1;
        // A caller's mark sticks: it is written back with its rejection, and
        // an admission removes the entry.
        let (early_slot, low) = match key.and_then(|k| self.clients.get(k, now, self.horizon_ns)) {
            Some(e) => {
                let early = now.saturating_add(EARLY_TOLERANCE) < e.slot;
                (early.then_some(e.slot), e.ignores || early)
            }
            None => (None, false),
        };
        let queued = self.queued();
        let admit = match &mut self.mode {
            // Behind the queue: nobody overtakes the held requests.
            Mode::Up if queued => {
                self.estimate.shed = self.estimate.shed.saturating_add(1);
                false
            }
            Mode::Up => {
                let i = self.interval();
                // A caller known to ignore its slot may use half the burst
                // only: the other half stays for the callers due now.
                let tolerance = if low {
                    self.tolerance(i) / 2
                } else {
                    self.tolerance(i)
                };
                let ok = self.schedule.try_admit(now, i, tolerance);
                if !ok {
                    self.estimate.shed = self.estimate.shed.saturating_add(1);
                }
                ok
            }
            // While requests are held, the probe is the first of them.
            Mode::Down {
                until: None,
                next_probe,
                ..
            } if now >= *next_probe && !queued => {
                *next_probe = now.saturating_add(self.probe_ns);
                self.counts.probes += 1;
                true
            }
            Mode::Down { .. } => false,
        };
        if admit {
            if let Some(k) = key {
                self.clients.remove(k);
            }
            self.counts.admitted += 1;
            return Allotment::Admit;
        }
        if let Some(ticket) = self.try_hold(now, key, wait) {
            return Allotment::Hold { ticket };
        }
        self.counts.rejected += 1;
        let queueing = self.queueing();
        let slot = self.reject(now, key, early_slot, low, None);
        if queueing { slot.requeued() } else { slot }
    }

    /// Holds a request that would otherwise be rejected, when the hold has
    /// room and the request would be released within `hold_for`: always
    /// while down with an unknown end; before a known end, when the end and
    /// the queue ahead (at the starting rate) are within it; while up, when
    /// the queue ahead drains within it at the estimate.
    fn try_hold(&mut self, now: u64, key: Option<u64>, wait: Option<u64>) -> Option<Ticket> {
        let hold = self.hold.as_ref()?;
        if !hold.has_room() {
            return None;
        }
        let patient = hold.class_of(wait)?;
        let length = if patient {
            hold.patient_ns
        } else {
            hold.for_ns
        };
        let ahead = hold.len() as u64 + 1;
        let fits = match self.mode {
            Mode::Down { until: None, .. } => true,
            Mode::Down { until: Some(u), .. } => {
                u.saturating_sub(now)
                    .saturating_add(ahead.saturating_mul(self.start_interval()))
                    < length
            }
            Mode::Up => {
                self.schedule
                    .promised()
                    .saturating_sub(now)
                    .saturating_add(ahead.saturating_mul(self.interval()))
                    < length
            }
        };
        if !fits {
            return None;
        }
        self.counts.held += 1;
        self.hold.as_mut().map(|h| h.push_back(now, key, patient))
    }

    /// The earliest slot a rejected caller may get at `now`; `held_since`:
    /// the start of a refusal run that outlasted its first slot.
    fn earliest(&mut self, now: u64, interval: u64, held_since: Option<u64>) -> u64 {
        let next = now.saturating_add(interval);
        match (self.mode, held_since) {
            (Mode::Up, Some(since)) => self.held_until(now, since).max(next),
            (Mode::Up, None) => {
                // Behind the promised capacity and, with a hold, its queue,
                // which drains at the rate the service took before an
                // outage (the ceiling) while a restarted estimate ramps up.
                let queue = if self.evicting {
                    0 // the rest of the queue is behind an evicted request
                } else {
                    self.hold.as_ref().map_or(0, |h| h.len() as u64)
                };
                let drain = slot_interval_ns(self.estimate.capacity.max(self.estimate.ceiling));
                let behind = self.schedule.promised().max(next);
                behind.saturating_add(queue.saturating_mul(drain))
            }
            (Mode::Down { until: Some(u), .. }, _) => match &mut self.hold {
                // Too early to hold: back shortly before the end, to be held
                // then, while the hold would have room for them all.
                Some(h)
                    if u.saturating_sub(now) >= h.for_ns / 2 && h.prebooked + h.len() < h.max =>
                {
                    h.prebooked += 1;
                    u.saturating_sub(h.for_ns / 2).max(next)
                }
                _ => u.max(next),
            },
            (Mode::Down { since, .. }, _) => self.held_until(now, since.unwrap_or(now)).max(next),
        }
    }

    /// An outage that began at `since`, seen at `now`: held as long as it
    /// has lasted (at least `min_hold`, at most the horizon). With a hold,
    /// half as long, and no later than when the hold will have room (its
    /// oldest request's `hold_for` runs out) nor than `hold_for`: the callers
    /// outside the hold come back when they can be held, and however long the
    /// outage, within about a `hold_for` of its end.
    fn held_until(&self, now: u64, since: u64) -> u64 {
        let age = now.saturating_sub(since);
        let wait = match &self.hold {
            Some(h) => {
                let room = h.next_expiry().map_or(0, |t| t.saturating_sub(now));
                let latest = room.max(self.min_hold_ns).min(h.for_ns);
                (age / 2).max(self.min_hold_ns).min(latest)
            }
            None => age.max(self.min_hold_ns),
        };
        now.saturating_add(wait.min(self.horizon_ns))
    }

    /// Rejects with a slot: the caller's own when it came early, a hint
    /// (nothing booked) for a caller known to ignore slots, else a booking.
    pub(super) fn reject(
        &mut self,
        now: u64,
        key: Option<u64>,
        early_slot: Option<u64>,
        low: bool,
        held_since: Option<u64>,
    ) -> Allotment {
        let i = match self.mode {
            // A hold books what it cannot keep conservatively: these are
            // the only arrivals it cannot correct later. Generations of
            // callers rebooked at different times during an unknown outage
            // overlap when they come back (each adds its own spread): keep
            // a margin, with a hold or without.
            Mode::Down { until: None, .. } if self.hold.is_some() => {
                slot_interval_ns(self.estimate.capacity * OUTSIDE_SHARE * HOLD_SHARE)
            }
            Mode::Down { .. } if self.hold.is_some() => self.outside_interval(),
            Mode::Down { until: None, .. } => slot_interval_ns(self.estimate.capacity * HOLD_SHARE),
            _ if held_since.is_some() => slot_interval_ns(self.estimate.capacity * HOLD_SHARE),
            _ => self.interval(),
        };
        let earliest = self.earliest(now, i, held_since);
        let slot = match early_slot {
            Some(s) => {
                self.counts.early += 1;
                s
            }
            None if low => self.schedule.peek(now, earliest, i, self.horizon_ns),
            None => self.schedule.book(now, earliest, i, self.horizon_ns),
        };
        if let Some(k) = key {
            let entry = Entry { slot, ignores: low };
            self.clients.set(k, entry, now, self.horizon_ns);
        }
        Allotment::Reject {
            retry_after: Duration::from_nanos(slot.saturating_sub(now).max(1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::pushback::AdaptiveAllocator;

    /// The Retry-After gap between two callers the full hold turned away, in
    /// seconds: their expected arrivals are one slot interval apart, and a
    /// caller is expected 5 % after its slot (see `schedule.rs`).
    fn gap_outside_the_hold(a: AdaptiveAllocator) -> f64 {
        let mut a = a;
        let t = Duration::from_millis(100);
        let mut d = a.decide(t);
        if d.is_admit() {
            d = a.decide(t); // an unknown end's probe
        }
        assert!(d.is_hold());
        let first = a.decide(t).retry_after().unwrap();
        let second = a.decide(t).retry_after().unwrap();
        (second - first).as_secs_f64() * 1.05
    }

    #[test]
    fn callers_past_the_hold_are_booked_at_055_of_the_estimate_and_09_of_that_while_the_end_is_unknown()
     {
        let b = || AdaptiveAllocator::builder().estimate(1_000.0).hold_max(1);
        let known = gap_outside_the_hold(b().build().unwrap().outage_until(Duration::from_secs(2)));
        assert!((known - 1.0 / 550.0).abs() < 1e-8, "{known}");
        let unknown = gap_outside_the_hold(b().build().unwrap().outage());
        assert!((unknown - 1.0 / 495.0).abs() < 1e-8, "{unknown}");
    }
}
