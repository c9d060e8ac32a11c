//! The ceiling's growth `base · mⁿ`, in double-double arithmetic.
//!
//! A plain `f64` power is not enough: `powi` loses about `n · 2⁻⁵³` of relative
//! accuracy (≈ 4·10⁻⁸ at `n` ≈ 3.7·10⁸), and neither `powi` nor `powf` is
//! guaranteed monotone in `n` for multipliers near 1. Here `mⁿ` is computed by
//! binary powering on double-doubles (an unevaluated sum `hi + lo` of two
//! `f64`, 106 significant bits). Each double-double product has a relative error
//! below `7 · 2⁻¹⁰⁶`, and binary powering compounds that at most `n − 1` times,
//! so for every `n ≤ u32::MAX`:
//!
//! * the computed `base · mⁿ` is within a relative `2⁻⁷¹` of the true value,
//!   i.e. within `2⁻⁷` ns below the cap (every value here is below `2⁶⁴` ns);
//! * it is strictly increasing in `n` when `m > 1`: consecutive true values
//!   differ by a factor `m ≥ 1 + 2⁻⁵²`, far more than twice the error;
//! * the floor to whole nanoseconds is taken exactly from `hi + lo`, so the
//!   ceiling is non-decreasing in `n`, and equals `⌊base · mⁿ⌋` unless the true
//!   value lies within `2⁻⁷` ns of a whole nanosecond.

/// `hi + lo` with `|lo| ≤ ulp(hi) / 2`.
#[derive(Debug, Clone, Copy)]
struct Dd {
    hi: f64,
    lo: f64,
}

const ONE: Dd = Dd { hi: 1.0, lo: 0.0 };

/// Above this growth the value is past every `u64` cap: stop multiplying (and
/// stay far from the splitting overflow near `2⁹⁹⁶`).
const BEYOND_U64: f64 = 36_893_488_147_419_103_232.0; // 2⁶⁵

/// `a + b = s + e` exactly, when `|a| ≥ |b|`.
fn quick_two_sum(a: f64, b: f64) -> Dd {
    let s = a + b;
    Dd {
        hi: s,
        lo: b - (s - a),
    }
}

/// Veltkamp split: `a = hi + lo` with both halves of at most 26 bits.
fn split(a: f64) -> (f64, f64) {
    const SPLITTER: f64 = 134_217_729.0; // 2²⁷ + 1
    let t = SPLITTER * a;
    let hi = t - (t - a);
    (hi, a - hi)
}

/// `a · b = p + e` exactly (Dekker; no fused multiply-add needed).
fn two_prod(a: f64, b: f64) -> Dd {
    let p = a * b;
    let (ah, al) = split(a);
    let (bh, bl) = split(b);
    let e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    Dd { hi: p, lo: e }
}

/// The double-double product (relative error below `7 · 2⁻¹⁰⁶`).
fn mul(x: Dd, y: Dd) -> Dd {
    let p = two_prod(x.hi, y.hi);
    let e = p.lo + (x.hi * y.lo + x.lo * y.hi);
    quick_two_sum(p.hi, e)
}

/// A `u64` as an exact double-double.
fn from_u64(v: u64) -> Dd {
    let hi = v as f64;
    // |v − hi| ≤ 2¹⁰, exact in i128 and in f64.
    let lo = (i128::from(v) - hi as i128) as f64;
    quick_two_sum(hi, lo)
}

/// `⌊hi + lo⌋`, exactly (saturating to `0..=u64::MAX`).
fn floor_u64(x: Dd) -> u64 {
    let fh = x.hi.floor();
    // `frac ∈ [0, 1)` and `1 − frac` are exact. An integral `hi` (all of them
    // from 2⁵² up) carries `lo`'s own floor; otherwise `|lo| < 1` and the sum
    // `frac + lo` only decides a carry of −1, 0 or +1.
    let frac = x.hi - fh;
    let carry = if frac == 0.0 {
        x.lo.floor()
    } else if x.lo < -frac {
        -1.0
    } else if x.lo >= 1.0 - frac {
        1.0
    } else {
        0.0
    };
    if fh.is_nan() || fh < 0.0 {
        return 0;
    }
    if fh >= 1e30 {
        return u64::MAX;
    }
    // Both integral and far below 2¹⁰⁰: exact in i128.
    let total = fh as i128 + carry as i128;
    total.clamp(0, i128::from(u64::MAX)) as u64
}

