//! Allowances (admissions an allocator grants ahead of time) keep the
//! allocator's promises: half the burst left to requests decided one by
//! one, nothing granted in an outage or while requests are held, what is
//! not spent given back (but never into a bucket emptied on purpose), and
//! the admissions of a front end spending allowances within the capacity's
//! window bound plus one allowance's life.

use std::time::Duration;

use herdless::pushback::allowance::ALLOWANCE_LIFE;
use herdless::pushback::{AdaptiveAllocator, Allocator, Allowance, SlotAllocator};
use proptest::prelude::*;

const T0: Duration = Duration::ZERO;

/// Admissions decided one by one at `now` until the first refusal.
fn admitted_at<A: Allocator>(a: &mut A, now: Duration) -> u32 {
    let mut n = 0;
    while a.decide(now, None).is_admit() {
        n += 1;
        assert!(n < 1_000_000, "no end to the burst");
    }
    n
}

#[test]
fn an_allowance_leaves_half_the_burst_to_requests_decided_one_by_one() {
    // 1,000/s, burst 100: an allowance takes at most half of it.
    let mut slots = SlotAllocator::new(1_000.0, Duration::from_secs(60))
        .unwrap()
        .burst(100);
    let allowance = Allocator::allowance(&mut slots, T0, 1_000);
    assert!(
        allowance.count() > 0 && allowance.count() <= 50,
        "{allowance:?}"
    );
    assert!(admitted_at(&mut slots, T0) >= 50);

    let mut adaptive = AdaptiveAllocator::new(1_000.0, Duration::from_secs(60)).unwrap();
    let burst = admitted_at(&mut adaptive.clone(), T0);
    let allowance = Allocator::allowance(&mut adaptive, T0, 1_000);
    assert!(
        allowance.count() > 0 && allowance.count() <= burst / 2,
        "{allowance:?} of {burst}"
    );
    assert_eq!(admitted_at(&mut adaptive, T0) + allowance.count(), burst);
}

#[test]
fn no_allowance_in_an_outage_or_while_requests_are_held() {
    let mut slots = SlotAllocator::new(1_000.0, Duration::from_secs(60))
        .unwrap()
        .outage_until(Duration::from_secs(5));
    assert!(Allocator::allowance(&mut slots, T0, 8).is_empty());
    assert!(!Allocator::allowance(&mut slots, Duration::from_secs(5), 8).is_empty());

    let mut adaptive = AdaptiveAllocator::new(1_000.0, Duration::from_secs(60))
        .unwrap()
        .outage();
    assert!(Allocator::allowance(&mut adaptive, T0, 8).is_empty());

    // One request held (its outage's end known and near): no allowance until
    // it is released.
    let mut held = AdaptiveAllocator::builder()
        .estimate(1_000.0)
        .hold()
        .build()
        .unwrap()
        .outage_until(Duration::from_secs(1));
    assert!(held.decide(T0).is_hold());
    let after = Duration::from_secs(1);
    assert!(Allocator::allowance(&mut held, after, 8).is_empty());
    assert!(Allocator::release(&mut held, Duration::from_secs(2)).is_some());
    assert!(!Allocator::allowance(&mut held, Duration::from_secs(2), 8).is_empty());
}

#[test]
fn an_unspent_allowance_goes_back_to_the_bucket() {
    let fresh = || {
        SlotAllocator::new(1_000.0, Duration::from_secs(60))
            .unwrap()
            .burst(100)
    };
    let mut a = fresh();
    let allowance = Allocator::allowance(&mut a, T0, 64);
    Allocator::settle(&mut a, T0, allowance, 10, 0);
    assert_eq!(Allocator::counts(&a), (10, 0));
    assert_eq!(admitted_at(&mut a, T0) + 10, admitted_at(&mut fresh(), T0));
}

#[test]
fn an_unspent_allowance_is_not_given_back_after_an_outage_and_a_recovery() {
    let at = Duration::from_secs(3);
    let recovered = |allowance_first: bool| {
        let mut a = AdaptiveAllocator::new(1_000.0, Duration::from_secs(60)).unwrap();
        let allowance = if allowance_first {
            Allocator::allowance(&mut a, T0, 64)
        } else {
            Allowance::default()
        };
        a.start_outage(None);
        a.recover(at);
        // Granted before the outage, settled after the recovery: its
        // admissions must not refill the bucket a recovery empties.
        Allocator::settle(&mut a, at, allowance, 0, 0);
        admitted_at(&mut a, at)
    };
    assert!(recovered(false) > 0);
    assert_eq!(recovered(true), recovered(false));
}

#[test]
fn an_allowance_admits_named_callers_only_while_no_caller_is_tracked() {
    let mut a = AdaptiveAllocator::new(1_000.0, Duration::from_secs(60)).unwrap();
    assert!(Allocator::allowance(&mut a, T0, 8).keyed());
    // Fill the bucket, then turn a named caller away: it is tracked.
    admitted_at(&mut a, T0);
    assert!(!a.decide_for(T0, 7).is_admit());
    let later = Duration::from_millis(500);
    let allowance = Allocator::allowance(&mut a, later, 8);
    assert!(!allowance.is_empty());
    assert!(
        !allowance.keyed(),
        "caller 7 must be decided by the allocator"
    );
}

