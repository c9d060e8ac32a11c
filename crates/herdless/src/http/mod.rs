//! HTTP that respects servers: a status classifier and `Retry-After`, the
//! protocol knowledge every HTTP adapter shares (the reqwest client and
//! middleware are in [`adapters::reqwest`](crate::adapters), tower's in
//! [`adapters::tower`](crate::adapters)).
//!
//! Enabled by the `http` feature (adds the `http` and `httpdate` crates). The pieces:
//!
//! | concept | module |
//! |---|---|
//! | which statuses are retryable, which terminal (fail closed) | [`status`] |
//! | `Retry-After` parsing, hostile-input safe, relative to an injected `now` | [`retry_after`] |
//! | both together: a response's [`Classification`] | [`classify_response`] |
//! | the same, preferring a valid `Retry-After-Ms` (pushback's millisecond slot) | [`classify_response_ms`] |
//! | the `Retry-After-Ms` header's name | [`RETRY_AFTER_MS`] |
//! | the `Herdless-Plan` header's name (a plan of waves) | [`HERDLESS_PLAN`] |
//! | a server's queue: the requeue answer (`Herdless-Requeue`), a client's patience (`Prefer: wait=N`), a response's classification from its headers | [`queue`] ([`classify_headers`], [`prefer_wait`]) |
//!
//! ```
//! use std::time::SystemTime;
//! use herdless::http::{classify_response, StatusClassifier};
//! use herdless::Classification;
//!
//! let statuses = StatusClassifier::default();
//! let now = SystemTime::now();
//! assert_eq!(classify_response(&statuses, 200, None, now), None); // success
//! assert_eq!(
//!     classify_response(&statuses, 503, Some(b"2"), now),
//!     Some(Classification::retry_after_secs(2.0)),
//! );
//! // A Retry-After that cannot be used falls back to the computed jitter.
//! assert_eq!(classify_response(&statuses, 429, Some(b"soon"), now), Some(Classification::retryable()));
//! assert_eq!(classify_response(&statuses, 401, Some(b"2"), now), Some(Classification::terminal()));
//! assert_eq!(classify_response(&statuses, 418, None, now), Some(Classification::Unknown));
//! ```

use std::time::SystemTime;

use crate::classify::Classification;

pub mod queue;
pub mod retry_after;
pub mod status;

pub use queue::{
    MAX_PREFER_WAIT, PREFER, REQUEUE, classify_headers, prefer_wait, prefer_wait_value,
};
pub use retry_after::{RetryAfterError, parse_retry_after, parse_retry_after_ms};
pub use status::{StatusClass, StatusClassifier, StatusSet};

/// The header carrying a delay in whole milliseconds, beside `Retry-After`:
/// the slot a [`pushback`](crate::pushback) server books, which clients prefer
/// over `Retry-After`'s whole seconds (the name Azure services use).
///
/// ```
/// assert_eq!(herdless::http::RETRY_AFTER_MS, "retry-after-ms");
/// ```
pub const RETRY_AFTER_MS: &str = "retry-after-ms";

/// The header announcing a plan of waves beside a rejection (and the gRPC
/// trailer of the same name): a [`WavePlan`](crate::pushback::waves::WavePlan)
/// in its text form, `start=0.25, waves=5, spacing=0.842, salt=8812345678901`.
/// A [`WaveGuard`](crate::guard::waves::WaveGuard) reads it.
///
/// ```
/// assert_eq!(herdless::http::HERDLESS_PLAN, "herdless-plan");
/// ```
pub const HERDLESS_PLAN: &str = "herdless-plan";

/// The [`Classification`] of a response with `status` and an optional raw
/// `Retry-After` value, or `None` when the status is a success (below 400).
///
/// A retryable status carries the parsed `Retry-After` delay when there is a
/// usable one (the policy then clamps and spreads it); otherwise, and for a
/// zero delay, the retrier falls back to its computed jitter. `Retry-After` is
/// honored on every retryable status (RFC 9110 defines it for 503 and 429, and
/// servers send it on 408 and 502 too) and ignored on terminal ones. `now` is
/// the wall clock an HTTP-date is measured against.
///
/// ```
/// # use std::time::{Duration, SystemTime};
/// # use herdless::http::{classify_response, StatusClassifier};
/// let c = classify_response(&StatusClassifier::new(), 503, Some(b"99999999999999999999"), SystemTime::now());
/// assert_eq!(c.and_then(|c| c.server_delay()), Some(Duration::from_secs(u64::MAX))); // the policy clamps it
/// ```
pub fn classify_response(
    statuses: &StatusClassifier,
    status: u16,
    retry_after: Option<&[u8]>,
    now: SystemTime,
) -> Option<Classification> {
    Some(match statuses.classify(status) {
        StatusClass::Success => return None,
        StatusClass::Terminal => Classification::Terminal,
        StatusClass::Unknown => Classification::Unknown,
        StatusClass::Retryable => match retry_after.map(|v| parse_retry_after(v, now)) {
            Some(Ok(delay)) => Classification::retry_after(delay),
            _ => Classification::retryable(),
        },
    })
}

