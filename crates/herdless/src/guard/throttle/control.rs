//! The throttle's state and its rules: a token bucket whose rate follows what
//! the endpoint answers (see the [module documentation](super)).
//!
//! Every time is whole nanoseconds on the driver's clock. The state sits
//! behind the throttle's mutex; each call is a few comparisons and one or
//! two floating-point operations, no allocation.

use std::time::Duration;

use super::Settings;
use crate::rng::Rng;

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

/// The ramp's growth in window `k` since it began is `1 + RAMP_POWER /
/// (RAMP_SCALE + k)`: the rate follows `(1 + k / RAMP_SCALE)^RAMP_POWER`, a
/// cubic in time (as CUBIC's window), ever gentler in relative terms: 3.75 %
/// per window at first, 2.5 % 4 s in. How much a fleet overshoots the
/// capacity is set by that step where it crosses it (the endpoint's slack
/// hides the overshoot until it is spent); see [`RAMP_CLEAR_S`].
const RAMP_POWER: f64 = 3.0;
/// See [`RAMP_POWER`].
const RAMP_SCALE: f64 = 80.0;
/// Growth per window once set to a measured rate.
const STEADY_GROWTH: f64 = 1.1;
/// Windows in `Steady` without a refusal before ramping again.
const CALM_WINDOWS: u32 = 3;
/// The cut on the first refusal while growing (CUBIC's β).
const CUT: f64 = 0.7;
/// A served probe starts the ramp at the rate that would send every call the
/// process has waiting within this many seconds (at least one call per
/// `probe_min`). The sum over a fleet's processes is then the same share of
/// the fleet's backlog however many processes hold it: a tenth of it per
/// second, so a fleet whose backlog is ten seconds of the capacity starts
/// at the capacity, and a larger one below it. Together with the gentle
/// cubic (`RAMP_SCALE` 80): the simulator's 400 processes drain a 5 s outage
/// within 1.40–1.43× the limit with a peak of 1.09× the capacity, where 40 s
/// with a cubic of scale 28 gave 1.47–1.59× and 1.24× (measured over seeds
/// 1–8, docs/fleet-protection.md); one process holding 2,000 callers starts
/// at ~200/s.
const RAMP_CLEAR_S: f64 = 10.0;
/// How fast the estimate of the waiting calls' re-asks follows each
/// window's count while probing: the time constant, seconds.
const ASKS_TAU_S: f64 = 1.0;
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
    /// The latest time a caller told to wait was told to come back: calls
    /// wait for the rate until then, and the rate grows only until then (an
    /// idle process, or a clock stepped forward, earns no growth).
    waiting_until: u64,
    /// Consecutive refusals.
    run: u32,
    calm: u32,
    /// The last success, if any.
    last_ok: Option<u64>,
    /// When the ramp began.
    ramp_at: u64,
    /// While probing: when the next probe may go.
    probe_at: u64,
    /// While probing: the calls told to wait, per second (a moving
    /// average over windows): the demand the recovery will meet.
    asks: f64,
    /// While probing: a call not yet refused asked since the last probe.
    fresh: bool,
    /// While probing: a probe went and has not been answered. A refusal
    /// without one is of a call sent before the probing began (or a
    /// probe already counted): not a refused probe.
    probe_out: bool,
    /// A share in `[0.5, 1]` drawn at the last admission: the next probe
    /// interval's jitter (so the processes of a fleet do not probe in step).
    jitter: f64,
    /// While probing: the rate before the probing began.
    before: f64,
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
            waiting_until: 0,
            run: 0,
            calm: 0,
            last_ok: None,
            ramp_at: 0,
            probe_at: 0,
            asks: 0.0,
            before: 0.0,
            fresh: false,
            probe_out: false,
            jitter: 1.0,
        }
    }

    fn burst(&self, s: &Settings) -> f64 {
        match self.phase {
            Phase::Probe { .. } => 1.0,
            _ => (self.rate * s.window as f64 / 1e9).max(1.0),
        }
    }

    /// A time earlier than the last seen: the driver's clock stepped back,
    /// or two drivers read clocks a little apart. Within a window it is read
    /// as the last seen (clocks a tick apart: a caller behind waits at most
    /// that much longer). Beyond a window every time the state holds moves
    /// back by the step, which passes as no time: the times that follow
    /// count from there, so a clock stepped back never stalls the callers
    /// (reading it as the last seen would, until the clock caught up), and
    /// booked turns keep their distance. Returns the time to decide at.
    fn rebase(&mut self, now: u64, s: &Settings) -> u64 {
        let Some(back) = self.last.checked_sub(now).filter(|&b| b > 0) else {
            return now;
        };
        if back <= s.window {
            return self.last;
        }
        for t in [
            &mut self.last,
            &mut self.next_wake,
            &mut self.grown_at,
            &mut self.window_start,
            &mut self.ramp_at,
            &mut self.probe_at,
            &mut self.waiting_until,
        ] {
            *t = t.saturating_sub(back);
        }
        if let Some(t) = &mut self.last_ok {
            *t = t.saturating_sub(back);
        }
        now
    }

    /// Time passes: tokens accrue, the rate grows while calls wait and
    /// nothing is refused, a window closes. Returns the time to decide at
    /// (`now`, unless it is earlier than the last seen: [`rebase`](Self::rebase)).
    fn advance(&mut self, now: u64, s: &Settings) -> u64 {
        let now = self.rebase(now, s);
        if now > self.last {
            let add = (now - self.last) as f64 * self.rate / 1e9;
            self.tokens = (self.tokens + add).min(self.burst(s));
            self.last = now;
        }
        let growth = match self.phase {
            Phase::Start => 2.0,
            Phase::Ramp => {
                let k = now.saturating_sub(self.ramp_at) as f64 / s.window as f64;
                1.0 + RAMP_POWER / (RAMP_SCALE + k)
            }
            Phase::Steady => STEADY_GROWTH,
            Phase::Probe { .. } => 1.0,
        };
        if now > self.grown_at {
            // Only the time calls waited for the rate counts: a caller told
            // to wait comes back by `waiting_until`, and none is waiting past
            // it (the process went idle, or the clock jumped forward).
            let until = now.min(self.waiting_until);
            if self.failed == 0 && until > self.grown_at && growth > 1.0 {
                let windows = (until - self.grown_at) as f64 / s.window as f64;
                self.rate = (self.rate * growth.powf(windows)).min(MAX_RATE);
            }
            self.grown_at = now;
        }
        if now.saturating_sub(self.window_start) >= s.window {
            self.close(now, s);
        }
        now
    }

    /// A window closes: a partial refusal sets the rate to what was served.
    fn close(&mut self, now: u64, s: &Settings) {
        let span = now.saturating_sub(self.window_start).max(1) as f64 / 1e9;
        let total = u64::from(self.ok) + u64::from(self.failed);
        if matches!(self.phase, Phase::Probe { .. }) {
            let asks = f64::from(self.denied) / span;
            self.asks += (asks - self.asks) * (span / ASKS_TAU_S).min(1.0);
        } else {
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
                    self.ramp_at = now;
                }
            }
        }
        self.window_start = now;
        self.ok = 0;
        self.failed = 0;
        self.denied = 0;
    }

    /// One call may go now, or wait this long and ask again.
    /// `refused`: the call was refused before (or is a hedge). A probe
    /// is spent from a call not yet refused when one is waiting: each probe
    /// costs its caller an attempt, and the callers that came back from a
    /// refused probe must not spend theirs again and again while others wait
    /// (a 60 s outage has some twenty probes per process). Such callers
    /// ask within `max_wait`; past it, anyone probes (probing never stops).
    pub(crate) fn acquire(
        &mut self,
        now: u64,
        s: &Settings,
        rng: &mut Rng,
        refused: bool,
    ) -> Result<(), Duration> {
        let now = self.advance(now, s);
        if let Phase::Probe { interval } = self.phase {
            let grace = self.probe_at.saturating_add(s.max_wait);
            if refused && self.fresh && now >= self.probe_at && now < grace {
                self.denied = self.denied.saturating_add(1);
                return Err(self.wait(grace - now, s, rng));
            }
            if now >= self.probe_at {
                self.fresh = false;
                self.probe_out = true;
                // The next probe goes an interval later even if this one
                // never reports (a cancelled call): probing never stops.
                self.probe_at = now.saturating_add(interval);
                self.admitted(rng);
                return Ok(());
            }
            self.denied = self.denied.saturating_add(1);
            self.fresh |= !refused;
            return Err(self.wait(self.probe_at - now, s, rng));
        }
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            self.admitted(rng);
            return Ok(());
        }
        self.denied = self.denied.saturating_add(1);
        let interval = interval_ns(self.rate);
        let deficit = ((1.0 - self.tokens) * interval) as u64;
        let wake = self.next_wake.max(now.saturating_add(deficit));
        let wait = wake - now;
        if wait <= s.max_wait {
            self.next_wake = wake.saturating_add(interval as u64);
        }
        Err(self.wait(wait, s, rng))
    }

    /// A waiter's wait: `wait` itself (its turn), or, beyond `max_wait`,
    /// a uniform share of `[max_wait / 2, max_wait]` with no turn booked (a
    /// waiter that re-asks must not push every later turn back, and the
    /// waiters of a process must not all re-ask at once).
    fn wait(&mut self, wait: u64, s: &Settings, rng: &mut Rng) -> Duration {
        let wait = if wait > s.max_wait {
            rng.between(s.max_wait / 2, s.max_wait).max(1)
        } else {
            wait.max(1)
        };
        self.waiting_until = self.waiting_until.max(self.last.saturating_add(wait));
        Duration::from_nanos(wait)
    }

    fn admitted(&mut self, rng: &mut Rng) {
        self.jitter = 0.5 + 0.5 * (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    }

    pub(crate) fn success(&mut self, now: u64, s: &Settings) {
        let now = self.advance(now, s);
        self.ok = self.ok.saturating_add(1);
        self.run = 0;
        self.last_ok = Some(self.last_ok.map_or(now, |t| t.max(now)));
        if let Phase::Probe { interval } = self.phase {
            self.phase = Phase::Ramp;
            self.ramp_at = now;
            if interval <= s.probe_min {
                // The first probe served: the endpoint refused a window of
                // this process's calls but was never down (a busy moment,
                // or a process with few calls left). Go on from where it
                // was, cut as for a refusal while growing.
                self.rate = (self.before * CUT).max(s.floor()).min(MAX_RATE);
                self.phase = Phase::Steady;
                self.calm = 0;
                self.restart(now);
                return;
            }
            // Not from the last probe's rate: the interval grew with the
            // outage's length, not with the endpoint's capacity. From the
            // rate that serves the calls now waiting within
            // `RAMP_CLEAR_S` (each re-asks every 0.75 `max_wait` on
            // average), at least the first probe's: the same share of the
            // capacity whether one process holds the fleet or hundreds do.
            let waiting = self.asks * 0.75 * s.max_wait as f64 / 1e9;
            self.rate = (waiting / RAMP_CLEAR_S)
                .max(interval_ns(s.probe_min as f64))
                .max(s.floor())
                .min(MAX_RATE);
            self.restart(now);
        }
    }

    pub(crate) fn failure(&mut self, now: u64, s: &Settings) {
        let now = self.advance(now, s);
        self.failed = self.failed.saturating_add(1);
        self.run = self.run.saturating_add(1);
        // "Down": `threshold` refusals in a row and nothing served for a
        // window (a partial refusal is the window's business, not this).
        let quiet = self
            .last_ok
            .is_none_or(|t| now.saturating_sub(t) >= s.window);
        let interval = match self.phase {
            // A refusal with no probe out is of a call sent before the
            // probing began: the probe's schedule stands (ten calls refused
            // together used to double the interval to `probe_max` at once
            // and push the first probe back each time).
            Phase::Probe { .. } if !self.probe_out => return,
            Phase::Probe { interval } => interval.saturating_mul(2).min(s.probe_max),
            _ if self.run >= s.threshold && quiet => s.probe_min,
            Phase::Start | Phase::Ramp => {
                // The first refusal while growing: the capacity is near.
                self.rate = (self.rate * CUT).max(s.floor());
                self.phase = Phase::Steady;
                self.calm = 0;
                self.next_wake = now;
                return;
            }
            _ => return,
        };
        if !matches!(self.phase, Phase::Probe { .. }) {
            self.asks = 0.0;
            self.fresh = false;
            self.before = self.rate;
        }
        self.probe_out = false;
        self.phase = Phase::Probe { interval };
        self.rate = interval_ns(interval as f64);
        self.tokens = 0.0;
        self.probe_at = now.saturating_add((interval as f64 * self.jitter) as u64);
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
