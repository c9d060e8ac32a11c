//! `grpc-timeout`: how long the server has for a call, as gRPC's HTTP/2
//! protocol writes it: at most eight ASCII digits and a unit, `H` (hours),
//! `M` (minutes), `S` (seconds), `m` (milliseconds), `u` (microseconds) or
//! `n` (nanoseconds).
//!
//! [`format_timeout`] writes an attempt's [remaining
//! time](crate::Attempt::remaining) in the finest unit that holds it in eight
//! digits, rounded *down* (a server told a little less than is left ends
//! within the caller's deadline, never after it). The tower
//! [`GrpcTimeout`](crate::adapters::tower::GrpcTimeout) sets it on each retry
//! (features `tower` + `grpc`); with tonic, `tonic::Request::set_timeout`
//! does the same from a `Duration`.

use std::time::Duration;

/// The header gRPC carries a call's timeout in.
///
/// ```
/// assert_eq!(herdless::grpc::TIMEOUT_HEADER, "grpc-timeout");
/// ```
pub const TIMEOUT_HEADER: &str = "grpc-timeout";

/// The largest value the header holds in one unit: eight digits.
const MAX_VALUE: u128 = 99_999_999;

/// `d` as a `grpc-timeout` value: the finest unit whose value fits in eight
/// digits, rounded down; durations beyond 99 999 999 hours are written as
/// that.
///
/// ```
/// use std::time::Duration;
/// use herdless::grpc::format_timeout;
/// assert_eq!(format_timeout(Duration::from_millis(1500)), "1500000u");
/// assert_eq!(format_timeout(Duration::from_nanos(250)), "250n");
/// assert_eq!(format_timeout(Duration::from_secs(120)), "120000m");
/// assert_eq!(format_timeout(Duration::from_secs(3 * 86_400)), "259200S");
/// assert_eq!(format_timeout(Duration::ZERO), "0n");
/// assert_eq!(format_timeout(Duration::MAX), "99999999H");
/// ```
pub fn format_timeout(d: Duration) -> String {
    let ns = d.as_nanos();
    const UNITS: [(u128, char); 6] = [
        (1, 'n'),
        (1_000, 'u'),
        (1_000_000, 'm'),
        (1_000_000_000, 'S'),
        (60_000_000_000, 'M'),
        (3_600_000_000_000, 'H'),
    ];
    for (per, unit) in UNITS {
        let value = ns / per;
        if value <= MAX_VALUE {
            return format!("{value}{unit}");
        }
    }
    format!("{MAX_VALUE}H")
}

/// Reads a `grpc-timeout` value (what a server sees); `None` when it is not
/// one to eight ASCII digits and a unit.
///
/// ```
/// use std::time::Duration;
/// use herdless::grpc::parse_timeout;
/// assert_eq!(parse_timeout(b"1500000u"), Some(Duration::from_millis(1500)));
/// assert_eq!(parse_timeout(b"2H"), Some(Duration::from_secs(7200)));
/// assert_eq!(parse_timeout(b"123456789n"), None); // nine digits
/// assert_eq!(parse_timeout(b"5s"), None); // seconds are `S`
/// ```
pub fn parse_timeout(value: &[u8]) -> Option<Duration> {
    let (&unit, digits) = value.split_last()?;
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = digits
        .iter()
        .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    Some(match unit {
        b'n' => Duration::from_nanos(n),
        b'u' => Duration::from_micros(n),
        b'm' => Duration::from_millis(n),
        b'S' => Duration::from_secs(n),
        b'M' => Duration::from_secs(n * 60),
        b'H' => Duration::from_secs(n * 3600),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatted_values_read_back_within_one_unit_below() {
        for ns in [
            0u64,
            1,
            999,
            99_999_999,
            100_000_000,
            1_234_567_891,
            u64::MAX,
        ] {
            let d = Duration::from_nanos(ns);
            let text = format_timeout(d);
            assert!(text.len() <= 9, "{text}");
            let back = parse_timeout(text.as_bytes()).unwrap();
            let unit = parse_timeout(format!("1{}", &text[text.len() - 1..]).as_bytes()).unwrap();
            assert!(back <= d && d - back < unit, "{text} for {d:?}");
        }
    }
}
