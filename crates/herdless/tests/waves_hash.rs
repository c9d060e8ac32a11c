//! The cohort hash of a plan of waves: balanced over the ids fleets really
//! have, and independent between plans.
//!
//! Each check is a chi-square test at the 1 % level: **balance** (the
//! waves' sizes against `N / K`, `K − 1` degrees of freedom) and
//! **independence** (the table of a caller's wave in one plan against its
//! wave in another, `(K − 1)²` degrees of freedom). A sound hash fails a
//! 1 % test one time in a hundred by chance, so each property is checked
//! over many salts and the share of failures is asserted to be what
//! chance gives: at most 8 in 200 (a binomial of 200 draws at 1 % exceeds
//! 8 with probability 3·10⁻⁴; a biased hash fails nearly all of them). The
//! salts are fixed: the outcome is the same on every run. The figures print
//! with `--nocapture`.
//!
//! Id families: sequential worker names (`worker-1` …), UUIDs, sequential
//! IPv4 and IPv6 addresses (the adversarial ones: ids that differ in their
//! last characters only).

use herdless::Rng;
use herdless::pushback::allocator::caller_key;
use herdless::pushback::waves::WavePlan;

/// The 99th percentile of chi-square with `k` degrees of freedom
/// (Wilson–Hilferty; within 0.5 % of the exact value from 9 on).
fn chi2_99(k: f64) -> f64 {
    let z = 2.326_347_874;
    let a = 2.0 / (9.0 * k);
    k * (1.0 - a + z * a.sqrt()).powi(3)
}

fn sequential(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("worker-{i}")).collect()
}

fn uuids(n: usize) -> Vec<String> {
    let mut rng = Rng::with_seed(0x5eed);
    (0..n)
        .map(|_| {
            let (a, b) = (rng.next_u64(), rng.next_u64());
            format!(
                "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
                a >> 32,
                (a >> 16) & 0xffff,
                a & 0xfff,
                0x8000 | (b >> 48) & 0x3fff,
                b & 0xffff_ffff_ffff
            )
        })
        .collect()
}

fn ipv4(n: usize) -> Vec<String> {
    (0..n as u32)
        .map(|i| {
            let a = 0x0a00_0001 + i; // 10.0.0.1 and on
            format!(
                "{}.{}.{}.{}",
                a >> 24,
                (a >> 16) & 255,
                (a >> 8) & 255,
                a & 255
            )
        })
        .collect()
}

fn ipv6(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("2001:db8::{i:x}")).collect()
}

fn plan(waves: u32, salt: u64) -> WavePlan {
    WavePlan::new(0, waves, 100, salt).unwrap()
}

/// Chi-square of the waves' sizes.
fn balance(keys: &[u64], p: WavePlan) -> f64 {
    let k = p.waves() as usize;
    let mut counts = vec![0u64; k];
    for &key in keys {
        counts[p.wave_of(key) as usize] += 1;
    }
    let expected = keys.len() as f64 / k as f64;
    counts
        .iter()
        .map(|&c| (c as f64 - expected).powi(2) / expected)
        .sum()
}

/// Chi-square of independence between two assignments of the same keys.
fn independence(keys: &[u64], a: impl Fn(u64) -> usize, b: impl Fn(u64) -> usize, k: usize) -> f64 {
    let mut table = vec![0u64; k * k];
    let (mut rows, mut cols) = (vec![0u64; k], vec![0u64; k]);
    for &key in keys {
        let (i, j) = (a(key), b(key));
        table[i * k + j] += 1;
        rows[i] += 1;
        cols[j] += 1;
    }
    let n = keys.len() as f64;
    let mut chi = 0.0;
    for i in 0..k {
        for j in 0..k {
            let e = rows[i] as f64 * cols[j] as f64 / n;
            if e > 0.0 {
                chi += (table[i * k + j] as f64 - e).powi(2) / e;
            }
        }
    }
    chi
}

