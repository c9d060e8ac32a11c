use std::time::Duration;

use super::*;
use crate::pushback::allocator::caller_key;

const MS: Duration = Duration::from_millis(1);

fn key(i: u32) -> u64 {
    caller_key(format!("worker-{i}").as_bytes())
}

/// Turns away everyone the bucket has no room for at `now` (the first
/// `burst` are admitted), returning the first plan announced.
fn storm(p: &mut WavePlanner, now: Duration, n: u32) -> WavePlan {
    let mut plan = None;
    for i in 0..n {
        if !p.decide_for(now, key(i)).is_admit() && plan.is_none() {
            plan = p.plan(now);
        }
    }
    plan.expect("some caller was turned away")
}

#[test]
fn a_told_population_is_spread_over_its_span_at_a_share_of_the_capacity() {
    let mut p = WavePlanner::builder()
        .capacity(10_000.0)
        .population(40_000)
        .build()
        .unwrap();
    let plan = storm(&mut p, Duration::ZERO, 5_000);
    // 40,000 / 9,500 per s = 4.21 s, in waves of about 1 s: 5 of 843 ms.
    assert_eq!((plan.waves(), plan.spacing_ms()), (5, 843));
    assert!(
        (99..=101).contains(&plan.start_ms()),
        "after the burst admitted: {}",
        plan.start_ms()
    );
    assert_eq!(p.counts().plans, 1);
    // Every caller's answer is its own point in that plan.
    for i in 0..2_000 {
        let k = key(100_000 + i);
        let told = p.decide_for(Duration::ZERO, k).retry_after().unwrap();
        let point = Duration::from_millis(plan.point_ms(k) as u64);
        assert!(told >= point && told < point + MS, "{told:?} {point:?}");
    }
}

#[test]
fn a_named_caller_before_its_wave_is_told_its_point_without_taking_capacity() {
    let mut p = WavePlanner::builder()
        .capacity(100.0)
        .population(1_000)
        .build()
        .unwrap();
    let plan = storm(&mut p, Duration::ZERO, 200);
    // A caller of the last wave, at once: early, and no capacity is left.
    let late = (0..)
        .map(key)
        .find(|&k| plan.wave_of(k) == plan.waves() - 1)
        .unwrap();
    let at = Duration::ZERO;
    let before = p.counts();
    let told = p.decide_for(at, late).retry_after().expect("not admitted");
    assert_eq!(p.counts().early, before.early + 1);
    let point = Duration::from_millis(plan.point_ms(late) as u64);
    assert!(at + told >= point && at + told < point + MS);
    // Later, with capacity left over (nobody came for a second): let in.
    let idle = Duration::from_secs(1);
    assert!(p.decide_for(idle, late).is_admit());
    assert_eq!(p.counts().early, before.early + 1);
}

#[test]
fn a_named_caller_turned_away_in_its_wave_is_told_the_next_wave() {
    let mut p = WavePlanner::builder()
        .capacity(100.0)
        .population(1_000)
        .build()
        .unwrap();
    let plan = storm(&mut p, Duration::ZERO, 500);
    let start = Duration::from_millis(plan.start_ms() as u64);
    let spacing = plan.spacing();
    let k = (0..).map(key).find(|&k| plan.wave_of(k) == 2).unwrap();
    // In its wave, the service refuses it (a refusal of its own).
    let at = start + spacing * 2 + spacing / 2;
    let told = p.refused(at, Some(k)).retry_after().unwrap();
    assert!(at + told >= start + spacing * 3, "the next wave");
    assert!(at + told < start + spacing * 4);
    assert_eq!(p.counts().rejoined, 1);
}

#[test]
fn a_counted_plan_places_callers_in_turn_in_segments_of_the_capacity() {
    let mut p = WavePlanner::builder().capacity(1_000.0).build().unwrap();
    let now = Duration::ZERO;
    let mut ends = Vec::new();
    let mut segments = std::collections::BTreeMap::new();
    for i in 0..1_000u32 {
        if let Some(d) = p.decide_for(now, key(i)).retry_after() {
            let plan = p.plan(now).unwrap();
            assert_eq!(plan.waves(), 1);
            assert_eq!(plan.spacing_ms(), 100);
            *segments.entry(plan.start_ms()).or_insert(0) += 1;
            ends.push(d);
        }
    }
    // 95 per segment (0.95 of 100 ms of 1,000/s), back to back from the
    // capacity promised (100 ms: the burst admitted).
    let starts: Vec<i64> = segments.keys().copied().collect();
    assert_eq!(starts[0], 100);
    assert!(starts.windows(2).all(|w| w[1] - w[0] == 100), "{starts:?}");
    let full: Vec<_> = segments.values().copied().collect();
    assert!(full[..full.len() - 1].iter().all(|&n| n == 95), "{full:?}");
    assert_eq!(p.counts().segments as usize, segments.len());
    assert!(ends.iter().all(|d| *d >= Duration::from_millis(100)));
}

