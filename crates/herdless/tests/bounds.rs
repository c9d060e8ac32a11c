//! Every jitter mode keeps its documented bounds: for any valid policy, any
//! attempt number (including those near `u32::MAX`) and extreme durations, a
//! delay is never above the cap, never below the mode's floor, never above the
//! mode's ceiling for that attempt; and thousands of draws per attempt index
//! with the default policy stay in `[floor, min(cap, base · 2ⁿ)]`.

use std::time::Duration;

use herdless::{Jitter, Policy, Rng, Schedule, MAX_DURATION};
use proptest::prelude::*;

fn jitter() -> impl Strategy<Value = Jitter> {
    prop::sample::select(Jitter::ALL.to_vec())
}

/// Durations from 1 ns to `MAX_DURATION`, spread over every order of magnitude.
fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        (1u64..=u64::MAX).prop_map(Duration::from_nanos),
        (0u32..64).prop_map(|shift| Duration::from_nanos(1u64 << shift)),
        Just(MAX_DURATION),
        Just(Duration::from_nanos(1)),
    ]
}

fn multiplier() -> impl Strategy<Value = f64> {
    prop_oneof![
        1.0f64..10.0,
        Just(1.0),
        Just(1.000_000_001),
        Just(f64::MAX),
        1.0f64..1e300,
    ]
}

fn attempt() -> impl Strategy<Value = u32> {
    prop_oneof![0u32..100, (u32::MAX - 100)..=u32::MAX, any::<u32>()]
}

fn policy() -> impl Strategy<Value = Policy> {
    (duration(), duration(), multiplier(), jitter()).prop_map(|(a, b, m, j)| {
        let (base, cap) = if a <= b { (a, b) } else { (b, a) };
        Policy::builder()
            .base(base)
            .cap(cap)
            .multiplier(m)
            .jitter(j)
            .build()
            .expect("a valid policy")
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn a_single_draw_respects_the_mode_bounds(p in policy(), n in attempt(), seed: u64) {
        let mut rng = Rng::with_seed(seed);
        let mut s = Schedule::at(n);
        let d = p.next_delay(&mut s, &mut rng);
        let ceiling = p.ceiling(n);
        prop_assert!(ceiling <= p.cap());
        prop_assert!(ceiling >= p.base().min(p.cap()));
        prop_assert!(d <= p.cap(), "delay {:?} above cap {:?}", d, p.cap());
        prop_assert!(d >= p.jitter().floor(&p, n));
        prop_assert!(d <= p.jitter().ceiling(&p, n));
    }

    #[test]
    fn chains_stay_in_bounds(p in policy(), start in attempt(), seed: u64, len in 1usize..64) {
        let mut rng = Rng::with_seed(seed);
        let mut s = Schedule::at(start);
        for _ in 0..len {
            let n = s.retries();
            let d = p.next_delay(&mut s, &mut rng);
            prop_assert!(d <= p.cap());
            prop_assert!(d >= p.jitter().floor(&p, n));
            prop_assert!(d <= p.jitter().ceiling(&p, n));
        }
    }

    #[test]
    fn ceiling_is_monotone_in_the_attempt(p in policy(), n in 0u32..u32::MAX) {
        prop_assert!(p.ceiling(n) <= p.ceiling(n + 1));
    }

    /// The server-delay rule: with `d = min(r, max_retry_after)`, the sleep is
    /// in `[d, d · (1 + spread)]`: never below what the server asked nor below
    /// the clamp, and at most `max_retry_after · (1 + spread)`.
    #[test]
    fn server_delay_is_the_clamped_value_plus_the_spread(
        p in policy(),
        clamp in duration(),
        spread in prop_oneof![0.0f64..=1.0, Just(0.0), Just(0.1), Just(1.0)],
        r in duration(),
        seed: u64,
    ) {
        let p = p.to_builder().max_retry_after(clamp).retry_after_spread(spread).build().unwrap();
        let sleep = p.server_delay(r, &mut Rng::with_seed(seed));
        let d = r.min(p.max_retry_after());
        prop_assert!(sleep >= d, "{:?} below min(server {:?}, clamp {:?})", sleep, r, clamp);
        let extra = (sleep - d).as_nanos() as f64;
        prop_assert!(extra <= d.as_nanos() as f64 * spread, "{:?} above {:?} · (1 + {})", sleep, d, spread);
    }
}

/// The delay-range check, literally: a few thousand draws per attempt index,
/// both bounds asserted, for every mode with the default policy.
#[test]
fn thousands_of_draws_per_attempt_index_stay_in_range() {
    let base = Duration::from_millis(500);
    let cap = Duration::from_secs(30);
    for jitter in Jitter::ALL {
        let p = Policy::builder().jitter(jitter).build().unwrap();
        let mut rng = Rng::with_seed(0x5EED);
        let indices = (0u32..40).chain((u32::MAX - 3)..=u32::MAX);
        for n in indices {
            let envelope = cap.min(base.saturating_mul(2u32.saturating_pow(n.min(31))));
            let floor = match jitter {
                Jitter::None => envelope,
                Jitter::Full => Duration::ZERO,
                Jitter::Equal => envelope / 2,
                _ => base,
            };
            let top = match jitter {
                Jitter::Decorrelated | Jitter::DecorrelatedWindow => cap,
                _ => envelope,
            };
            let (mut lo, mut hi) = (Duration::MAX, Duration::ZERO);
            for _ in 0..5_000 {
                // Decorrelated modes draw from their state: carry a chain at index n.
                let mut s = Schedule::at(n);
                let d = p.next_delay(&mut s, &mut rng);
                assert!(
                    d >= floor && d <= top,
                    "{jitter} n={n}: {d:?} not in [{floor:?}, {top:?}]"
                );
                lo = lo.min(d);
                hi = hi.max(d);
            }
            if matches!(jitter, Jitter::Full | Jitter::Equal)
                && envelope > Duration::from_millis(10)
            {
                // The draws actually use the range: within 1 % of both ends.
                let width = top - floor;
                assert!(lo - floor < width / 100, "{jitter} n={n}: lowest {lo:?}");
                assert!(top - hi < width / 100, "{jitter} n={n}: highest {hi:?}");
            }
        }
    }
}

/// Long decorrelated chains (the state carries across draws) stay in [base, cap].
#[test]
fn long_decorrelated_chains_stay_in_range() {
    for jitter in [Jitter::Decorrelated, Jitter::DecorrelatedWindow] {
        let p = Policy::builder().jitter(jitter).build().unwrap();
        let mut rng = Rng::with_seed(77);
        for _ in 0..200 {
            let mut s = Schedule::new();
            for _ in 0..200 {
                let d = p.next_delay(&mut s, &mut rng);
                assert!(d >= p.base() && d <= p.cap(), "{jitter}: {d:?}");
            }
        }
    }
}
