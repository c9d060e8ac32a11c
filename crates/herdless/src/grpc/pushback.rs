//! `grpc-retry-pushback-ms`, parsed with the gRPC retry design's semantics.
//!
//! Under the gRPC retry design (proposal A6) a server pushes back with the
//! `grpc-retry-pushback-ms` metadata: a non-negative integer asks the client
//! to retry after exactly that many milliseconds; a negative **or
//! unparseable** value asks it **not to retry at all**. That differs from
//! HTTP's `Retry-After`, where a value that cannot be used falls back to the
//! computed jitter: here any doubt stops the retries, which can never make a
//! herd.
//!
//! [`parse_pushback`] reads one raw value in one linear pass, without
//! allocation, panic or overflow:
//!
//! | value | result | what the retrier does |
//! |---|---|---|
//! | `250`, `0007`, ` 250 ` (spaces or tabs around) | `Ok(250 ms)`, `Ok(7 ms)` | honors it, clamped to the policy's `max_retry_after` and spread |
//! | `18446744073709551615` (`u64::MAX`) | `Ok(u64::MAX ms)` | clamps it to `max_retry_after` |
//! | `0` | `Ok(0)` | falls back to the computed jitter (a fleet told "now" returns as one wave) |
//! | `-1`, `-0` | `Err(Negative)` | does not retry: [`GiveUp::DoNotRetry`](crate::GiveUp::DoNotRetry) |
//! | `+5`, `1e3`, `1.5`, `soon`, non-ASCII | `Err(Malformed)` | does not retry |
//! | more than `u64::MAX` milliseconds | `Err(TooLarge)` | does not retry |
//! | empty or only spaces and tabs | `Err(Empty)` | does not retry |
//!
//! Only ASCII digits are accepted (no sign, no exponent): the design speaks of
//! an integer, and a value a strict reader would refuse is a refusal. The
//! spaces and tabs around a value are HTTP's optional whitespace, not part
//! of it.

use std::fmt;
use std::time::Duration;

/// The metadata key a gRPC server pushes back with (lowercase, as HTTP/2
/// sends it).
///
/// ```
/// assert_eq!(herdless::grpc::PUSHBACK_HEADER, "grpc-retry-pushback-ms");
/// ```
pub const PUSHBACK_HEADER: &str = "grpc-retry-pushback-ms";

/// Why a pushback value means "do not retry". Every variant does: the server
/// said so ([`Negative`](Self::Negative)) or said something a client cannot
/// read, which the gRPC retry design treats the same way.
///
/// ```
/// use herdless::grpc::parse_pushback;
/// use herdless::grpc::ParsePushbackError;
/// assert_eq!(parse_pushback(b"-1"), Err(ParsePushbackError::Negative));
/// assert_eq!(ParsePushbackError::Malformed.as_str(), "malformed");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParsePushbackError {
    /// A negative integer: the server's explicit "do not retry".
    Negative,
    /// Empty or only whitespace.
    Empty,
    /// Not an integer (a sign, a fraction, an exponent, letters, non-ASCII).
    Malformed,
    /// More milliseconds than a `u64` holds.
    TooLarge,
}

impl ParsePushbackError {
    /// A short name: `negative`, `empty`, `malformed`, `too_large`.
    ///
    /// ```
    /// assert_eq!(herdless::grpc::ParsePushbackError::TooLarge.as_str(), "too_large");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            ParsePushbackError::Negative => "negative",
            ParsePushbackError::Empty => "empty",
            ParsePushbackError::Malformed => "malformed",
            ParsePushbackError::TooLarge => "too_large",
        }
    }
}

impl fmt::Display for ParsePushbackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self {
            ParsePushbackError::Negative => "the server asked not to retry (negative pushback)",
            ParsePushbackError::Empty => "empty grpc-retry-pushback-ms",
            ParsePushbackError::Malformed => "grpc-retry-pushback-ms is not an integer",
            ParsePushbackError::TooLarge => "grpc-retry-pushback-ms does not fit in 64 bits",
        };
        f.write_str(why)
    }
}

impl std::error::Error for ParsePushbackError {}

