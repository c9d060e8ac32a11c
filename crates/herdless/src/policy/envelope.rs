//! The delay envelope: what a policy's retries can sleep, retry by retry.
//!
//! [`Policy::envelope`] answers "how long can this policy wait, and how long
//! does it usually wait?" before it is deployed: per retry, the smallest and
//! largest delay the jitter mode can draw, its median and 99th percentile, and
//! the cumulative worst case (the longest a call can have slept by then). A
//! tool that shows a policy (the CLI's `herdless check`) renders this value and
//! does no delay math of its own.
//!
//! # Design notes
//!
//! * **The bounds are the draw's own.** The floor and the ceiling of a row are
//!   [`Jitter::floor`] and [`Jitter::ceiling`], the same definitions the
//!   property tests hold [`Policy::next_delay`] to, so the envelope cannot drift
//!   from what the executors sleep. The decorrelated ceiling is
//!   `min(cap, base · 3ⁿ⁺¹)`, not the cap: the window of retry `n` tops out at
//!   `3 · prev`, `prev` starts at the base and is at most the previous ceiling.
//! * **Closed forms where they exist.** With `c` the exponential ceiling of the
//!   retry, `none` draws exactly `c`, `full` is uniform on `[0, c]` (median
//!   `c/2`, p99 `0.99 c`), `equal` is uniform on `[c/2, c]` (median `0.75 c`, p99
//!   `0.995 c`). They are computed in integer nanoseconds with the same halving
//!   as the draw, so they are exact, not approximations of a sample.
//! * **The library's own draws where they do not.** A decorrelated delay
//!   depends on the previous one, so its quantiles have no closed form. They
//!   come from [`Envelope::SAMPLED_CHAINS`] chains of [`Policy::next_delay`] with
//!   a fixed-seed [`Rng`] ([`Envelope::SEED`]): the same policy always gives the
//!   same envelope, and the numbers are what the library really does. The
//!   chains advance one retry at a time, so memory stays at one state per chain
//!   whatever the number of rows.
//! * **The worst case is a sum of ceilings, bounded by the budget.** Every
//!   mode's ceilings can all be drawn in one chain, so their sum is the longest
//!   a call can sleep over its retries; the elapsed-time budget stops a call
//!   before a sleep would carry it past `max_elapsed`, so the sleep a call can
//!   actually do is the smaller of the two ([`Envelope::worst_case_sleep`]). That
//!   is how far past a failure the retries can reach: a shared device that needs
//!   longer to recover sees every call give up first, however large the cap.
//! * **Rows are for reading, totals are for every retry.** [`Policy::envelope`]
//!   builds as many rows as asked (at most the policy's retries); the totals
//!   always cover all `max_attempts − 1` retries, summed exactly up to
//!   [`Envelope::EXACT_TERMS`] terms and then counted at the cap (an upper
//!   bound, reached only by a multiplier so close to 1 that the ceiling has not
//!   met the cap after that many retries).

use std::time::Duration;

use crate::policy::{Jitter, Policy, Schedule};
use crate::rng::Rng;

/// A policy's delay envelope: one [`EnvelopeRow`] per retry shown, and the
/// totals over all of its retries. Built by [`Policy::envelope`].
///
/// ```
/// use std::time::Duration;
/// use herdless::Policy;
///
/// let envelope = Policy::default().envelope(3); // full jitter, base 0.5 s
/// assert_eq!(envelope.rows().len(), 3);
/// assert_eq!(envelope.rows()[2].ceiling, Duration::from_secs(2));
/// assert_eq!(envelope.retries(), 5);
/// assert_eq!(envelope.sum_of_ceilings(), Duration::from_millis(15_500));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    policy: Policy,
    rows: Vec<EnvelopeRow>,
    sum_of_ceilings: Duration,
}

