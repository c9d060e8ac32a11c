//! The `spread` check: do the retries go out spread as jitter spreads them,
//! or in lockstep?
//!
//! Why not "the largest 100 ms bucket holds at most a quarter of the
//! retrying tasks": that judges the base delay, not the jitter. A fleet whose
//! first failures come together and whose first retries are drawn uniformly
//! over a window shorter than 400 ms *must* put more than a quarter of them
//! in some 100 ms bucket (200 workers with full jitter at a 300 ms base: 29
//! to 34 %), and one drawn over 10 ms puts all of them in one, however well
//! jittered; a fleet retrying in lockstep over a trickle of failures may
//! pass it. The question is whether the sleeps spread the retries, which the
//! events themselves say.
//!
//! So the retries are judged wave by wave: wave `k` is the retries after
//! attempt `k` (the failure's attempt number; without the field, the task's
//! `k`-th scheduled retry), each with the time its attempt failed (the
//! event's) and the time it goes out (the event's time plus its sleep).
//! Retries that honored a server's delay (`honored_retry_after`) are set
//! aside: the server chose their time (the `retry_after` check covers them).
//! A wave of at least `--min-tasks` retries is in **lockstep** when
//!
//! * more than `--max-bucket-share` of it, and at least `--min-tasks`
//!   retries, slept the same (within 2 %: two neighbouring 1 % bins of the
//!   sleeps): no jitter, for them. Without
//!   jitter every retry of a wave sleeps the same at any base, so it goes
//!   out as bunched as its failures came (an outage ends them together),
//!   and a fleet that happened to fail apart is one outage away from it.
//!   Jitter draws each sleep from a window: full jitter puts at most 2 % of
//!   a wave within 2 % of one sleep, equal jitter 4 %, decorrelated jitter
//!   about as little; or
//! * its retries go out bunched (the largest 100 ms bucket of send times,
//!   on two grids 50 ms apart, holds more than `--max-bucket-share` of the
//!   wave) and the sleeps bunched them: that bucket holds more than twice
//!   the largest bucket of failure times (plus 3). Sleeps drawn
//!   independently of when their attempts failed can only smear the
//!   failures (the sum of independent times is never more concentrated than
//!   either), so a wave more bunched going out than it was failing was lined
//!   up (each retry sleeping until a clock's whole second, say); the margin
//!   keeps the sampling noise of a small wave out.
//!
//! Bunched retries whose sleeps are spread and did not bunch them pass: the
//! failures were bunched and jitter spreads them as far as its window
//! allows (a 10 ms base cannot spread a wave over more than 10 ms, and that
//! is the base's business, not the jitter's).
//!
//! **The log's resolution.** Another producer may write its sleeps rounded
//! (`round(sleep, 1)`): a full-jitter wave at a 300 ms base logged to 0.1 s
//! has four values, one of them a third of the wave, and would look
//! unjittered. So each wave keeps the coarsest decimal step its sleeps are
//! all written on (0.1 s for `0.3`, `0.25`: 0.01 s; herdless's own, 1 ns),
//! at most 0.1 s: whole seconds are taken as exact ([`MAX_STEP_NS`]). Where that step `q` is wider than 2 % of the sleep `v` that
//! looks the same, "the same within 2 %" cannot be told; what can is how
//! much of a jittered wave one written value may hold: a jitter window `w`
//! puts about `q / w` of its wave on one value, and full and equal jitter
//! draw from a window at least `v` and `v / 2` wide, so at most `2q / v`.
//! Such a wave is in lockstep when one value holds more than `3q / v` (the
//! margin for sampling), and always when it holds more than the rest of the
//! share (75 % at the default): a wave without jitter puts all of it on one
//! value (equal sleeps round alike), a jitter narrower than the log's step
//! cannot be told from none.
//!
//! Without a sleep field a retry's sleep is the time to its task's next
//! event (the next failure, the success or the give-up), which adds the
//! attempt's own time: a fleet without jitter whose attempts take about as
//! long as its base can pass. Memory: per wave, the 100 ms buckets of its
//! span and a histogram of its sleeps in 1 % steps (at most some 2,600 bins
//! from 1 µs to a day), never the retries themselves; waves past
//! [`MAX_WAVES`] count in the last one.

use std::collections::BTreeMap;

use serde::Serialize;

use super::stats::Buckets;
use super::verdict::{Check, Thresholds, Verdict};

/// The waves kept apart (retries after attempt 32 and later count in wave 32).
pub(crate) const MAX_WAVES: usize = 32;

/// A wave's send times more bunched than its failure times by more than
/// this factor (and [`ALIGN_SLACK`]) were lined up by their sleeps.
pub(crate) const ALIGN_FACTOR: u64 = 2;

