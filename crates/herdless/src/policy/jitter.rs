//! The jitter math: how a delay is drawn inside the exponential envelope.
//!
//! Every mode starts from the ceiling `c = min(cap, base · multiplierⁿ)` for the
//! zero-based retry index `n` (see [`Policy::ceiling`]) and keeps a documented
//! bound for every `n` up to `u32::MAX`:
//!
//! | mode | delay | bounds |
//! |---|---|---|
//! | [`None`](Jitter::None) | `c` | exactly `c` |
//! | [`Full`](Jitter::Full) | `uniform[0, c]` | `[0, c]` |
//! | [`Equal`](Jitter::Equal) | `c/2 + uniform[0, c/2]` | `[c/2, c]` |
//! | [`Decorrelated`](Jitter::Decorrelated) | `min(cap, uniform[base, 3 · prev])` | `[base, min(cap, base · 3ⁿ⁺¹)]` |
//! | [`DecorrelatedWindow`](Jitter::DecorrelatedWindow) | `uniform[base, min(cap, 3 · prev)]` | `[base, min(cap, base · 3ⁿ⁺¹)]` |
//!
//! The cap is applied **before** the random draw in every mode: a delay can never
//! exceed the cap (backon and backoff add jitter after the cap, so their delays
//! reach up to 2× / 1.5× the documented maximum).
//!
//! # Why the AWS decorrelated form piles up at the cap, and what we do instead
//!
//! The AWS form `min(cap, uniform[base, 3 · prev])` clamps the *draw*. Once
//! `prev` is near the cap, the window `[base, 3 · cap]` lies two-thirds above the
//! cap, so about two draws in three land **exactly** on the cap: a long chain of a
//! fleet's retries collapses onto one value, the very synchronization jitter is
//! meant to break (Polly's "DecorrelatedJitterV2" was written for the same
//! defect, and for the spikes the clamp produces).
//!
//! [`Jitter::DecorrelatedWindow`] (CLI name `decorrelated-window`) clamps the
//! *window* instead: `uniform[base, min(cap, 3 · prev)]`. Below the cap it is the
//! AWS form exactly (same state, same growth); near the cap the draw is uniform
//! over `[base, cap]`, so the probability of any single value, the cap included,
//! is zero: the median grows about as the AWS form's far from the cap, every
//! attempt's delays stay smeared over a window several times wider than the
//! median, and from about the twelfth retry the distribution stops moving
//! with nothing at the cap (the AWS form sends about a third of its late
//! draws to exactly the cap). The distribution over 100,000 chains, and the
//! command that prints it: `docs/library.md`, "decorrelated-window".
//!
//! The decorrelated modes ignore the multiplier: their window grows by the AWS
//! constant 3.

use std::fmt;
use std::str::FromStr;

use crate::policy::Policy;
use crate::rng::Rng;

/// How a delay is drawn inside the exponential envelope. See the [module
/// documentation](self) for the formulas and bounds.
///
/// ```
/// use herdless::Jitter;
/// let j: Jitter = "decorrelated-window".parse()?;
/// assert_eq!(j, Jitter::DecorrelatedWindow);
/// assert_eq!(Jitter::Full.to_string(), "full");
/// # Ok::<(), herdless::policy::ParseJitterError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Jitter {
    /// No randomness: the delay is the ceiling. Synchronizes a fleet; useful as a
    /// baseline and for a lone job that wants a predictable schedule.
    None,
    /// `uniform[0, c]`: the widest spread, the default for fleets.
    #[default]
    Full,
    /// `c/2 + uniform[0, c/2]`: never retries in near-zero time.
    Equal,
    /// The AWS form `min(cap, uniform[base, 3 · prev])`, per-retrier state.
    Decorrelated,
    /// `uniform[base, min(cap, 3 · prev)]`: decorrelated without piling up at the cap.
    DecorrelatedWindow,
}

impl Jitter {
    /// Every mode, in documentation order.
    ///
    /// ```
    /// assert_eq!(herdless::Jitter::ALL.len(), 5);
    /// ```
    pub const ALL: [Jitter; 5] = [
        Jitter::None,
        Jitter::Full,
        Jitter::Equal,
        Jitter::Decorrelated,
        Jitter::DecorrelatedWindow,
    ];