/// One retry of an [`Envelope`]: the bounds, the median and p99 of its delay,
/// and the cumulative worst case.
///
/// ```
/// use std::time::Duration;
/// use herdless::{Jitter, Policy};
///
/// let p = Policy::builder().jitter(Jitter::Equal).base(Duration::from_secs(1)).build()?;
/// let row = p.envelope(1).rows()[0];
/// assert_eq!(row.retry, 1);
/// assert_eq!((row.floor, row.ceiling), (Duration::from_millis(500), Duration::from_secs(1)));
/// assert_eq!((row.median, row.p99), (Duration::from_millis(750), Duration::from_millis(995)));
/// assert_eq!(row.cumulative_worst, Duration::from_secs(1));
/// # Ok::<(), herdless::PolicyError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvelopeRow {
    /// 1-based retry number: the delay before attempt `retry + 1` (retry index
    /// `retry − 1` for [`Policy::ceiling`] and [`Jitter::ceiling`]).
    pub retry: u32,
    /// The smallest delay this retry can draw ([`Jitter::floor`]).
    pub floor: Duration,
    /// The largest delay this retry can draw ([`Jitter::ceiling`]).
    pub ceiling: Duration,
    /// The median delay.
    pub median: Duration,
    /// The 99th percentile delay.
    pub p99: Duration,
    /// The sum of the ceilings up to and including this retry: the longest a
    /// call can have slept by then (before the `max_elapsed` budget).
    pub cumulative_worst: Duration,
}

/// Where an envelope's medians and p99s come from.
///
/// ```
/// use herdless::{Jitter, Policy};
/// use herdless::policy::{Envelope, QuantileSource};
/// assert_eq!(Policy::default().envelope(2).quantiles(), QuantileSource::ClosedForm);
/// let p = Policy::builder().jitter(Jitter::DecorrelatedWindow).build()?;
/// assert_eq!(
///     p.envelope(2).quantiles(),
///     QuantileSource::Sampled { chains: Envelope::SAMPLED_CHAINS, seed: Envelope::SEED },
/// );
/// # Ok::<(), herdless::PolicyError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantileSource {
    /// Exact closed forms (jitter `none`, `full`, `equal`).
    ClosedForm,
    /// Sampled from `chains` chains of [`Policy::next_delay`] with
    /// `Rng::with_seed(seed)` (the decorrelated modes).
    Sampled {
        /// How many chains were drawn.
        chains: usize,
        /// The seed of the generator that drew them.
        seed: u64,
    },
}

impl Envelope {
    /// Chains drawn for the quantiles of the decorrelated modes.
    ///
    /// ```
    /// assert_eq!(herdless::policy::Envelope::SAMPLED_CHAINS, 10_000);
    /// ```
    pub const SAMPLED_CHAINS: usize = 10_000;

    /// The seed of the generator that draws those chains.
    ///
    /// ```
    /// assert_eq!(herdless::policy::Envelope::SEED, 1);
    /// ```
    pub const SEED: u64 = 1;

    /// Retries summed one by one in the totals; later ones count at the cap.
    ///
    /// ```
    /// assert_eq!(herdless::policy::Envelope::EXACT_TERMS, 100_000);
    /// ```
    pub const EXACT_TERMS: u32 = 100_000;

    /// The rows built, one per retry from the first.
    ///
    /// ```
    /// let e = herdless::Policy::default().envelope(4);
    /// assert_eq!(e.rows().iter().map(|r| r.retry).collect::<Vec<_>>(), [1, 2, 3, 4]);
    /// ```
    pub fn rows(&self) -> &[EnvelopeRow] {
        &self.rows
    }

    /// The policy this envelope describes.
    ///
    /// ```
    /// let p = herdless::Policy::default();
    /// assert_eq!(*p.envelope(1).policy(), p);
    /// ```
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// How many retries the policy allows: `max_attempts − 1` (the rows may
    /// show fewer).
    ///
    /// ```
    /// let p = herdless::Policy::builder().max_attempts(4).build()?;
    /// assert_eq!(p.envelope(1).retries(), 3);
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn retries(&self) -> u32 {
        self.policy.max_attempts().saturating_sub(1)
    }

    /// Where the medians and p99s come from.
    ///
    /// ```
    /// use herdless::Policy;
    /// use herdless::policy::QuantileSource;
    /// assert_eq!(Policy::default().envelope(1).quantiles(), QuantileSource::ClosedForm);
    /// ```
    pub fn quantiles(&self) -> QuantileSource {
        quantiles_of(self.policy.jitter())
    }

