//! `Retry-After` (RFC 9110 section 10.2.3), parsed defensively.
//!
//! ```text
//! Retry-After = HTTP-date / delay-seconds
//! delay-seconds = 1*DIGIT
//! ```
//!
//! [`parse_retry_after`] turns a raw header value into the delay it asks for,
//! **relative to a `now` the caller passes in** (so tests and fuzzers control
//! the clock), or into a [`RetryAfterError`] saying why the value is ignored.
//! The three HTTP-date forms (IMF-fixdate, obsolete RFC 850, asctime) are parsed
//! by the maintained `httpdate` crate.
//!
//! # Hostile values
//!
//! Peers break on this header: an uncapped value parks a worker for hours, a
//! huge number overflows the sleep, a date in the past is read as "retry now"
//! (which brings the whole fleet back in one wave). Here every input of any
//! length is handled in one linear pass, without allocation, panic or overflow:
//!
//! | value | result | what the retrier does |
//! |---|---|---|
//! | `120`, ` 120 `, `0007` | `Ok(120 s)` | honors it, clamped to the policy's `max_retry_after` and spread |
//! | `99999999999999999999`, 8 KB of digits | `Ok(u64::MAX s)` (saturated) | clamps it to `max_retry_after`, then spreads it (+0 to 10 %) |
//! | a future HTTP-date (any of the three forms) | `Ok(date − now)` | honors it, clamped and spread |
//! | `0`, or a date equal to `now` | `Ok(0)` | falls back to the computed jitter (a fleet told "now" would return as one wave) |
//! | a date in the past | `Err(InPast)` | falls back to the computed jitter |
//! | `-5`, `1.5`, `soon`, a malformed date | `Err(Malformed)` | falls back to the computed jitter |
//! | empty or only whitespace | `Err(Empty)` | falls back to the computed jitter |
//! | non-ASCII bytes | `Err(NotAscii)` | falls back to the computed jitter |
//! | more than 64 bytes that are not all digits | `Err(TooLong)` | falls back to the computed jitter |
//!
//! Whether the server's delay or the jitter was used is visible in the
//! `retry_scheduled` event as `honored_retry_after`, and the clamped sleep as
//! `sleep_s`. Fractions (`1.5`) are not delay-seconds under the RFC and are
//! ignored rather than guessed at, as urllib3 does.

use std::fmt;
use std::time::{Duration, SystemTime};

/// The longest non-numeric value worth handing to the date parser: the longest
/// HTTP-date form (RFC 850 with "Wednesday") is 33 bytes.
const MAX_DATE_LEN: usize = 64;

/// Why a `Retry-After` value was ignored (the retrier then uses its computed
/// jitter).
///
/// ```
/// use herdless::http::{parse_retry_after, RetryAfterError};
/// let now = std::time::SystemTime::UNIX_EPOCH;
/// assert_eq!(parse_retry_after(b"-5", now), Err(RetryAfterError::Malformed));
/// assert_eq!(RetryAfterError::InPast.as_str(), "in_past");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RetryAfterError {
    /// Empty or only whitespace.
    Empty,
    /// Contains bytes outside ASCII.
    NotAscii,
    /// Longer than any HTTP-date and not all digits.
    TooLong,
    /// Neither delay-seconds nor an HTTP-date (negative, fractional, garbage).
    Malformed,
    /// An HTTP-date before `now`.
    InPast,
}

impl RetryAfterError {
    /// A short name: `empty`, `not_ascii`, `too_long`, `malformed`, `in_past`.
    ///
    /// ```
    /// assert_eq!(herdless::http::RetryAfterError::TooLong.as_str(), "too_long");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            RetryAfterError::Empty => "empty",
            RetryAfterError::NotAscii => "not_ascii",
            RetryAfterError::TooLong => "too_long",
            RetryAfterError::Malformed => "malformed",
            RetryAfterError::InPast => "in_past",
        }
    }
}

impl fmt::Display for RetryAfterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self {
            RetryAfterError::Empty => "empty Retry-After",
            RetryAfterError::NotAscii => "Retry-After is not ASCII",
            RetryAfterError::TooLong => "Retry-After is too long to be an HTTP-date",
            RetryAfterError::Malformed => "Retry-After is neither delay-seconds nor an HTTP-date",
            RetryAfterError::InPast => "Retry-After names a date in the past",
        };
        f.write_str(why)
    }
}

impl std::error::Error for RetryAfterError {}