    /// The mode's name, as accepted by [`FromStr`] and the CLI's `--jitter`.
    ///
    /// ```
    /// assert_eq!(herdless::Jitter::Decorrelated.name(), "decorrelated");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Jitter::None => "none",
            Jitter::Full => "full",
            Jitter::Equal => "equal",
            Jitter::Decorrelated => "decorrelated",
            Jitter::DecorrelatedWindow => "decorrelated-window",
        }
    }

    /// The documented floor of this mode's delay for retry index `n`.
    ///
    /// ```
    /// use herdless::{Jitter, Policy};
    /// let p = Policy::default();
    /// assert_eq!(Jitter::Equal.floor(&p, 1), p.ceiling(1) / 2);
    /// assert_eq!(Jitter::Full.floor(&p, 1), std::time::Duration::ZERO);
    /// ```
    pub fn floor(self, policy: &Policy, n: u32) -> std::time::Duration {
        let ns = match self {
            Jitter::None => policy.ceiling_ns(n),
            Jitter::Full => 0,
            Jitter::Equal => policy.ceiling_ns(n) / 2,
            Jitter::Decorrelated | Jitter::DecorrelatedWindow => policy.base_ns,
        };
        std::time::Duration::from_nanos(ns)
    }

    /// The largest delay this mode can draw for retry index `n` (zero-based) of a
    /// chain started with [`Schedule::new`]: `c = min(cap, base · multiplierⁿ)`
    /// for the exponential modes, `min(cap, base · 3ⁿ⁺¹)` for the decorrelated
    /// ones. Both are exact: some chain of draws reaches them.
    ///
    /// The decorrelated bound follows from the draw itself: the window of retry
    /// `n` tops out at `min(cap, 3 · prev)`, `prev` starts at the base, and `prev`
    /// is at most the previous retry's ceiling, so the ceiling triples per retry
    /// from `3 · base` until it meets the cap. (A schedule resumed with
    /// [`Schedule::at`] restarts from the base, so its delays stay below this
    /// bound too.)
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::{Jitter, Policy};
    /// let p = Policy::default(); // base 0.5 s, cap 30 s
    /// assert_eq!(Jitter::Full.ceiling(&p, 0), p.base());
    /// assert_eq!(Jitter::Decorrelated.ceiling(&p, 0), Duration::from_millis(1_500));
    /// assert_eq!(Jitter::DecorrelatedWindow.ceiling(&p, 2), Duration::from_millis(13_500));
    /// assert_eq!(Jitter::DecorrelatedWindow.ceiling(&p, 3), p.cap());
    /// ```
    pub fn ceiling(self, policy: &Policy, n: u32) -> std::time::Duration {
        std::time::Duration::from_nanos(self.ceiling_ns(policy, n))
    }

    /// [`ceiling`](Self::ceiling) in nanoseconds: the one definition of both
    /// ceilings, shared with the envelope.
    pub(crate) fn ceiling_ns(self, policy: &Policy, n: u32) -> u64 {
        match self {
            Jitter::Decorrelated | Jitter::DecorrelatedWindow => {
                // The same saturating integer steps as `next_delay_ns`; at most
                // 41 iterations, since the base is at least 1 ns and 3⁴¹ > u64::MAX.
                let mut c = policy.base_ns;
                for _ in 0..=n {
                    c = c.saturating_mul(3);
                    if c >= policy.cap_ns {
                        return policy.cap_ns;
                    }
                }
                c
            }
            _ => policy.ceiling_ns(n),
        }
    }
}

impl fmt::Display for Jitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Jitter {
    type Err = ParseJitterError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Jitter::ALL
            .into_iter()
            .find(|j| j.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| ParseJitterError {
                input: s.chars().take(64).collect(),
            })
    }
}

/// An unknown jitter mode name.
///
/// ```
/// let err = "fuzzy".parse::<herdless::Jitter>().unwrap_err();
/// assert!(err.to_string().contains("none, full, equal, decorrelated, decorrelated-window"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseJitterError {
    input: String,
}

