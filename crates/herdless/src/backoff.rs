//! Long-lived backoff for reconnect loops, with a success reset policy.
//!
//! A [`Backoff`] owns a [`Policy`], a [`Schedule`] and its own [`Rng`]. It is the
//! building block for loops that live longer than one call: a consumer that
//! reconnects to a broker, a poller that backs off while a device reboots. Such a
//! loop has no attempt budget of its own; what it needs is a rule for what a
//! success does to the schedule ([`ResetPolicy`]):
//!
//! * [`ResetPolicy::Full`]: one success starts the schedule over. Right when a
//!   success means "recovered".
//! * [`ResetPolicy::Halve`] (gradual decay): each success halves the retry index
//!   (`n → n / 2`, and the decorrelated state `prev → max(base, prev / 2)`), so
//!   after `k` failures it takes about `log₂ k` consecutive successes to get back
//!   to the most eager schedule. A resource that flaps (one success among
//!   failures) does not send its whole fleet back to the most aggressive retry
//!   rate, while a sustained recovery resets within a few calls. Halving is
//!   chosen over "one step back per success" because after a long outage the
//!   latter needs as many successes as there were failures.

use std::time::Duration;

use crate::policy::Policy;
use crate::policy::jitter::Schedule;
use crate::rng::Rng;

/// What a success does to a long-lived [`Backoff`]. See the [module
/// documentation](self).
///
/// ```
/// use herdless::Policy;
/// use herdless::backoff::{Backoff, ResetPolicy};
/// let mut b = Backoff::with_seed(Policy::default(), 1).reset_policy(ResetPolicy::Halve);
/// for _ in 0..8 { b.next_delay(); }
/// b.on_success();
/// assert_eq!(b.retries(), 4);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ResetPolicy {
    /// A success starts the schedule over.
    #[default]
    Full,
    /// A success halves the retry index (gradual decay).
    Halve,
}

/// A stateful, per-retrier backoff schedule (no budget): the next delay, and
/// what a success does to it. Also an infinite [`Iterator`] of delays.
///
/// ```
/// use herdless::Policy;
/// use herdless::backoff::Backoff;
/// let policy = Policy::default();
/// let mut backoff = Backoff::new(policy); // its own OS-entropy-seeded generator
/// let d = backoff.next_delay();
/// assert!(d <= policy.base());
/// let next_four: Vec<_> = backoff.by_ref().take(4).collect();
/// assert!(next_four.iter().all(|d| *d <= policy.cap()));
/// backoff.on_success();
/// assert_eq!(backoff.retries(), 0);
/// ```
#[derive(Debug, Clone)]
pub struct Backoff {
    policy: Policy,
    schedule: Schedule,
    rng: Rng,
    reset: ResetPolicy,
}

impl Backoff {
    /// A backoff with its own generator of its own ([`Rng::fresh`]).
    ///
    /// ```
    /// let mut a = herdless::backoff::Backoff::new(herdless::Policy::default());
    /// let _ = a.next_delay();
    /// ```
    pub fn new(policy: Policy) -> Self {
        Self::with_rng(policy, Rng::fresh())
    }

    /// A reproducible backoff.
    ///
    /// ```
    /// use herdless::Policy;
    /// use herdless::backoff::Backoff;
    /// let a: Vec<_> = Backoff::with_seed(Policy::default(), 9).take(5).collect();
    /// let b: Vec<_> = Backoff::with_seed(Policy::default(), 9).take(5).collect();
    /// assert_eq!(a, b);
    /// ```
    pub fn with_seed(policy: Policy, seed: u64) -> Self {
        Self::with_rng(policy, Rng::with_seed(seed))
    }

    /// A backoff drawing from the given generator.
    ///
    /// ```
    /// let b = herdless::backoff::Backoff::with_rng(herdless::Policy::default(), herdless::Rng::with_seed(3));
    /// assert_eq!(b.retries(), 0);
    /// ```
    pub fn with_rng(policy: Policy, rng: Rng) -> Self {
        Self {
            policy,
            schedule: Schedule::new(),
            rng,
            reset: ResetPolicy::Full,
        }
    }

