//! One replica among several: its report to the others, and its share of
//! the device from theirs (see [`replicas`](crate::pushback::replicas) for
//! the why and the bounds).
//!
//! The peers' reports are a period or more old, and during a recovery every
//! estimate moves fast: a total summed from old estimates is not today's.
//! So the reports say how the device should be *split*, not how much there
//! is: this replica compares its own report of the same age with its peers'
//! (its share of the fleet's backlog against its share of the fleet's
//! estimates then). Above its share, it is cut to it at once and grows no
//! further while the reports hold; below it, it grows as a verified
//! estimate does (a few percent per window of demand with no refusal),
//! never by a jump: every replica's step up lands on the device at once.
//! Its own learning keeps setting the level, as without peers.
//!
//! A report covers the service up: at a recovery the period starts over
//! (`Mark::recovered`). The refusals of an outage (its probes, the
//! requests refused before the replica found it down) say the service was
//! down, not that it was saturated, and what the replica served while it
//! released its queue from a low starting rate is that rate, not the
//! service's capacity. Counted in the period of the recovery, they read as
//! a saturated service whose measured total is the starting rate: every
//! replica was cut to its share of that a period after the end, in the
//! middle of its drain, and held there for a period.

use std::time::Duration;

use super::{AdaptiveAllocator, AdaptiveCounts, Mode};
use crate::pushback::ns;
use crate::pushback::replicas::{PERIOD, PeerReport, ReplicaReport, STALE};
use crate::pushback::tuning::{SHARE_FLOOR, SHARE_MARGIN};

/// Own reports kept to match the peers' age.
const KEPT: usize = 8;

/// The counters at the last report, and the last reports themselves.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Mark {
    at: u64,
    served: u64,
    refused: u64,
    arrivals: u64,
    /// This replica's last reports and when it made them, newest last.
    sent: [(u64, ReplicaReport); KEPT],
    len: usize,
}

impl Mark {
    /// The service is back at `at`: the period being counted starts over
    /// there, with the counters `c` (the refusals and the time down are the
    /// outage's, not the period's).
    pub(crate) fn recovered(&mut self, at: u64, c: AdaptiveCounts) {
        (self.at, self.served, self.refused, self.arrivals) = (at, c.served, c.refused, c.arrivals);
    }

    fn keep(&mut self, at: u64, report: ReplicaReport) {
        if self.len == KEPT {
            self.sent.rotate_left(1);
            self.len -= 1;
        }
        self.sent[self.len] = (at, report);
        self.len += 1;
    }

    /// The report this replica made closest to `age` before `now`.
    fn as_of(&self, now: u64, age: Duration) -> Option<ReplicaReport> {
        let then = now.saturating_sub(ns(age));
        self.sent[..self.len]
            .iter()
            .min_by_key(|(t, _)| t.abs_diff(then))
            .map(|(_, r)| *r)
    }
}

