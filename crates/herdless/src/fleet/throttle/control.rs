//! The throttle's state and its rules: a token bucket whose rate follows what
//! the endpoint answers (see the [module documentation](super)).
//!
//! Every time is whole nanoseconds on the driver's clock. The state sits
//! behind the throttle's mutex; each call is a few comparisons and one or
//! two floating-point operations, no allocation.

use std::time::Duration;

use super::Settings;

/// Where the rate is in its cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Nothing refused yet: doubles per window while calls wait.
    Start,
    /// The endpoint refused everything: one call (a probe) per interval,
    /// the interval doubling per refused probe up to `probe_max`.
    Probe { interval: u64 },
    /// A probe was served: grows gently (the fleet behind it comes back too).
    Ramp,
    /// Set to what the endpoint served when it refused part: grows slowly.
    Steady,
}

/// Growth per window after a probe was served.
pub(crate) const RAMP_GROWTH: f64 = 1.25;
/// Growth per window once set to a measured rate.
pub(crate) const STEADY_GROWTH: f64 = 1.05;
/// Windows in `Steady` without a refusal before ramping again.
const CALM_WINDOWS: u32 = 10;
/// The highest rate, calls per second.
pub(crate) const MAX_RATE: f64 = 1e9;
/// A window whose refusals reach 1 in this many calls sets the rate to what
/// was served.
const REFUSED_SHARE: u64 = 50;

/// The throttle's state.
#[derive(Debug, Clone)]
pub(crate) struct State {
    pub(crate) rate: f64,
    tokens: f64,
    /// The last refill.
    last: u64,
    /// The next waiter's turn: waiters are spread one interval apart.
    next_wake: u64,
    pub(crate) phase: Phase,
    /// The last time the rate grew (or could have).
    grown_at: u64,
    window_start: u64,
    ok: u32,
    failed: u32,
    /// Calls told to wait in this window: demand above the rate.
    denied: u32,
    /// Consecutive refusals.
    run: u32,
    calm: u32,
    /// The last success, if any.
    last_ok: Option<u64>,
}

fn interval_ns(rate: f64) -> f64 {
    1e9 / rate
}

impl State {
    pub(crate) fn new(s: &Settings) -> Self {
        State {
            rate: f64::from(s.initial) / (s.window as f64 / 1e9),
            tokens: f64::from(s.initial),
            last: 0,
            next_wake: 0,
            phase: Phase::Start,
            grown_at: 0,
            window_start: 0,
            ok: 0,
            failed: 0,
            denied: 0,
            run: 0,
            calm: 0,
            last_ok: None,
        }
    }

    fn burst(&self, s: &Settings) -> f64 {
        match self.phase {
            Phase::Probe { .. } => 1.0,
            _ => (self.rate * s.window as f64 / 1e9).max(1.0),
        }
    }

    /// Time passes: tokens accrue, the rate grows while calls wait and
    /// nothing is refused, a window closes. A time earlier than the last
    /// seen (a driver's clocks disagreeing) changes nothing.
    fn advance(&mut self, now: u64, s: &Settings) {
        if now > self.last {
            let add = (now - self.last) as f64 * self.rate / 1e9;
            self.tokens = (self.tokens + add).min(self.burst(s));
            self.last = now;
        }
        let growth = match self.phase {
            Phase::Start => 2.0,
            Phase::Ramp => RAMP_GROWTH,
            Phase::Steady => STEADY_GROWTH,
            Phase::Probe { .. } => 1.0,
        };
        if now > self.grown_at {
            if self.failed == 0 && self.denied > 0 && growth > 1.0 {
                let windows = (now - self.grown_at) as f64 / s.window as f64;
                self.rate = (self.rate * growth.powf(windows)).min(MAX_RATE);
            }
            self.grown_at = now;
        }
        if now.saturating_sub(self.window_start) >= s.window {
            self.close(now, s);
        }
    }

    /// A window closes: a partial refusal sets the rate to what was served.
    fn close(&mut self, now: u64, s: &Settings) {
        let span = now.saturating_sub(self.window_start).max(1) as f64 / 1e9;
        let total = u64::from(self.ok) + u64::from(self.failed);
        if !matches!(self.phase, Phase::Probe { .. }) {
            if self.failed > 0 && u64::from(self.failed) * REFUSED_SHARE >= total {
                let served = f64::from(self.ok) / span;
                self.rate = served.clamp(self.rate * 0.5, self.rate).max(s.floor());
                self.phase = Phase::Steady;
                self.calm = 0;
                self.next_wake = now;
            } else if self.phase == Phase::Steady && self.failed == 0 && self.ok > 0 {
                self.calm += 1;
                if self.calm >= CALM_WINDOWS {
                    self.phase = Phase::Ramp;
                }
            }
        }
        self.window_start = now;
        self.ok = 0;
        self.failed = 0;
        self.denied = 0;
    }

    /// One call may go now, or wait this long and ask again.
    pub(crate) fn acquire(&mut self, now: u64, s: &Settings) -> Result<(), Duration> {
        self.advance(now, s);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Ok(());
        }
        self.denied = self.denied.saturating_add(1);
        let interval = interval_ns(self.rate);
        let deficit = ((1.0 - self.tokens) * interval) as u64;
        let wake = self.next_wake.max(now.saturating_add(deficit));
        let wait = wake - now;
        if wait > s.max_wait {
            // Beyond the longest wait: ask again then, booking no turn (a
            // waiter that re-asks must not push every later turn back).
            return Err(Duration::from_nanos(s.max_wait));
        }
        self.next_wake = wake.saturating_add(interval as u64);
        Err(Duration::from_nanos(wait.max(1)))
    }

    pub(crate) fn success(&mut self, now: u64, s: &Settings) {
        self.advance(now, s);
        self.ok = self.ok.saturating_add(1);
        self.run = 0;
        self.last_ok = Some(self.last_ok.map_or(now, |t| t.max(now)));
        if let Phase::Probe { interval } = self.phase {
            self.phase = Phase::Ramp;
            self.rate = interval_ns(interval as f64).max(s.floor());
            self.restart(now);
        }
    }

    pub(crate) fn failure(&mut self, now: u64, s: &Settings) {
        self.advance(now, s);
        self.failed = self.failed.saturating_add(1);
        self.run = self.run.saturating_add(1);
        // "Down": `threshold` refusals in a row and nothing served for a
        // window (a partial refusal is the window's business, not this).
        let quiet = self
            .last_ok
            .is_none_or(|t| now.saturating_sub(t) >= s.window);
        let interval = match self.phase {
            Phase::Probe { interval } => interval.saturating_mul(2).min(s.probe_max),
            _ if self.run >= s.threshold && quiet => s.probe_min,
            _ => return,
        };
        self.phase = Phase::Probe { interval };
        self.rate = interval_ns(interval as f64);
        self.tokens = 0.0;
        self.restart(now);
    }

    /// A new regime from `now`: no saved waiter turns, a fresh window.
    fn restart(&mut self, now: u64) {
        self.next_wake = now;
        self.grown_at = now;
        self.window_start = now;
        self.last = self.last.max(now);
        self.ok = 0;
        self.failed = 0;
        self.denied = 0;
    }
}
