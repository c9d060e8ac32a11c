//! Every jitter mode keeps its documented bounds: for any valid policy, any
//! attempt number (including those near `u32::MAX`) and extreme durations, a
//! delay is never above the cap, never below the mode's floor, never above the
//! mode's ceiling for that attempt; and thousands of draws per attempt index
//! with the default policy stay in `[floor, min(cap, base · 2ⁿ)]`.

use std::time::Duration;

use herdless::policy::{MAX_DURATION, Schedule};
use herdless::{Jitter, Policy, Rng};
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

/// An independent reference for `base · mⁿ`: fixed point with 192 fraction
/// bits (`[u64; 4]`, little-endian, value `X / 2¹⁹²`, below 2⁶⁴), rounded down
/// for a lower bound and up for an upper bound, so the true value lies in
/// `[lower, upper]` (whose width is far below 2⁻¹⁵⁰).
mod reference {
    pub(crate) type Fixed = [u64; 4];

    /// `a · b`, rounded down or up; `None` at or above 2⁶⁴.
    fn mul(a: &Fixed, b: &Fixed, up: bool) -> Option<Fixed> {
        let mut p = [0u128; 8];
        for i in 0..4 {
            let mut carry = 0u128;
            for j in 0..4 {
                let t = u128::from(a[i]) * u128::from(b[j]) + p[i + j] + carry;
                p[i + j] = t & u128::from(u64::MAX);
                carry = t >> 64;
            }
            p[i + 4] += carry;
        }
        if p[7] != 0 {
            return None;
        }
        let inexact = p[..3].iter().any(|&l| l != 0);
        let mut out = [p[3] as u64, p[4] as u64, p[5] as u64, p[6] as u64];
        if up && inexact {
            for limb in out.iter_mut() {
                let (v, overflow) = limb.overflowing_add(1);
                *limb = v;
                if !overflow {
                    return Some(out);
                }
            }
            return None;
        }
        Some(out)
    }

    /// `m ∈ [1, 2)` exactly: `m = M / 2⁵²`, so `X = M · 2¹⁴⁰`.
    fn from_multiplier(m: f64) -> Fixed {
        assert!((1.0..2.0).contains(&m));
        let mant = (m.to_bits() & ((1u64 << 52) - 1)) | (1u64 << 52);
        let x = u128::from(mant) << 12; // · 2¹⁴⁰ = limb 2 shifted by 12
        [0, 0, x as u64, (x >> 64) as u64]
    }

    /// `[lower, upper]` of `base · mⁿ`; `None` for a bound at or above 2⁶⁴.
    pub(crate) fn bounds(base: u64, m: f64, n: u32) -> (Option<Fixed>, Option<Fixed>) {
        let pow = |up: bool| -> Option<Fixed> {
            let mut acc: Fixed = [0, 0, 0, 1];
            let mut p = from_multiplier(m);
            let mut rest = n;
            while rest != 0 {
                if rest & 1 == 1 {
                    acc = mul(&acc, &p, up)?;
                }
                rest >>= 1;
                if rest != 0 {
                    p = mul(&p, &p, up)?;
                }
            }
            mul(&acc, &[0, 0, 0, base], up)
        };
        (pow(false), pow(true))
    }
}

/// The documented accuracy of `Policy::ceiling`: `⌊base · mⁿ⌋` clamped to
/// `[base, cap]`, except within 2⁻⁷ ns of a whole nanosecond `k`, where `k` or
/// `k − 1` (clamped).
fn assert_documented_ceiling(p: &Policy, n: u32) -> Result<(), TestCaseError> {
    const TOL: f64 = 1.0 / 128.0; // 2⁻⁷ ns
    let (base, cap) = (p.base().as_nanos() as u64, p.cap().as_nanos() as u64);
    let got = p.ceiling(n).as_nanos() as u64;
    let clamp = |k: u128| k.min(u128::from(cap)).max(u128::from(base)) as u64;
    let (lower, upper) = reference::bounds(base, p.multiplier(), n);
    let Some(lower) = lower else {
        // At or above 2⁶⁴ ns: past every cap.
        prop_assert_eq!(got, cap);
        return Ok(());
    };
    let frac = |x: &reference::Fixed| x[2] as f64 / 18_446_744_073_709_551_616.0;
    let (lo_int, lo_frac) = (u128::from(lower[3]), frac(&lower));
    let (hi_int, hi_frac) = match upper {
        Some(u) => (u128::from(u[3]), frac(&u)),
        None => (u128::from(u64::MAX) + 1, 0.0),
    };
    if lo_int == hi_int && lo_frac > TOL && hi_frac < 1.0 - TOL {
        prop_assert_eq!(got, clamp(lo_int), "n={} exact floor", n);
    } else {
        let k = if lo_frac > 0.5 { lo_int + 1 } else { lo_int };
        prop_assert!(
            got == clamp(k) || got == clamp(k - 1),
            "n={}: {} not in {{{}, {}}}",
            n,
            got,
            clamp(k - 1),
            clamp(k)
        );
    }
    Ok(())
}