impl AdaptiveAllocator {
    /// This replica's report on the period since its last one, at `now`
    /// (publish it through a [`SharedState`](crate::pushback::SharedState)
    /// about once per [`PERIOD`]). A period that saw the service come back
    /// counts from its return: the outage's refusals are not the period's.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut a = herdless::pushback::AdaptiveAllocator::new(100.0, Duration::from_secs(60))?;
    /// a.served(Duration::from_millis(10));
    /// let r = a.report(Duration::from_secs(1));
    /// assert_eq!((r.served_per_s, r.held, r.down), (1.0, 0, false));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn report(&mut self, now: Duration) -> ReplicaReport {
        let now = ns(now);
        self.tick(now);
        let c = self.counts;
        let m = &mut self.mark;
        let span = (now.saturating_sub(m.at) as f64 / 1e9).max(1e-3);
        let report = ReplicaReport {
            served_per_s: c.served.saturating_sub(m.served) as f64 / span,
            refused: c.refused.saturating_sub(m.refused),
            arrivals_per_s: c.arrivals.saturating_sub(m.arrivals) as f64 / span,
            estimate: self.estimate.capacity,
            held: self.hold.as_ref().map_or(0, |h| h.len() as u64),
            down: matches!(self.mode, Mode::Down { .. }),
        };
        (m.at, m.served, m.refused, m.arrivals) = (now, c.served, c.refused, c.arrivals);
        m.keep(now, report);
        report
    }

    /// Takes the peers' latest reports into account at `now`. While the
    /// device is up and the replicas drain a backlog (a request held
    /// somewhere) with the device saturated (one of them was refused in the
    /// period), this replica moves its estimate toward its share of the
    /// fleet's: the share its backlog (held requests, and what arrives while
    /// the fleet's backlog drains) makes of everyone's, from reports of the
    /// same age (see [`replicas`](crate::pushback::replicas)). While the device is
    /// down with an unknown end and a peer served in its last period, the
    /// next probe goes now. Reports older than [`STALE`] are left out; with
    /// none left, nothing changes.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::pushback::{AdaptiveAllocator, PeerReport};
    /// let mut a = AdaptiveAllocator::new(100.0, Duration::from_secs(60))?;
    /// let old = PeerReport { report: a.report(Duration::ZERO), age: Duration::from_secs(9) };
    /// a.apply_peers(Duration::ZERO, &[old]);
    /// assert_eq!(a.capacity(), 100.0, "a stale report changes nothing");
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn apply_peers(&mut self, now: Duration, peers: &[PeerReport]) {
        let now = ns(now);
        self.tick(now);
        let fresh: Vec<&PeerReport> = peers.iter().filter(|p| p.age <= STALE).collect();
        if fresh.is_empty() {
            return;
        }
        match self.mode {
            Mode::Down {
                until: None,
                ref mut next_probe,
                ..
            } => {
                if fresh
                    .iter()
                    .any(|p| !p.report.down && p.report.served_per_s > 0.0)
                {
                    *next_probe = (*next_probe).min(now);
                }
                return;
            }
            Mode::Down { .. } => return,
            Mode::Up => {}
        }
        // This replica as its peers saw it: its report of about their age.
        let mut ages: Vec<Duration> = fresh.iter().map(|p| p.age).collect();
        ages.sort_unstable();
        let Some(mine) = self.mark.as_of(now, ages[ages.len() / 2]) else {
            return;
        };
        let all: Vec<ReplicaReport> = fresh
            .iter()
            .map(|p| p.report)
            .chain(std::iter::once(mine))
            .collect();
        match share_factor(&all, &mine) {
            Some(factor) => {
                let e = &mut self.estimate;
                let share = (e.capacity * factor).clamp(super::MIN_CAPACITY, super::MAX_CAPACITY);
                // Its share is the most it grows to while the reports hold;
                // more than its share, it is down to it at once; less, it
                // grows to it a verified estimate's few percent per window
                // of demand (a refusal on the way stops it), never by a
                // jump: every replica's step up lands on the device at once.
                if factor < 1.0 {
                    e.limit = share;
                    e.capacity = share;
                    e.verified = true;
                } else {
                    e.limit = 0.0;
                    e.keep_growing();
                }
            }
            None => self.estimate.limit = 0.0,
        }
    }
}

