//! [`WavePlanner`]: the server's half of cohort-based reactivation. The
//! rules are in the [module documentation](super); this file is their
//! arithmetic. Every time is whole nanoseconds since the driver's epoch.

use std::time::Duration;

use super::plan::{WavePlan, fraction, position, wave};
use crate::pushback::adaptive::AdaptiveAllocator;
use crate::pushback::tuning::EARLY_TOLERANCE;
use crate::pushback::{Allotment, GOLDEN, ns};
use crate::rng::splitmix64;

const MS: u64 = 1_000_000;

/// A plan on the planner's clock: its start in nanoseconds since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Scheduled {
    pub(crate) start_ns: u64,
    pub(crate) waves: u32,
    pub(crate) spacing_ms: u32,
    pub(crate) salt: u64,
}

impl Scheduled {
    pub(crate) fn spacing_ns(&self) -> u64 {
        u64::from(self.spacing_ms) * MS
    }

    pub(crate) fn end_ns(&self) -> u64 {
        self.start_ns
            .saturating_add(u64::from(self.waves) * self.spacing_ns())
    }

    /// Where wave `k` begins.
    fn wave_start_ns(&self, k: u64) -> u64 {
        self.start_ns.saturating_add(k * self.spacing_ns())
    }

    /// The start of `key`'s wave.
    pub(crate) fn own_wave_ns(&self, key: u64) -> u64 {
        self.wave_start_ns(u64::from(wave(position(key, self.salt), self.waves)))
    }

    /// `key`'s point: its wave's start plus its fraction of a spacing
    /// (`start + u·K·Δ`, to the nanosecond).
    pub(crate) fn point_ns(&self, key: u64) -> u64 {
        let p = u128::from(position(key, self.salt));
        let offset = (p * u128::from(self.waves) * u128::from(self.spacing_ns())) >> 64;
        self.start_ns
            .saturating_add(u64::try_from(offset).unwrap_or(u64::MAX))
    }

    /// A named caller turned away in or after its wave at `now`: the next
    /// wave to begin, at its own fraction of it.
    pub(crate) fn rejoin_ns(&self, key: u64, now: u64) -> u64 {
        let current = now.saturating_sub(self.start_ns) / self.spacing_ns().max(1);
        let f = fraction(position(key, self.salt), self.waves);
        self.wave_start_ns(current + 1)
            .saturating_add((f * self.spacing_ns() as f64) as u64)
    }

    /// The plan as announced at `now`: its start relative to it, rounded up
    /// to the millisecond (a caller is never told to come early); `None`
    /// when that start is more than the wire's day away (a plan announced
    /// with its start clamped would be another plan: the callers get their
    /// `Retry-After` alone).
    pub(crate) fn seen_at(&self, now: u64) -> Option<WavePlan> {
        let delta = i128::from(self.start_ns) - i128::from(now);
        let ms =
            delta.div_euclid(i128::from(MS)) + i128::from(delta.rem_euclid(i128::from(MS)) != 0);
        let start_ms = i64::try_from(ms).ok()?;
        WavePlan::new(start_ms, self.waves, self.spacing_ms, self.salt).ok()
    }
}

/// The salt of a plan: from the planner's seed and the plan's shape and
/// start, so that planners given the same seed announce the same plan for
/// the same start, and every new plan has a new salt.
pub(crate) fn salt(seed: u64, start_ns: u64, waves: u32, spacing_ms: u32) -> u64 {
    let shape = (u64::from(waves) << 32) | u64::from(spacing_ms);
    splitmix64(seed ^ splitmix64(start_ns ^ splitmix64(shape))) % super::plan::SALT_LIMIT
}

/// The counted plan's current segment: its plan and the room left in it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Segment {
    pub(crate) plan: Scheduled,
    pub(crate) left: u64,
    pub(crate) placed: u64,
}

