//! A server's queue on the wire: the requeue answer and the client's patience.
//!
//! A reconnect queue (the [hold](crate::pushback::adaptive#the-hold-a-capacity-aware-reconnect-queue))
//! keeps requests open while the service it protects is down, and answers a
//! request it kept as long as it could with `503` and a slot. To a client that
//! reads only `Retry-After` that answer is a failed attempt; it is not one:
//! the request never reached the service. Two headers let the two sides say
//! more, each ignored by whoever does not know it:
//!
//! * **`Herdless-Requeue: 1`** on the server's `503` (with `Retry-After` and
//!   `Retry-After-Ms`): "queued, not processed: come back after the delay to
//!   be queued again". [`classify_headers`] turns it into
//!   [`Classification::Requeued`], which the engine does not count as an
//!   attempt (bounded by the policy's `max_requeues` and `max_elapsed`). A
//!   client that knows nothing of it sees a `503` with a `Retry-After`, as
//!   before.
//! * **`Prefer: wait=N`** on the client's request (RFC 7240's `wait`
//!   preference: how long, in seconds, the client will wait for the answer):
//!   the queue may hold the request that long instead of its default (which
//!   must stay below the per-attempt timeouts of clients that say nothing).
//!   herdless's HTTP clients send what is left of the attempt
//!   ([`Attempt::remaining`](crate::Attempt::remaining)), in whole seconds
//!   rounded down; [`prefer_wait`] reads it, hostile input safe.
//!
//! ```
//! use std::time::{Duration, SystemTime};
//! use http::HeaderMap;
//! use herdless::http::{StatusClassifier, classify_headers, prefer_wait, prefer_wait_value};
//! use herdless::Classification;
//!
//! let mut answer = HeaderMap::new();
//! answer.insert("retry-after", "3".parse().unwrap());
//! answer.insert("retry-after-ms", "2500".parse().unwrap());
//! answer.insert("herdless-requeue", "1".parse().unwrap());
//! let c = classify_headers(&StatusClassifier::new(), 503, &answer, SystemTime::now());
//! assert_eq!(c, Some(Classification::requeued(Duration::from_millis(2500))));
//!
//! let mut request = HeaderMap::new();
//! request.insert("prefer", prefer_wait_value(Duration::from_millis(119_900)));
//! assert_eq!(prefer_wait(&request), Some(Duration::from_secs(119)));
//! ```

use std::time::{Duration, SystemTime};

use ::http::{HeaderMap, HeaderName, HeaderValue};

use super::{RETRY_AFTER_MS, StatusClass, StatusClassifier, classify_response_ms};
use crate::classify::Classification;

/// The response header of a requeue answer (see the [module documentation](self)).
///
/// ```
/// assert_eq!(herdless::http::REQUEUE, "herdless-requeue");
/// ```
pub const REQUEUE: &str = "herdless-requeue";

/// RFC 7240's request header (`Prefer: wait=N`).
///
/// ```
/// assert_eq!(herdless::http::PREFER, "prefer");
/// ```
pub const PREFER: &str = "prefer";

// The names above as `HeaderName`s, built at compile time: a lookup by a
// `&str` name parses it first (checks and lowercases it into a buffer), on
// every request the pushback layer decides and every response classified.
static PREFER_NAME: HeaderName = HeaderName::from_static(PREFER);
static REQUEUE_NAME: HeaderName = HeaderName::from_static(REQUEUE);
static RETRY_AFTER_MS_NAME: HeaderName = HeaderName::from_static(RETRY_AFTER_MS);

/// The longest wait [`prefer_wait`] reads: a day (a longer value is taken
/// as a day; nothing holds a request that long).
pub const MAX_PREFER_WAIT: Duration = Duration::from_secs(86_400);

/// The [`Classification`] of a response from its status and headers:
/// [`classify_response_ms`] (`Retry-After-Ms` preferred to `Retry-After`),
/// and a retryable status carrying [`REQUEUE`] with the value `1` and a
/// usable delay is [`Classification::Requeued`]. `None` below 400.
///
/// ```
/// use std::time::SystemTime;
/// use http::HeaderMap;
/// use herdless::http::{classify_headers, StatusClassifier};
/// use herdless::Classification;
/// let mut h = HeaderMap::new();
/// h.insert("herdless-requeue", "1".parse().unwrap());
/// // No delay: a plain retryable answer (a requeue says when).
/// assert_eq!(classify_headers(&StatusClassifier::new(), 503, &h, SystemTime::now()), Some(Classification::retryable()));
/// // On a terminal status the header means nothing.
/// h.insert("retry-after", "2".parse().unwrap());
/// assert_eq!(classify_headers(&StatusClassifier::new(), 401, &h, SystemTime::now()), Some(Classification::Terminal));
/// ```
pub fn classify_headers(
    statuses: &StatusClassifier,
    status: u16,
    headers: &HeaderMap,
    now: SystemTime,
) -> Option<Classification> {
    let class = classify_response_ms(
        statuses,
        status,
        headers
            .get(::http::header::RETRY_AFTER)
            .map(HeaderValue::as_bytes),
        headers.get(&RETRY_AFTER_MS_NAME).map(HeaderValue::as_bytes),
        now,
    )?;
    // The value `1` (spaces aside) says it; `0` or anything else says nothing.
    let requeue = headers
        .get_all(&REQUEUE_NAME)
        .iter()
        .any(|v| v.as_bytes().trim_ascii() == b"1")
        && statuses.classify(status) == StatusClass::Retryable;
    Some(match class.server_delay() {
        Some(after) if requeue => Classification::requeued(after),
        _ => class,
    })
}

