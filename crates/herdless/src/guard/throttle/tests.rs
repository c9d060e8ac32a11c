use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::rng::Rng;

const MS: Duration = Duration::from_millis(1);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Drives `t` into probing: `threshold` admitted calls, all refused.
fn outage(t: &Throttle, now: Duration) {
    let mut rng = Rng::with_seed(7);
    while !t.is_probing() {
        assert!(t.acquire(now, &mut rng).is_ok());
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
    let mut rng = Rng::with_seed(7);
    let t = Throttle::builder().initial(2).build().unwrap();
    assert!(t.acquire(Duration::ZERO, &mut rng).is_ok());
    assert!(t.acquire(Duration::ZERO, &mut rng).is_ok());
    // 20/s: the waiters' turns are 50 ms apart.
    let w1 = t.acquire(Duration::ZERO, &mut rng).unwrap_err();
    let w2 = t.acquire(Duration::ZERO, &mut rng).unwrap_err();
    let w3 = t.acquire(Duration::ZERO, &mut rng).unwrap_err();
    assert_eq!(w1, ms(50));
    assert_eq!(w2, ms(100));
    assert_eq!(w3, ms(150));
}

#[test]
fn a_turn_beyond_max_wait_is_not_booked() {
    let mut rng = Rng::with_seed(7);
    let t = Throttle::builder()
        .initial(1)
        .max_wait(ms(150))
        .build()
        .unwrap();
    assert!(t.acquire(Duration::ZERO, &mut rng).is_ok());
    assert_eq!(t.acquire(Duration::ZERO, &mut rng).unwrap_err(), ms(100));
    // The next turn would be 200 ms away: wait a share of the most (75 to
    // 150 ms, drawn: the waiters re-ask apart), book nothing...
    let (a, b) = (
        t.acquire(Duration::ZERO, &mut rng).unwrap_err(),
        t.acquire(Duration::ZERO, &mut rng).unwrap_err(),
    );
    for w in [a, b] {
        assert!((ms(75)..=ms(150)).contains(&w), "{w:?}");
    }
    assert_ne!(a, b);
    // ...so the turn after the booked one is still 200 ms away, not further.
    assert_eq!(t.acquire(ms(60), &mut rng).unwrap_err(), ms(140));
}

#[test]
fn refusals_with_nothing_served_mean_down_and_the_probe_interval_doubles_to_its_max() {
    let mut rng = Rng::with_seed(7);
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
        let wait = t.acquire(now, &mut rng).unwrap_err();
        now += wait;
        assert!(
            t.acquire(now, &mut rng).is_ok(),
            "the probe goes at its turn"
        );
        gaps.push(wait);
        t.record_failure(now);
    }
    // Each interval jittered within its upper half, so processes that met the
    // outage together do not probe in step.
    for (gap, full) in gaps.iter().zip([100, 200, 400, 400, 400]) {
        assert!((ms(full / 2)..=ms(full)).contains(gap), "{gaps:?}");
    }
}

#[test]
fn a_refusal_after_recent_successes_is_not_an_outage() {
    let mut rng = Rng::with_seed(7);
    let t = Throttle::new();
    assert!(t.acquire(Duration::ZERO, &mut rng).is_ok());
    t.record_success(Duration::ZERO);
    for _ in 0..5 {
        assert!(t.acquire(ms(10), &mut rng).is_ok());
        t.record_failure(ms(10));
    }
    assert!(!t.is_probing());
}

#[test]
fn a_first_probe_served_goes_on_from_07_of_the_rate_before() {
    // A window of refusals with nothing served looks like an outage; when
    // the first probe is served the endpoint was never down (a busy moment,
    // or a process with a few calls left): no ramp from the floor.
    let mut rng = Rng::with_seed(7);
    let t = Throttle::new();
    let before = t.rate();
    outage(&t, Duration::ZERO);
    assert!(t.is_probing());
    let wait = t.acquire(Duration::ZERO, &mut rng).unwrap_err();
    assert!(t.acquire(wait, &mut rng).is_ok());
    t.record_success(wait);
    assert!(!t.is_probing());
    assert!((t.rate() - 0.7 * before).abs() < 1e-9, "{}", t.rate());
}

