//! The client's half of cohort-based reactivation: come back in your own
//! wave of a server's plan.
//!
//! A server that plans waves ([`WavePlanner`](crate::pushback::waves::WavePlanner))
//! announces a [`WavePlan`] with each caller it turns away (the
//! `Herdless-Plan` header, or the gRPC trailer of that name). A
//! [`WaveGuard`] is one client's: it knows the client's **stable id** (a
//! worker id, a device serial: the same value the server names it by, in
//! the header its pushback layer reads) and, from a plan and that id:
//!
//! 1. **computes its wave** with the plan's salted cohort hash (the server
//!    computes the same wave from the same id, so it can tell a caller that
//!    comes early without remembering it);
//! 2. **draws its time uniformly within the wave** from the call's own
//!    generator: the jitter, in place of the policy's `retry_after_spread`
//!    (a spread proportional to the delay would smear late waves into the
//!    next ones and lengthen the plan by up to 10 %);
//! 3. **rejoins the next wave when it misses its own**: turned away again in
//!    or after its wave under the same plan (the salt says which), or
//!    learning the plan only after its wave ended, it draws within the next
//!    wave to begin. Learning a plan while its own wave is on, it draws
//!    within what is left of it. A plan that had already ended when it was
//!    announced (`start + K·Δ ≤ 0`: stale, or hostile; a planner never
//!    announces one) has no wave to come in: the engine and
//!    [`first_wait`](WaveGuard::first_wait) ignore it.
//!
//! The guard keeps the plan it was last given and the salt of the plan it
//! last went by: two words and a lock, whatever the plan's size. Times are
//! relative to the answer that carried the plan, so the guard reads no
//! clock and needs none shared with the server.
//!
//! ## Driven by the engine
//!
//! With [`RetryBuilder::waves`](crate::RetryBuilder::waves) every executor
//! hands the guard what each failure's classifier read
//! ([`Classify::plan`](crate::Classify::plan): the reqwest classifier and
//! the tower HTTP classifiers read the header) and the
//! [engine](crate::engine) asks it for the delay: a failure that carried a
//! plan waits for the guard's time (clamped to `max_retry_after`, counted
//! against `max_elapsed` like any delay, reported as an honored server
//! delay); one that carried none is decided as without a guard. A driver of
//! its own (a reconnect loop, a simulator) calls [`observe`](WaveGuard::observe)
//! and [`next`](WaveGuard::next) itself, and
//! [`first_wait`](WaveGuard::first_wait) before its first call when the plan
//! was announced ahead of a disconnect.
//!
//! ```
//! use std::time::Duration;
//! use herdless::guard::waves::WaveGuard;
//! use herdless::pushback::waves::WavePlan;
//! use herdless::Rng;
//!
//! let guard = WaveGuard::new("worker-17");
//! let plan: WavePlan = "start=0.5, waves=4, spacing=1.0, salt=99".parse()?;
//! let wave = plan.wave_of(guard.key());
//! let mut rng = Rng::with_seed(1);
//! let wait = guard.next(plan, &mut rng);
//! let from = Duration::from_millis(500 + 1_000 * u64::from(wave));
//! assert!(wait >= from && wait < from + Duration::from_secs(1)); // within its wave
//! // Turned away again when it came: the next wave.
//! let next = guard.next(plan.later(wait), &mut rng);
//! assert!(wait + next >= from + Duration::from_secs(1));
//! # Ok::<(), herdless::pushback::waves::WavePlanError>(())
//! ```

use std::fmt;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use crate::Policy;
use crate::pushback::allocator::caller_key;
use crate::pushback::waves::WavePlan;
use crate::rng::Rng;

const MS: u64 = 1_000_000;

/// One client's place in a server's plans. See the [module
/// documentation](self).
pub struct WaveGuard {
    key: u64,
    state: Mutex<State>,
}

#[derive(Debug, Default, Clone, Copy)]
struct State {
    /// The plan the last answer carried, until a decision takes it.
    pending: Option<WavePlan>,
    /// The salt of the plan the client last went by.
    followed: Option<u64>,
}

impl fmt::Debug for WaveGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaveGuard")
            .field("key", &self.key)
            .field("state", &*self.lock())
            .finish()
    }
}

impl WaveGuard {
    /// The guard of the client whose stable id is `id` (the bytes the
    /// server names it by: its key header's value).
    ///
    /// ```
    /// use herdless::guard::waves::WaveGuard;
    /// use herdless::pushback::allocator::caller_key;
    /// assert_eq!(WaveGuard::new("7").key(), caller_key(b"7"));
    /// ```
    pub fn new(id: impl AsRef<[u8]>) -> Self {
        Self::with_key(caller_key(id.as_ref()))
    }

