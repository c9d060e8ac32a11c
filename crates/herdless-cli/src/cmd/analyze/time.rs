//! Timestamps of log lines, parsed for speed.
//!
//! A log of ten million lines has ten million timestamps; a general parser
//! that allocates or validates calendars through a table costs more than the
//! rest of the line. This one reads the fixed layout of RFC 3339 in place
//! (`2026-12-01T23:58:34.123456Z`, `…+02:00`), accepting what the common
//! JSON formatters write besides: a space for the `T`, a comma for the
//! fraction separator (Python's `asctime`), no offset (read as UTC), any
//! number of fraction digits (nanoseconds kept, the rest dropped). Numbers
//! are seconds since the Unix epoch (`time.time()`). The result is
//! nanoseconds since the epoch as `i64` (years 1678 to 2262); anything else
//! is `None`, never a panic.

/// Nanoseconds since the Unix epoch of an RFC 3339 timestamp (see the module).
pub(crate) fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 19 {
        return None;
    }
    let num = |i: usize, n: usize| -> Option<i64> {
        let mut v = 0i64;
        for &c in b.get(i..i + n)? {
            if !c.is_ascii_digit() {
                return None;
            }
            v = v * 10 + i64::from(c - b'0');
        }
        Some(v)
    };
    if b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    // 60: a leap second, read as the next second's start.
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut i = 19;
    let mut frac_ns = 0i64;
    if matches!(b.get(i), Some(b'.' | b',')) {
        i += 1;
        let start = i;
        let mut scale = 100_000_000i64;
        while let Some(&c) = b.get(i).filter(|c| c.is_ascii_digit()) {
            frac_ns += i64::from(c - b'0') * scale;
            scale /= 10;
            i += 1;
        }
        if i == start {
            return None;
        }
    }
    let offset_s = match b.get(i) {
        None => 0,
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(&sign @ (b'+' | b'-')) if b.len() == i + 6 && b[i + 3] == b':' => {
            let (h, m) = (num(i + 1, 2)?, num(i + 4, 2)?);
            if h > 23 || m > 59 {
                return None;
            }
            let o = h * 3_600 + m * 60;
            if sign == b'+' { o } else { -o }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_s;
    secs.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

/// Nanoseconds since the epoch of a number of seconds since the epoch.
pub(crate) fn from_epoch_seconds(s: f64) -> Option<i64> {
    let ns = s * 1e9;
    (ns.is_finite() && ns.abs() < 9.2e18).then_some(ns as i64)
}

/// An instant (nanoseconds since the epoch) as RFC 3339 in UTC, milliseconds.
pub(crate) fn format(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let ms = ns.rem_euclid(1_000_000_000) / 1_000_000;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn agrees_with_humantime_on_what_herdless_writes() {
        let mut rng = herdless::Rng::with_seed(5);
        for _ in 0..2_000 {
            let ns = rng.next_u64() % 4_000_000_000_000_000_000;
            let t = UNIX_EPOCH + Duration::from_nanos(ns);
            for s in [
                humantime::format_rfc3339_micros(t).to_string(),
                humantime::format_rfc3339_nanos(t).to_string(),
                humantime::format_rfc3339_seconds(t).to_string(),
            ] {
                let want = humantime::parse_rfc3339(&s).unwrap();
                let got = parse_rfc3339(&s).unwrap();
                let want = want.duration_since(UNIX_EPOCH).unwrap().as_nanos() as i64;
                assert_eq!(got, want, "{s}");
                assert_eq!(
                    parse_rfc3339(&format(got)).map(|x| x / 1_000_000),
                    Some(got / 1_000_000)
                );
            }
        }
    }

    #[test]
    fn offsets_other_layouts_and_garbage() {
        let z = parse_rfc3339("2026-12-01T23:58:34.123Z").unwrap();
        assert_eq!(parse_rfc3339("2026-12-02T01:58:34.123+02:00"), Some(z));
        assert_eq!(parse_rfc3339("2026-12-01T20:58:34.123-03:00"), Some(z));
        assert_eq!(parse_rfc3339("2026-12-01 23:58:34,123"), Some(z));
        assert_eq!(
            parse_rfc3339("2024-02-29T00:00:00Z").map(|x| x > 0),
            Some(true)
        );
        for bad in [
            "",
            "2026-12-01",
            "2026-13-01T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2026-12-01T24:00:00Z",
            "2026-12-01T00:00:00.Z",
            "2026-12-01T00:00:00+0200",
            "2026-12-01T00:00:00Zjunk",
            "2026-12-01T00:00:00+25:00",
            "२०२६-12-01T00:00:00Z",
            "abcd-ef-ghTij:kl:mnZ",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad:?}");
        }
    }
}

/// The examples that were this file's doc tests (its items are private to
/// the crate, where doc tests cannot reach).
#[cfg(test)]
mod examples {
    #[allow(unused_imports)]
    use super::*;

    #[test]
    fn parse_rfc3339_example() -> Result<(), Box<dyn std::error::Error>> {
        use crate::cmd::analyze::time::parse_rfc3339;
        assert_eq!(parse_rfc3339("1970-01-01T00:00:01Z"), Some(1_000_000_000));
        assert_eq!(
            parse_rfc3339("1970-01-01T01:00:00.5+01:00"),
            Some(500_000_000)
        );
        assert_eq!(parse_rfc3339("2026-02-30T00:00:00Z"), None);
        Ok(())
    }

    #[test]
    fn from_epoch_seconds_example() -> Result<(), Box<dyn std::error::Error>> {
        assert_eq!(
            crate::cmd::analyze::time::from_epoch_seconds(1.5),
            Some(1_500_000_000)
        );
        assert_eq!(
            crate::cmd::analyze::time::from_epoch_seconds(f64::NAN),
            None
        );
        Ok(())
    }

    #[test]
    fn format_example() -> Result<(), Box<dyn std::error::Error>> {
        assert_eq!(
            crate::cmd::analyze::time::format(1_500_000_000),
            "1970-01-01T00:00:01.500Z"
        );
        Ok(())
    }
}
