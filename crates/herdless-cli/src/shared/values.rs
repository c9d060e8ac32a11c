//! The syntax of the values herdless reads from flags, `HERDLESS_*`
//! variables and policy files alike: durations (and their one range), seeds,
//! jitter mode names.

use std::time::Duration;

use herdless::Jitter;

/// A duration in human form: `500ms`, `2s`, `1m`, `1h 30m`; a bare number is seconds.
/// The library's syntax ([`herdless::policy::serde::parse_duration`]), shared
/// with the policy file, and one range for every duration flag and key:
/// [`duration_in_range`].
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = herdless::policy::serde::parse_duration(s).map_err(|e| e.to_string())?;
    duration_in_range(d).map_err(|e| format!("{:?} {e}", s.trim()))
}

/// The range of every duration herdless reads (flags, `HERDLESS_*`
/// variables, policy-file keys): 0 to [`herdless::policy::MAX_DURATION`], `u64::MAX`
/// nanoseconds (about 584 years), what the library's timers and policies
/// hold. Flags with a narrower range (a `--timeout` above zero, the stub's
/// `--horizon`) check it on top.
///
/// # Errors
///
/// `d` is past the range; the message gives it.
pub(crate) fn duration_in_range(d: Duration) -> Result<Duration, String> {
    if d > herdless::policy::MAX_DURATION {
        Err(format!(
            "is too large (at most {} s: u64 nanoseconds, about 584 years)",
            herdless::policy::MAX_DURATION.as_secs()
        ))
    } else {
        Ok(d)
    }
}

/// A seed: a whole number 0 to `u64::MAX`, decimal or `0x` hex
/// (`18446744073709551615`, `0xffffffffffffffff`), for `--seed`,
/// `HERDLESS_SEED` and the policy file's `seed` alike.
///
/// # Errors
///
/// Not such a number; the message gives the range.
pub(crate) fn parse_seed(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse::<u64>(),
    };
    parsed.map_err(|_| {
        format!("{t:?} is not a seed (a whole number 0 to 18446744073709551615, decimal or 0x hex)")
    })
}

/// Parses a jitter mode name for clap.
pub(crate) fn parse_jitter(s: &str) -> Result<Jitter, String> {
    s.parse::<Jitter>().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_human_form() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("-1").is_err());
        assert!(parse_duration("NaN").is_err());
        assert!(parse_duration("1e400").is_err());
        assert!(parse_duration("soon").is_err());
        // One range for every duration: up to u64 nanoseconds, no further.
        let max = herdless::policy::MAX_DURATION;
        assert_eq!(parse_duration("18446744073.709551615s"), Ok(max));
        for past in [
            "18446744074",
            "585y",
            "10000000000d",
            "18446744073s 709551616ns",
        ] {
            let e = parse_duration(past).unwrap_err();
            assert!(
                e.contains("too large (at most 18446744073 s"),
                "{past}: {e}"
            );
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
    fn parse_duration_example() -> Result<(), Box<dyn std::error::Error>> {
        use crate::shared::values::parse_duration;
        assert_eq!(
            parse_duration("1ns"),
            Ok(std::time::Duration::from_nanos(1))
        );
        assert_eq!(
            parse_duration("600y").unwrap_err(),
            "\"600y\" is too large (at most 18446744073 s: u64 nanoseconds, about 584 years)"
        );
        Ok(())
    }

    #[test]
    fn parse_seed_example() -> Result<(), Box<dyn std::error::Error>> {
        use crate::shared::values::parse_seed;
        assert_eq!(parse_seed("42"), Ok(42));
        assert_eq!(parse_seed("0xFFFFFFFFFFFFFFFF"), Ok(u64::MAX));
        assert!(
            parse_seed("-1")
                .unwrap_err()
                .contains("0 to 18446744073709551615")
        );
        Ok(())
    }
}