/// See [`ALIGN_FACTOR`]: retries of sampling noise allowed on top.
pub(crate) const ALIGN_SLACK: u64 = 3;

/// One bin of [`Sleeps`] is this much wider than the one before (1 %).
const BIN_RATIO: f64 = 1.01;

/// The 1 % bin of a sleep of `sleep_ns` (positive): bin `k` holds
/// `[1.01^k, 1.01^(k+1))` µs, sleeps below 1 µs in bin 0 (zero, in
/// [`Sleeps`], counts apart; here it shares bin 0).
pub(crate) fn sleep_bin(sleep_ns: i64) -> u16 {
    let us = (sleep_ns as f64 / 1e3).max(1.0);
    (us.ln() / BIN_RATIO.ln()).floor().min(f64::from(u16::MAX)) as u16
}

/// The coarsest step a log's sleeps are taken to be rounded to: 0.1 s.
/// Sleeps in whole seconds (`1`, `2.0`) are taken as exact: a fixed loop's
/// `sleep 1` writes them so, and a producer rounding to whole seconds has
/// thrown away every jitter below a second.
pub(crate) const MAX_STEP_NS: u64 = 100_000_000;

/// The decimal step `sleep_ns` is written on: the largest power of ten
/// (in ns) that divides it (`300_000_000`: 0.1 s), at most [`MAX_STEP_NS`].
pub(crate) fn decimal_step(sleep_ns: i64) -> u64 {
    let mut step = 1u64;
    let mut rest = sleep_ns.unsigned_abs();
    while rest % 10 == 0 && rest > 0 && step < MAX_STEP_NS {
        rest /= 10;
        step *= 10;
    }
    step
}

/// The share of the sleeps that may look the same at a sleep of `value_ns`,
/// written on a decimal step of `step_ns`, before they are taken as
/// unjittered: `max_share` where the step tells sleeps 2 % apart (zero
/// sleeps: a step of at most 1 µs), else `3q / v` within `max_share ..=
/// max(max_share, 1 − max_share)` (see the module documentation; at zero,
/// `v = q / 2`).
pub(crate) fn same_limit(step_ns: Option<u64>, value_ns: f64, max_share: f64) -> f64 {
    let step = step_ns.unwrap_or(1) as f64;
    let fine = if value_ns > 0.0 {
        step <= value_ns * 0.02
    } else {
        step <= 1_000.0
    };
    if fine {
        return max_share;
    }
    let v = if value_ns > 0.0 { value_ns } else { step / 2.0 };
    (3.0 * step / v).clamp(max_share, max_share.max(1.0 - max_share))
}

/// A histogram of sleeps in 1 % steps from 1 µs (sleeps below it share the
/// first bin; zero has its own count), and the step they are written on.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sleeps {
    zero: u64,
    bins: BTreeMap<u16, u64>,
    n: u64,
    /// The coarsest decimal step (ns) every positive sleep is a multiple of.
    step_ns: Option<u64>,
}

impl Sleeps {
    /// Counts one sleep, nanoseconds.
    pub(crate) fn add(&mut self, sleep_ns: i64) {
        self.n += 1;
        if sleep_ns <= 0 {
            self.zero += 1;
            return;
        }
        let step = decimal_step(sleep_ns);
        self.step_ns = Some(self.step_ns.map_or(step, |s| s.min(step)));
        *self.bins.entry(sleep_bin(sleep_ns)).or_default() += 1;
    }

    /// The decimal step the sleeps are written on, seconds (`None`: no
    /// positive sleep).
    pub(crate) fn resolution_s(&self) -> Option<f64> {
        self.step_ns.map(|s| s as f64 / 1e9)
    }

