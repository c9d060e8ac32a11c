//! Server-guided pushback: slots strictly increasing and never past the
//! horizon, admission bounded by the capacity, and a fleet that honors the
//! slots drains near the physical limit.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use herdless::Rng;
use herdless::pushback::{Allotment, SlotAllocator};
use proptest::prelude::*;

proptest! {
    #[test]
    fn slots_strictly_increase_and_never_pass_the_horizon(
        capacity in 0.5f64..50_000.0,
        horizon_ms in 2_000u64..120_000,
        burst in 1u32..50,
        steps in prop::collection::vec((0u64..50_000_000, 1usize..300), 1..40),
        outage_ms in prop::option::of(0u64..10_000),
    ) {
        let horizon = Duration::from_millis(horizon_ms);
        let mut alloc = SlotAllocator::new(capacity, horizon).unwrap().burst(burst);
        if let Some(ms) = outage_ms {
            alloc = alloc.outage_until(Duration::from_millis(ms));
        }
        let slot_ns = (1e9 / capacity).ceil() as u64;
        let mut now = Duration::ZERO;
        let mut last_slot: Option<Duration> = None;
        let mut full = false;
        for (dt_ns, n) in steps {
            now += Duration::from_nanos(dt_ns);
            for _ in 0..n {
                if let Allotment::Reject { retry_after } = alloc.decide(now) {
                    prop_assert!(retry_after > Duration::ZERO);
                    prop_assert!(retry_after <= horizon, "{retry_after:?} > {horizon:?}");
                    let slot = now + retry_after;
                    // Until the horizon is full, every rejection gets a slot at
                    // least one slot width after the previous one.
                    let would_pass = last_slot
                        .map(|l| l + Duration::from_nanos(slot_ns) > now + horizon)
                        .unwrap_or(false);
                    full |= would_pass;
                    if !full {
                        if let Some(l) = last_slot {
                            prop_assert!(slot > l, "slot {slot:?} after {l:?}");
                            prop_assert!(slot - l >= Duration::from_nanos(slot_ns));
                        }
                        last_slot = Some(slot);
                    }
                }
            }
        }
    }

    #[test]
    fn admissions_never_exceed_the_capacity(
        capacity in 1.0f64..5_000.0,
        burst in 1u32..100,
        offered_factor in 1.0f64..20.0,
    ) {
        // Offer `offered_factor` times the capacity, evenly, for 5 s: at most
        // burst + capacity · 5 s are admitted (GCRA bound).
        let mut alloc = SlotAllocator::new(capacity, Duration::from_secs(600)).unwrap().burst(burst);
        let rate = capacity * offered_factor;
        let n = (rate * 5.0) as u64;
        let mut admitted = 0u64;
        for k in 0..n {
            let now = Duration::from_secs_f64(k as f64 / rate);
            admitted += u64::from(alloc.decide(now).is_admit());
        }
        let bound = f64::from(burst) + capacity * 5.0;
        prop_assert!(admitted as f64 <= bound + 1.0, "{admitted} > {bound}");
        // and it does serve: each admission loses less than one arrival gap
        // (GCRA restarts from the arrival time), so at least
        // capacity · 5 s · (1 − 1 / factor) are admitted.
        let floor = capacity * 5.0 * (1.0 - 1.0 / offered_factor) - 2.0;
        prop_assert!(admitted as f64 >= floor.min(n as f64), "{admitted} < {floor}");
    }
}

/// Admitted arrivals `times[i..=j]` must satisfy
/// `j − i + 1 ≤ burst + capacity · (times[j] − times[i])` for every pair.
fn check_window_bound(times: &[u64], capacity: f64, burst: u32) -> Result<(), String> {
    for i in 0..times.len() {
        for j in i..times.len() {
            let count = (j - i + 1) as f64;
            let allowed = f64::from(burst) + capacity * (times[j] - times[i]) as f64 / 1e9;
            // 1e-9 relative: room for the f64 arithmetic of this check only.
            if count > allowed * (1.0 + 1e-9) {
                return Err(format!(
                    "{count} admissions in {} ns, bound {allowed} (capacity {capacity}, burst {burst})",
                    times[j] - times[i]
                ));
            }
        }
    }
    Ok(())
}

/// The reported case: 7·10⁸/s with a burst of 1 admitted 10 000 requests in
/// 9 999 ns (one per nanosecond), where the bound is 1 + 7·10⁸ · 9 999 ns ≈ 7 000.
#[test]
fn a_high_capacity_admits_no_more_than_the_bound() {
    let mut alloc = SlotAllocator::new(7e8, Duration::from_secs(60))
        .unwrap()
        .burst(1);
    let admitted: Vec<u64> = (0..10_000u64)
        .filter(|&t| alloc.decide(Duration::from_nanos(t)).is_admit())
        .collect();
    let bound = 1.0 + 7e8 * 9_999e-9;
    assert!(
        admitted.len() as f64 <= bound,
        "{} > {bound}",
        admitted.len()
    );
    check_window_bound(&admitted, 7e8, 1).unwrap();
}

