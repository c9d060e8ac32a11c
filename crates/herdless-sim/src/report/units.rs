//! How durations and numbers are written for people: one rule for every
//! report of herdless, the simulator's tables, `herdless check` and the text
//! retry events of `exec`, `get`, `fleet` and `worker` alike.
//!
//! * [`duration`]: the unit follows the size, and the precision is enough to
//!   tell any two policies' values apart at a glance: whole nanoseconds below
//!   1 µs (`1 ns`), then up to three decimals of µs (`1.5 µs`), of ms
//!   (`20.5 ms`) and of seconds up to two minutes (`1.5 s`, `120 s`); above,
//!   at most three whole units from years (365.25 days, as the duration
//!   parser reads `y`) down to seconds (`2m 10s`, `1h 30m`, `3d 4h 5m`). A
//!   duration at or past the u64-nanosecond limit of every herdless timer
//!   ([`herdless::policy::MAX_DURATION`], about 584.5 years) is where sums saturate,
//!   so it is written `more than 584 years`, never as a number that reads as
//!   exact.
//! * [`seconds_value`]: a number of seconds for a `*_s=` field of a text
//!   line: millisecond precision (`1.500`), and three significant digits
//!   below a millisecond (`0.000000001`), so a nanosecond delay is not `0.000`.
//! * [`number`]: a factor or count as Rust writes it (`2`, `0.1`, `1000`),
//!   in scientific notation outside `1e-4..1e9` (`1e308`, not 309 digits).

use std::time::Duration;

use herdless::policy::MAX_DURATION;

/// Seconds in a year as the duration parser reads `y`: 365.25 days.
const YEAR_S: u64 = 31_557_600;

/// Whole units above two minutes: name and length in seconds.
const UNITS: [(&str, u64); 5] = [
    ("y", YEAR_S),
    ("d", 86_400),
    ("h", 3_600),
    ("m", 60),
    ("s", 1),
];

/// A duration for people (the module's rule).
///
/// ```
/// use std::time::Duration;
/// use herdless_sim::report::units::duration;
/// assert_eq!(duration(Duration::from_nanos(1)), "1 ns");
/// assert_eq!(duration(Duration::from_nanos(1_500)), "1.5 µs");
/// assert_eq!(duration(Duration::from_micros(20_500)), "20.5 ms");
/// assert_eq!(duration(Duration::from_millis(1_500)), "1.5 s");
/// assert_eq!(duration(Duration::from_secs(120)), "120 s");
/// assert_eq!(duration(Duration::from_secs(130)), "2m 10s");
/// assert_eq!(duration(herdless::policy::MAX_DURATION), "more than 584 years");
/// ```
pub fn duration(d: Duration) -> String {
    if d >= MAX_DURATION {
        return "more than 584 years".to_owned();
    }
    let ns = d.as_nanos();
    if ns < 1_000 {
        return format!("{ns} ns");
    }
    if ns < 1_000_000 {
        return format!("{} µs", decimal(ns, 3));
    }
    let us = div_round(ns, 1_000);
    if us < 1_000_000 {
        return format!("{} ms", decimal(us, 3));
    }
    let ms = div_round(ns, 1_000_000);
    if ms <= 120_000 {
        return format!("{} s", decimal(ms, 3));
    }
    // Whole seconds, in the three units from the largest one present down.
    let mut left = div_round(ns, 1_000_000_000) as u64;
    let first = UNITS.iter().position(|&(_, len)| left >= len).unwrap_or(4);
    let mut parts = Vec::new();
    for &(name, len) in &UNITS[first..(first + 3).min(UNITS.len())] {
        let n = left / len;
        left %= len;
        if n > 0 {
            parts.push(format!("{n}{name}"));
        }
    }
    parts.join(" ")
}

/// `s` seconds for people, as [`duration`]; a negative or NaN value is
/// `0 ns`, one past every timer's range `more than 584 years`.
///
/// ```
/// use herdless_sim::report::units::seconds;
/// assert_eq!(seconds(0.1), "100 ms");
/// assert_eq!(seconds(5.0), "5 s");
/// assert_eq!(seconds(f64::INFINITY), "more than 584 years");
/// ```
pub fn seconds(s: f64) -> String {
    if s.is_nan() || s <= 0.0 {
        return duration(Duration::ZERO);
    }
    duration(Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX))
}

