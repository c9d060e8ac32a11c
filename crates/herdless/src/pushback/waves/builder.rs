//! [`WavePlannerBuilder`]: the wave planner's settings and their ranges.

use std::time::Duration;

use super::WavePlanner;
use super::planner::WaveCounts;
use crate::pushback::adaptive::AdaptiveAllocator;
use crate::pushback::tuning::{WAVE_SEGMENT, WAVE_SHARE, WAVE_SPACING};
use crate::pushback::{PushbackError, ns};

/// The most callers [`WavePlannerBuilder::population`] accepts.
pub const MAX_POPULATION: u64 = 1_000_000_000;

/// Settings of a [`WavePlanner`], validated by [`build`](Self::build).
///
/// | setting | default | range |
/// |---|---|---|
/// | [`capacity`](Self::capacity): the capacity told, requests/s (not learned) | none | `1..=1e9` |
/// | [`estimate`](Self::estimate): a starting estimate, learned from (instead of `capacity`) | 10/s and a slow start | `1..=1e9` |
/// | [`population`](Self::population): the callers a plan of the whole population covers | none: plans are counted | `1..=1e9` |
/// | [`spacing`](Self::spacing): the spacing a plan aims at | 1 s | 1 ms ..= 1 h |
/// | [`seed`](Self::seed): what replicas share so that their salts agree | 0 | any |
/// | [`horizon`](Self::horizon), [`burst`](Self::burst): the inner allocator's | 60 s, 100 ms | as [`AdaptiveBuilder`](crate::pushback::AdaptiveBuilder) |
///
/// ```
/// use std::time::Duration;
/// use herdless::pushback::waves::WavePlanner;
/// let p = WavePlanner::builder().capacity(500.0).population(2_000).spacing(Duration::from_millis(250)).build()?;
/// assert_eq!(p.capacity(), 500.0);
/// assert!(WavePlanner::builder().population(0).build().is_err());
/// assert!(WavePlanner::builder().spacing(Duration::ZERO).build().is_err());
/// # Ok::<(), herdless::pushback::PushbackError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[must_use]
pub struct WavePlannerBuilder {
    estimate: Option<f64>,
    learn: bool,
    population: Option<u64>,
    spacing: Duration,
    seed: u64,
    horizon: Duration,
    burst: Duration,
}

impl Default for WavePlannerBuilder {
    fn default() -> Self {
        WavePlannerBuilder {
            estimate: None,
            learn: true,
            population: None,
            spacing: WAVE_SPACING,
            seed: 0,
            horizon: Duration::from_secs(60),
            burst: Duration::from_millis(100),
        }
    }
}

impl WavePlannerBuilder {
    /// The capacity the planner is told, requests per second: admission
    /// and every plan at it, never learned (the service's refusals still
    /// send their callers to the next wave, and a run of them with nothing
    /// served still means the service is down). Replaces
    /// [`estimate`](Self::estimate).
    pub fn capacity(mut self, per_second: f64) -> Self {
        self.estimate = Some(per_second);
        self.learn = false;
        self
    }

    /// A starting estimate, requests per second, learned from as the
    /// [`AdaptiveAllocator`] learns (plans made later grow while the service
    /// serves all it is given and callers wait, and shrink to what it served
    /// when it refuses; a plan already announced does not change). Replaces
    /// [`capacity`](Self::capacity).
    pub fn estimate(mut self, per_second: f64) -> Self {
        self.estimate = Some(per_second);
        self.learn = true;
        self
    }

    /// The population a plan covers: every caller is in one of its waves
    /// (without it, plans are counted from the callers turned away).
    pub fn population(mut self, callers: u64) -> Self {
        self.population = Some(callers);
        self
    }

    /// The spacing a plan of the whole population aims at (its waves are
    /// the plan's span over it, rounded up).
    pub fn spacing(mut self, spacing: Duration) -> Self {
        self.spacing = spacing;
        self
    }

    /// A seed mixed into every plan's salt: replicas given the same seed,
    /// population and capacity announce the same plan for the same start.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The longest slot handed out while the service is down with an
    /// unknown end (the inner allocator's horizon).
    pub fn horizon(mut self, horizon: Duration) -> Self {
        self.horizon = horizon;
        self
    }

    /// Admissions tolerated back to back, as time at the estimate.
    pub fn burst(mut self, burst: Duration) -> Self {
        self.burst = burst;
        self
    }

    /// Builds the planner.
    ///
    /// # Errors
    ///
    /// [`PushbackError`] naming the setting out of its range (the inner
    /// allocator's settings are checked as [`AdaptiveBuilder::build`] does).
    ///
    /// [`AdaptiveBuilder::build`]: crate::pushback::AdaptiveBuilder::build
    pub fn build(self) -> Result<WavePlanner, PushbackError> {
        if self
            .population
            .is_some_and(|n| !(1..=MAX_POPULATION).contains(&n))
        {
            return Err(PushbackError::Setting(
                "population must be within 1..=1,000,000,000 callers",
            ));
        }
        if !(Duration::from_millis(1)..=Duration::from_secs(3_600)).contains(&self.spacing) {
            return Err(PushbackError::Setting("spacing must be within 1 ms..=1 h"));
        }
        let mut inner = AdaptiveAllocator::builder()
            .horizon(self.horizon)
            .burst(self.burst);
        if let Some(e) = self.estimate {
            inner = inner.estimate(e);
        }
        let mut inner = inner.build()?;
        // A server that starts (a restart: the case plans are for) has
        // banked no capacity: admissions from its start at most at the
        // estimate, its burst earned by idling, not given.
        inner.start_empty(0);
        if !self.learn {
            inner.pin_estimate();
        }
        Ok(WavePlanner {
            inner,
            population: self.population,
            spacing_ns: ns(self.spacing),
            segment_ms: WAVE_SEGMENT.as_millis() as u32,
            share: WAVE_SHARE,
            seed: self.seed,
            whole: None,
            segment: None,
            cursor: 0,
            last: None,
            counts: WaveCounts::default(),
        })
    }
}
