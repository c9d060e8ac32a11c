//! Unit tests of `envelope`.

use super::*;
use crate::rng::Rng;
use proptest::prelude::*;

fn policy(jitter: Jitter) -> Policy {
    Policy::builder().jitter(jitter).build().unwrap()
}

#[test]
fn closed_forms_match_the_library_draws() {
    for jitter in [Jitter::None, Jitter::Full, Jitter::Equal] {
        let p = policy(jitter);
        let mut rng = Rng::with_seed(9);
        for row in p.envelope(8).rows() {
            let n = row.retry - 1;
            let mut draws: Vec<u64> = (0..20_000)
                .map(|_| p.next_delay_ns(&mut Schedule::at(n), &mut rng))
                .collect();
            draws.sort_unstable();
            let ns = |d: Duration| d.as_nanos() as u64;
            assert!(draws[0] >= ns(row.floor), "{jitter} {n}");
            assert!(*draws.last().unwrap() <= ns(row.ceiling), "{jitter} {n}");
            let tol = row.ceiling.as_secs_f64() * 0.02;
            for (q, want) in [(0.5, row.median), (0.99, row.p99)] {
                let got = quantile(&draws, q) as f64 / 1e9;
                assert!(
                    (got - want.as_secs_f64()).abs() <= tol,
                    "{jitter} retry {} q{q}: sampled {got}, closed form {want:?}",
                    row.retry
                );
            }
        }
    }
}

#[test]
fn decorrelated_ceiling_triples_from_three_bases_to_the_cap() {
    let ms = Duration::from_millis;
    for jitter in [Jitter::Decorrelated, Jitter::DecorrelatedWindow] {
        let e = policy(jitter).envelope(6);
        let ceilings: Vec<_> = e.rows().iter().map(|r| r.ceiling).collect();
        assert_eq!(
            ceilings,
            [ms(1_500), ms(4_500), ms(13_500), ms(30_000), ms(30_000)]
        );
        assert!(
            e.rows()
                .iter()
                .all(|r| r.floor <= r.median && r.p99 <= r.ceiling)
        );
        // 1.5 + 4.5 + 13.5 + 30 + 30 s
        assert_eq!(e.sum_of_ceilings(), ms(79_500));
    }
}

/// Exhaustive over small integer policies: the set of every delay a chain can
/// reach at each retry (every value of every window, from every reachable
/// previous delay) has exactly the shared ceiling as its maximum (the
/// envelope's rows use it: see the property test below).
#[test]
fn decorrelated_ceiling_is_the_largest_reachable_delay() {
    for jitter in [Jitter::Decorrelated, Jitter::DecorrelatedWindow] {
        for base in 1u64..=4 {
            for cap in base..=60 {
                let p = Policy::builder()
                    .base(Duration::from_nanos(base))
                    .cap(Duration::from_nanos(cap))
                    .max_attempts(9)
                    .jitter(jitter)
                    .build()
                    .unwrap();
                let mut reachable = vec![false; cap as usize + 1];
                let mut prevs = vec![base];
                for n in 0..8 {
                    reachable.iter_mut().for_each(|r| *r = false);
                    for &prev in &prevs {
                        let hi = match jitter {
                            Jitter::Decorrelated => 3 * prev,
                            _ => (3 * prev).min(cap),
                        };
                        for d in base..=hi {
                            reachable[d.min(cap) as usize] = true;
                        }
                    }
                    prevs = (0..=cap).filter(|&d| reachable[d as usize]).collect();
                    let top = *prevs.last().unwrap();
                    assert_eq!(
                        Duration::from_nanos(top),
                        jitter.ceiling(&p, n),
                        "{jitter} base {base} cap {cap} retry index {n}"
                    );
                }
            }
        }
    }
}

#[test]
fn small_windows_hit_the_ceiling_in_sampled_chains() {
    // Windows of a few nanoseconds: the tops are drawn often, so the
    // sampled maxima equal the ceilings (the bound is tight, not just safe).
    let p = Policy::builder()
        .base(Duration::from_nanos(1))
        .cap(Duration::from_nanos(1_000))
        .max_attempts(4)
        .jitter(Jitter::DecorrelatedWindow)
        .build()
        .unwrap();
    let e = p.envelope(3);
    let mut max = [0u64; 3];
    let mut rng = Rng::with_seed(5);
    for _ in 0..200_000 {
        let mut s = Schedule::new();
        for m in max.iter_mut() {
            *m = (*m).max(p.next_delay_ns(&mut s, &mut rng));
        }
    }
    let ceilings: Vec<u64> = e
        .rows()
        .iter()
        .map(|r| r.ceiling.as_nanos() as u64)
        .collect();
    assert_eq!(ceilings, [3, 9, 27]);
    assert_eq!(max.to_vec(), ceilings);
}

