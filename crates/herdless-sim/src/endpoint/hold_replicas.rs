//! The pieces of a replicated pushback server: one replica (its allocator and
//! the calls it holds), the balancer's routing, and the store through which
//! the replicas share their reports (the library's
//! [`ReplicaReport`]s, published once a [`PERIOD`] and read
//! `coordination_delay` late).

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use herdless::pushback::replicas::{PERIOD, STALE};
use herdless::pushback::{AdaptiveAllocator, PeerReport, ReplicaReport};

use super::server::Split;

/// One replica: its allocator, and its held calls (ticket id to client).
#[derive(Debug, Clone)]
pub(crate) struct Replica {
    pub(crate) alloc: AdaptiveAllocator,
    pub(crate) parked: HashMap<u64, u32>,
}

impl Replica {
    pub(crate) fn new(alloc: AdaptiveAllocator) -> Self {
        Replica {
            alloc,
            parked: HashMap::new(),
        }
    }
}

/// A round-robin balancer over a sequence of replica indices (a skewed
/// split lists the first replica twice).
#[derive(Debug, Clone)]
pub(crate) struct Route {
    seq: Vec<usize>,
    turn: usize,
}

impl Route {
    pub(crate) fn new(replicas: usize, split: Split) -> Self {
        let mut seq: Vec<usize> = (0..replicas).collect();
        if split == Split::Skewed && replicas > 1 {
            seq.push(0);
        }
        Route { seq, turn: 0 }
    }

    /// The replica the next arrival goes to.
    #[inline]
    pub(crate) fn next(&mut self) -> usize {
        let r = self.seq[self.turn];
        self.turn = (self.turn + 1) % self.seq.len();
        r
    }
}

/// The shared store: every replica's reports, as published.
#[derive(Debug, Clone)]
pub(crate) struct Sharing {
    delay_ns: u64,
    period_ns: u64,
    /// When the next round of reports is due.
    pub(crate) next_ns: u64,
    history: Vec<VecDeque<(u64, ReplicaReport)>>,
}

impl Sharing {
    pub(crate) fn new(replicas: usize, delay: Duration) -> Self {
        Sharing {
            delay_ns: nanos(delay),
            period_ns: nanos(PERIOD),
            next_ns: nanos(PERIOD),
            history: vec![VecDeque::new(); replicas],
        }
    }

    /// At or after a period's end: every replica publishes its report, then
    /// reads the others' newest ones that are at least `delay` old.
    pub(crate) fn tick(&mut self, now: u64, replicas: &mut [Replica]) {
        if now < self.next_ns {
            return;
        }
        self.next_ns = now - now % self.period_ns + self.period_ns;
        let at = Duration::from_nanos(now);
        let keep = self.delay_ns + self.period_ns + nanos(STALE);
        for (r, h) in replicas.iter_mut().zip(&mut self.history) {
            h.push_back((now, r.alloc.report(at)));
            while h.front().is_some_and(|(t, _)| now - t > keep) && h.len() > 1 {
                h.pop_front();
            }
        }
        let seen = now.saturating_sub(self.delay_ns);
        for (i, replica) in replicas.iter_mut().enumerate() {
            let peers: Vec<PeerReport> = self
                .history
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .filter_map(|(_, h)| h.iter().rev().find(|(t, _)| *t <= seen))
                .map(|(t, report)| PeerReport {
                    report: *report,
                    age: Duration::from_nanos(now - t),
                })
                .collect();
            replica.alloc.apply_peers(at, &peers);
        }
    }

    /// Forgets a replica's reports (it restarted).
    pub(crate) fn forget(&mut self, replica: usize) {
        self.history[replica].clear();
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skewed_balancer_sends_the_first_replica_twice_the_share() {
        let mut r = Route::new(3, Split::Skewed);
        let picks: Vec<usize> = (0..8).map(|_| r.next()).collect();
        assert_eq!(picks, [0, 1, 2, 0, 0, 1, 2, 0]);
        let mut e = Route::new(3, Split::Even);
        assert_eq!((0..4).map(|_| e.next()).collect::<Vec<_>>(), [0, 1, 2, 0]);
    }
}