/// Like [`classify_response`], but a valid `Retry-After-Ms` (whole
/// milliseconds, the header [`pushback`](crate::pushback) servers send beside
/// `Retry-After`) wins over `Retry-After`.
///
/// `Retry-After` carries whole seconds, which rounds a server's slots (`1 /
/// capacity` apart) up to the same second for a whole fleet; the millisecond
/// value keeps them apart. It is used when it parses as a positive whole number
/// of milliseconds (no sign, no fraction, fits in a `u64`); anything else —
/// missing, empty, `0`, `-5`, `1.5`, non-ASCII, too large — falls back to
/// `Retry-After`, and then to the computed jitter, exactly as
/// [`classify_response`]. The delay is still clamped and spread by the policy
/// ([`Policy::server_delay`](crate::Policy::server_delay)). Ignored on terminal
/// statuses, like `Retry-After`.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use herdless::http::{classify_response_ms, StatusClassifier};
/// use herdless::Classification;
/// let (s, now) = (StatusClassifier::new(), SystemTime::now());
/// assert_eq!(
///     classify_response_ms(&s, 503, Some(b"2"), Some(b"1250"), now),
///     Some(Classification::retry_after(Duration::from_millis(1250))),
/// );
/// // Unusable milliseconds fall back to Retry-After.
/// assert_eq!(
///     classify_response_ms(&s, 503, Some(b"2"), Some(b"1.5"), now),
///     Some(Classification::retry_after(Duration::from_secs(2))),
/// );
/// assert_eq!(classify_response_ms(&s, 401, Some(b"2"), Some(b"1250"), now), Some(Classification::terminal()));
/// ```
pub fn classify_response_ms(
    statuses: &StatusClassifier,
    status: u16,
    retry_after: Option<&[u8]>,
    retry_after_ms: Option<&[u8]>,
    now: SystemTime,
) -> Option<Classification> {
    let ms = retry_after_ms
        .and_then(|v| std::str::from_utf8(v).ok())
        .and_then(parse_retry_after_ms)
        .filter(|d| !d.is_zero());
    match (statuses.classify(status), ms) {
        (StatusClass::Retryable, Some(delay)) => Some(Classification::retry_after(delay)),
        _ => classify_response(statuses, status, retry_after, now),
    }
}

/// An error status is an error that knows whether it is transient, by the
/// default [`StatusClassifier`] (retryable: 408, 425, 429, 500, 502, 503,
/// 504; terminal: 400, 401, 403, 404, 405, 501, 507; any other status is
/// unknown and fails closed). A
/// status alone carries no `Retry-After`: to honor one, classify the response
/// with [`classify_response_ms`]. A success status as an error is unknown
/// (fail closed).
///
/// ```
/// use herdless::Retryable;
/// use http::StatusCode;
/// assert!(StatusCode::SERVICE_UNAVAILABLE.classification().is_retryable());
/// assert!(!StatusCode::UNAUTHORIZED.classification().is_retryable());
/// assert!(!StatusCode::OK.classification().is_retryable());
/// ```
impl crate::classify::Retryable for ::http::StatusCode {
    fn classification(&self) -> Classification {
        match StatusClassifier::default().classify(self.as_u16()) {
            StatusClass::Success | StatusClass::Unknown => Classification::Unknown,
            StatusClass::Terminal => Classification::Terminal,
            StatusClass::Retryable => Classification::retryable(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn retry_after_ms_wins_when_valid_and_falls_back_otherwise() {
        let s = StatusClassifier::new();
        let now = SystemTime::now();
        let secs2 = Some(Classification::retry_after(Duration::from_secs(2)));
        let c = |ra: Option<&[u8]>, ms: Option<&[u8]>| classify_response_ms(&s, 503, ra, ms, now);
        assert_eq!(
            c(Some(b"2"), Some(b" 1999 ")),
            Some(Classification::retry_after(Duration::from_millis(1999)))
        );
        assert_eq!(
            c(None, Some(b"7")),
            Some(Classification::retry_after(Duration::from_millis(7)))
        );
        let huge = c(None, Some(b"18446744073709551615")).unwrap();
        assert!(huge.server_delay().unwrap() > Duration::from_secs(1_000_000)); // the policy clamps it
        for bad in [
            &b""[..],
            b"0",
            b"-5",
            b"1.5",
            b"1e3",
            b"99999999999999999999",
            "\u{666}".as_bytes(),
            b"\xff\xfe",
        ] {
            assert_eq!(c(Some(b"2"), Some(bad)), secs2, "{bad:?}");
            assert_eq!(
                c(None, Some(bad)),
                Some(Classification::retryable()),
                "{bad:?}"
            );
        }
        assert_eq!(c(Some(b"2"), None), secs2);
        // Success and terminal statuses: the headers do not matter.
        assert_eq!(classify_response_ms(&s, 200, None, Some(b"5"), now), None);
        assert_eq!(
            classify_response_ms(&s, 404, None, Some(b"5"), now),
            Some(Classification::terminal())
        );
    }
}