#[test]
fn plans_begin_at_a_known_end_and_wait_for_an_unknown_one() {
    let mut known = WavePlanner::builder()
        .capacity(100.0)
        .population(500)
        .build()
        .unwrap()
        .outage_until(Duration::from_secs(5));
    let plan = storm(&mut known, Duration::from_secs(1), 10);
    assert_eq!(plan.start_ms(), 4_000);
    let mut unknown = WavePlanner::builder()
        .capacity(100.0)
        .population(500)
        .build()
        .unwrap()
        .outage();
    let t = Duration::from_secs(1);
    assert!(unknown.decide_for(t, key(0)).is_admit(), "a probe");
    let slot = unknown.decide_for(t, key(1)).retry_after().unwrap();
    assert!(
        slot >= Duration::from_secs(2),
        "as long as the outage has lasted: {slot:?}"
    );
    assert_eq!(unknown.plan(t), None, "no start to plan from");
    assert_eq!(unknown.counts().unplanned, 1);
    // The probe is served: the service is back, the next refusals are planned.
    unknown.served(t);
    let back = storm(&mut unknown, t, 100);
    assert!(back.start_ms() >= 0);
    assert_eq!(unknown.counts().plans, 1);
}

#[test]
fn replicas_told_the_same_facts_announce_the_same_plan_and_seeds_tell_them_apart() {
    let build = |seed| {
        WavePlanner::builder()
            .capacity(3_000.0)
            .population(9_000)
            .seed(seed)
            .build()
            .unwrap()
    };
    let (mut a, mut b, mut c) = (build(7), build(7), build(8));
    let t = Duration::from_millis(250);
    let pa = a.announce(t, Duration::from_secs(1)).unwrap();
    let pb = b.announce(t, Duration::from_secs(1)).unwrap();
    let pc = c.announce(t, Duration::from_secs(1)).unwrap();
    assert_eq!(pa, pb);
    assert_ne!(pa.salt(), pc.salt());
    // Another start is another plan, with another salt.
    let later = build(7).announce(t, Duration::from_secs(2)).unwrap();
    assert_ne!(later.salt(), pa.salt());
}

#[test]
fn a_planner_keeps_no_state_per_caller() {
    let mut p = WavePlanner::builder()
        .capacity(1_000.0)
        .population(1_000_000)
        .build()
        .unwrap();
    for i in 0..200_000u32 {
        let _ = p.decide_for(Duration::from_micros(u64::from(i)), key(i));
    }
    assert_eq!(p.inner.clients.len(), 0, "the inner allocator names nobody");
    assert_eq!(p.counts().plans, 1);
}

#[test]
fn a_told_capacity_stays_and_a_learned_one_sizes_later_plans() {
    // Told 1,000/s, the service serves half of what it is given: its
    // refusals move nothing.
    let serve_half = |p: &mut WavePlanner| {
        let (mut t, mut admitted) = (Duration::ZERO, 0u32);
        for i in 0..4_000u32 {
            t += Duration::from_micros(500); // 2,000/s offered
            if p.decide_for(t, key(i)).is_admit() {
                admitted += 1;
                if admitted % 2 == 0 {
                    p.served(t);
                } else {
                    let _ = p.refused(t, Some(key(i)));
                }
            }
        }
        t
    };
    let mut told = WavePlanner::builder().capacity(1_000.0).build().unwrap();
    let t = serve_half(&mut told);
    assert_eq!(told.capacity(), 1_000.0);
    let mut learned = WavePlanner::builder().estimate(1_000.0).build().unwrap();
    let _ = serve_half(&mut learned);
    assert!(learned.capacity() < 700.0, "{}", learned.capacity());
    // The segments opened from then on are sized to what each knows.
    for p in [&mut told, &mut learned] {
        p.segment = None;
        let _ = storm(p, t + Duration::from_secs(5), 2_000);
    }
    let room = |p: &WavePlanner| p.segment.unwrap().left + p.segment.unwrap().placed;
    assert_eq!(room(&told), 95);
    assert!(room(&learned) < 70, "{}", room(&learned));
}

/// A counted plan never places callers faster than the rate it is sized
/// to: below 10/s a segment is longer than 100 ms (one caller each), and
/// between, its room is rounded down, not to the nearest.
#[test]
fn a_counted_plan_at_a_low_capacity_places_callers_no_faster_than_it() {
    for capacity in [1.0, 3.0, 15.0, 25.0, 1_000.0] {
        let mut p = WavePlanner::builder().capacity(capacity).build().unwrap();
        let now = Duration::ZERO;
        let mut last = Duration::ZERO;
        let mut placed = 0u32;
        for i in 0..200u32 {
            if let Some(d) = p.decide_for(now, key(i)).retry_after() {
                last = last.max(d);
                placed += 1;
            }
        }
        // `placed` callers at no more than 0.95 of the capacity take at
        // least this long (less a segment's start rounding).
        let least = f64::from(placed - 1) / (0.95 * capacity);
        assert!(
            last.as_secs_f64() >= least,
            "{capacity}/s: {placed} placed within {last:?}, at least {least:.2} s"
        );
    }
}

/// A plan the wire cannot say (its start more than a day away) is not
/// announced as another one: no header, and the caller's own time still
/// in its Retry-After.
#[test]
fn a_plan_beyond_the_wires_range_is_not_announced_as_another() {
    let end = Duration::from_secs(3 * 86_400);
    let mut p = WavePlanner::builder()
        .capacity(10.0)
        .population(50)
        .build()
        .unwrap()
        .outage_until(end);
    let now = Duration::from_secs(1);
    let told = p.decide_for(now, key(1)).retry_after().unwrap();
    assert!(told >= end - now, "{told:?}");
    assert_eq!(
        p.plan(now),
        None,
        "a start of 3 days is not `start=86400.0`"
    );
    assert_eq!(p.announce(now, now), None);
    // Within a day of it, the plan is announced.
    let near = end - Duration::from_secs(3_600);
    assert!(p.decide_for(near, key(2)).retry_after().is_some());
    assert_eq!(p.plan(near).unwrap().start_ms(), 3_600_000);
}
