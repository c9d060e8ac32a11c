//! Unit tests of `breaker`.

use super::*;

#[test]
fn opens_at_threshold_and_closes_on_probe_success() {
    let b = Arc::new(Breaker::new(3));
    for _ in 0..2 {
        b.record_failure();
        assert!(matches!(b.admit(), Admission::Closed));
    }
    b.record_failure();
    let Admission::Probe(p) = b.admit() else {
        panic!("open breaker admits a probe")
    };
    assert!(matches!(b.admit(), Admission::Wait));
    p.failed();
    assert_eq!(b.consecutive_failures(), 4);
    let Admission::Probe(p) = b.admit() else {
        panic!("a failed probe frees the slot")
    };
    p.succeeded();
    assert_eq!(b.consecutive_failures(), 0);
    assert!(matches!(b.admit(), Admission::Closed));
}

/// A zero (or sub-millisecond) probe wait is raised to the 1 ms floor, so
/// every wait behind an outstanding probe is at least 0.5 ms: no spinning.
#[test]
fn a_zero_probe_wait_is_raised_to_the_floor() {
    let mut rng = Rng::with_seed(3);
    for wait in [
        Duration::ZERO,
        Duration::from_nanos(1),
        Duration::from_micros(999),
    ] {
        let b = Arc::new(Breaker::new(1).probe_wait(wait));
        assert_eq!(b.probe_wait_time(), Breaker::MIN_PROBE_WAIT);
        b.record_failure();
        let _probe = b.admit();
        assert!(matches!(b.admit(), Admission::Wait));
        for _ in 0..1000 {
            let w = b.wait_for(&mut rng);
            assert!(
                w >= Duration::from_micros(500),
                "{wait:?} gave a {w:?} wait"
            );
            assert!(w <= Breaker::MIN_PROBE_WAIT);
        }
    }
    let b = Breaker::new(1).probe_wait(Duration::from_millis(2));
    assert_eq!(
        b.probe_wait_time(),
        Duration::from_millis(2),
        "above the floor: as given"
    );
}

#[test]
fn a_closing_success_opens_the_release_window() {
    let b = Breaker::new(1).release_window(Duration::from_secs(4));
    let mut rng = Rng::with_seed(2);
    b.record_success_at(1_000); // closed already: no window
    assert_eq!(b.release_wait(1_000, &mut rng), None);
    b.record_failure();
    b.record_success_at(10_000_000_000);
    let waits: Vec<Duration> = (0..1_000)
        .map(|_| b.release_wait(11_000_000_000, &mut rng).unwrap())
        .collect();
    assert!(waits.iter().all(|w| *w <= Duration::from_secs(3)));
    assert!(waits.iter().any(|w| *w > Duration::from_millis(2_900)));
    assert_eq!(
        b.release_wait(14_000_000_000, &mut rng),
        None,
        "past the window"
    );
}

#[test]
fn waits_are_jittered_within_bounds() {
    let b = Breaker::new(1).probe_wait(Duration::from_millis(100));
    let mut rng = Rng::with_seed(9);
    let waits: std::collections::HashSet<Duration> =
        (0..1000).map(|_| b.wait_for(&mut rng)).collect();
    assert!(waits.len() > 900, "waits differ");
    assert!(
        waits
            .iter()
            .all(|w| *w >= Duration::from_millis(50) && *w <= Duration::from_millis(100))
    );
}