#[test]
fn a_served_probe_ramps_from_the_first_probe_rate_ever_gentler() {
    let mut rng = Rng::with_seed(7);
    let t = Throttle::new();
    outage(&t, Duration::ZERO);
    let wait = t.acquire(Duration::ZERO, &mut rng).unwrap_err();
    assert!(t.acquire(wait, &mut rng).is_ok());
    t.record_failure(wait); // the first probe refused: down
    let mut at = wait;
    while let Err(w) = t.acquire(at, &mut rng) {
        at += w; // until the next probe
    }
    t.record_success(at);
    assert!(!t.is_probing());
    let start = t.rate();
    assert_eq!(start, 2.0, "one call per probe_min (500 ms)");
    // Calls keep waiting and nothing is refused: the rate grows as
    // (1 + k / 80)^3 over the k windows since the ramp began, ever gentler.
    let mut now = at;
    let mut rates = vec![start];
    for _ in 0..40 {
        now += ms(100);
        while t.acquire(now, &mut rng).is_ok() {
            t.record_success(now);
        }
        rates.push(t.rate());
    }
    let grown = rates[10] / start;
    assert!((1.3..=1.55).contains(&grown), "grew ×{grown} in 10 windows"); // 1.42
    let early = rates[10] / rates[0];
    let late = rates[40] / rates[30];
    assert!(late < early && late > 1.0, "×{early} then ×{late}");
}

/// `waiters` calls of one process, each asking again when told, in an outage
/// that ends at `end`: the probes before it are refused, the first after it
/// served. The throttle's rate when that probe is served.
fn ramp_start(waiters: u64, end: Duration) -> f64 {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut rng = Rng::with_seed(waiters);
    let t = Throttle::new();
    outage(&t, Duration::ZERO);
    let mut asks: BinaryHeap<Reverse<(Duration, u64)>> =
        (0..waiters).map(|i| Reverse((Duration::ZERO, i))).collect();
    while let Some(Reverse((now, i))) = asks.pop() {
        match t.acquire(now, &mut rng) {
            Ok(()) if now >= end => {
                t.record_success(now);
                return t.rate();
            }
            Ok(()) => {
                t.record_failure(now);
                asks.push(Reverse((now + ms(500), i))); // its own backoff
            }
            Err(wait) => asks.push(Reverse((now + wait, i))),
        }
    }
    unreachable!("a waiter always asks again")
}

#[test]
fn a_served_probe_starts_the_ramp_where_the_waiting_calls_would_go_within_10_s() {
    // 2,000 waiters re-asking within max_wait (500 ms): ~200/s.
    let rate = ramp_start(2_000, Duration::from_secs(3));
    assert!((140.0..=260.0).contains(&rate), "ramp starts at {rate}/s");
    // Twice the waiters, twice the start.
    let doubled = ramp_start(4_000, Duration::from_secs(3));
    assert!(
        (1.6..=2.4).contains(&(doubled / rate)),
        "{doubled} vs {rate}"
    );
    // A handful waiting: one call per probe_min, as with nobody.
    assert_eq!(ramp_start(10, Duration::from_secs(3)), 2.0);
}

#[test]
fn a_due_probe_goes_to_a_call_not_yet_refused_when_one_is_waiting() {
    let mut rng = Rng::with_seed(7);
    let t = Throttle::new();
    outage(&t, Duration::ZERO);
    let ns = |d: Duration| d.as_nanos() as u64;
    // A fresh call waits for the probe; a refused one comes back at its time.
    let due = t.acquire_ns(0, &mut rng, false).unwrap_err();
    let deferred = t.acquire_ns(ns(due), &mut rng, true).unwrap_err();
    assert_eq!(deferred, ms(500), "left to the fresh call for max_wait");
    assert!(
        t.acquire_ns(ns(due), &mut rng, false).is_ok(),
        "the fresh call probes"
    );
    t.record_failure(due);
    // Nobody fresh asks: the refused call, asking as told, probes at the
    // probe's time (the interval is 1 s now, jittered down to half).
    let mut now = due;
    while let Err(wait) = t.acquire_ns(ns(now), &mut rng, true) {
        now += wait;
    }
    assert!(
        (ms(500)..=ms(1_000)).contains(&(now - due)),
        "{:?}",
        now - due
    );
    t.record_failure(now);
    // A fresh call asks, then goes away: the refused call still probes, at
    // most max_wait after the probe's time (2 s now): probing never stops.
    let start = now;
    assert!(t.acquire_ns(ns(now), &mut rng, false).is_err());
    while let Err(wait) = t.acquire_ns(ns(now), &mut rng, true) {
        now += wait;
    }
    assert!(now - start <= ms(2_500), "{:?}", now - start);
}