impl fmt::Display for ParseJitterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown jitter mode {:?} (expected one of ", self.input)?;
        for (i, j) in Jitter::ALL.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(j.name())?;
        }
        f.write_str(")")
    }
}

impl std::error::Error for ParseJitterError {}

/// The per-retrier state of a delay schedule: the zero-based index of the next
/// retry and, for the decorrelated modes, the previous delay. 16 bytes, `Copy`:
/// a simulator can keep one per client and drive them all from one [`Policy`].
///
/// ```
/// use herdless::{Policy, Rng};
/// use herdless::policy::Schedule;
/// let policy = Policy::default();
/// let mut rng = Rng::with_seed(7);
/// let mut schedule = Schedule::new();
/// let first = policy.next_delay(&mut schedule, &mut rng);
/// assert!(first <= policy.base());
/// assert_eq!(schedule.retries(), 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Schedule {
    pub(crate) retry: u32,
    /// Previous delay in nanoseconds; 0 means "none yet" (the base is used).
    pub(crate) prev_ns: u64,
}

impl Schedule {
    /// A fresh schedule: the next delay is the first retry's.
    ///
    /// ```
    /// assert_eq!(herdless::policy::Schedule::new().retries(), 0);
    /// ```
    pub const fn new() -> Self {
        Self {
            retry: 0,
            prev_ns: 0,
        }
    }

    /// A schedule positioned at zero-based retry index `n` (for resuming a
    /// redelivered task mid-chain). The decorrelated modes start from the base.
    ///
    /// ```
    /// use herdless::{Jitter, Policy, Rng};
    /// use herdless::policy::Schedule;
    /// let p = Policy::builder().jitter(Jitter::None).build()?;
    /// let mut s = Schedule::at(3);
    /// assert_eq!(p.next_delay(&mut s, &mut Rng::with_seed(1)), p.ceiling(3));
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub const fn at(n: u32) -> Self {
        Self {
            retry: n,
            prev_ns: 0,
        }
    }

    /// How many delays this schedule has produced since it was new or reset
    /// (the zero-based index of the next retry).
    ///
    /// ```
    /// assert_eq!(herdless::policy::Schedule::at(4).retries(), 4);
    /// ```
    pub const fn retries(&self) -> u32 {
        self.retry
    }
}

impl Policy {
    /// Draws the next delay of `schedule` under this policy's jitter mode and
    /// advances the schedule. Never above the cap, never below the mode's floor,
    /// for every retry index up to `u32::MAX` (the index saturates there).
    ///
    /// ```
    /// use herdless::{Jitter, Policy, Rng};
    /// use herdless::policy::Schedule;
    /// let p = Policy::builder().jitter(Jitter::Equal).build()?;
    /// let mut s = Schedule::new();
    /// let mut rng = Rng::with_seed(42);
    /// for n in 0..20 {
    ///     let d = p.next_delay(&mut s, &mut rng);
    ///     assert!(d >= p.ceiling(n) / 2 && d <= p.ceiling(n));
    /// }
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    #[inline]
    pub fn next_delay(&self, schedule: &mut Schedule, rng: &mut Rng) -> std::time::Duration {
        std::time::Duration::from_nanos(self.next_delay_ns(schedule, rng))
    }