/// Multipliers within 10⁻⁶ of 1 (down to the smallest f64 above 1) and bases
/// and caps of any size: the regime where `f64::powi` drifted.
fn near_one_policy() -> impl Strategy<Value = Policy> {
    let multiplier = prop_oneof![
        (1u64..=4_503_599_627).prop_map(|k| 1.0 + k as f64 * f64::EPSILON), // 1 + k·2⁻⁵², up to 1 + 1e-6
        (0.0f64..=1.0).prop_map(|f| 1.0 + (1e-6 * f).max(f64::EPSILON)),
        Just(1.000_000_013_038_516),
        Just(1.0 + 2f64.powi(-24)),
    ];
    let base = prop_oneof![Just(1u64), 1u64..1_000_000, 1u64..=u64::MAX / 2];
    (base, multiplier, any::<u64>()).prop_map(|(base, m, c)| {
        let cap = if c % 3 == 0 { u64::MAX } else { base.max(c) };
        Policy::builder()
            .base(Duration::from_nanos(base))
            .cap(Duration::from_nanos(cap))
            .multiplier(m)
            .build()
            .expect("a valid policy")
    })
}

fn large_index() -> impl Strategy<Value = u32> {
    prop_oneof![
        any::<u32>(),
        (i32::MAX as u32 - 1_000)..=(i32::MAX as u32 + 1_000),
        (u32::MAX - 1_000)..=u32::MAX - 1,
        1_000_000u32..1_000_000_000,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3_000))]

    /// `ceiling(n) ≤ ceiling(n + 1)` for multipliers in `(1, 1 + 10⁻⁶]`,
    /// including across `n = 2³¹` where the old `powi`/`powf` switch dropped.
    #[test]
    fn ceiling_never_decreases_for_multipliers_near_one(p in near_one_policy(), n in large_index()) {
        let n = n.min(u32::MAX - 1);
        prop_assert!(p.ceiling(n) <= p.ceiling(n + 1), "n={}: {:?} > {:?}", n, p.ceiling(n), p.ceiling(n + 1));
    }

    /// The ceiling is as accurate as documented, against an independent
    /// fixed-point reference.
    #[test]
    fn ceiling_is_within_the_documented_accuracy(p in near_one_policy(), n in large_index()) {
        assert_documented_ceiling(&p, n)?;
    }
}

/// The literal monotonicity case: base 1 ns, cap 1 h, multiplier
/// 1.000000013038516 used to give 1446.256829557 s at n = 2³¹ − 1 and
/// 1446.256800292 s at n = 2³¹.
#[test]
fn ceiling_does_not_drop_across_two_to_the_31() {
    let p = Policy::builder()
        .base(Duration::from_nanos(1))
        .cap(Duration::from_secs(3600))
        .multiplier(1.000_000_013_038_516)
        .build()
        .unwrap();
    let before = p.ceiling(i32::MAX as u32);
    let after = p.ceiling(i32::MAX as u32 + 1);
    assert!(before <= after, "{before:?} > {after:?}");
    for n in (i32::MAX as u32 - 50)..(i32::MAX as u32 + 50) {
        assert!(p.ceiling(n) <= p.ceiling(n + 1), "n={n}");
    }
    assert_documented_ceiling(&p, i32::MAX as u32).unwrap();
    assert_documented_ceiling(&p, i32::MAX as u32 + 1).unwrap();
}

/// The literal accuracy case: base 1 ns, cap `u64::MAX` ns, m = 1 + 2⁻²⁴,
/// n = 369 033 424: the true value is 3 570 978 526.5… ns, so the ceiling is
/// 3 570 978 526 ns (it was 3 570 978 525).
#[test]
fn ceiling_is_exact_for_a_multiplier_near_one_at_a_large_index() {
    let p = Policy::builder()
        .base(Duration::from_nanos(1))
        .cap(MAX_DURATION)
        .multiplier(1.0 + 2f64.powi(-24))
        .build()
        .unwrap();
    let n = 369_033_424;
    let (lower, upper) = reference::bounds(1, p.multiplier(), n);
    assert_eq!(lower.unwrap()[3], 3_570_978_526);
    assert_eq!(upper.unwrap()[3], 3_570_978_526);
    assert_eq!(p.ceiling(n), Duration::from_nanos(3_570_978_526));
}