    /// The guard of the client whose key ([`caller_key`] of its id) is `key`.
    pub fn with_key(key: u64) -> Self {
        WaveGuard {
            key,
            state: Mutex::new(State::default()),
        }
    }

    /// The client's key.
    pub fn key(&self) -> u64 {
        self.key
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What the answer just received announced: a plan, or `None` (no plan,
    /// or one that could not be read). The next decision takes it.
    ///
    /// ```
    /// use herdless::guard::waves::WaveGuard;
    /// let g = WaveGuard::new("a");
    /// g.observe("start=0, waves=1, spacing=0.1, salt=1".parse().ok());
    /// assert!(g.pending().is_some());
    /// g.observe(None);
    /// assert!(g.pending().is_none());
    /// ```
    pub fn observe(&self, plan: Option<WavePlan>) {
        self.lock().pending = plan;
    }

    /// The plan observed and not yet acted on.
    pub fn pending(&self) -> Option<WavePlan> {
        self.lock().pending
    }

    /// How long to wait, from the answer that carried `plan`, before the
    /// next call: within the client's own wave, or the next one when it
    /// missed its own (see the [module documentation](self)). Remembers
    /// that the client goes by this plan.
    pub fn next(&self, plan: WavePlan, rng: &mut Rng) -> Duration {
        Duration::from_nanos(self.decide(plan, rng))
    }

    /// Before the first call, with a plan announced `since` ago (the last
    /// answers before a disconnect carried it, [`observe`](Self::observe)d
    /// then): how long to wait still, clamped as the engine clamps a plan's
    /// delay after a failure (to the `policy`'s `max_retry_after`: a plan
    /// longer than that brings the client back early, to be told its wave
    /// again); `None` without a plan observed. Takes the plan. The wait
    /// counts against the call's `max_elapsed` as a retry's delay does: a
    /// driver starts the call's clock when the client meant to call.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::guard::waves::WaveGuard;
    /// let policy = herdless::Policy::default();
    /// let g = WaveGuard::new("a");
    /// g.observe("start=2, waves=1, spacing=1, salt=5".parse().ok());
    /// let mut rng = herdless::Rng::with_seed(3);
    /// let wait = g.first_wait(Duration::from_millis(500), &policy, &mut rng).unwrap();
    /// assert!(wait >= Duration::from_millis(1_500) && wait < Duration::from_millis(2_500));
    /// assert_eq!(g.first_wait(Duration::ZERO, &policy, &mut rng), None);
    ///
    /// g.observe("start=600, waves=1, spacing=1, salt=5".parse().ok());
    /// let wait = g.first_wait(Duration::ZERO, &policy, &mut rng).unwrap();
    /// assert_eq!(wait, policy.max_retry_after(), "a plan 10 minutes away");
    /// ```
    pub fn first_wait(&self, since: Duration, policy: &Policy, rng: &mut Rng) -> Option<Duration> {
        let plan = running(self.lock().pending.take()?.later(since))?;
        Some(self.next(plan, rng).min(policy.max_retry_after()))
    }

    /// The engine's question after a failure: the delay in nanoseconds when
    /// the failure's answer carried a plan still running (taken), else
    /// `None`.
    #[inline]
    pub(crate) fn take_delay_ns(&self, rng: &mut Rng) -> Option<u64> {
        let plan = running(self.lock().pending.take()?)?;
        Some(self.decide(plan, rng))
    }

    fn decide(&self, plan: WavePlan, rng: &mut Rng) -> u64 {
        let mut state = self.lock();
        let went_by = state.followed == Some(plan.salt());
        state.followed = Some(plan.salt());
        drop(state);
        let spacing = u64::from(plan.spacing_ms()) * MS;
        // Nanoseconds since the plan's start (negative: before it).
        let now = -i128::from(plan.start_ms()) * i128::from(MS);
        let own = i128::from(plan.wave_of(self.key)) * i128::from(spacing);
        let end = own + i128::from(spacing);
        let (lo, hi) = if now < own {
            (own, end)
        } else if now < end && !went_by {
            (now, end)
        } else {
            let next = (now.div_euclid(i128::from(spacing)) + 1) * i128::from(spacing);
            (next, next + i128::from(spacing))
        };
        let to = |t: i128| u64::try_from((t - now).max(0)).unwrap_or(u64::MAX);
        let (lo, hi) = (to(lo), to(hi));
        rng.between(lo, hi.saturating_sub(1).max(lo))
    }
}

/// `plan` unless it had ended when it was announced: an ended plan has no
/// wave to come in (a planner never announces one; a stale or hostile one
/// would have the client extrapolate waves past its end, at once for a
/// plan of 1 ms waves), so the failure is decided as without it.
fn running(plan: WavePlan) -> Option<WavePlan> {
    (plan.end_ms() > 0).then_some(plan)
}

#[cfg(test)]
mod tests;
