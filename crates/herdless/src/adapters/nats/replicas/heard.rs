//! The other replicas' latest reports and when each arrived (sans-IO: the
//! task hands it what the watch delivers, with the time; `peers` is asked
//! with the time).

use std::collections::HashMap;

use tokio::time::Instant;

use super::MAX_PEERS;
use crate::pushback::replicas::STALE;
use crate::pushback::{PeerReport, ReplicaReport};

/// Each other replica's latest report (by key) and its arrival.
#[derive(Debug)]
pub(super) struct Heard {
    own: String,
    reports: HashMap<String, (ReplicaReport, Instant)>,
}

impl Heard {
    pub(super) fn new(own: String) -> Self {
        Heard {
            own,
            reports: HashMap::new(),
        }
    }

    /// The value `value` of `key` arrived at `at`: kept unless it is this
    /// replica's own, does not parse, or would be a peer past
    /// [`MAX_PEERS`]. Returns whether it was kept.
    pub(super) fn put(&mut self, key: &str, value: &[u8], at: Instant) -> bool {
        if key == self.own {
            return false;
        }
        let report: ReplicaReport = match serde_json::from_slice(value) {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!(target: "herdless", key, error = %e, "a replica report that does not parse: ignored");
                return false;
            }
        };
        if !self.reports.contains_key(key) && self.reports.len() >= MAX_PEERS {
            self.reports
                .retain(|_, (_, seen)| at.saturating_duration_since(*seen) <= STALE);
            if self.reports.len() >= MAX_PEERS {
                return false;
            }
        }
        self.reports.insert(key.to_owned(), (report, at));
        true
    }

    /// `key` was deleted or purged.
    pub(super) fn remove(&mut self, key: &str) {
        self.reports.remove(key);
    }

    /// The reports no older than [`STALE`] at `now`, with their ages.
    pub(super) fn peers(&self, now: Instant) -> Vec<PeerReport> {
        self.reports
            .values()
            .map(|(report, seen)| PeerReport {
                report: *report,
                age: now.saturating_duration_since(*seen),
            })
            .filter(|p| p.age <= STALE)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn json(r: &ReplicaReport) -> Vec<u8> {
        serde_json::to_vec(r).unwrap()
    }

    #[test]
    fn a_peer_is_heard_until_stale_its_age_from_its_arrival_here() {
        let t0 = Instant::now();
        let mut h = Heard::new("me".into());
        let r = ReplicaReport {
            held: 7,
            estimate: 160.0,
            ..ReplicaReport::default()
        };
        assert!(h.put("gw-2", &json(&r), t0));
        assert!(
            !h.put("me", &json(&r), t0),
            "its own report is not a peer's"
        );
        assert!(!h.put("gw-3", b"{not json", t0));
        let p = h.peers(t0 + Duration::from_millis(1_500));
        assert_eq!(p.len(), 1);
        assert_eq!((p[0].report, p[0].age), (r, Duration::from_millis(1_500)));
        assert_eq!(h.peers(t0 + STALE).len(), 1, "STALE old is still heard");
        assert!(h.peers(t0 + STALE + Duration::from_millis(1)).is_empty());
        // A newer report brings it back; a delete takes it away.
        assert!(h.put("gw-2", &json(&r), t0 + Duration::from_secs(10)));
        assert_eq!(h.peers(t0 + Duration::from_secs(11)).len(), 1);
        h.remove("gw-2");
        assert!(h.peers(t0 + Duration::from_secs(11)).is_empty());
    }

    #[test]
    fn the_reports_kept_are_bounded_stale_ones_making_room() {
        let t0 = Instant::now();
        let mut h = Heard::new("me".into());
        let r = json(&ReplicaReport::default());
        for i in 0..MAX_PEERS {
            assert!(h.put(&format!("gw-{i}"), &r, t0));
        }
        assert!(!h.put("one-too-many", &r, t0));
        assert!(h.put("gw-0", &r, t0), "a known peer is updated");
        let later = t0 + STALE + Duration::from_secs(1);
        assert!(h.put("one-too-many", &r, later), "stale peers make room");
        assert_eq!(h.peers(later).len(), 1);
    }

    #[test]
    fn unknown_fields_are_ignored_missing_ones_are_not() {
        let t0 = Instant::now();
        let mut h = Heard::new("me".into());
        let v = br#"{"served_per_s":1.5,"refused":2,"arrivals_per_s":3.0,"estimate":4.0,"held":5,"down":true,"later":1}"#;
        assert!(h.put("gw", v, t0));
        let r = h.peers(t0)[0].report;
        assert_eq!(
            (r.served_per_s, r.refused, r.held, r.down),
            (1.5, 2, 5, true)
        );
        assert!(!h.put("gw2", br#"{"served_per_s":1.5}"#, t0));
    }
}