/// Parses a `Retry-After` value into the delay it asks for, relative to `now`.
/// See the [module documentation](self) for every case. Never panics, for any
/// input and any `now`.
///
/// # Errors
///
/// A [`RetryAfterError`] when the value is to be ignored.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use herdless::http::{parse_retry_after, RetryAfterError};
///
/// // 1994-11-06 08:49:37 UTC, the RFC's example date
/// let date = UNIX_EPOCH + Duration::from_secs(784_111_777);
/// let now = date - Duration::from_secs(30);
/// let s30 = Ok(Duration::from_secs(30));
/// assert_eq!(parse_retry_after(b"Sun, 06 Nov 1994 08:49:37 GMT", now), s30); // IMF-fixdate
/// assert_eq!(parse_retry_after(b"Sunday, 06-Nov-94 08:49:37 GMT", now), s30); // RFC 850
/// assert_eq!(parse_retry_after(b"Sun Nov  6 08:49:37 1994", now), s30);       // asctime
/// assert_eq!(parse_retry_after(b"120", now), Ok(Duration::from_secs(120)));
/// assert_eq!(parse_retry_after(b"99999999999999999999", now), Ok(Duration::from_secs(u64::MAX)));
/// assert_eq!(
///     parse_retry_after(b"Sun, 06 Nov 1994 08:49:37 GMT", date + Duration::from_secs(1)),
///     Err(RetryAfterError::InPast),
/// );
/// ```
pub fn parse_retry_after(value: &[u8], now: SystemTime) -> Result<Duration, RetryAfterError> {
    let value = trim_ows(value);
    if value.is_empty() {
        return Err(RetryAfterError::Empty);
    }
    if value.iter().all(u8::is_ascii_digit) {
        return Ok(Duration::from_secs(saturating_seconds(value)));
    }
    if !value.is_ascii() {
        return Err(RetryAfterError::NotAscii);
    }
    if value.len() > MAX_DATE_LEN {
        return Err(RetryAfterError::TooLong);
    }
    // ASCII, so valid UTF-8.
    let text = std::str::from_utf8(value).map_err(|_| RetryAfterError::NotAscii)?;
    let date = httpdate::parse_http_date(text).map_err(|_| RetryAfterError::Malformed)?;
    date.duration_since(now)
        .map_err(|_| RetryAfterError::InPast)
}

/// Strips optional whitespace (SP and HTAB) on both sides.
fn trim_ows(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

/// The decimal value of `digits`, saturating at `u64::MAX`.
fn saturating_seconds(digits: &[u8]) -> u64 {
    let mut n: u64 = 0;
    for d in digits {
        n = match n
            .checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(d - b'0')))
        {
            Some(n) => n,
            None => return u64::MAX,
        };
    }
    n
}

