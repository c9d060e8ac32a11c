//! Learning the capacity from what the protected service completes.
//!
//! The allocator only sees, for each request it admitted, whether the
//! service **served** it or **refused** it (a 503 or 429 of its own: it was
//! overloaded, or down). Time is cut into windows (default 100 ms); at the end
//! of each window the estimate moves:
//!
//! * **Saturated** (some admitted requests were refused, some served, and the
//!   refusals are at least 2 % of the admissions): the service could not take
//!   what was admitted, and what it did serve *is* its rate. The estimate
//!   becomes the served rate of the window, never less than half the current
//!   estimate per window (one noisy window cannot collapse it) and never more
//!   than the current estimate (a refusal is never a reason to admit more).
//!   When the service delivered no more than the estimate, the estimate is
//!   now **verified**; when it delivered more (the refusals were a passing
//!   dip, such as a service just back with nothing saved up), it is not.
//! * **Demand above the estimate, no refusal** (the allocator turned callers
//!   away for lack of capacity while the service refused nothing): the
//!   service might take more. An unverified estimate doubles per window (a
//!   slow start), a verified one grows by 5 % (additive-like probing, as in
//!   AIMD); after five such windows in a row a verified estimate is
//!   unverified again (the capacity grew). A refusal in a later window brings
//!   it back to the served rate.
//! * Otherwise (demand below the estimate) it stays: nothing was learned.
//!
//! After a recovery, an allocator with a hold lets the first windows of
//! demand with no refusal pass without growth (`settle`): a service that
//! came back unseen serves them from the slack it saved meanwhile. A
//! saturated window ends the wait.
//!
//! This is the loss-based half of TCP's congestion control (multiplicative
//! decrease on loss, slow start then additive increase) with the decrease
//! target measured rather than guessed, as in BBR's delivery rate: when the
//! service refuses, the rate it delivered in the same window is its capacity.
//!
//! A window closes once it is a window long *and* holds at least 20 events
//! (admissions and rejections), so a low rate is measured over enough
//! requests to mean something (at 25 requests per second, over about 0.8 s).
//! A window still short of 20 events after ten lengths, or interrupted by a
//! silence longer than one length, is dropped unused: sparse traffic says
//! nothing about the rate.

use crate::pushback::tuning::{
    MAX_DECREASE, MIN_EVENTS, PROBE_GROWTH, SATURATED_ONE_IN, UNVERIFIED_GROWTH, VERIFIED_GROWTH,
};

/// The capacity estimate and the current window's observations.
#[derive(Debug, Clone)]
pub(crate) struct Estimate {
    /// Requests per second.
    pub(crate) capacity: f64,
    /// Whether a saturated window measured it.
    pub(crate) verified: bool,
    min: f64,
    max: f64,
    window: u64,
    start: u64,
    last_event: u64,
    pub(crate) served: u32,
    pub(crate) refused: u32,
    /// Callers turned away for lack of capacity.
    pub(crate) shed: u32,
    /// Consecutive refusals of admitted requests (reset by a success).
    pub(crate) refusal_run: u32,
    /// When the current refusal run began (its first refusal).
    pub(crate) run_since: u64,
    /// The slot the run's first refused caller was given (`u64::MAX` until
    /// it is known).
    pub(crate) run_slot: u64,
    /// Consecutive windows of demand above a verified estimate, no refusal.
    growth_run: u32,
    /// How much an unverified estimate grows per window of demand with no
    /// refusal (2: a slow start; an allocator with a hold grows gentler).
    pub(crate) growth: f64,
    /// Requests waited in the allocator's hold during this window: demand,
    /// as callers turned away are.
    pub(crate) backlog: bool,
    /// A slow-start threshold (0: none): an unverified estimate grows by
    /// `growth` below it and by [`PROBE_GROWTH`] above it. An allocator with
    /// a hold sets it at a recovery, to the estimate before the outage.
    pub(crate) ceiling: f64,
    /// Windows of demand with no refusal to let pass before an unverified
    /// estimate grows (set at a recovery with a hold; see `SETTLE_WINDOWS`).
    pub(crate) settle: u32,
    /// The most this estimate grows to (0: no bound): a replica's share of
    /// the capacity its fleet measured (see `share.rs`).
    pub(crate) limit: f64,
}

