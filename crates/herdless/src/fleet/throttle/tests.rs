use std::time::Duration;

use proptest::prelude::*;

use super::*;

const MS: Duration = Duration::from_millis(1);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Drives `t` into probing: `threshold` admitted calls, all refused.
fn outage(t: &Throttle, now: Duration) {
    while !t.is_probing() {
        assert!(t.acquire(now).is_ok());
        t.record_failure(now);
    }
}

#[test]
fn every_setting_out_of_range_is_named() {
    let b = Throttle::builder;
    let cases: [(ThrottleBuilder, &str); 8] = [
        (b().initial(0), "initial"),
        (b().initial(1_000_001), "initial"),
        (b().window(MS), "window"),
        (b().window(Duration::from_secs(11)), "window"),
        (b().probe_min(Duration::ZERO), "probe_min"),
        (
            b().probe_min(ms(500)).probe_max(ms(400)),
            "at most probe_max",
        ),
        (b().threshold(0), "threshold"),
        (b().max_wait(Duration::from_secs(3_601)), "max_wait"),
    ];
    for (builder, what) in cases {
        let e = builder.build().unwrap_err();
        assert!(e.to_string().contains(what), "{e} should name {what}");
    }
    assert!(b().build().is_ok());
}

#[test]
fn a_fresh_throttle_lets_its_initial_burst_go_then_spreads_the_waiters() {
    let t = Throttle::builder().initial(2).build().unwrap();
    assert!(t.acquire(Duration::ZERO).is_ok());
    assert!(t.acquire(Duration::ZERO).is_ok());
    // 20/s: the waiters' turns are 50 ms apart.
    let w1 = t.acquire(Duration::ZERO).unwrap_err();
    let w2 = t.acquire(Duration::ZERO).unwrap_err();
    let w3 = t.acquire(Duration::ZERO).unwrap_err();
    assert_eq!(w1, ms(50));
    assert_eq!(w2, ms(100));
    assert_eq!(w3, ms(150));
}

#[test]
fn a_turn_beyond_max_wait_is_not_booked() {
    let t = Throttle::builder()
        .initial(1)
        .max_wait(ms(150))
        .build()
        .unwrap();
    assert!(t.acquire(Duration::ZERO).is_ok());
    assert_eq!(t.acquire(Duration::ZERO).unwrap_err(), ms(100));
    // The next turn would be 200 ms away: wait the most, book nothing...
    assert_eq!(t.acquire(Duration::ZERO).unwrap_err(), ms(150));
    assert_eq!(t.acquire(Duration::ZERO).unwrap_err(), ms(150));
    // ...so the turn after the booked one is still 200 ms away, not further.
    assert_eq!(t.acquire(ms(60)).unwrap_err(), ms(140));
}

#[test]
fn refusals_with_nothing_served_mean_down_and_the_probe_interval_doubles_to_its_max() {
    let t = Throttle::builder()
        .probe_min(ms(100))
        .probe_max(ms(400))
        .build()
        .unwrap();
    outage(&t, Duration::ZERO);
    assert_eq!(t.rate(), 10.0);
    let mut now = Duration::ZERO;
    let mut gaps = Vec::new();
    for _ in 0..5 {
        let wait = t.acquire(now).unwrap_err();
        now += wait;
        assert!(t.acquire(now).is_ok(), "the probe goes at its turn");
        gaps.push(wait);
        t.record_failure(now);
    }
    assert_eq!(gaps, [ms(100), ms(200), ms(400), ms(400), ms(400)]);
}

#[test]
fn a_refusal_after_recent_successes_is_not_an_outage() {
    let t = Throttle::new();
    assert!(t.acquire(Duration::ZERO).is_ok());
    t.record_success(Duration::ZERO);
    for _ in 0..5 {
        assert!(t.acquire(ms(10)).is_ok());
        t.record_failure(ms(10));
    }
    assert!(!t.is_probing());
}

#[test]
fn a_served_probe_ramps_from_the_probe_rate_while_calls_wait() {
    let t = Throttle::builder().probe_max(ms(500)).build().unwrap();
    outage(&t, Duration::ZERO);
    let wait = t.acquire(Duration::ZERO).unwrap_err();
    assert!(t.acquire(wait).is_ok());
    t.record_success(wait);
    assert!(!t.is_probing());
    let start = t.rate();
    assert_eq!(start, 10.0);
    // Calls keep waiting and nothing is refused: ×1.25 per 100 ms window,
    // from the first denial (the first window had none when it began).
    let mut now = wait;
    for _ in 0..10 {
        now += ms(100);
        while t.acquire(now).is_ok() {
            t.record_success(now);
        }
    }
    let grown = t.rate() / start;
    let (lo, hi) = (1.25f64.powi(9), 1.25f64.powi(10));
    assert!(grown >= lo - 1e-9 && grown <= hi + 1e-9, "grew ×{grown}");
}

#[test]
fn a_partial_refusal_sets_the_rate_to_what_was_served() {
    let t = Throttle::builder().initial(1_000).build().unwrap();
    // 10,000/s allowed; the endpoint serves half of 100 calls in a window.
    for i in 0..100u64 {
        let now = ms(i);
        assert!(t.acquire(now).is_ok());
        if i % 2 == 0 {
            t.record_success(now);
        } else {
            t.record_failure(now);
        }
    }
    t.acquire(ms(100)).ok(); // the window closes
                             // Served 50 in 100 ms, clamped to at least half the old rate.
    assert_eq!(t.rate(), 5_000.0);
    assert!(!t.is_probing());
}

#[test]
fn time_going_backwards_changes_nothing() {
    let t = Throttle::builder().initial(1).build().unwrap();
    assert!(t.acquire(Duration::from_secs(10)).is_ok());
    let rate = t.rate();
    assert!(t.acquire(Duration::from_secs(1)).is_err());
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
        let mut now = 0u64;
        let mut last_go = 0u64;
        let mut admitted = 0u64;
        for step in steps {
            if t.acquire(ms(now)).is_ok() {
                admitted += 1;
                t.record_failure(ms(now));
                last_go = now;
            }
            prop_assert!(now - last_go <= probe_max + 50, "no call for {} ms", now - last_go);
            now += step;
        }
        // Three to find the outage, then one per probe interval at most.
        prop_assert!(admitted <= 3 + now / probe_min + 1, "{admitted} calls in {now} ms");
    }

    /// Whatever the answers, the rate stays within one call per `probe_max`
    /// and the maximum, and a waiter is told to wait at most `max_wait`.
    #[test]
    fn the_rate_stays_in_range_and_waits_are_bounded(
        events in proptest::collection::vec((1u64..100, any::<bool>()), 1..2_000),
    ) {
        let t = Throttle::new();
        let mut now = 0u64;
        for (step, ok) in events {
            now += step;
            match t.acquire(ms(now)) {
                Ok(()) if ok => t.record_success(ms(now)),
                Ok(()) => t.record_failure(ms(now)),
                Err(wait) => prop_assert!(wait > Duration::ZERO && wait <= ms(500)),
            }
            let rate = t.rate();
            prop_assert!((0.5..=control::MAX_RATE).contains(&rate), "rate {rate}");
        }
    }
}