/// By how much `mine`'s estimate should be multiplied to be its share of
/// `all`'s (`mine` among them), or `None` when the reports say nothing
/// about a split: fewer than two replicas, any down, no backlog, or no
/// refusal (the device not known to be saturated).
fn share_factor(all: &[ReplicaReport], mine: &ReplicaReport) -> Option<f64> {
    let held: f64 = all.iter().map(|r| r.held as f64).sum();
    // What the device took in the period, when one of them was refused:
    // its capacity, measured; the estimates may have run ahead of it.
    let served: f64 = all.iter().map(|r| r.served_per_s).sum();
    let estimated: f64 = all.iter().map(|r| r.estimate).sum();
    let total = if served > 0.0 {
        served.min(estimated)
    } else {
        estimated
    };
    if all.len() < 2
        || held <= 0.0
        || all.iter().any(|r| r.down)
        || !all.iter().any(|r| r.refused > 0)
        || !(total.is_finite() && total > 0.0 && mine.estimate > 0.0)
    {
        return None;
    }
    // Each replica must serve its queue and what arrives while the fleet's
    // backlog drains: its weight.
    let drain = (held / total).max(PERIOD.as_secs_f64());
    let weight = |r: &ReplicaReport| r.held as f64 + r.arrivals_per_s * drain;
    let sum: f64 = all.iter().map(weight).sum();
    let fair = total / all.len() as f64;
    let share = if sum > 0.0 {
        total * weight(mine) / sum
    } else {
        fair
    };
    let share = (share * SHARE_MARGIN).max(fair * SHARE_FLOOR);
    let factor = share / mine.estimate;
    factor.is_finite().then_some(factor.clamp(0.5, 2.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(held: u64, estimate: f64, refused: u64) -> ReplicaReport {
        ReplicaReport {
            held,
            estimate,
            refused,
            served_per_s: estimate,
            ..ReplicaReport::default()
        }
    }

    #[test]
    fn the_larger_backlog_takes_the_larger_share() {
        let (a, b) = (r(2_000, 1_000.0, 1), r(1_000, 1_000.0, 0));
        let fa = share_factor(&[a, b], &a).unwrap();
        let fb = share_factor(&[a, b], &b).unwrap();
        assert!(fa > 1.0 && fb < 1.0, "{fa} {fb}");
        assert!(
            ((fa + fb) * 1_000.0 - 2_000.0 * SHARE_MARGIN).abs() < 1e-6,
            "the total kept"
        );
    }

    /// A replica down until 0.5 s (its probes refused), then serving 500/s
    /// as its queue's release starts, with 100 requests held.
    fn recovered_at_half_a_second() -> AdaptiveAllocator {
        let mut a = AdaptiveAllocator::builder()
            .estimate(1_000.0)
            .hold()
            .build()
            .unwrap();
        a.start_outage(None);
        for i in 0..100 {
            let _held_or_probe = a.decide(Duration::from_millis(i));
        }
        assert!(a.held() >= 99, "{}", a.held());
        for i in 1..10 {
            let _slot = a.refused(Duration::from_millis(50 * i), None);
        }
        assert!(a.in_outage(Duration::from_millis(499)));
        for i in 0..250 {
            a.served(Duration::from_millis(500 + 2 * i));
        }
        assert!(!a.in_outage(Duration::from_secs(1)));
        a
    }

    #[test]
    fn a_report_covers_the_service_up_not_the_outage() {
        let mut a = recovered_at_half_a_second();
        let r = a.report(Duration::from_secs(1));
        assert_eq!(r.refused, 0, "the probes' refusals were the outage's");
        // 249 served in the 0.5 s up (the probe that found the service back
        // ends the outage): the release's rate, not diluted by the time down.
        assert!((r.served_per_s - 498.0).abs() < 1e-6, "{}", r.served_per_s);
    }

    #[test]
    fn the_refusals_of_an_outage_cut_no_share_after_it() {
        let (mut a, mut b) = (recovered_at_half_a_second(), recovered_at_half_a_second());
        let at = Duration::from_secs(1);
        let peer = PeerReport {
            report: b.report(at),
            age: Duration::ZERO,
        };
        a.report(at);
        let before = a.capacity();
        a.apply_peers(at, &[peer]);
        assert_eq!(a.capacity(), before, "the service was down, not saturated");
    }

    #[test]
    fn no_split_without_a_backlog_a_refusal_or_a_peer() {
        let a = r(0, 1_000.0, 1);
        assert_eq!(share_factor(&[a, r(0, 500.0, 1)], &a), None, "no backlog");
        let b = r(10, 1_000.0, 0);
        assert_eq!(
            share_factor(&[b, r(10, 500.0, 0)], &b),
            None,
            "not saturated"
        );
        assert_eq!(share_factor(&[b], &b), None, "alone");
        let down = ReplicaReport {
            down: true,
            ..r(10, 1.0, 1)
        };
        assert_eq!(share_factor(&[b, down], &b), None);
    }
}