/// Parses a `grpc-retry-pushback-ms` value: the delay the server asks for, or
/// why the call must not be retried. See the [module documentation](self)
/// for every case. Never panics, for any input.
///
/// # Errors
///
/// A [`ParsePushbackError`] when the server asks (or must be taken to ask) not to
/// retry.
///
/// ```
/// use std::time::Duration;
/// use herdless::grpc::parse_pushback;
/// use herdless::grpc::ParsePushbackError;
/// assert_eq!(parse_pushback(b"1500"), Ok(Duration::from_millis(1500)));
/// assert_eq!(parse_pushback(b" 0 "), Ok(Duration::ZERO));
/// assert_eq!(parse_pushback(b"-1"), Err(ParsePushbackError::Negative));
/// assert_eq!(parse_pushback(b"+5"), Err(ParsePushbackError::Malformed));
/// assert_eq!(parse_pushback(b"1e3"), Err(ParsePushbackError::Malformed));
/// assert_eq!(parse_pushback(b""), Err(ParsePushbackError::Empty));
/// assert_eq!(parse_pushback(b"99999999999999999999"), Err(ParsePushbackError::TooLarge));
/// ```
pub fn parse_pushback(value: &[u8]) -> Result<Duration, ParsePushbackError> {
    let value = trim_ows(value);
    let (negative, digits) = match value {
        [] => return Err(ParsePushbackError::Empty),
        [b'-', rest @ ..] => (true, rest),
        _ => (false, value),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(ParsePushbackError::Malformed);
    }
    if negative {
        return Err(ParsePushbackError::Negative);
    }
    let mut ms: u64 = 0;
    for &d in digits {
        ms = ms
            .checked_mul(10)
            .and_then(|m| m.checked_add(u64::from(d - b'0')))
            .ok_or(ParsePushbackError::TooLarge)?;
    }
    Ok(Duration::from_millis(ms))
}

/// `value` without the spaces and tabs around it.
fn trim_ows(value: &[u8]) -> &[u8] {
    let start = value.iter().position(|b| !matches!(b, b' ' | b'\t'));
    let end = value.iter().rposition(|b| !matches!(b, b' ' | b'\t'));
    match (start, end) {
        (Some(s), Some(e)) => &value[s..=e],
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Policy, Rng};
    use proptest::prelude::*;

    #[test]
    fn the_documented_table() {
        let ms = |n| Ok(Duration::from_millis(n));
        assert_eq!(parse_pushback(b"250"), ms(250));
        assert_eq!(parse_pushback(b"0007"), ms(7));
        assert_eq!(parse_pushback(b" \t250\t "), ms(250));
        assert_eq!(parse_pushback(b"0"), ms(0));
        assert_eq!(parse_pushback(b"18446744073709551615"), ms(u64::MAX));
        for neg in [&b"-1"[..], b"-0", b" -250 ", b"-99999999999999999999999"] {
            assert_eq!(
                parse_pushback(neg),
                Err(ParsePushbackError::Negative),
                "{neg:?}"
            );
        }
        for bad in [
            &b"+5"[..],
            b"1e3",
            b"1.5",
            b"soon",
            b"-",
            b"--1",
            b"- 1",
            b"1 2",
            b"0x10",
            b"\n5",
            "\u{666}".as_bytes(),
            b"\xff",
        ] {
            assert_eq!(
                parse_pushback(bad),
                Err(ParsePushbackError::Malformed),
                "{bad:?}"
            );
        }
        assert_eq!(parse_pushback(b""), Err(ParsePushbackError::Empty));
        assert_eq!(parse_pushback(b" \t "), Err(ParsePushbackError::Empty));
        assert_eq!(
            parse_pushback(b"18446744073709551616"),
            Err(ParsePushbackError::TooLarge)
        );
        assert_eq!(
            parse_pushback(&[b'9'; 8000]),
            Err(ParsePushbackError::TooLarge)
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// Arbitrary strings and bytes never panic; an accepted delay is made
        /// of digits only, and the policy clamps it.
        #[test]
        fn arbitrary_values_never_panic(
            value in prop_oneof![
                any::<String>(),
                "[ \t]*[-+]?[0-9]{0,30}([.eE][0-9]{0,3})?[ \t]*",
            ],
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let _ = parse_pushback(&bytes);
            if let Ok(d) = parse_pushback(value.as_bytes()) {
                let trimmed = value.trim_matches([' ', '\t']);
                prop_assert!(trimmed.bytes().all(|b| b.is_ascii_digit()));
                let policy = Policy::default();
                let most = policy.max_retry_after().mul_f64(1.0 + policy.retry_after_spread());
                prop_assert!(policy.server_delay(d, &mut Rng::with_seed(1)) <= most);
            }
        }

        /// Every `u64` round-trips; every negative integer refuses.
        #[test]
        fn integers_round_trip(n in any::<u64>(), pad in 0usize..3) {
            let text = format!("{}{n}{}", " ".repeat(pad), "\t".repeat(pad));
            prop_assert_eq!(parse_pushback(text.as_bytes()), Ok(Duration::from_millis(n)));
            let negative = format!("-{n}");
            prop_assert_eq!(parse_pushback(negative.as_bytes()), Err(ParsePushbackError::Negative));
        }
    }
}