/// What a [`WavePlanner`] has done so far.
///
/// ```
/// let p = herdless::pushback::waves::WavePlanner::new(10.0)?;
/// assert_eq!(p.counts(), herdless::pushback::waves::WaveCounts::default());
/// # Ok::<(), herdless::pushback::PushbackError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WaveCounts {
    /// Requests let through to the service.
    pub admitted: u64,
    /// Callers turned away with a plan (refusals included).
    pub planned: u64,
    /// Of those, named callers that came before their wave (told their
    /// point again).
    pub early: u64,
    /// Of those, named callers turned away in or after their wave (told the
    /// next wave).
    pub rejoined: u64,
    /// Callers turned away with a slot and no plan (while the service was
    /// down with an unknown end).
    pub unplanned: u64,
    /// Admitted requests the service refused.
    pub refused: u64,
    /// Plans of the whole population made (told population).
    pub plans: u64,
    /// Segments of counted plans opened.
    pub segments: u64,
}

/// Plans waves of callers and admits up to a learned capacity. See the
/// [module documentation](super).
#[derive(Debug, Clone)]
pub struct WavePlanner {
    pub(crate) inner: AdaptiveAllocator,
    pub(crate) population: Option<u64>,
    pub(crate) spacing_ns: u64,
    pub(crate) segment_ms: u32,
    pub(crate) share: f64,
    pub(crate) seed: u64,
    /// The plan of the whole population in force, if any.
    pub(crate) whole: Option<Scheduled>,
    pub(crate) segment: Option<Segment>,
    /// The end of everything planned so far.
    pub(crate) cursor: u64,
    /// The plan the last caller turned away was given.
    pub(crate) last: Option<Scheduled>,
    pub(crate) counts: WaveCounts,
}

impl WavePlanner {
    /// The rate plans are sized to: a share of the capacity (told, or as
    /// learned so far).
    fn rate(&self) -> f64 {
        (self.inner.capacity() * self.share).max(1e-3)
    }

    /// The plan of the whole population told, beginning at or after
    /// `floor`.
    pub(crate) fn whole_plan(&self, floor: u64, population: u64) -> Scheduled {
        let span_ns = (population as f64 / self.rate() * 1e9).max(1.0);
        let target = self.spacing_ns.max(MS) as f64;
        let waves = ((span_ns / target).ceil() as u64).clamp(1, u64::from(super::MAX_WAVES));
        let spacing_ms = ((span_ns / waves as f64 / MS as f64).ceil() as u64)
            .clamp(1, u64::from(super::MAX_SPACING_MS)) as u32;
        let start_ns = floor.div_ceil(MS) * MS;
        let waves = waves as u32;
        Scheduled {
            start_ns,
            waves,
            spacing_ms,
            salt: salt(self.seed, start_ns, waves, spacing_ms),
        }
    }

    /// Makes the plan of the whole population when one is told and none is
    /// in force (or the last one ended at least its own span ago: a new
    /// storm, not its stragglers).
    fn ensure_whole(&mut self, now: u64) {
        let Some(n) = self.population else {
            return;
        };
        let stale = self.whole.is_none_or(|p| {
            now >= p
                .end_ns()
                .saturating_add(p.end_ns().saturating_sub(p.start_ns))
        });
        if stale {
            let plan = self.whole_plan(self.inner.plan_floor(now), n);
            self.set_whole(plan);
        }
    }

    pub(crate) fn set_whole(&mut self, plan: Scheduled) {
        self.whole = Some(plan);
        self.cursor = self.cursor.max(plan.end_ns());
        self.counts.plans += 1;
    }

    /// The plan of the whole population, while it runs at `now`.
    fn whole_in_force(&self, now: u64) -> Option<Scheduled> {
        self.whole.filter(|p| now < p.end_ns())
    }

