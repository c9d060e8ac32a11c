//! The throttle under a clock that steps back or repeats itself.

use super::*;

#[test]
fn time_going_backwards_changes_nothing() {
    let mut rng = Rng::with_seed(7);
    let t = Throttle::builder().initial(1).build().unwrap();
    assert!(t.acquire(Duration::from_secs(10), &mut rng).is_ok());
    let rate = t.rate();
    assert!(t.acquire(Duration::from_secs(1), &mut rng).is_err());
    assert_eq!(t.rate(), rate);
}

proptest! {
    /// While everything fails, a caller asking at least every `step` ms is
    /// admitted at least once per `probe_max` (plus that step), and no more
    /// often than the probes allow.
    #[test]
    fn never_deadlocks_and_stays_bounded_in_a_full_outage(
        steps in proptest::collection::vec(1u64..50, 1..2_000),
        probe_min in 1u64..200,
        extra in 0u64..2_000,
    ) {
        let probe_max = probe_min + extra;
        let t = Throttle::builder()
            .probe_min(ms(probe_min))
            .probe_max(ms(probe_max))
            .build()
            .unwrap();
        let mut rng = Rng::with_seed(probe_min ^ extra);
        let mut now = 0u64;
        let mut last_go = 0u64;
        let mut admitted = 0u64;
        for step in steps {
            if t.acquire(ms(now), &mut rng).is_ok() {
                admitted += 1;
                t.record_failure(ms(now));
                last_go = now;
            }
            prop_assert!(now - last_go <= probe_max + 50, "no call for {} ms", now - last_go);
            now += step;
        }
        // Three to find the outage, then one per probe interval at most (each
        // interval jittered down to half).
        prop_assert!(admitted <= 3 + 2 * now / probe_min + 1, "{admitted} calls in {now} ms");
    }

    /// Whatever the answers, the rate stays within one call per `probe_max`
    /// and the maximum, and a waiter is told to wait at most `max_wait`.
    #[test]
    fn the_rate_stays_in_range_and_waits_are_bounded(
        events in proptest::collection::vec((1u64..100, any::<bool>()), 1..2_000),
    ) {
        let t = Throttle::new();
        let mut rng = Rng::with_seed(events.len() as u64);
        let mut now = 0u64;
        for (step, ok) in events {
            now += step;
            match t.acquire(ms(now), &mut rng) {
                Ok(()) if ok => t.record_success(ms(now)),
                Ok(()) => t.record_failure(ms(now)),
                Err(wait) => prop_assert!(wait > Duration::ZERO && wait <= ms(500)),
            }
            let rate = t.rate();
            prop_assert!((1.0 / 3.0 - 1e-12..=control::MAX_RATE).contains(&rate), "rate {rate}");
        }
    }
}

/// Calls through the public `acquire` for `secs` seconds of the driver's
/// clock, each caller going again as soon as it is let go or its wait ends;
/// `at(t)` is what the driver passes at its time `t`.
fn admitted(secs: u64, at: impl Fn(Duration) -> Duration) -> u32 {
    let t = Throttle::new();
    let mut rng = Rng::with_seed(5);
    let (mut now, mut passed) = (Duration::ZERO, 0);
    while now < Duration::from_secs(secs) {
        match t.acquire(at(now), &mut rng) {
            Ok(()) => {
                passed += 1;
                t.record_success(at(now));
                now += MS;
            }
            Err(wait) => now += wait,
        }
    }
    passed
}

/// A clock stepped back by an hour (a driver's clock set back, or another
/// epoch) is read as no time passing, not as an hour to wait: the calls go
/// on at the rate they had (they used to stall: 9 in 20 s against 2,000).
#[test]
fn a_clock_stepped_back_never_stalls_the_callers() {
    let hour = Duration::from_secs(3_600);
    let steady = admitted(20, |t| t + hour);
    let stepped = admitted(20, |t| {
        if t < Duration::from_secs(2) {
            t + hour
        } else {
            t
        }
    });
    assert!(steady > 1_000, "{steady}");
    assert!(
        stepped * 100 >= steady * 95,
        "stepped back: {stepped} calls, steady: {steady}"
    );
}

/// A time a little earlier than the last seen (two clocks a tick apart) is
/// read as the last seen: it neither stalls a caller nor moves the
/// throttle's time.
#[test]
fn a_time_a_tick_earlier_is_read_as_the_last_seen() {
    let mut rng = Rng::with_seed(5);
    let t = Throttle::builder().initial(1).build().unwrap();
    let at = Duration::from_secs(10);
    assert!(t.acquire(at, &mut rng).is_ok());
    // 10/s: the next turn is 100 ms after `at`, whoever asks.
    assert_eq!(t.acquire(at - ms(4), &mut rng), Err(ms(100)));
    assert!(t.acquire(at + ms(200), &mut rng).is_ok());
}