/// `min(limit, ⌊base · mⁿ⌋)` for `m ≥ 1`, computed as described in the module
/// documentation.
///
/// Inlined (every jittered delay asks for its ceiling): the first retry and
/// the default multiplier cost a few instructions and no call; other
/// multipliers call [`powered_ns`].
#[inline]
pub(super) fn grown_ns(base_ns: u64, m: f64, n: u32, limit: u64) -> u64 {
    if n == 0 {
        return base_ns.min(limit);
    }
    if m == 2.0 {
        // The default multiplier: a shift, exact (as the powering below is
        // for powers of two), without the double-double arithmetic.
        return if n < 64 && base_ns <= u64::MAX >> n {
            (base_ns << n).min(limit)
        } else {
            limit
        };
    }
    powered_ns(base_ns, m, n, limit)
}

/// [`grown_ns`] for `n ≥ 1` and any multiplier, by double-double powering.
#[inline(never)]
fn powered_ns(base_ns: u64, m: f64, n: u32, limit: u64) -> u64 {
    if m > BEYOND_U64 {
        return limit;
    }
    let mut acc = ONE;
    let mut power = Dd { hi: m, lo: 0.0 };
    let mut rest = n;
    while rest != 0 {
        if rest & 1 == 1 {
            acc = mul(acc, power);
            if acc.hi.is_nan() || acc.hi > BEYOND_U64 {
                return limit;
            }
        }
        rest >>= 1;
        if rest != 0 {
            power = mul(power, power);
            if power.hi.is_nan() || power.hi > BEYOND_U64 {
                return limit;
            }
        }
    }
    floor_u64(mul(from_u64(base_ns), acc)).min(limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubling_takes_the_shift_and_agrees_with_the_powering() {
        let powered = |base: u64, n: u32, limit: u64| {
            // The general path, with 2 written so that it is not taken for the shift.
            let two = f64::from_bits(2.0f64.to_bits());
            let mut acc = ONE;
            for _ in 0..n {
                acc = mul(acc, Dd { hi: two, lo: 0.0 });
                if acc.hi > BEYOND_U64 {
                    return limit;
                }
            }
            floor_u64(mul(from_u64(base), acc)).min(limit)
        };
        for base in [1, 7, 500_000_000, u64::MAX / 3, u64::MAX] {
            for n in [1, 2, 10, 33, 62, 63, 64, 65, 200] {
                for limit in [u64::MAX, 30_000_000_000] {
                    assert_eq!(
                        grown_ns(base, 2.0, n, limit),
                        powered(base, n, limit),
                        "{base} {n} {limit}"
                    );
                }
            }
        }
    }

    #[test]
    fn small_powers_are_exact() {
        assert_eq!(grown_ns(500_000_000, 2.0, 5, u64::MAX), 16_000_000_000);
        assert_eq!(grown_ns(1, 3.0, 40, u64::MAX), 3u64.pow(40));
        assert_eq!(grown_ns(7, 1.5, 3, u64::MAX), 23); // 23.625
        assert_eq!(grown_ns(u64::MAX, 1.0, u32::MAX, u64::MAX), u64::MAX);
        assert_eq!(grown_ns(u64::MAX - 1, 1.0, 9, u64::MAX), u64::MAX - 1);
        assert_eq!(grown_ns(1, 2.0, 64, u64::MAX), u64::MAX);
        assert_eq!(grown_ns(1, f64::MAX, u32::MAX, 99), 99);
    }

    #[test]
    fn the_floor_is_taken_exactly() {
        assert_eq!(
            floor_u64(Dd {
                hi: 4.0,
                lo: -1e-30
            }),
            3
        );
        assert_eq!(floor_u64(Dd { hi: 4.0, lo: 1e-30 }), 4);
        assert_eq!(
            floor_u64(Dd {
                hi: 4.5,
                lo: -1e-30
            }),
            4
        );
        assert_eq!(
            floor_u64(Dd {
                hi: 9_007_199_254_740_992.0,
                lo: -0.5
            }),
            9_007_199_254_740_991
        );
        assert_eq!(floor_u64(from_u64(u64::MAX - 1)), u64::MAX - 1);
        assert_eq!(
            floor_u64(from_u64(12_345_678_901_234_567)),
            12_345_678_901_234_567
        );
    }
}
