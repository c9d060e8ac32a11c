//! Adaptive pushback: slots always within the horizon, the estimate learned
//! from a wrong start, the outage and its end found from the service's
//! answers, and callers that ignore their slot rejected without a booking.

use std::time::Duration;

use herdless::pushback::AdaptiveAllocator;
use herdless::pushback::Allotment;
use proptest::prelude::*;

/// A service with a capacity: a token bucket of `rate` per second and a
/// burst of a tenth of a second, down until `down_until` (seconds).
struct Service {
    rate: f64,
    tokens: f64,
    last: f64,
    down_until: f64,
}

impl Service {
    fn new(rate: f64, down_until: f64) -> Self {
        Service {
            rate,
            tokens: 0.0,
            last: down_until,
            down_until,
        }
    }

    /// Whether the service serves a request at `t` seconds.
    fn serves(&mut self, t: f64) -> bool {
        if t < self.down_until {
            return false;
        }
        self.tokens = (self.tokens + (t - self.last).max(0.0) * self.rate).min(self.rate * 0.1);
        self.last = self.last.max(t);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Offers `offered` requests per second for `secs` seconds from `from`;
/// returns (admitted, served).
fn drive(
    a: &mut AdaptiveAllocator,
    s: &mut Service,
    offered: f64,
    from: f64,
    secs: f64,
) -> (u64, u64) {
    let (mut admitted, mut served) = (0, 0);
    let n = (offered * secs) as u64;
    for k in 0..n {
        let t = from + k as f64 / offered;
        let now = Duration::from_secs_f64(t);
        if a.decide(now).is_admit() {
            admitted += 1;
            if s.serves(t) {
                served += 1;
                a.served(now);
            } else {
                let slot = a.refused(now, None);
                assert!(!slot.is_admit(), "a refusal always gets a slot");
            }
        }
    }
    (admitted, served)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Callers tracked in the table (`callers(n)`) get exactly the decisions
    /// they get from the hash map: the storage changes memory, not behaviour.
    /// Keys straddle the table's end, some callers come back early, some
    /// long after their slot (their entries expire), and a service with an
    /// unknown outage sends refusals through the same path.
    #[test]
    fn table_and_map_storage_decide_alike(
        table in 0usize..64,
        arrivals in prop::collection::vec((0u64..96, 0u64..2_000), 1..400),
        estimate in 5.0f64..500.0,
    ) {
        let build = |callers| {
            AdaptiveAllocator::builder()
                .estimate(estimate)
                .horizon(Duration::from_secs(2))
                .callers(callers)
                .build()
                .unwrap()
                .outage()
        };
        let (mut map, mut tab) = (build(0), build(table));
        let (mut s1, mut s2) = (Service::new(estimate, 1.5), Service::new(estimate, 1.5));
        let mut t = 0.0;
        for (key, gap_ms) in arrivals {
            t += gap_ms as f64 / 1_000.0 * 0.05;
            let now = Duration::from_secs_f64(t);
            let (a, b) = (map.decide_for(now, key), tab.decide_for(now, key));
            prop_assert_eq!(a, b, "key {} at {:?}", key, now);
            if a.is_admit() {
                match (s1.serves(t), s2.serves(t)) {
                    (true, true) => {
                        map.served(now);
                        tab.served(now);
                    }
                    (false, false) => {
                        prop_assert_eq!(map.refused(now, Some(key)), tab.refused(now, Some(key)));
                    }
                    _ => unreachable!("the two services are the same"),
                }
            }
        }
        prop_assert_eq!(map.counts(), tab.counts());
    }

    /// Whatever the estimate, the traffic and the outage, every rejection is
    /// a positive delay within the horizon.
    #[test]
    fn every_slot_is_positive_and_within_the_horizon(
        estimate in 1.0f64..50_000.0,
        horizon_s in 1u64..120,
        steps in prop::collection::vec((0u64..50_000_000, 1usize..200, any::<u8>()), 1..40),
        outage in prop::option::of(prop::option::of(0u64..10_000)),
    ) {
        let horizon = Duration::from_secs(horizon_s);
        let mut a = AdaptiveAllocator::new(estimate, horizon).unwrap();
        match outage {
            Some(Some(ms)) => a = a.outage_until(Duration::from_millis(ms)),
            Some(None) => a = a.outage(),
            None => {}
        }
        let mut now = Duration::ZERO;
        for (dt_ns, n, bits) in steps {
            now += Duration::from_nanos(dt_ns);
            for k in 0..n {
                let key = u64::from(bits) * 1_000 + k as u64;
                let d = if bits % 2 == 0 { a.decide(now) } else { a.decide_for(now, key) };
                if d.is_admit() {
                    let d = if bits % 3 == 0 { a.served(now); None } else { Some(a.refused(now, Some(key))) };
                    if let Some(Allotment::Reject { retry_after }) = d {
                        prop_assert!(retry_after > Duration::ZERO && retry_after <= horizon);
                    }
                } else if let Allotment::Reject { retry_after } = d {
                    prop_assert!(retry_after > Duration::ZERO);
                    prop_assert!(retry_after <= horizon, "{retry_after:?} > {horizon:?}");
                }
            }
        }
    }

    /// Started anywhere from a quarter to four times the true capacity, with
    /// demand above it, the estimate ends within 15 % of the capacity and
    /// what is admitted stays within what the estimates allowed.
    #[test]
    fn the_estimate_converges_to_the_service_capacity(
        capacity in 100.0f64..20_000.0,
        factor in 0.25f64..4.0,
    ) {
        let mut a = AdaptiveAllocator::new(capacity * factor, Duration::from_secs(60)).unwrap();
        let mut s = Service::new(capacity, 0.0);
        let (admitted, served) = drive(&mut a, &mut s, capacity * 1.5, 0.0, 3.0);
        let learned = a.capacity();
        prop_assert!((learned / capacity - 1.0).abs() <= 0.15, "{learned} for {capacity} from {factor}x");
        prop_assert!(served <= admitted);
        // Never more admitted than the largest estimate allows over 3 s,
        // plus one burst.
        prop_assert!(admitted as f64 <= capacity * factor.max(1.0) * 1.2 * 3.0 + capacity * factor.max(1.0) * 0.1 + 1.0);
    }
}

/// Told nothing, the allocator finds the outage from consecutive refusals,
/// sheds all but one probe per 50 ms, and recovers at the first served probe.
#[test]
fn an_unknown_outage_is_found_and_ended_by_probes() {
    let mut a = AdaptiveAllocator::new(1_000.0, Duration::from_secs(60)).unwrap();
    let mut s = Service::new(1_000.0, 2.0);
    let (admitted, served) = drive(&mut a, &mut s, 2_000.0, 0.0, 1.0);
    assert_eq!(served, 0);
    // Found after 5 refusals; then one probe per 50 ms for the rest of the second.
    assert!(admitted <= 5 + 21, "{admitted} admitted while down");
    assert!(a.in_outage(Duration::from_secs(1)));
    let probes_before = a.counts().probes;
    drive(&mut a, &mut s, 2_000.0, 1.0, 1.5);
    assert!(
        !a.in_outage(Duration::from_millis(2_500)),
        "a probe after 2 s was served"
    );
    assert!(a.counts().probes > probes_before);
}

/// While down with an unknown end, a caller is held at least `min_hold`
/// (2 s), and longer as the outage ages: about as long as it has lasted.
#[test]
fn the_hold_grows_with_the_outage_age() {
    let mut a = AdaptiveAllocator::new(1_000.0, Duration::from_secs(60))
        .unwrap()
        .outage();
    let _probe = a.decide(Duration::ZERO);
    let early = a.decide(Duration::from_millis(10)).retry_after().unwrap();
    assert!(early >= Duration::from_secs(2), "{early:?}");
    let _probe = a.decide(Duration::from_secs(10));
    let late = a.decide(Duration::from_secs(10)).retry_after().unwrap();
    assert!(late >= Duration::from_secs(10), "{late:?}");
}

/// A caller that comes back before its slot is told the same slot and
/// books nothing: the callers behind it keep their slots.
#[test]
fn an_early_caller_is_told_its_slot_again_and_books_nothing() {
    // Slots spaced exactly 1 / capacity (no client spread assumed).
    let mut a = AdaptiveAllocator::builder()
        .estimate(10.0)
        .client_spread(0.0)
        .build()
        .unwrap()
        .outage_until(Duration::from_secs(5));
    let first = a.decide_for(Duration::ZERO, 1).retry_after().unwrap();
    let second = a.decide_for(Duration::ZERO, 2).retry_after().unwrap();
    assert_eq!(
        (first, second),
        (Duration::from_secs(5), Duration::from_millis(5_100))
    );
    for k in 1..=20u64 {
        let again = a
            .decide_for(Duration::from_millis(100 * k), 1)
            .retry_after()
            .unwrap();
        assert_eq!(
            again + Duration::from_millis(100 * k),
            Duration::from_secs(5)
        );
    }
    // The next new caller gets the slot after caller 2's, not after 20 rebookings.
    let third = a
        .decide_for(Duration::from_secs(2), 3)
        .retry_after()
        .unwrap();
    assert_eq!(third + Duration::from_secs(2), Duration::from_millis(5_200));
    assert_eq!(a.counts().early, 20);
}

/// After a known end the admission bucket starts empty: no saved-up burst
/// lands on a service that is just back.
#[test]
fn a_recovered_service_gets_no_saved_up_burst() {
    let mut a = AdaptiveAllocator::new(1_000.0, Duration::from_secs(60))
        .unwrap()
        .outage_until(Duration::from_secs(1));
    let at = Duration::from_secs(1);
    let admitted = (0..500).filter(|_| a.decide(at).is_admit()).count();
    assert_eq!(admitted, 1, "one at a time, at the rate");
    // A second later the bucket has refilled: at most its burst (100 ms).
    let later = Duration::from_secs(2);
    let admitted = (0..500).filter(|_| a.decide(later).is_admit()).count();
    assert!((99..=101).contains(&admitted), "{admitted}");
}

/// A lone caller that honors its slots against `s`, from `t = 0`, named
/// (`decide_for`) or not: the delays it was told, until it was served or
/// had made `max` attempts.
fn lone_caller(a: &mut AdaptiveAllocator, s: &mut Service, named: bool, max: u32) -> Vec<f64> {
    let mut t = 0.0;
    let mut told = Vec::new();
    for _ in 0..max {
        let now = Duration::from_secs_f64(t);
        let d = if named {
            a.decide_for(now, 7)
        } else {
            a.decide(now)
        };
        let slot = match d {
            Allotment::Admit if s.serves(t) => {
                a.served(now);
                return told;
            }
            Allotment::Admit => a.refused(now, named.then_some(7)),
            reject => reject,
        };
        let delay = slot.retry_after().unwrap().as_secs_f64();
        told.push(delay);
        t += delay;
    }
    told
}

/// A lone caller in an outage the allocator was told nothing about: the
/// refusals that tell it the service is down are the caller's own attempts,
/// five of them before `down_after` is reached, so each must not cost the
/// caller a slot of one interval (2 ms at 500/s) as it did: that used up 5
/// of a default policy's 6 attempts in 10 ms. A refusal run that outlasts
/// the slot its first refusal was given is held as an outage is: the
/// second refusal (at 2 ms) holds the caller max(2 s, the run's age), and so
/// on, so the caller comes back at about 0, 0.002, 2, 4, 8 s: with a 5 s
/// outage, served at the fifth attempt, 8 s in (the service's bucket has
/// refilled by then). Before the fix: 8 attempts.
#[test]
fn a_lone_caller_in_an_unknown_outage_is_held_not_spent() {
    for named in [false, true] {
        let mut a = AdaptiveAllocator::new(500.0, Duration::from_secs(60)).unwrap();
        let mut s = Service::new(500.0, 5.0);
        let told = lone_caller(&mut a, &mut s, named, 6);
        assert_eq!(told.len(), 4, "served at the fifth attempt: {told:?}");
        assert!((0.002..0.0021).contains(&told[0]), "{told:?}");
        assert!((2.0..2.01).contains(&told[1]), "{told:?}");
        assert!((2.0..2.01).contains(&told[2]), "{told:?}");
        assert!((4.0..4.03).contains(&told[3]), "{told:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// For any outage up to the horizon, a lone caller's attempts grow with
    /// the logarithm of its length: 0, 2 ms, then each wait at least as long
    /// as the refusals have lasted (at least 2 s), so attempt k ≥ 3 is at
    /// about 2^(k-2) s, and the first at or after the end T is served once
    /// the bucket holds a token (1 / rate later at most: one more attempt).
    /// Bound: 3 + ceil(log2(max(T, 2 s) / 2 s)) + 1.
    #[test]
    fn a_lone_callers_attempts_grow_with_the_log_of_the_outage(
        outage in 0.01f64..60.0,
        rate in 10.0f64..10_000.0,
        named: bool,
    ) {
        let mut a = AdaptiveAllocator::new(rate, Duration::from_secs(60)).unwrap();
        let mut s = Service::new(rate, outage);
        let told = lone_caller(&mut a, &mut s, named, 50);
        let attempts = told.len() + 1;
        let bound = 4 + (outage.max(2.0) / 2.0).log2().ceil() as usize;
        prop_assert!(attempts <= bound, "{attempts} attempts > {bound}: {told:?}");
        // Never told less than the refusals have lasted once they outlast a slot.
        let mut t = told[0];
        for d in &told[1..] {
            prop_assert!(*d >= t.clamp(2.0, 60.0) - 1e-6 || t >= outage, "{told:?}");
            t += d;
        }
    }
}

/// The hold never holds more than `hold_max`: a released request the
/// service refused goes back to the front only while there is room; when
/// new arrivals filled the hold while it was out, it is answered with a
/// slot. It used to go back regardless (`herdless stub --hold-max 50`, an
/// outage of unknown end, 200 clients: 52 held at once, the probes the
/// outage refused parked again on top of a full hold).
#[test]
fn a_released_request_refused_when_the_hold_is_full_gets_a_slot() {
    let mut a = AdaptiveAllocator::builder()
        .estimate(10.0)
        .hold()
        .hold_max(2)
        .build()
        .unwrap()
        .outage();
    // Down, end unknown: one probe admitted, then requests held up to 2.
    let mut held = 0;
    let mut t = Duration::ZERO;
    while held < 2 {
        if a.decide(t).is_hold() {
            held += 1;
        }
        t += Duration::from_millis(1);
    }
    assert_eq!(a.held(), 2);
    // The next probe is a held request, released: one place frees...
    let at = a.next_release().expect("a probe is due");
    let r = a.release(at).expect("the probe");
    assert!(r.allotment.is_admit());
    assert_eq!(a.held(), 1);
    // ...and a new arrival takes it while the probe is at the service.
    assert!(a.decide(at).is_hold());
    assert_eq!(a.held(), 2);
    // The service refuses the probe: no room to park it again.
    let answer = a.refused_held(at, r.ticket);
    assert!(
        answer.is_requeue(),
        "{answer:?}: parked on a full hold (or answered as processed)"
    );
    assert_eq!(a.held(), 2);
    assert!(a.max_held() <= 2, "{}", a.max_held());
}
