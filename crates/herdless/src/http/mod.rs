//! HTTP that respects servers: a status classifier, `Retry-After`, and (with
//! the `reqwest` feature) a retrying `reqwest` sender.
//!
//! Enabled by the `http` feature (adds the `httpdate` crate only). The pieces:
//!
//! | concept | module |
//! |---|---|
//! | which statuses are retryable, which terminal (fail closed) | [`status`] |
//! | `Retry-After` parsing, hostile-input safe, relative to an injected `now` | [`retry_after`] |
//! | both together: a response's [`Classification`] | [`classify_response`] |
//! | `reqwest` integration (feature `reqwest`) | `client` |
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

#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub mod client;
pub mod retry_after;
pub mod status;

#[cfg(feature = "reqwest")]
pub use client::{AttemptRecord, Buffered, HttpError, HttpRetry, SendError};
pub use retry_after::{parse_retry_after, RetryAfterError};
pub use status::{StatusClass, StatusClassifier, StatusSet};

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
