use super::*;

#[test]
fn between_and_below_stay_in_range() {
    let mut r = Rng::with_seed(3);
    for _ in 0..10_000 {
        assert!(r.below_or_eq(10) <= 10);
        let x = r.between(5, 9);
        assert!((5..=9).contains(&x));
    }
    assert_eq!(r.between(7, 7), 7);
    assert_eq!(r.between(9, 3), 9);
    let _ = r.below_or_eq(u64::MAX); // the full range does not panic
}

/// The draws are `fastrand`'s, bit for bit: the simulator's and every
/// seeded run's outputs depend on it.
#[test]
fn draws_are_fastrands_wyrand() {
    let ranges = [
        0,
        1,
        2,
        3,
        10,
        999,
        1 << 32,
        1_000_000_007,
        u64::MAX / 3,
        u64::MAX - 1,
        u64::MAX,
    ];
    for seed in [0, 1, 7, 42, 0x9E37_79B9_7F4A_7C15, u64::MAX] {
        let (mut ours, mut theirs) = (Rng::with_seed(seed), fastrand::Rng::with_seed(seed));
        for round in 0..2_000u64 {
            let max = ranges[(round % ranges.len() as u64) as usize];
            assert_eq!(ours.next_u64(), theirs.u64(..));
            assert_eq!(ours.below_or_eq(max), theirs.u64(0..=max));
            // (`between` answers an empty or one-value range without a draw)
            let lo = max / 3;
            if lo < max {
                assert_eq!(ours.between(lo, max), theirs.u64(lo..=max));
                assert_eq!(ours.between(0, max), theirs.u64(0..=max));
            }
            assert_eq!(ours.unit_f64().to_bits(), theirs.f64().to_bits());
        }
    }
    // The rejection loop: n just above 2⁶³ rejects about half the draws.
    let n = (1u64 << 63) + 12_345;
    let (mut ours, mut theirs) = (Rng::with_seed(5), fastrand::Rng::with_seed(5));
    for _ in 0..10_000 {
        assert_eq!(ours.below_or_eq(n - 1), theirs.u64(0..n));
    }
}

#[test]
fn entropy_seeded_generators_differ() {
    let a: Vec<u64> = {
        let mut r = Rng::from_entropy();
        (0..4).map(|_| r.next_u64()).collect()
    };
    let b: Vec<u64> = {
        let mut r = Rng::from_entropy();
        (0..4).map(|_| r.next_u64()).collect()
    };
    assert_ne!(a, b);
}

#[test]
fn fresh_generators_are_distinct_within_and_across_threads() {
    let firsts = || -> Vec<u64> { (0..10_000).map(|_| Rng::fresh().next_u64()).collect() };
    let here = firsts();
    let there = std::thread::spawn(firsts).join().unwrap();
    let all: std::collections::HashSet<_> = here.iter().chain(&there).collect();
    assert_eq!(all.len(), 20_000, "no two calls share a stream");
    // and a stream is not a shifted copy of the next call's
    let mut a = Rng::fresh();
    let mut b = Rng::fresh();
    let a: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
    let b: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
    assert!(a.iter().all(|x| !b.contains(x)));
}

/// `fork()` copies a thread's seeds: a child that restarts from a copy
/// of them draws what its parent draws next, unless it calls
/// `after_fork`. The copy is made here by hand (a test cannot fork
/// without `unsafe`; the Python suite forks for real,
/// `test_fork.py`).
#[test]
fn after_fork_reseeds_a_copied_thread() {
    let _ = Rng::fresh(); // this thread is seeded
    let _ = next_call_id();
    let (seeds, calls) = (THREAD_SEEDS.with(|c| c.get()), CALLS.with(|c| c.get()));
    let parent = (Rng::fresh().next_u64(), next_call_id());
    // A child without `after_fork`: the parent's very draws.
    THREAD_SEEDS.with(|c| c.set(seeds));
    CALLS.with(|c| c.set(calls));
    assert_eq!((Rng::fresh().next_u64(), next_call_id()), parent);
    // A child that calls it: new ones.
    THREAD_SEEDS.with(|c| c.set(seeds));
    CALLS.with(|c| c.set(calls));
    after_fork();
    let child = (Rng::fresh().next_u64(), next_call_id());
    assert_ne!(child.0, parent.0);
    assert_ne!(child.1, parent.1);
}

#[test]
fn derived_call_keys_are_distinct_within_and_across_threads() {
    let keys = || -> Vec<IdempotencyKey> {
        (0..10_000)
            .map(|_| IdempotencyKey::from_call_id(next_call_id()))
            .collect()
    };
    let here = keys();
    let there = std::thread::spawn(keys).join().unwrap();
    let all: std::collections::HashSet<_> = here.iter().chain(&there).collect();
    assert_eq!(all.len(), 20_000);
    let id = next_call_id();
    assert_eq!(
        IdempotencyKey::from_call_id(id),
        IdempotencyKey::from_call_id(id)
    );
}

#[test]
fn key_round_trips_and_keeps_v4_bits() {
    for _ in 0..100 {
        let k = IdempotencyKey::random();
        let s = k.to_string();
        assert_eq!(&s[14..15], "4");
        assert!(matches!(&s[19..20], "8" | "9" | "a" | "b"));
        assert_eq!(s.parse::<IdempotencyKey>().unwrap(), k);
    }
    assert!("zz".repeat(16).parse::<IdempotencyKey>().is_err());
}