/// The `wait` preference of a request's `Prefer` headers (RFC 7240: tokens
/// compared without case, several preferences per header and several
/// headers, the first `wait` wins, its value whole seconds), at most
/// [`MAX_PREFER_WAIT`]. `None` when there is none or it is not a whole
/// number.
///
/// ```
/// use std::time::Duration;
/// use http::HeaderMap;
/// use herdless::http::prefer_wait;
/// let mut h = HeaderMap::new();
/// h.append("prefer", "respond-async".parse().unwrap());
/// h.append("prefer", "handling=lenient, Wait = 30".parse().unwrap());
/// assert_eq!(prefer_wait(&h), Some(Duration::from_secs(30)));
/// h.insert("prefer", "wait=soon".parse().unwrap());
/// assert_eq!(prefer_wait(&h), None);
/// ```
pub fn prefer_wait(headers: &HeaderMap) -> Option<Duration> {
    for value in headers.get_all(&PREFER_NAME) {
        let Ok(text) = std::str::from_utf8(value.as_bytes()) else {
            continue;
        };
        for preference in text.split(',') {
            // A preference may carry parameters after ';': not for `wait`.
            let head = preference.split(';').next().unwrap_or("");
            let Some((name, value)) = head.split_once('=') else {
                continue;
            };
            if !name.trim().eq_ignore_ascii_case("wait") {
                continue;
            }
            let digits = value.trim().trim_matches('"');
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let secs = digits.parse::<u64>().unwrap_or(u64::MAX);
            return Some(Duration::from_secs(secs).min(MAX_PREFER_WAIT));
        }
    }
    None
}

/// The `Prefer` value a client sends for `remaining` time: `wait=N`, `N`
/// its whole seconds rounded down (a server that holds the request `N`
/// seconds answers within what is left).
///
/// ```
/// use std::time::Duration;
/// let v = herdless::http::prefer_wait_value(Duration::from_millis(2_999));
/// assert_eq!(v, "wait=2");
/// ```
pub fn prefer_wait_value(remaining: Duration) -> HeaderValue {
    let secs = remaining.min(MAX_PREFER_WAIT).as_secs();
    HeaderValue::from_str(&format!("wait={secs}")).expect("digits are a header value")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &[u8])]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                ::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_bytes(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn hostile_prefer_values_are_refused_or_bounded() {
        let w = |v: &[u8]| prefer_wait(&headers(&[("prefer", v)]));
        assert_eq!(w(b"wait=99999999999999999999999"), Some(MAX_PREFER_WAIT));
        assert_eq!(w(b"wait=-1"), None);
        assert_eq!(w(b"wait=1.5"), None);
        assert_eq!(w(b"wait="), None);
        assert_eq!(w(b"wait=\"12\""), Some(Duration::from_secs(12)));
        assert_eq!(w(b"waiting=3"), None);
        assert_eq!(w(b"wait=4; foo=bar"), Some(Duration::from_secs(4)));
        assert_eq!(w(b"\xffwait=3"), None, "not a preference named wait");
        assert_eq!(prefer_wait(&HeaderMap::new()), None);
    }

    #[test]
    fn a_requeue_needs_a_retryable_status_and_a_delay() {
        let s = StatusClassifier::new();
        let now = SystemTime::now();
        let h = headers(&[("herdless-requeue", b"1"), ("retry-after", b"4")]);
        assert_eq!(
            classify_headers(&s, 503, &h, now),
            Some(Classification::requeued(Duration::from_secs(4)))
        );
        assert_eq!(classify_headers(&s, 200, &h, now), None);
        assert_eq!(
            classify_headers(&s, 400, &h, now),
            Some(Classification::Terminal)
        );
        // Only the value `1` says "requeued": `0` (or anything else) is a
        // plain answer with a delay, which counts as an attempt.
        for value in [&b"0"[..], b"no", b"", b"11"] {
            let h = headers(&[("herdless-requeue", value), ("retry-after", b"4")]);
            assert_eq!(
                classify_headers(&s, 503, &h, now),
                Some(Classification::retry_after(Duration::from_secs(4))),
                "{value:?}"
            );
        }
        let h = headers(&[("herdless-requeue", b" 1 "), ("retry-after", b"4")]);
        assert!(classify_headers(&s, 503, &h, now).is_some_and(|c| c.is_requeue()));
        let plain = headers(&[("retry-after", b"4")]);
        assert_eq!(
            classify_headers(&s, 503, &plain, now),
            Some(Classification::retry_after(Duration::from_secs(4)))
        );
    }
}
