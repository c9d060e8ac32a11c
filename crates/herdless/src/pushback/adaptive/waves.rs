//! What the wave planner ([`WavePlanner`](crate::pushback::waves::WavePlanner))
//! uses of the adaptive allocator: its admission, its learning and its
//! outages, without its slots or its table of callers.
//!
//! The planner answers every caller it turns away with a plan, so nothing
//! here books a slot or remembers a caller: admission (the same GCRA at the
//! estimate, the same probes while down), what a refusal teaches (the same
//! estimate, the same outage detection), and where a plan may begin. The
//! only slot handed out is the one of an outage whose end is unknown, when
//! no plan can name a start ([`down_slot`](AdaptiveAllocator::down_slot)).

use super::{AdaptiveAllocator, Mode};
use crate::pushback::Allotment;

impl AdaptiveAllocator {
    /// Admission at `now` (ns) for a planner: true to let the request
    /// through. `spare` callers (not due in the plan) may use half the
    /// burst only, as callers that ignore their slot do here.
    pub(crate) fn admit_for_plan(&mut self, now: u64, spare: bool) -> bool {
        self.tick(now);
        let admit = match &mut self.mode {
            Mode::Up => {
                let i = self.interval();
                let tolerance = if spare {
                    self.tolerance(i) / 2
                } else {
                    self.tolerance(i)
                };
                self.schedule.try_admit(now, i, tolerance)
            }
            Mode::Down {
                until: None,
                next_probe,
                ..
            } if now >= *next_probe => {
                *next_probe = now.saturating_add(self.probe_ns);
                self.counts.probes += 1;
                true
            }
            Mode::Down { .. } => false,
        };
        if admit {
            self.counts.admitted += 1;
        } else {
            self.estimate.shed = self.estimate.shed.saturating_add(1);
        }
        admit
    }

    /// While down with an unknown end, the slot of a caller turned away at
    /// `now` (no plan can begin before the end is seen); `None` otherwise.
    pub(crate) fn down_slot(&mut self, now: u64) -> Option<Allotment> {
        match self.mode {
            Mode::Down { until: None, .. } => {
                self.counts.rejected += 1;
                Some(self.reject(now, None, None, false, None))
            }
            _ => None,
        }
    }

    /// The service refused an admitted request at `now`: counted and
    /// learned from as [`refused`](AdaptiveAllocator::refused) does, with no
    /// slot booked.
    pub(crate) fn refusal_for_plan(&mut self, now: u64) {
        self.tick(now);
        self.counts.refused += 1;
        let _ = self.note_refusal(now);
    }

    /// The earliest a plan made at `now` may begin: after the capacity
    /// already promised to admissions, and not before a known outage end.
    pub(crate) fn plan_floor(&self, now: u64) -> u64 {
        let end = match self.mode {
            Mode::Down { until: Some(u), .. } => u,
            _ => 0,
        };
        now.max(self.schedule.promised()).max(end)
    }

    /// Starts with nothing saved up at `at` (ns): admissions from then on
    /// at most at the estimate, as after a recovery (a server that starts
    /// has banked no capacity).
    pub(crate) fn start_empty(&mut self, at: u64) {
        let tolerance = self.tolerance(self.interval());
        self.schedule.empty_at(at, tolerance);
    }

    /// Keeps the estimate at what it was told (see `Estimate::pin`).
    pub(crate) fn pin_estimate(&mut self) {
        self.estimate.pin();
    }
}