    /// Sets what a success does (default [`ResetPolicy::Full`]).
    ///
    /// ```
    /// use herdless::Policy;
    /// use herdless::backoff::{Backoff, ResetPolicy};
    /// let b = Backoff::new(Policy::default()).reset_policy(ResetPolicy::Halve);
    /// assert_eq!(b.policy().max_attempts(), 6);
    /// ```
    pub fn reset_policy(mut self, reset: ResetPolicy) -> Self {
        self.reset = reset;
        self
    }

    /// The policy this backoff draws from.
    ///
    /// ```
    /// let b = herdless::backoff::Backoff::new(herdless::Policy::default());
    /// assert_eq!(b.policy().cap().as_secs(), 30);
    /// ```
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The next delay; advances the schedule.
    ///
    /// ```
    /// let mut b = herdless::backoff::Backoff::with_seed(herdless::Policy::default(), 4);
    /// assert!(b.next_delay() <= std::time::Duration::from_millis(500));
    /// ```
    pub fn next_delay(&mut self) -> Duration {
        self.policy.next_delay(&mut self.schedule, &mut self.rng)
    }

    /// The number of delays drawn since new or since the last full reset (the
    /// zero-based index of the next retry).
    ///
    /// ```
    /// let mut b = herdless::backoff::Backoff::with_seed(herdless::Policy::default(), 4);
    /// b.next_delay();
    /// assert_eq!(b.retries(), 1);
    /// ```
    pub fn retries(&self) -> u32 {
        self.schedule.retries()
    }

    /// Records a success according to the [`ResetPolicy`].
    ///
    /// ```
    /// let mut b = herdless::backoff::Backoff::with_seed(herdless::Policy::default(), 4);
    /// b.next_delay();
    /// b.on_success();
    /// assert_eq!(b.retries(), 0);
    /// ```
    pub fn on_success(&mut self) {
        match self.reset {
            ResetPolicy::Full => self.reset(),
            ResetPolicy::Halve => {
                self.schedule.retry /= 2;
                self.schedule.prev_ns = (self.schedule.prev_ns / 2).max(self.policy.base_ns);
                if self.schedule.retry == 0 {
                    self.reset();
                }
            }
        }
    }

    /// Starts the schedule over, whatever the reset policy.
    ///
    /// ```
    /// let mut b = herdless::backoff::Backoff::with_seed(herdless::Policy::default(), 4);
    /// b.next_delay();
    /// b.reset();
    /// assert_eq!(b.retries(), 0);
    /// ```
    pub fn reset(&mut self) {
        self.schedule = Schedule::new();
    }
}

impl Iterator for Backoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        Some(self.next_delay())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (usize::MAX, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Jitter;

    #[test]
    fn halve_decays_gradually_and_full_resets() {
        let p = Policy::builder().jitter(Jitter::None).build().unwrap();
        let mut b = Backoff::with_seed(p, 1).reset_policy(ResetPolicy::Halve);
        for _ in 0..10 {
            b.next_delay();
        }
        let mut seen = vec![];
        for _ in 0..5 {
            b.on_success();
            seen.push(b.retries());
        }
        assert_eq!(seen, vec![5, 2, 1, 0, 0]);
        assert_eq!(b.next_delay(), p.base());

        let mut full = Backoff::with_seed(p, 1);
        for _ in 0..10 {
            full.next_delay();
        }
        full.on_success();
        assert_eq!(full.retries(), 0);
        assert_eq!(full.next_delay(), p.base());
    }

    #[test]
    fn default_seeding_differs_between_retriers() {
        let p = Policy::default();
        let a: Vec<_> = Backoff::new(p).take(8).collect();
        let b: Vec<_> = Backoff::new(p).take(8).collect();
        assert_ne!(a, b);
    }
}