#[test]
fn a_refusal_while_growing_cuts_and_a_partial_refusal_sets_what_was_served() {
    let mut rng = Rng::with_seed(7);
    let t = Throttle::builder().initial(1_000).build().unwrap();
    // 10,000/s allowed; the endpoint serves half of 100 calls in a window.
    assert!(t.acquire(Duration::ZERO, &mut rng).is_ok());
    t.record_success(Duration::ZERO);
    assert!(t.acquire(Duration::ZERO, &mut rng).is_ok());
    t.record_failure(Duration::ZERO);
    assert_eq!(
        t.rate(),
        7_000.0,
        "the first refusal while growing cuts ×0.7"
    );
    for i in 2..100u64 {
        let now = ms(i);
        assert!(t.acquire(now, &mut rng).is_ok());
        if i % 2 == 0 {
            t.record_success(now);
        } else {
            t.record_failure(now);
        }
    }
    t.acquire(ms(100), &mut rng).ok(); // the window closes
    // Half refused: what was served (500/s), clamped to at least half the
    // rate.
    assert_eq!(t.rate(), 3_500.0);
    assert!(!t.is_probing());
}
/// Calls `acquire` at `now`, then again after each wait, until one is let go.
fn next_go(t: &Throttle, mut now: Duration, rng: &mut Rng) -> Duration {
    loop {
        match t.acquire(now, rng) {
            Ok(()) => return now,
            Err(wait) => now += wait,
        }
    }
}

/// Refusals of calls that went before the probing began are not refused
/// probes: they neither double the probe interval nor push the next probe
/// back. A process whose first ten calls were refused together used to
/// wait 1.5 to 3 s (`probe_max`) for its first probe, instead of a share of
/// `probe_min` (500 ms): a recovery went unseen that much longer.
#[test]
fn refusals_of_calls_sent_before_the_probing_began_do_not_delay_the_probe() {
    let mut rng = Rng::with_seed(7);
    let t = Throttle::new();
    for _ in 0..10 {
        assert!(t.acquire(Duration::ZERO, &mut rng).is_ok());
    }
    for i in 0..10 {
        t.record_failure(ms(3 + i));
    }
    assert!(t.is_probing());
    let first = next_go(&t, ms(13), &mut rng);
    assert!(first <= ms(3 + 500), "the first probe at {first:?}");
    // The probe's own refusal doubles the interval (jittered in its upper half).
    t.record_failure(first);
    let second = next_go(&t, first, &mut rng);
    assert!(
        (first + ms(500)..=first + ms(1_000)).contains(&second),
        "{first:?} then {second:?}"
    );
    // A slow call sent before the outage, refused late (its timeout), does
    // not push the next probe back either.
    let t = Throttle::new();
    for _ in 0..2 {
        assert!(t.acquire(Duration::ZERO, &mut rng).is_ok());
    }
    t.record_failure(ms(3));
    t.record_failure(ms(200));
    let first = next_go(&t, ms(200), &mut rng);
    assert!(first <= ms(3 + 500), "the first probe at {first:?}");
}

/// The rate grows only over the time calls waited for it: a process whose
/// callers were told to wait at its start, then made no call for 10 s,
/// comes back at the rate those waits earned (doubling per 100 ms window
/// over at most the longest wait handed out). The idle time used to count
/// as windows of demand: 100/s became the maximum, 1e9/s, and the throttle
/// let every call go.
#[test]
fn the_rate_grows_only_while_calls_wait() {
    let mut rng = Rng::with_seed(7);
    let t = Throttle::new();
    let waits: Vec<Duration> = (0..50)
        .filter_map(|_| t.acquire(Duration::ZERO, &mut rng).err())
        .collect();
    assert_eq!(waits.len(), 40);
    let longest = waits.iter().max().copied().unwrap();
    // Nobody comes back (the callers went elsewhere); 10 s later, a call.
    let _ = t.acquire(Duration::from_secs(10), &mut rng);
    let bound = 100.0 * 2f64.powf(longest.as_secs_f64() / 0.1);
    assert!(
        t.rate() <= bound * 1.000_001,
        "rate {} after 10 s idle; the waits earned at most {bound}",
        t.rate()
    );
    // In steady state too: set to what was served, then idle.
    let t = Throttle::new();
    let mut now = Duration::ZERO;
    for _ in 0..3 {
        for i in 0..20 {
            if t.acquire(now, &mut rng).is_ok() {
                if i % 2 == 0 {
                    t.record_success(now);
                } else {
                    t.record_failure(now);
                }
            }
        }
        now += ms(100);
    }
    assert!(!t.is_probing());
    let rate = t.rate();
    let _ = t.acquire(now, &mut rng); // told to wait: demand
    let _ = t.acquire(now + Duration::from_secs(30), &mut rng);
    assert!(
        t.rate() <= rate * 1.1f64.powf(5.0) * 1.000_001,
        "{rate} then {} after 30 s idle",
        t.rate()
    );
}

mod clock;