/// `s` seconds as the number of a `*_s=` text field (the module's rule).
///
/// ```
/// use herdless_sim::report::units::seconds_value;
/// assert_eq!(seconds_value(1.5), "1.500");
/// assert_eq!(seconds_value(0.0), "0.000");
/// assert_eq!(seconds_value(1e-9), "0.000000001");
/// assert_eq!(seconds_value(0.00025), "0.00025");
/// ```
pub fn seconds_value(s: f64) -> String {
    if !s.is_finite() || s == 0.0 || s.abs() >= 0.000_999_5 {
        return format!("{s:.3}");
    }
    // Three significant digits: the first is at 10^floor(log10 |s|).
    let decimals = (-s.abs().log10().floor()) as usize + 2;
    let text = format!("{s:.decimals$}");
    text.trim_end_matches('0').to_owned()
}

/// A factor or count for people (the module's rule).
///
/// ```
/// use herdless_sim::report::units::number;
/// assert_eq!(number(2.0), "2");
/// assert_eq!(number(0.1), "0.1");
/// assert_eq!(number(1e308), "1e308");
/// assert_eq!(number(1.5e-7), "1.5e-7");
/// ```
pub fn number(x: f64) -> String {
    if x == 0.0 || !x.is_finite() || (1e-4..1e9).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// `n / d`, rounded half up.
fn div_round(n: u128, d: u128) -> u128 {
    (n + d / 2) / d
}

/// `n / 10^places` with `places` decimals, trailing zeros dropped.
fn decimal(n: u128, places: u32) -> String {
    let scale = 10u128.pow(places);
    let (whole, frac) = (n / scale, n % scale);
    if frac == 0 {
        return whole.to_string();
    }
    let frac = format!("{frac:0width$}", width = places as usize);
    format!("{whole}.{}", frac.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_size_keeps_its_precision() {
        let d = |ns: u64| duration(Duration::from_nanos(ns));
        assert_eq!(d(0), "0 ns");
        assert_eq!(d(999), "999 ns");
        assert_eq!(d(1_000), "1 µs");
        assert_eq!(d(999_999), "999.999 µs");
        assert_eq!(d(1_000_000), "1 ms");
        assert_eq!(d(1_000_400), "1 ms", "sub-µs rounded off");
        assert_eq!(d(999_999_600), "1 s", "rounding moves up a unit");
        assert_eq!(d(250_000_000), "250 ms");
        assert_eq!(d(1_234_567_890), "1.235 s");
        assert_eq!(d(120_000_400_000), "120 s");
        let s = |secs: u64| duration(Duration::from_secs(secs));
        assert_eq!(s(240), "4m");
        assert_eq!(s(600), "10m");
        assert_eq!(s(3_600 + 1_800 + 7), "1h 30m 7s");
        assert_eq!(s(86_400 + 60), "1d 1m");
        assert_eq!(s(86_400 + 1), "1d", "below the three units");
        assert_eq!(s(2 * 86_400 + 3_600 + 61), "2d 1h 1m");
        assert_eq!(s(500 * YEAR_S), "500y");
        assert_eq!(s(584 * YEAR_S), "584y");
        assert_eq!(
            duration(MAX_DURATION - Duration::from_nanos(1)),
            "584y 197d 23h"
        );
        assert_eq!(duration(MAX_DURATION), "more than 584 years");
        assert_eq!(duration(Duration::MAX), "more than 584 years");
    }

    #[test]
    fn seconds_of_a_report() {
        assert_eq!(seconds(0.02), "20 ms");
        assert_eq!(seconds(0.3), "300 ms", "f64 below 0.3 rounds back");
        assert_eq!(seconds(120.0), "120 s");
        assert_eq!(seconds(-1.0), "0 ns");
        assert_eq!(seconds(f64::NAN), "0 ns");
        assert_eq!(seconds(1e30), "more than 584 years");
    }

    #[test]
    fn field_values_and_numbers() {
        assert_eq!(seconds_value(0.001), "0.001");
        assert_eq!(seconds_value(0.0009996), "0.001");
        assert_eq!(seconds_value(2.5e-7), "0.00000025");
        assert_eq!(seconds_value(12.3456), "12.346");
        assert_eq!(number(1000.0), "1000");
        assert_eq!(number(1e9), "1e9");
        assert_eq!(number(-1e308), "-1e308");
        assert_eq!(number(f64::INFINITY), "inf");
        assert_eq!(number(1e-300), "1e-300");
        assert_eq!(number(0.0001), "0.0001");
    }
}