impl Estimate {
    pub(crate) fn new(capacity: f64, min: f64, max: f64, window: u64) -> Self {
        Estimate {
            capacity: capacity.clamp(min, max),
            verified: false,
            min,
            max,
            window,
            start: 0,
            last_event: 0,
            served: 0,
            refused: 0,
            shed: 0,
            refusal_run: 0,
            run_since: 0,
            run_slot: u64::MAX,
            growth_run: 0,
            growth: UNVERIFIED_GROWTH,
            backlog: false,
            ceiling: 0.0,
            settle: 0,
            limit: 0.0,
        }
    }

    /// Pins the estimate where it is: windows still close (a refusal run
    /// still means "down"), but the capacity never moves (a capacity told,
    /// not learned).
    pub(crate) fn pin(&mut self) {
        self.min = self.capacity;
        self.max = self.capacity;
    }

    /// Starts a fresh window at `now` (after a recovery: what came before
    /// says nothing about the recovered service).
    pub(crate) fn restart(&mut self, now: u64) {
        self.start = now;
        self.last_event = now;
        self.served = 0;
        self.refused = 0;
        self.shed = 0;
        self.refusal_run = 0;
        self.growth_run = 0;
        self.verified = false;
        self.backlog = false;
        self.settle = 0;
    }

    /// Ends the window if it is complete at `now` (or drops it when stale)
    /// and moves the estimate; true when the estimate changed.
    pub(crate) fn roll(&mut self, now: u64) -> bool {
        let silent = now.saturating_sub(self.last_event) > self.window;
        self.last_event = self.last_event.max(now);
        let span = now.saturating_sub(self.start);
        let events = u64::from(self.served) + u64::from(self.refused) + u64::from(self.shed);
        let before = self.capacity;
        if silent || span >= self.window.saturating_mul(10) {
            self.clear(now);
        } else if span >= self.window && events >= MIN_EVENTS {
            self.update(span as f64 / 1e9);
            self.clear(now);
        }
        self.capacity != before
    }

    fn clear(&mut self, now: u64) {
        self.start = now;
        self.served = 0;
        self.refused = 0;
        self.shed = 0;
        self.backlog = false;
    }

    fn update(&mut self, span_s: f64) {
        let admitted = u64::from(self.served) + u64::from(self.refused);
        let saturated = self.refused > 0
            && self.served > 0
            && u64::from(self.refused) * SATURATED_ONE_IN >= admitted;
        if saturated {
            self.growth_run = 0;
            self.settle = 0;
            let delivered = f64::from(self.served) / span_s;
            if delivered <= self.capacity * VERIFIED_GROWTH {
                self.verified = true;
            }
            self.capacity = delivered
                .max(self.capacity * MAX_DECREASE)
                .min(self.capacity)
                .clamp(self.min, self.max);
        } else if self.refused == 0 && (self.shed > 0 || self.backlog) && self.settle > 0 {
            self.settle -= 1;
        } else if self.refused == 0 && (self.shed > 0 || self.backlog) {
            self.capacity = if self.verified {
                self.capacity * VERIFIED_GROWTH
            } else if self.capacity < self.ceiling {
                (self.capacity * self.growth).min(self.ceiling)
            } else if self.ceiling > 0.0 {
                self.capacity * PROBE_GROWTH
            } else {
                self.capacity * self.growth
            }
            .clamp(self.min, self.max);
            if self.limit > 0.0 {
                self.capacity = self.capacity.min(self.limit.max(self.min));
            }
            if self.verified {
                self.growth_run += 1;
                if self.growth_run >= 5 {
                    self.verified = false;
                    self.growth_run = 0;
                }
            }
        } else {
            self.growth_run = 0;
        }
    }

    /// Goes on growing as a verified estimate does (its share of a fleet of
    /// replicas is larger than it): a few percent per window of demand with
    /// no refusal, the run of such windows started afresh.
    pub(crate) fn keep_growing(&mut self) {
        self.verified = true;
        self.growth_run = 0;
    }

    /// Counts a refusal at `now`; true when it starts a refusal run (the
    /// caller then records the slot it gives in `run_slot`).
    pub(crate) fn refusal(&mut self, now: u64) -> bool {
        self.refused = self.refused.saturating_add(1);
        self.refusal_run = self.refusal_run.saturating_add(1);
        let starts = self.refusal_run == 1;
        if starts {
            self.run_since = now;
            self.run_slot = u64::MAX;
        }
        starts
    }