/// 200 fixed salts below 2⁴⁸.
fn salts() -> Vec<u64> {
    let mut rng = Rng::with_seed(0xa5a5);
    (0..200).map(|_| rng.next_u64() >> 16).collect()
}

const MOST_FAILURES: usize = 8;

#[test]
fn waves_are_balanced_over_sequential_ids_uuids_and_addresses() {
    let n = 20_000;
    for (family, ids) in [
        ("worker-N", sequential(n)),
        ("uuid", uuids(n)),
        ("ipv4", ipv4(n)),
        ("ipv6", ipv6(n)),
    ] {
        let keys: Vec<u64> = ids.iter().map(|id| caller_key(id.as_bytes())).collect();
        for waves in [10u32, 37] {
            let limit = chi2_99(f64::from(waves - 1));
            let chis: Vec<f64> = salts()
                .iter()
                .map(|&s| balance(&keys, plan(waves, s)))
                .collect();
            let failures = chis.iter().filter(|&&c| c > limit).count();
            let mean = chis.iter().sum::<f64>() / chis.len() as f64;
            println!(
                "balance {family:>8} K={waves:>2}: {failures}/200 salts above the 1 % limit {limit:.2}; \
                 mean chi-square {mean:.2} (expected {})",
                waves - 1
            );
            assert!(
                failures <= MOST_FAILURES,
                "{family} K={waves}: {failures} failures"
            );
        }
    }
}

#[test]
fn the_waves_of_two_salts_are_independent_and_independent_of_an_unsalted_hash() {
    let n = 20_000;
    let k = 10usize;
    let limit = chi2_99(((k - 1) * (k - 1)) as f64);
    for (family, ids) in [("worker-N", sequential(n)), ("ipv4", ipv4(n))] {
        let keys: Vec<u64> = ids.iter().map(|id| caller_key(id.as_bytes())).collect();
        let s = salts();
        let pairs: Vec<f64> = s
            .chunks(2)
            .map(|pair| {
                let (a, b) = (plan(k as u32, pair[0]), plan(k as u32, pair[1]));
                independence(
                    &keys,
                    |x| a.wave_of(x) as usize,
                    |x| b.wave_of(x) as usize,
                    k,
                )
            })
            .collect();
        let failures = pairs.iter().filter(|&&c| c > limit).count();
        println!(
            "independence {family:>8} between salts: {failures}/100 pairs above the 1 % limit {limit:.2}"
        );
        assert!(failures <= 6, "{family}: {failures} of 100 pairs"); // binomial(100, 1 %) > 6: 6·10⁻⁵
        // Against a load balancer's unsalted `key mod K`.
        let unsalted: Vec<f64> = s
            .iter()
            .take(100)
            .map(|&salt| {
                let p = plan(k as u32, salt);
                independence(
                    &keys,
                    |x| p.wave_of(x) as usize,
                    |x| (x % k as u64) as usize,
                    k,
                )
            })
            .collect();
        let failures = unsalted.iter().filter(|&&c| c > limit).count();
        println!("independence {family:>8} from key mod K: {failures}/100 salts above the limit");
        assert!(failures <= 6, "{family}: {failures} of 100 salts");
    }
}

#[test]
fn another_salt_brings_other_callers_first() {
    // The first wave of one plan shares a tenth of its callers with the
    // first wave of another (independence), not all of them (the bug of an
    // unsalted cohort hash).
    let keys: Vec<u64> = sequential(10_000)
        .iter()
        .map(|id| caller_key(id.as_bytes()))
        .collect();
    let (a, b) = (plan(10, 1), plan(10, 2));
    let first_a = keys.iter().filter(|&&k| a.wave_of(k) == 0).count();
    let both = keys
        .iter()
        .filter(|&&k| a.wave_of(k) == 0 && b.wave_of(k) == 0)
        .count();
    let share = both as f64 / first_a as f64;
    println!("first wave shared between two salts: {share:.3} (independence: 0.100)");
    assert!((0.07..0.13).contains(&share), "{share}");
}
