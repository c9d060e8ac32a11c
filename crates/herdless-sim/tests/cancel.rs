//! A run whose progress asks it to stop ends with `SimError::Cancelled`
//! before its next unit: what lets the Python binding answer Ctrl-C.

use std::sync::atomic::{AtomicU64, Ordering};

use herdless_sim::{Config, Progress, Scenario, SimError, Simulation};

/// Says "stop" once `after` units are done; counts the units.
struct StopAfter {
    after: u64,
    done: AtomicU64,
}

impl Progress for StopAfter {
    fn start(&self, _total: u64) {}
    fn advance(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }
    fn cancelled(&self) -> bool {
        self.done.load(Ordering::Relaxed) >= self.after
    }
}

#[test]
fn a_cancelled_run_stops_before_its_next_unit() {
    for scenario in [
        Scenario::Spread,
        Scenario::Contention,
        Scenario::LatencyTail,
    ] {
        let sim = Simulation::new(Config::default_for(scenario)).threads(1);
        let progress = StopAfter {
            after: 1,
            done: AtomicU64::new(0),
        };
        assert!(sim.work_units() > 1, "{scenario:?} has one unit");
        assert_eq!(
            sim.run_with_progress(&progress).unwrap_err(),
            SimError::Cancelled,
            "{scenario:?}"
        );
        assert_eq!(progress.done.load(Ordering::Relaxed), 1, "{scenario:?}");
    }
}

#[test]
fn an_uncancelled_run_ends_as_before() {
    let sim = Simulation::new(Config::default_for(Scenario::Spread)).threads(1);
    let progress = StopAfter {
        after: u64::MAX,
        done: AtomicU64::new(0),
    };
    let report = sim.run_with_progress(&progress).unwrap();
    assert_eq!(report.to_json(), sim.run().unwrap().to_json());
    assert_eq!(progress.done.load(Ordering::Relaxed), sim.work_units());
}