    /// The sum of the ceilings of all [`retries`](Self::retries): the longest
    /// the whole chain could sleep without the `max_elapsed` budget.
    ///
    /// ```
    /// use std::time::Duration;
    /// // 0.5 + 1 + 2 + 4 + 8 s
    /// assert_eq!(herdless::Policy::default().envelope(0).sum_of_ceilings(), Duration::from_millis(15_500));
    /// ```
    pub fn sum_of_ceilings(&self) -> Duration {
        self.sum_of_ceilings
    }

    /// The longest a call can sleep over all its retries: the sum of the
    /// ceilings, bounded by `max_elapsed`. How far past the first failure the
    /// retries can still be going (plus the operations' own run time).
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::Policy;
    /// assert_eq!(Policy::default().envelope(0).worst_case_sleep(), Duration::from_millis(15_500));
    /// let short = Policy::builder().max_elapsed(Duration::from_secs(10)).build()?;
    /// assert_eq!(short.envelope(0).worst_case_sleep(), Duration::from_secs(10));
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn worst_case_sleep(&self) -> Duration {
        self.sum_of_ceilings.min(self.policy.max_elapsed())
    }

    /// Whether the whole chain can still be sleeping `after` the first failure:
    /// [`worst_case_sleep`](Self::worst_case_sleep) reaches `after`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let e = herdless::Policy::default().envelope(0);
    /// assert!(e.reaches(Duration::from_secs(15)));
    /// assert!(!e.reaches(Duration::from_secs(20)));
    /// ```
    pub fn reaches(&self, after: Duration) -> bool {
        self.worst_case_sleep() >= after
    }

    /// The fewest retries whose ceilings sum to at least `sleep` (this policy's
    /// other values unchanged, `max_elapsed` ignored), so `max_attempts` of one
    /// more would let the chain reach it; `None` when no `u32` count does.
    /// Past [`EXACT_TERMS`](Self::EXACT_TERMS) retries the count is an upper
    /// bound: enough, perhaps not the fewest.
    ///
    /// ```
    /// use std::time::Duration;
    /// let e = herdless::Policy::default().envelope(0);
    /// // 0.5 + 1 + 2 + 4 + 8 = 15.5 s; the sixth retry (16 s) passes 20 s.
    /// assert_eq!(e.retries_to_reach(Duration::from_secs(20)), Some(6));
    /// assert_eq!(e.retries_to_reach(Duration::ZERO), Some(0));
    /// ```
    pub fn retries_to_reach(&self, sleep: Duration) -> Option<u32> {
        let target = u64::try_from(sleep.as_nanos()).unwrap_or(u64::MAX);
        let p = &self.policy;
        let jitter = p.jitter();
        let mut total: u64 = 0;
        let mut n: u32 = 0;
        loop {
            if total >= target {
                return Some(n);
            }
            let c = jitter.ceiling_ns(p, n);
            if c == p.cap_ns || n >= Self::EXACT_TERMS {
                // Every later ceiling is at least `c` (ceilings never shrink).
                let missing = target - total;
                let more = missing.div_ceil(c);
                return u32::try_from(u64::from(n).saturating_add(more)).ok();
            }
            total = total.saturating_add(c);
            n += 1;
        }
    }
}

fn quantiles_of(jitter: Jitter) -> QuantileSource {
    match jitter {
        Jitter::Decorrelated | Jitter::DecorrelatedWindow => QuantileSource::Sampled {
            chains: Envelope::SAMPLED_CHAINS,
            seed: Envelope::SEED,
        },
        _ => QuantileSource::ClosedForm,
    }
}