    /// The sleep at quantile `q` (0..=1), seconds: its bin's lower edge.
    pub(crate) fn quantile(&self, q: f64) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        if rank <= self.zero {
            return Some(0.0);
        }
        let mut seen = self.zero;
        for (&bin, &c) in &self.bins {
            seen += c;
            if seen >= rank {
                return Some(BIN_RATIO.powi(i32::from(bin)) * 1e-6);
            }
        }
        None
    }

    /// The largest share of the sleeps within 2 % of one another (two
    /// neighbouring bins; zero sleeps on their own), and how many they are.
    pub(crate) fn same_share(&self) -> Option<f64> {
        self.same().map(|(_, share, _)| share)
    }

    /// How many sleeps are the same, their share, and the sleep they are
    /// (ns; the lower edge of their bin, 0 for zero sleeps).
    fn same(&self) -> Option<(u64, f64, f64)> {
        if self.n == 0 {
            return None;
        }
        let mut most = (self.zero, 0.0);
        for (&bin, &c) in &self.bins {
            let next = bin
                .checked_add(1)
                .and_then(|b| self.bins.get(&b))
                .copied()
                .unwrap_or(0);
            if c + next > most.0 {
                most = (c + next, BIN_RATIO.powi(i32::from(bin)) * 1e3);
            }
        }
        let (n, value_ns) = most;
        Some((n, n as f64 / self.n as f64, value_ns))
    }

    /// `(q90 − q10) / median`, informative: full jitter 1.6, equal 0.53;
    /// 0 when every sleep is the same (within the bins' 1 %); 10 when the
    /// median is zero and some sleeps are not.
    pub(crate) fn spread(&self) -> Option<f64> {
        let (lo, mid, hi) = (
            self.quantile(0.1)?,
            self.quantile(0.5)?,
            self.quantile(0.9)?,
        );
        Some(if mid > 0.0 {
            // Sleeps in neighbouring bins are the same sleep.
            if hi <= mid * BIN_RATIO * BIN_RATIO && lo * BIN_RATIO * BIN_RATIO >= mid {
                0.0
            } else {
                (hi - lo) / mid
            }
        } else if hi > 0.0 {
            10.0
        } else {
            0.0
        })
    }
}

/// The retries after one attempt number.
#[derive(Debug, Clone, Default)]
pub(crate) struct Wave {
    /// Retries counted (honored ones aside).
    pub(crate) retries: u64,
    /// Retries that honored a server's delay (not judged here).
    pub(crate) honored: u64,
    /// When their attempts failed.
    pub(crate) failed: Buckets,
    /// When they go out.
    pub(crate) sent: Buckets,
    /// Their sleeps.
    pub(crate) sleeps: Sleeps,
}

/// Every wave, by attempt number.
#[derive(Debug, Clone, Default)]
pub(crate) struct Waves {
    /// Wave `k` at index `k − 1`.
    pub(crate) waves: Vec<Wave>,
}

impl Waves {
    fn wave(&mut self, attempt: u32) -> &mut Wave {
        let k = (attempt.max(1) as usize).min(MAX_WAVES);
        if self.waves.len() < k {
            self.waves.resize_with(k, Wave::default);
        }
        &mut self.waves[k - 1]
    }

    /// A retry after `attempt` that failed at `failed_ns` and sleeps
    /// `sleep_ns`.
    pub(crate) fn retry(&mut self, attempt: u32, failed_ns: i64, sleep_ns: i64) {
        let w = self.wave(attempt);
        w.retries += 1;
        w.failed.add(failed_ns);
        w.sent.add(failed_ns.saturating_add(sleep_ns.max(0)));
        w.sleeps.add(sleep_ns);
    }

    /// A retry after `attempt` that honored a server's delay.
    pub(crate) fn honored(&mut self, attempt: u32) {
        self.wave(attempt).honored += 1;
    }
}

/// One wave's numbers and verdict (`spread.waves[]` in the JSON report).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct WaveReport {
    /// The attempt the retries follow (the last wave holds the later ones too).
    pub(crate) attempt: usize,
    /// Retries judged.
    pub(crate) retries: u64,
    /// Retries that honored a server's delay (not judged).
    pub(crate) honored: u64,
    /// The largest 100 ms bucket of send times over the wave.
    pub(crate) largest_bucket_share: Option<f64>,
    /// The largest 100 ms bucket of failure times over the wave.
    pub(crate) failures_largest_bucket_share: Option<f64>,
    /// The largest share of the wave that slept the same (within 2 %).
    pub(crate) same_sleep_share: Option<f64>,
    /// `(q90 − q10) / median` of the sleeps (full jitter 1.6, equal 0.53, none 0).
    pub(crate) sleep_spread: Option<f64>,
    /// The median sleep, seconds.
    pub(crate) sleep_median_s: Option<f64>,
    /// The decimal step the wave's sleeps are written on, seconds (1e-9 for
    /// herdless's own; 0.1 for a producer rounding to 0.1 s).
    pub(crate) sleep_resolution_s: Option<f64>,
    /// `pass`, `fail` (lockstep) or `note` (fewer than `--min-tasks` retries).
    pub(crate) verdict: Verdict,
}