    #[inline]
    pub(crate) fn next_delay_ns(&self, schedule: &mut Schedule, rng: &mut Rng) -> u64 {
        let n = schedule.retry;
        schedule.retry = n.saturating_add(1);
        match self.jitter {
            Jitter::None => self.ceiling_ns(n),
            Jitter::Full => rng.below_or_eq(self.ceiling_ns(n)),
            Jitter::Equal => {
                let c = self.ceiling_ns(n);
                let half = c / 2;
                half + rng.below_or_eq(c - half)
            }
            Jitter::Decorrelated => {
                let prev = schedule.prev_ns.max(self.base_ns);
                let hi = prev.saturating_mul(3);
                let d = rng.between(self.base_ns, hi).min(self.cap_ns);
                schedule.prev_ns = d;
                d
            }
            Jitter::DecorrelatedWindow => {
                let prev = schedule.prev_ns.max(self.base_ns);
                let hi = prev.saturating_mul(3).min(self.cap_ns);
                let d = rng.between(self.base_ns, hi);
                schedule.prev_ns = d;
                d
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn names_round_trip() {
        for j in Jitter::ALL {
            assert_eq!(j.name().parse::<Jitter>().unwrap(), j);
            assert_eq!(j.to_string().to_uppercase().parse::<Jitter>().unwrap(), j);
        }
        assert!("".parse::<Jitter>().is_err());
    }

    #[test]
    fn none_is_the_exponential_ceiling() {
        let p = Policy::builder().jitter(Jitter::None).build().unwrap();
        let mut s = Schedule::new();
        let mut rng = Rng::with_seed(0);
        let got: Vec<_> = (0..8).map(|_| p.next_delay(&mut s, &mut rng)).collect();
        let ms = Duration::from_millis;
        assert_eq!(
            got,
            vec![
                ms(500),
                ms(1000),
                ms(2000),
                ms(4000),
                ms(8000),
                ms(16000),
                ms(30000),
                ms(30000)
            ]
        );
    }

    #[test]
    fn aws_decorrelated_piles_on_the_cap_and_the_window_form_does_not() {
        let share_at_cap = |jitter| {
            let p = Policy::builder().jitter(jitter).build().unwrap();
            let mut rng = Rng::with_seed(11);
            let (mut at_cap, mut total) = (0u32, 0u32);
            for _ in 0..2_000 {
                let mut s = Schedule::new();
                for n in 0..30 {
                    let d = p.next_delay(&mut s, &mut rng);
                    if n >= 10 {
                        total += 1;
                        at_cap += u32::from(d == p.cap());
                    }
                }
            }
            f64::from(at_cap) / f64::from(total)
        };
        let aws = share_at_cap(Jitter::Decorrelated);
        let ours = share_at_cap(Jitter::DecorrelatedWindow);
        assert!(aws > 0.3, "AWS form at cap: {aws}");
        assert!(ours < 0.001, "window form at cap: {ours}");
    }

    #[test]
    fn schedule_saturates_at_u32_max() {
        let p = Policy::default();
        let mut s = Schedule::at(u32::MAX);
        let mut rng = Rng::with_seed(3);
        for _ in 0..3 {
            assert!(p.next_delay(&mut s, &mut rng) <= p.cap());
        }
        assert_eq!(s.retries(), u32::MAX);
    }

    /// Prints the distribution quoted in the module docs.
    #[test]
    #[ignore = "prints the measured distribution of the decorrelated modes"]
    fn decorrelated_window_distribution() {
        for jitter in [Jitter::Decorrelated, Jitter::DecorrelatedWindow] {
            let p = Policy::builder().jitter(jitter).build().unwrap();
            let mut rng = Rng::with_seed(2024);
            let chains = 100_000;
            let depth = 16;
            let mut per_attempt: Vec<Vec<f64>> =
                (0..depth).map(|_| Vec::with_capacity(chains)).collect();
            for _ in 0..chains {
                let mut s = Schedule::new();
                for slot in per_attempt.iter_mut() {
                    slot.push(p.next_delay(&mut s, &mut rng).as_secs_f64());
                }
            }
            println!("{jitter}: retry  p25  median  p75  share_at_cap  log-mean");
            for (n, v) in per_attempt.iter_mut().enumerate() {
                v.sort_by(f64::total_cmp);
                let q = |x: f64| v[((v.len() - 1) as f64 * x) as usize];
                let at_cap = v.iter().filter(|&&d| d >= 30.0).count() as f64 / v.len() as f64;
                let log_mean = (v.iter().map(|d| d.ln()).sum::<f64>() / v.len() as f64).exp();
                println!(
                    "  {n:>2}  {:>6.3}  {:>6.3}  {:>6.3}  {:>5.3}  {:>6.3}",
                    q(0.25),
                    q(0.5),
                    q(0.75),
                    at_cap,
                    log_mean
                );
            }
        }
    }
}