    /// When the refusal run began, if it has outlasted the slot its first
    /// refused caller was given: the service refused everything it was
    /// offered for at least as long as a caller was told to wait, which is
    /// an outage as far as that caller can tell (a lone caller, refused
    /// again at its slot, is the plainest case).
    pub(crate) fn outlasting_run(&self, now: u64) -> Option<u64> {
        (self.refusal_run >= 2 && now >= self.run_slot).then_some(self.run_since)
    }

    /// Whether the current window saw a success.
    pub(crate) fn served_lately(&self) -> bool {
        self.served > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: u64 = 100_000_000;

    #[test]
    fn a_refusal_run_outlasts_its_first_slot_only_when_it_is_still_running_then() {
        let mut e = Estimate::new(500.0, 1.0, 1e9, W);
        assert!(e.refusal(10));
        e.run_slot = 12;
        assert_eq!(e.outlasting_run(12), None, "one refusal is no run");
        assert!(!e.refusal(11));
        assert_eq!(e.outlasting_run(11), None, "before the first slot");
        assert_eq!(e.outlasting_run(12), Some(10));
        e.refusal_run = 0; // a success
        assert!(e.refusal(20));
        assert_eq!(e.run_slot, u64::MAX, "a new run forgets the old slot");
        assert_eq!(e.outlasting_run(1_000), None);
    }

    #[test]
    fn a_saturated_window_sets_the_estimate_to_the_served_rate() {
        let mut e = Estimate::new(20_000.0, 1.0, 1e9, W);
        e.served = 1_000;
        e.refused = 1_000;
        assert!(e.roll(W));
        assert_eq!(e.capacity, 10_000.0);
        assert!(e.verified);
    }

    #[test]
    fn refusals_while_delivering_more_than_the_estimate_verify_nothing() {
        let mut e = Estimate::new(4_000.0, 1.0, 1e9, W);
        e.served = 600; // 6,000/s: more than the estimate
        e.refused = 100;
        e.roll(W);
        assert_eq!(e.capacity, 4_000.0);
        assert!(!e.verified);
    }

    #[test]
    fn one_window_never_more_than_halves_it() {
        let mut e = Estimate::new(20_000.0, 1.0, 1e9, W);
        e.served = 10;
        e.refused = 1_000;
        e.roll(W);
        assert_eq!(e.capacity, 10_000.0);
    }

    #[test]
    fn unverified_demand_doubles_verified_demand_creeps() {
        let mut e = Estimate::new(5_000.0, 1.0, 1e9, W);
        e.served = 500;
        e.shed = 100;
        e.roll(W);
        assert_eq!(e.capacity, 10_000.0);
        e.served = 1_000;
        e.refused = 100;
        e.roll(2 * W);
        assert!(e.verified, "it delivered 10,000/s: the estimate");
        e.served = 900;
        e.shed = 50;
        e.roll(3 * W);
        assert!(
            (e.capacity - 10_000.0 * 1.05).abs() < 1e-6,
            "{}",
            e.capacity
        );
    }

    #[test]
    fn a_settling_estimate_keeps_its_rate_through_clean_windows_until_a_refusal() {
        let mut e = Estimate::new(6_000.0, 1.0, 1e9, W);
        e.growth = 1.25;
        e.ceiling = 10_000.0;
        e.settle = 3;
        for k in 1..=3 {
            e.served = 600;
            e.backlog = true;
            assert!(!e.roll(k * W), "window {k}: slack, not capacity");
            assert_eq!(e.capacity, 6_000.0);
        }
        e.served = 600;
        e.backlog = true;
        assert!(e.roll(4 * W));
        assert_eq!(e.capacity, 7_500.0, "then the slow start");
        let mut e = Estimate::new(6_000.0, 1.0, 1e9, W);
        e.settle = 3;
        e.served = 500;
        e.refused = 100;
        e.roll(W);
        assert_eq!(
            (e.capacity, e.settle),
            (5_000.0, 0),
            "a refusal ends the wait"
        );
    }

    #[test]
    fn rare_refusals_and_stale_windows_teach_nothing() {
        let mut e = Estimate::new(5_000.0, 1.0, 1e9, W);
        e.served = 499;
        e.refused = 1; // 0.2 %: noise, not saturation
        assert!(!e.roll(W));
        e.refused = 400;
        e.served = 1;
        assert!(!e.roll(3 * W), "a window after a silence is dropped");
        e.served = 5;
        e.refused = 5;
        e.roll(3 * W + 1);
        assert!(!e.roll(4 * W), "too few events: still open");
        assert!(
            !e.roll(13 * W + 1),
            "ten lengths without enough events: dropped"
        );
    }
}