/// A front end on `threads` threads spending allowances as the tower layer
/// does: a live allowance admits; otherwise the allocator decides, and an
/// admission renews the thread's allowance (`want` of it), a refusal settles
/// every allowance. Returns the admission times (ns) and the allocator.
fn drive<A: Allocator>(mut a: A, arrivals: &[(u64, usize, u32)], threads: usize) -> (Vec<u64>, A) {
    let mut allowances: Vec<(Allowance, u32)> = (0..threads).map(|_| Default::default()).collect();
    let mut admitted = Vec::new();
    for &(t, thread, want) in arrivals {
        let now = Duration::from_nanos(t);
        let (allowance, used) = &mut allowances[thread % threads];
        if *used < allowance.count() && now < allowance.until() {
            *used += 1;
            admitted.push(t);
            continue;
        }
        if a.decide(now, None).is_admit() {
            admitted.push(t);
            a.settle(now, std::mem::take(allowance), *used, 0);
            *allowance = a.allowance(now, want);
            *used = 0;
        } else {
            for (allowance, used) in &mut allowances {
                a.settle(now, std::mem::take(allowance), *used, 0);
                *used = 0;
            }
        }
    }
    for (allowance, used) in &mut allowances {
        let end = Duration::from_nanos(arrivals.last().map_or(0, |a| a.0));
        a.settle(end, std::mem::take(allowance), *used, 0);
    }
    (admitted, a)
}

#[test]
fn an_allowance_is_spent_within_its_life_or_not_at_all() {
    // 1,000/s, burst 20: one request at 0 takes an allowance of 8 on thread 0;
    // at 9 ms the bucket is full again and thread 1 takes all of it; thread
    // 0's allowance, granted 9 ms ago, has run out: it adds nothing.
    let a = SlotAllocator::new(1_000.0, Duration::from_secs(60))
        .unwrap()
        .burst(20);
    let mut arrivals = vec![(0, 0, 8)];
    arrivals.extend((0..40).map(|_| (9_000_000, 1, 1)));
    arrivals.extend((0..40).map(|_| (9_000_000, 0, 1)));
    let (times, _) = drive(a, &arrivals, 2);
    assert_eq!(times.iter().filter(|&&t| t == 9_000_000).count(), 20);
    check_bound(&times, 1_000.0, 20.0).unwrap();
}

/// `times[i..=j]` admitted: `j − i + 1 ≤ burst + capacity · (times[j] −
/// times[i] + one allowance's life)` for every pair.
fn check_bound(times: &[u64], capacity: f64, burst: f64) -> Result<(), String> {
    let life = ALLOWANCE_LIFE.as_nanos() as f64;
    for i in 0..times.len() {
        for j in i..times.len() {
            let count = (j - i + 1) as f64;
            let allowed = burst + capacity * ((times[j] - times[i]) as f64 + life) / 1e9;
            if count > allowed * (1.0 + 1e-9) {
                return Err(format!(
                    "{count} admissions in {} ns, bound {allowed}",
                    times[j] - times[i]
                ));
            }
        }
    }
    Ok(())
}

/// Arrivals in clusters (a few dozen instants 1 ms apart, each a burst
/// within a microsecond), on up to four threads, each asking for its own
/// allowance size.
fn arrivals() -> impl Strategy<Value = Vec<(u64, usize, u32)>> {
    prop::collection::vec((0u64..40, 0u64..1_000, 0usize..4, 1u32..80), 1..400).prop_map(|v| {
        let mut v: Vec<_> = v
            .into_iter()
            .map(|(ms, ns, thread, want)| (ms * 1_000_000 + ns, thread, want))
            .collect();
        v.sort_by_key(|a| a.0);
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn admissions_ahead_keep_the_static_bound_and_are_all_counted(
        arrivals in arrivals(),
        capacity in 200.0f64..200_000.0,
        burst in 1u32..64,
        threads in 1usize..5,
    ) {
        let a = SlotAllocator::new(capacity, Duration::from_secs(60)).unwrap().burst(burst);
        let (times, a) = drive(a, &arrivals, threads);
        prop_assert!(check_bound(&times, capacity, f64::from(burst)).is_ok(), "{:?}", check_bound(&times, capacity, f64::from(burst)));
        prop_assert_eq!(Allocator::counts(&a).0, times.len() as u64);
        prop_assert_eq!(Allocator::counts(&a).0 + Allocator::counts(&a).1, arrivals.len() as u64);
    }

    #[test]
    fn admissions_ahead_keep_the_adaptive_bound_and_are_all_counted(
        arrivals in arrivals(),
        capacity in 200.0f64..200_000.0,
        threads in 1usize..5,
    ) {
        let a = AdaptiveAllocator::builder().estimate(capacity).burst(Duration::from_millis(100)).build().unwrap();
        // The GCRA's own bound: its burst is 100 ms of the rate.
        let burst = capacity * 0.1;
        let (times, a) = drive(a, &arrivals, threads);
        prop_assert!(check_bound(&times, capacity, burst).is_ok(), "{:?}", check_bound(&times, capacity, burst));
        prop_assert_eq!(a.counts().admitted, times.len() as u64);
        prop_assert_eq!(a.counts().arrivals, arrivals.len() as u64);
    }
}