/// Parses a `Retry-After-Ms` value (whole milliseconds, surrounding spaces
/// allowed). `None` for anything else, including values that do not fit.
///
/// ```
/// use std::time::Duration;
/// use herdless::http::retry_after::parse_retry_after_ms;
/// assert_eq!(parse_retry_after_ms(" 5100 "), Some(Duration::from_millis(5100)));
/// assert_eq!(parse_retry_after_ms("5.1"), None);
/// assert_eq!(parse_retry_after_ms("-3"), None);
/// ```
pub fn parse_retry_after_ms(value: &str) -> Option<Duration> {
    let v = value.trim();
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse::<u64>().ok().map(Duration::from_millis)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn now() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_700_000_000) // 2023-11-14 22:13:20 UTC
    }

    #[test]
    fn delay_seconds() {
        assert_eq!(parse_retry_after(b"2", now()), Ok(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after(b" \t2 ", now()),
            Ok(Duration::from_secs(2))
        );
        assert_eq!(parse_retry_after(b"0", now()), Ok(Duration::ZERO));
        assert_eq!(
            parse_retry_after(b"18446744073709551615", now()),
            Ok(Duration::from_secs(u64::MAX))
        );
        assert_eq!(
            parse_retry_after(b"18446744073709551616", now()),
            Ok(Duration::from_secs(u64::MAX))
        );
        let eight_kb = vec![b'9'; 8192];
        assert_eq!(
            parse_retry_after(&eight_kb, now()),
            Ok(Duration::from_secs(u64::MAX))
        );
    }

    #[test]
    fn hostile_values_are_ignored_with_a_reason() {
        use RetryAfterError::*;
        let cases: &[(&[u8], RetryAfterError)] = &[
            (b"", Empty),
            (b"   ", Empty),
            (b"-5", Malformed),
            (b"1.5", Malformed),
            (b"+3", Malformed),
            (b"1e3", Malformed),
            (b"soon", Malformed),
            (b"Sun, 31 Feb 2024 08:49:37 GMT", Malformed),
            ("５".as_bytes(), NotAscii),
            (b"\xff\xfe", NotAscii),
            (b"2\x00", Malformed),
            (b"Wed, 21 Oct 2015 07:28:00 GMT", InPast),
        ];
        for (value, want) in cases {
            assert_eq!(parse_retry_after(value, now()), Err(*want), "{value:?}");
        }
        let mut long = vec![b'a'; 8192];
        assert_eq!(parse_retry_after(&long, now()), Err(TooLong));
        long.fill(b' ');
        assert_eq!(parse_retry_after(&long, now()), Err(Empty));
    }

    #[test]
    fn dates_are_relative_to_the_given_now() {
        let v = b"Tue, 14 Nov 2023 22:13:25 GMT"; // now + 5 s
        assert_eq!(parse_retry_after(v, now()), Ok(Duration::from_secs(5)));
        let later = now() + Duration::from_secs(5);
        assert_eq!(parse_retry_after(v, later), Ok(Duration::ZERO));
        let much_later = now() + Duration::from_secs(6);
        assert_eq!(
            parse_retry_after(v, much_later),
            Err(RetryAfterError::InPast)
        );
        // Extreme clocks never panic.
        assert!(parse_retry_after(v, UNIX_EPOCH).is_ok());
        let far = UNIX_EPOCH + Duration::from_secs(1 << 40);
        assert_eq!(parse_retry_after(v, far), Err(RetryAfterError::InPast));
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use crate::http::{StatusClassifier, classify_response};
    use crate::{Policy, Rng};
    use proptest::prelude::*;
    use std::time::UNIX_EPOCH;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// Arbitrary bytes of any length and any clock never panic, and every
        /// accepted delay, once through the policy, stays within the clamp plus
        /// the spread.
        #[test]
        fn arbitrary_bytes_never_panic_and_stay_clamped(
            value in proptest::collection::vec(any::<u8>(), 0..9000),
            now_s in any::<u64>(),
            status in any::<u16>(),
        ) {
            let now = UNIX_EPOCH.checked_add(Duration::from_secs(now_s)).unwrap_or(UNIX_EPOCH);
            let policy = Policy::default();
            let mut rng = Rng::with_seed(now_s);
            if let Ok(d) = parse_retry_after(&value, now) {
                let most = policy.max_retry_after().mul_f64(1.0 + policy.retry_after_spread());
                prop_assert!(policy.server_delay(d, &mut rng) <= most);
            }
            let c = classify_response(&StatusClassifier::new(), status, Some(&value), now);
            prop_assert_eq!(c.is_none(), status < 400);
            if let Some(c) = c {
                prop_assert_eq!(c.is_retryable(), StatusClassifier::RETRYABLE.contains(status));
            }
        }

        /// Arbitrary strings, including the interesting shapes.
        #[test]
        fn arbitrary_strings_never_panic(
            value in prop_oneof![
                any::<String>(),
                "[0-9]{0,40}",
                "-?[0-9]{1,5}(\\.[0-9]{1,3})?",
                "[ \t]*[A-Za-z]{3}, [0-9]{2} [A-Za-z]{3} [0-9]{4} [0-9:]{8} GMT[ \t]*",
            ],
            now_s in 0u64..(1 << 40),
        ) {
            let now = UNIX_EPOCH + Duration::from_secs(now_s);
            let _ = parse_retry_after(value.as_bytes(), now);
        }

        /// Every delay-seconds value parses to itself (saturating).
        #[test]
        fn delay_seconds_round_trip(n in any::<u64>(), pad in 0usize..4) {
            let text = format!("{}{n}{}", " ".repeat(pad), "\t".repeat(pad));
            prop_assert_eq!(parse_retry_after(text.as_bytes(), UNIX_EPOCH), Ok(Duration::from_secs(n)));
        }

        /// Every future IMF-fixdate parses to its distance from now.
        #[test]
        fn future_dates_round_trip(now_s in 0u64..4_000_000_000, ahead in 1u64..1_000_000) {
            let now = UNIX_EPOCH + Duration::from_secs(now_s);
            let text = httpdate::fmt_http_date(now + Duration::from_secs(ahead));
            prop_assert_eq!(parse_retry_after(text.as_bytes(), now), Ok(Duration::from_secs(ahead)));
            let past = httpdate::fmt_http_date(now - Duration::from_secs(ahead.min(now_s).max(1)));
            if now_s >= 1 {
                prop_assert_eq!(parse_retry_after(past.as_bytes(), now), Err(RetryAfterError::InPast));
            }
        }
    }
}