    /// Decides an arrival at `now` from the caller `key`, if named.
    pub(crate) fn decide_ns(&mut self, now: u64, key: Option<u64>) -> Allotment {
        if let (Some(plan), Some(k)) = (self.whole_in_force(now), key) {
            if now.saturating_add(EARLY_TOLERANCE) < plan.own_wave_ns(k) {
                // Before its wave: only into capacity the plan leaves over.
                if self.inner.admit_for_plan(now, true) {
                    self.counts.admitted += 1;
                    return Allotment::Admit;
                }
                self.counts.early += 1;
                return self.tell(now, plan, plan.point_ns(k));
            }
        }
        if self.inner.admit_for_plan(now, false) {
            self.counts.admitted += 1;
            return Allotment::Admit;
        }
        self.turn_away(now, key)
    }

    /// The service refused an admitted request at `now`.
    pub(crate) fn refused_ns(&mut self, now: u64, key: Option<u64>) -> Allotment {
        self.counts.refused += 1;
        self.inner.refusal_for_plan(now);
        self.turn_away(now, key)
    }

    /// A caller turned away at `now`: its place in a plan, or a slot while
    /// no plan can begin.
    fn turn_away(&mut self, now: u64, key: Option<u64>) -> Allotment {
        if let Some(slot) = self.inner.down_slot(now) {
            self.counts.unplanned += 1;
            self.last = None;
            return slot;
        }
        self.ensure_whole(now);
        match (self.whole_in_force(now), key) {
            (Some(plan), Some(k)) => {
                let at = if now < plan.own_wave_ns(k) {
                    plan.point_ns(k)
                } else {
                    self.counts.rejoined += 1;
                    plan.rejoin_ns(k, now)
                };
                self.tell(now, plan, at)
            }
            _ => self.place_in_segment(now, key),
        }
    }

    /// A counted segment's room and length: a segment's worth of the rate,
    /// rounded down to whole callers (at least one), its length then
    /// stretched so that it holds them at the rate, never faster: below
    /// 10/s a segment is longer than 100 ms.
    fn segment_shape(&self) -> (u64, u32) {
        let rate = self.rate();
        let room = (rate * f64::from(self.segment_ms) / 1e3).floor().max(1.0);
        let spacing_ms = (room * 1e3 / rate)
            .ceil()
            .clamp(f64::from(self.segment_ms), f64::from(super::MAX_SPACING_MS));
        (room as u64, spacing_ms as u32)
    }

    /// Places a caller in the counted plan: the current segment while it
    /// has room and has not begun, else a new one after everything planned.
    fn place_in_segment(&mut self, now: u64, key: Option<u64>) -> Allotment {
        let mut seg = match self.segment {
            Some(s) if s.left > 0 && now < s.plan.start_ns => s,
            _ => {
                let floor = self.inner.plan_floor(now).max(self.cursor);
                let start_ns = floor.div_ceil(MS) * MS;
                let (room, spacing_ms) = self.segment_shape();
                self.counts.segments += 1;
                let plan = Scheduled {
                    start_ns,
                    waves: 1,
                    spacing_ms,
                    salt: salt(self.seed, start_ns, 1, spacing_ms),
                };
                self.cursor = self.cursor.max(plan.end_ns());
                Segment {
                    plan,
                    left: room,
                    placed: 0,
                }
            }
        };
        let f = match key {
            Some(k) => fraction(position(k, seg.plan.salt), 1),
            None => (seg.placed as f64 * GOLDEN).fract(),
        };
        seg.left -= 1;
        seg.placed += 1;
        self.segment = Some(seg);
        let at = seg
            .plan
            .start_ns
            .saturating_add((f * seg.plan.spacing_ns() as f64) as u64);
        self.tell(now, seg.plan, at)
    }

    /// Answers a caller turned away at `now` with `plan`, and its own time
    /// `at` as the slot.
    fn tell(&mut self, now: u64, plan: Scheduled, at: u64) -> Allotment {
        self.counts.planned += 1;
        self.last = Some(plan);
        Allotment::Reject {
            retry_after: Duration::from_nanos(at.saturating_sub(now).max(1)),
        }
    }

    /// The plan announced with the last caller turned away, as seen at `now`.
    pub(crate) fn last_seen(&self, now: Duration) -> Option<WavePlan> {
        self.last.and_then(|p| p.seen_at(ns(now)))
    }
}