impl Policy {
    /// This policy's delay envelope: a row for each of the first `rows` retries
    /// (at most the policy's `max_attempts − 1`), and the totals over all of
    /// them. See the [module documentation](crate::policy::envelope) for where each number
    /// comes from.
    ///
    /// Cost: closed forms are O(rows); the decorrelated modes draw
    /// [`Envelope::SAMPLED_CHAINS`] chains, O(rows × 10,000) draws in O(10,000)
    /// memory. The totals take at most [`Envelope::EXACT_TERMS`] steps.
    ///
    /// ```
    /// use herdless::{Jitter, Policy};
    ///
    /// let p = Policy::builder().jitter(Jitter::DecorrelatedWindow).max_attempts(8).build()?;
    /// let e = p.envelope(30);
    /// assert_eq!(e.rows().len(), 7); // no more rows than retries
    /// let first = e.rows()[0];
    /// assert_eq!(first.floor, p.base());
    /// assert_eq!(first.ceiling, p.base() * 3);
    /// assert!(first.floor <= first.median && first.median <= first.p99 && first.p99 <= first.ceiling);
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn envelope(&self, rows: u32) -> Envelope {
        let jitter = self.jitter();
        let shown = rows.min(self.max_attempts().saturating_sub(1));
        let mut sampler = match quantiles_of(jitter) {
            QuantileSource::Sampled { chains, seed } => Some(Sampler::new(chains, seed)),
            QuantileSource::ClosedForm => None,
        };
        let mut cumulative = Duration::ZERO;
        let rows = (0..shown)
            .map(|n| {
                let c = jitter.ceiling_ns(self, n);
                let (median, p99) = match sampler.as_mut() {
                    Some(s) => s.next_quantiles(self),
                    None => closed_form_quantiles(jitter, c),
                };
                let ceiling = Duration::from_nanos(c);
                cumulative = cumulative.saturating_add(ceiling);
                EnvelopeRow {
                    retry: n + 1,
                    floor: jitter.floor(self, n),
                    ceiling,
                    median: Duration::from_nanos(median),
                    p99: Duration::from_nanos(p99),
                    cumulative_worst: cumulative,
                }
            })
            .collect();
        Envelope {
            policy: *self,
            rows,
            sum_of_ceilings: Duration::from_nanos(self.sum_of_ceilings_ns()),
        }
    }

    /// The sum of the ceilings of all retries, saturating; past
    /// [`Envelope::EXACT_TERMS`] terms the rest count at the cap.
    fn sum_of_ceilings_ns(&self) -> u64 {
        let retries = self.max_attempts().saturating_sub(1);
        let jitter = self.jitter();
        let mut total: u64 = 0;
        for n in 0..retries.min(Envelope::EXACT_TERMS) {
            let c = jitter.ceiling_ns(self, n);
            if c == self.cap_ns {
                return total.saturating_add(self.cap_ns.saturating_mul(u64::from(retries - n)));
            }
            total = total.saturating_add(c);
        }
        let rest = retries.saturating_sub(Envelope::EXACT_TERMS);
        total.saturating_add(self.cap_ns.saturating_mul(u64::from(rest)))
    }
}

/// Median and p99 of the exponential modes for ceiling `c`, in nanoseconds,
/// with the draw's own halving (`c/2 + uniform[0, c − c/2]` for equal).
fn closed_form_quantiles(jitter: Jitter, c: u64) -> (u64, u64) {
    let share = |x: u64, num: u128| (u128::from(x) * num / 100) as u64;
    match jitter {
        Jitter::Full => (c / 2, share(c, 99)),
        Jitter::Equal => {
            let half = c / 2;
            let spread = c - half;
            (half + spread / 2, half + share(spread, 99))
        }
        // `None`, and anything without randomness: the ceiling itself.
        _ => (c, c),
    }
}

/// The decorrelated chains, advanced one retry at a time.
struct Sampler {
    rng: Rng,
    schedules: Vec<Schedule>,
    draws: Vec<u64>,
}

impl Sampler {
    fn new(chains: usize, seed: u64) -> Self {
        Self {
            rng: Rng::with_seed(seed),
            schedules: vec![Schedule::new(); chains],
            draws: Vec::with_capacity(chains),
        }
    }

    /// Draws every chain's next delay; returns their median and p99.
    fn next_quantiles(&mut self, policy: &Policy) -> (u64, u64) {
        self.draws.clear();
        for s in self.schedules.iter_mut() {
            self.draws.push(policy.next_delay_ns(s, &mut self.rng));
        }
        self.draws.sort_unstable();
        (quantile(&self.draws, 0.5), quantile(&self.draws, 0.99))
    }
}

/// The nearest-rank quantile `q` of sorted `v` (0 for an empty slice).
fn quantile(v: &[u64], q: f64) -> u64 {
    match v.len() {
        0 => 0,
        len => v[(((len - 1) as f64 * q).round() as usize).min(len - 1)],
    }
}

#[cfg(test)]
mod tests;
