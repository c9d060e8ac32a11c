//! The simulator's event loop was `herdless_sim::fleet`; the old path stays,
//! deprecated, for one release (the same items, not copies).

#![allow(deprecated)]

use herdless_sim::StrategyKind;
use herdless_sim::endpoint::FailFirst;

#[test]
fn the_event_loops_old_path_runs_the_same_loop() {
    let strategy =
        StrategyKind::Backoff(herdless::Jitter::None).resolve(&herdless::Policy::default());
    let old: herdless_sim::event_loop::FleetOutcome =
        herdless_sim::fleet::run_fleet(&[0, 0, 0], &mut FailFirst::new(2), &strategy, 1).unwrap();
    let new = herdless_sim::event_loop::run_fleet(&[0, 0, 0], &mut FailFirst::new(2), &strategy, 1)
        .unwrap();
    assert_eq!((old.calls, old.succeeded), (9, 3));
    assert_eq!((old.calls, old.last_done_ns), (new.calls, new.last_done_ns));
}