/// Judges every wave; the `spread` check and the waves' reports.
pub(crate) fn judge(waves: &Waves, t: &Thresholds) -> (Check, Vec<WaveReport>) {
    let mut reports = Vec::new();
    let mut worst: Option<(String, f64)> = None;
    let mut failed: Option<String> = None;
    for (i, w) in waves.waves.iter().enumerate() {
        let attempt = i + 1;
        let share = |b: &Buckets| {
            b.largest()
                .filter(|_| w.retries > 0)
                .map(|(_, c)| (u64::from(c), f64::from(c) / w.retries as f64))
        };
        let (sent, fail) = (share(&w.sent), share(&w.failed));
        let (same_n, same_limit) = w
            .sleeps
            .same()
            .map_or((0, t.max_bucket_share), |(n, _, v)| {
                (n, same_limit(w.sleeps.step_ns, v, t.max_bucket_share))
            });
        let coarse = same_limit > t.max_bucket_share;
        let same = w.sleeps.same_share();
        let mut r = WaveReport {
            attempt,
            retries: w.retries,
            honored: w.honored,
            largest_bucket_share: sent.map(|s| s.1),
            failures_largest_bucket_share: fail.map(|s| s.1),
            same_sleep_share: same,
            sleep_spread: w.sleeps.spread(),
            sleep_median_s: w.sleeps.quantile(0.5),
            sleep_resolution_s: w.sleeps.resolution_s(),
            verdict: Verdict::Note,
        };
        let judged = (w.retries >= t.min_tasks.max(1))
            .then_some(())
            .and(sent.zip(fail).zip(same));
        if let Some((((sent_n, sent_share), (fail_n, _)), same)) = judged {
            // At least --min-tasks of them: a few equal draws of a small
            // wave are chance (3 of 10 within 2 %), a wave without jitter
            // is all of it. Where the log's step cannot tell 2 %, a
            // larger share may look the same (`same_limit`).
            let unspread = same > same_limit && same_n >= t.min_tasks;
            let lined_up =
                sent_share > t.max_bucket_share && sent_n > ALIGN_FACTOR * fail_n + ALIGN_SLACK;
            r.verdict = if unspread || lined_up {
                Verdict::Fail
            } else {
                Verdict::Pass
            };
            let what = format!(
                "the {} retries after attempt {attempt}: {:.1}% of them slept the same (within 2%), \
                 the largest 100 ms bucket sends {:.1}%",
                w.retries,
                same * 100.0,
                sent_share * 100.0
            );
            if r.verdict == Verdict::Fail && failed.is_none() {
                failed = Some(if unspread && coarse {
                    format!(
                        "{what}: more than {:.1}% slept the same at the log's resolution ({} s), \
                         no jitter: they retry in lockstep",
                        same_limit * 100.0,
                        w.sleeps.resolution_s().unwrap_or(0.0)
                    )
                } else if unspread {
                    format!(
                        "{what}: more than {:.1}% slept the same, no jitter: they retry in lockstep",
                        t.max_bucket_share * 100.0
                    )
                } else {
                    format!(
                        "{what}, yet {:.1}% of them failed in the largest bucket: the sleeps lined the \
                         retries up",
                        fail.map_or(0.0, |f| f.1) * 100.0
                    )
                });
            }
            if worst.as_ref().is_none_or(|(_, s)| same > *s) {
                worst = Some((what, same));
            }
        }
        reports.push(r);
    }
    let limit = Some(t.max_bucket_share);
    let check = match (failed, worst) {
        (Some(message), worst) => Check {
            check: "spread",
            verdict: Verdict::Fail,
            value: worst.map(|w| w.1),
            limit,
            message,
        },
        (None, Some((what, same))) => Check {
            check: "spread",
            verdict: Verdict::Pass,
            value: Some(same),
            limit,
            message: format!(
                "every wave of retries is spread as jitter spreads it; the least spread: {what}"
            ),
        },
        (None, None) => Check {
            check: "spread",
            verdict: Verdict::Note,
            value: None,
            limit,
            message: if waves.waves.iter().all(|w| w.retries == 0 && w.honored == 0) {
                "nothing to judge: no retry".into()
            } else if waves.waves.iter().all(|w| w.retries == 0) {
                "nothing to judge: every retry honored a server's delay (the server chose its \
                 time: see retry_after)"
                    .into()
            } else {
                format!(
                    "too few to judge: no wave of retries (those after one attempt number) holds {} \
                     retries",
                    t.min_tasks
                )
            },
        },
    };
    (check, reports)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spread_of_uniform_and_equal_sleeps() {
        let mut full = Sleeps::default();
        let mut none = Sleeps::default();
        for i in 0..1000 {
            full.add(i * 1_000_000);
            none.add(300_000_000);
        }
        let s = full.spread().unwrap();
        assert!((1.5..1.7).contains(&s), "{s}");
        assert_eq!(none.spread(), Some(0.0));
        assert_eq!(Sleeps::default().spread(), None);
        assert_eq!(none.same_share(), Some(1.0));
        assert!(
            full.same_share().unwrap() <= 0.03,
            "{:?}",
            full.same_share()
        );
    }
}
