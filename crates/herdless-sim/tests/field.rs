//! The field scenario's laws: no cell beats its physical limit, one replica
//! with shared state is one replica without it, shared state drains a
//! restart no later than per-replica learning, and every verdict is its
//! figures against the goals (both ways).

use std::time::Duration;

use herdless_sim::OutageParams;
use herdless_sim::endpoint::{OutageEnd, Split};
use herdless_sim::scenario::field::{self, FieldCell, FieldParams, ServerSetup};

fn small(setups: Vec<ServerSetup>, outages: &[u64]) -> FieldParams {
    FieldParams {
        base: OutageParams {
            clients: 4_000,
            capacity: 1_000,
            burst: 100,
            ..OutageParams::default()
        },
        outages: outages.iter().copied().map(Duration::from_secs).collect(),
        setups,
        ..FieldParams::default()
    }
}

fn setup(replicas: u32, split: Split) -> ServerSetup {
    ServerSetup { replicas, split }
}

/// The baseline (plain full jitter) of `c`'s length and end.
fn base<'a>(cells: &'a [FieldCell], c: &FieldCell) -> &'a FieldCell {
    cells
        .iter()
        .find(|b| b.strategy == "full" && b.outage_s == c.outage_s && b.outage_end == c.outage_end)
        .expect("every length and end has its baseline")
}

#[test]
fn no_cell_drains_before_its_physical_limit_and_verdicts_follow_the_figures() {
    let p = small(
        vec![setup(1, Split::Even), setup(3, Split::Restart)],
        &[5, 30],
    );
    let g = p.goals;
    let cells = field::run(&p, 2).unwrap();
    assert_eq!(cells.len(), 2 * 2 * (2 * 2 + 2));
    for c in &cells {
        let limit = c.outage_s + 4.0;
        assert!((c.physical_limit_s - limit).abs() < 1e-9, "{c:?}");
        // Nobody is served before the device is back, and the device serves
        // at most C: no strategy drains faster than T + N/C (a 100 ms burst
        // allowance aside).
        if let Some(d) = c.drain_vs_limit {
            assert!(d * limit >= limit - 0.1 - 1e-9, "{c:?}");
        }
        let expect = match (c.strategy.as_str(), c.coordination) {
            ("full", _) => None,
            ("full+throttle", _) => Some(
                c.gave_up == 0
                    && c.drain_vs_limit.is_some_and(|d| d <= g.throttle_vs_limit)
                    && c.peak_over_capacity <= g.peak
                    && c.calls <= g.throttle_calls,
            ),
            ("full+hold", "shared") => {
                let drain = if c.replicas == 1 && c.outage_end == "known" {
                    g.hold_known_single
                } else {
                    g.hold_vs_limit
                };
                Some(
                    c.gave_up == 0
                        && c.drain_vs_limit.is_some_and(|d| d <= drain)
                        && c.peak_over_capacity <= g.peak
                        && c.service_peak_over_capacity <= g.peak
                        && c.calls <= g.calls_base + g.calls_per_s * c.outage_s,
                )
            }
            ("full+hold", "none") => {
                let b = base(&cells, c);
                let drain = match (c.drain_vs_limit, b.drain_vs_limit) {
                    (Some(d), Some(x)) => d <= x,
                    (None, Some(_)) => false,
                    (_, None) => true,
                };
                Some(
                    drain
                        && c.gave_up <= b.gave_up
                        && c.peak_over_capacity <= b.peak_over_capacity.max(g.peak),
                )
            }
            other => panic!("unexpected cell {other:?}"),
        };
        match expect {
            None => assert_eq!(c.verdict, "baseline", "{c:?}"),
            // Every client honors here: the honoring peak is the peak.
            Some(met) => assert_eq!(c.verdict == "met", met, "{c:?}"),
        }
        assert_eq!(c.verdict == "missed", !c.missed.is_empty(), "{c:?}");
        // Only a hold holds.
        assert_eq!(c.max_held > 0, c.strategy == "full+hold", "{c:?}");
    }
}

#[test]
fn one_replica_with_shared_state_is_one_replica_without() {
    let p = small(vec![setup(1, Split::Even)], &[5, 45]);
    let cells = field::run(&p, 5).unwrap();
    let hold: Vec<&FieldCell> = cells.iter().filter(|c| c.strategy == "full+hold").collect();
    assert_eq!(hold.len(), 2 * 2 * 2);
    for pair in hold.chunks(2) {
        let (a, b) = (pair[0], pair[1]);
        assert_eq!((a.coordination, b.coordination), ("none", "shared"));
        assert_eq!(
            (
                a.drain_vs_limit,
                a.calls,
                a.gave_up,
                a.peak_over_capacity,
                a.max_held
            ),
            (
                b.drain_vs_limit,
                b.calls,
                b.gave_up,
                b.peak_over_capacity,
                b.max_held
            ),
            "{a:?} {b:?}"
        );
    }
}

/// The per-replica hold without coordination is never worse than plain full
/// jitter, at every length, end and split; the throttle meets its goals.
#[test]
fn uncoordinated_hold_is_no_worse_than_full_jitter_and_the_throttle_meets_its_goals() {
    let p = small(
        vec![
            setup(3, Split::Even),
            setup(3, Split::Skewed),
            setup(3, Split::Restart),
        ],
        &[5, 60],
    );
    let cells = field::run(&p, 1).unwrap();
    for c in &cells {
        if c.strategy == "full+throttle" || c.coordination == "none" && c.strategy == "full+hold" {
            assert_eq!(c.verdict, "met", "{c:?}");
        }
    }
}

/// Shared state leaves no replica's recovery behind per-replica learning:
/// after an outage with an unknown end, with a replica restarting
/// mid-drain, the coordinated hold drains no later than the uncoordinated
/// one (the outage's refusals are not read as a saturated device).
#[test]
fn shared_state_drains_a_restart_no_later_than_per_replica_learning() {
    // The scenario's own scale (40,000 clients, 10,000/s, R = 8: the
    // outage's refusals against 1,250/s per replica).
    let p = FieldParams {
        outages: vec![Duration::from_secs(5)],
        ends: vec![OutageEnd::Unknown],
        setups: vec![setup(8, Split::Restart)],
        ..FieldParams::default()
    };
    for seed in [1, 3] {
        let cells = field::run(&p, seed).unwrap();
        let hold: Vec<&FieldCell> = cells.iter().filter(|c| c.strategy == "full+hold").collect();
        let [none, shared] = hold[..] else {
            panic!("two hold cells: {hold:?}");
        };
        assert_eq!((none.coordination, shared.coordination), ("none", "shared"));
        let (Some(n), Some(s)) = (none.drain_vs_limit, shared.drain_vs_limit) else {
            panic!("seed {seed}: both drain: {shared:?} {none:?}");
        };
        assert!(s <= n, "seed {seed}: {shared:?} against {none:?}");
    }
}