#[test]
fn totals_sum_every_retry_and_count_the_rest_at_the_cap() {
    let p = policy(Jitter::Full); // 0.5, 1, 2, 4, 8, 16 s, then 30 s
    let with = |attempts| p.to_builder().max_attempts(attempts).build().unwrap();
    assert_eq!(
        with(6).envelope(5).rows()[4].cumulative_worst,
        Duration::from_millis(15_500)
    );
    assert_eq!(
        with(9).envelope(0).sum_of_ceilings(),
        Duration::from_millis(91_500)
    );
    assert_eq!(
        with(9).envelope(0).worst_case_sleep(),
        Duration::from_millis(91_500)
    );
    assert_eq!(with(10).envelope(0).worst_case_sleep(), p.max_elapsed());
    let flat = Policy::builder()
        .multiplier(1.0)
        .max_attempts(u32::MAX)
        .build()
        .unwrap();
    let e = flat.envelope(0);
    assert!(e.sum_of_ceilings() >= Duration::from_secs(1_000_000));
    assert_eq!(e.retries_to_reach(Duration::from_secs(10)), Some(20));
}

#[test]
fn retries_to_reach_is_the_fewest_that_suffice() {
    for jitter in Jitter::ALL {
        let p = policy(jitter)
            .to_builder()
            .max_attempts(40)
            .build()
            .unwrap();
        for secs in [0u64, 1, 7, 20, 45, 90, 300] {
            let target = Duration::from_secs(secs);
            let k = p.envelope(0).retries_to_reach(target).unwrap();
            let with = |retries: u32| {
                let q = p
                    .to_builder()
                    .max_attempts(retries + 1)
                    .max_elapsed(crate::policy::MAX_DURATION);
                q.build().unwrap().envelope(0)
            };
            assert!(with(k).reaches(target), "{jitter} {secs}s: {k} retries");
            if k > 0 {
                assert!(
                    !with(k - 1).reaches(target),
                    "{jitter} {secs}s: {k} not the fewest"
                );
            }
        }
    }
}

fn any_policy() -> impl Strategy<Value = Policy> {
    let nanos = prop_oneof![
        1u64..=1_000,
        1u64..=u64::MAX,
        (0u32..64).prop_map(|s| 1u64 << s)
    ];
    (
        nanos.clone(),
        nanos,
        1.0f64..8.0,
        prop::sample::select(Jitter::ALL.to_vec()),
    )
        .prop_map(|(a, b, m, jitter)| {
            Policy::builder()
                .base(Duration::from_nanos(a.min(b)))
                .cap(Duration::from_nanos(a.max(b)))
                .multiplier(m)
                .max_attempts(25)
                .jitter(jitter)
                .build()
                .unwrap()
        })
}

proptest! {
    // A decorrelated envelope draws 10,000 chains per row: few cases suffice
    // to cover the policy space, many chains per case cover the draws.
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// No delay the library draws ever leaves its envelope row's
    /// `[floor, ceiling]`, in any mode, for any policy and seed.
    #[test]
    fn no_sampled_delay_leaves_the_envelope(p in any_policy(), seed: u64) {
        let e = p.envelope(24);
        let mut rng = Rng::with_seed(seed);
        for _ in 0..200 {
            let mut s = Schedule::new();
            for row in e.rows() {
                let d = p.next_delay(&mut s, &mut rng);
                prop_assert!(d <= row.ceiling, "{} retry {}: {:?} > {:?}", p.jitter(), row.retry, d, row.ceiling);
                prop_assert!(d >= row.floor);
                prop_assert!(row.median <= row.p99 && row.p99 <= row.ceiling);
                prop_assert_eq!(row.ceiling, p.jitter().ceiling(&p, row.retry - 1));
            }
        }
    }
}