proptest! {
    /// `burst + capacity · T` in every window `T`, at every accepted capacity
    /// (up to 10⁹/s, where one nanosecond holds less than two slots) and for
    /// arrivals from back-to-back to sparse.
    #[test]
    fn admissions_respect_the_window_bound_at_every_capacity(
        capacity in prop_oneof![
            (0.0f64..=9.0).prop_map(|e| 10f64.powf(e)),
            1e8f64..=1e9,
            Just(1e9),
            Just(7e8),
            Just(6.5e8),
            Just(3.0),
        ],
        burst in prop_oneof![Just(1u32), 1u32..20],
        gaps in prop::collection::vec(
            prop_oneof![3 => Just(0.0f64), 3 => 0.0f64..1.5, 1 => 0.0f64..20.0],
            1..300,
        ),
    ) {
        // Gaps are in slot widths (1 / capacity), rounded to whole nanoseconds.
        let mut alloc = SlotAllocator::new(capacity, Duration::from_secs(1_000_000_000))
            .unwrap()
            .burst(burst);
        let mut now = 0u64;
        let mut admitted = Vec::new();
        for g in gaps {
            now += (g * 1e9 / capacity) as u64;
            if alloc.decide(Duration::from_nanos(now)).is_admit() {
                admitted.push(now);
            }
        }
        prop_assert!(check_window_bound(&admitted, capacity, burst).is_ok(), "{:?}", check_window_bound(&admitted, capacity, burst));
    }
}

#[test]
fn an_outage_books_the_fleet_onto_the_recovered_capacity() {
    // The default outage: 40 000 terminals, a 5 s outage, 10 000/s.
    let mut alloc = SlotAllocator::new(10_000.0, Duration::from_secs(60))
        .unwrap()
        .outage_until(Duration::from_secs(5));
    let slots: Vec<Duration> = (0..40_000)
        .map(|k| {
            let now = Duration::from_micros(k); // all within the first 40 ms
            now + alloc.decide(now).retry_after().expect("outage sheds")
        })
        .collect();
    assert_eq!(slots[0], Duration::from_secs(5));
    assert!(
        slots
            .windows(2)
            .all(|w| w[1] - w[0] == Duration::from_micros(100))
    );
    assert!(*slots.last().unwrap() < Duration::from_secs(9));
    assert_eq!(alloc.counts(), (0, 40_000));
}

#[test]
fn outage_with_unknown_end_spreads_and_recovers() {
    let mut alloc = SlotAllocator::new(100.0, Duration::from_secs(30))
        .unwrap()
        .outage();
    let delays: Vec<Duration> = (0..500)
        .map(|_| alloc.decide(Duration::ZERO).retry_after().unwrap())
        .collect();
    assert!(delays.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(delays[0], Duration::from_millis(10));
    assert_eq!(delays[499], Duration::from_secs(5));
    alloc.recover();
    assert!(alloc.decide(Duration::from_secs(1)).is_admit());
}

#[test]
fn a_full_horizon_is_overbooked_evenly_not_piled_on_its_end() {
    // 10/s with a 1 s horizon holds 10 slots (0.1 s .. 1 s); 100 rejections
    // must spread over that window, about 11 per 100 ms, none past 1 s.
    let mut alloc = SlotAllocator::new(10.0, Duration::from_secs(1))
        .unwrap()
        .outage();
    let mut per_tenth = [0u32; 9];
    for _ in 0..100 {
        let d = alloc.decide(Duration::ZERO).retry_after().unwrap();
        assert!(d >= Duration::from_millis(100) && d <= Duration::from_secs(1));
        let idx = (((d.as_secs_f64() - 0.1) * 10.0).floor() as usize).min(8);
        per_tenth[idx] += 1;
    }
    assert!(
        per_tenth.iter().all(|&n| (8..=14).contains(&n)),
        "{per_tenth:?}"
    );
}

#[test]
fn wire_values_never_come_early() {
    for ms in [1u64, 999, 1000, 1001, 4_321, 59_999] {
        let d = Allotment::Reject {
            retry_after: Duration::from_millis(ms) + Duration::from_nanos(1),
        };
        let secs = d.retry_after_secs().unwrap();
        let msv = d.retry_after_ms().unwrap();
        assert!(Duration::from_secs(secs) >= d.retry_after().unwrap());
        assert!(Duration::from_millis(msv) >= d.retry_after().unwrap());
        assert!(Duration::from_millis(msv) - d.retry_after().unwrap() < Duration::from_millis(1));
    }
}

/// A virtual-time fleet: `clients` callers all fail at once during an outage of
/// `outage`, each rejected caller returns after its delay plus herdless's
/// default positive spread (uniform in [0, 10 %]). Returns (drain time, calls).
fn drain(clients: u64, capacity: f64, outage: Duration, seed: u64) -> (Duration, u64) {
    let mut alloc = SlotAllocator::new(capacity, Duration::from_secs(60))
        .unwrap()
        .outage_until(outage);
    let mut rng = Rng::with_seed(seed);
    // (time, client): everyone's first call within the first 100 ms
    let mut queue: BinaryHeap<Reverse<(Duration, u64)>> = (0..clients)
        .map(|c| Reverse((Duration::from_nanos(rng.next_u64() % 100_000_000), c)))
        .collect();
    let (mut calls, mut last) = (0u64, Duration::ZERO);
    while let Some(Reverse((now, c))) = queue.pop() {
        calls += 1;
        match alloc.decide(now) {
            Allotment::Admit => last = now,
            Allotment::Reject { retry_after } => {
                let spread = 1.0 + 0.1 * rng.unit_f64();
                queue.push(Reverse((now + retry_after.mul_f64(spread), c)));
            }
            Allotment::Hold { .. } | Allotment::Requeue { .. } => {
                unreachable!("the static allocator never holds nor queues")
            }
        }
    }
    (last, calls)
}

#[test]
fn a_fleet_honoring_the_slots_drains_near_the_physical_limit() {
    // 40 000 clients, 5 s outage, 10 000/s: physical limit 5 s + 4 s = 9 s.
    let (t, calls) = drain(40_000, 10_000.0, Duration::from_secs(5), 7);
    let limit = 9.0;
    assert!(t.as_secs_f64() <= 1.25 * limit, "drained in {t:?}");
    let per_client = calls as f64 / 40_000.0;
    assert!(per_client <= 3.5, "{per_client} calls per client");
}
