//! gRPC that respects servers: a status-code classifier and
//! `grpc-retry-pushback-ms`, following the gRPC retry design (proposal A6).
//!
//! Enabled by the `grpc` feature, which adds **no dependency**: codes are
//! plain `i32` and header values plain bytes, so any gRPC stack can use it.
//!
//! | concept | module |
//! |---|---|
//! | which codes are retryable (`UNAVAILABLE` by default), unknown ones fail closed | [`status`] |
//! | `grpc-retry-pushback-ms`: an exact delay, or "do not retry" | [`pushback`] |
//! | `grpc-timeout`: an attempt's remaining time, as the header writes it | [`timeout`] |
//! | both together: a call's [`Classification`] | [`classify_status`] |
//! | tower client retry over `http::Response` (`grpc-status` header; features `tower` + `grpc`) | `adapters::tower::GrpcClassifier` |
//!
//! # Pushback: one decision path
//!
//! A valid pushback on a retryable code becomes a server delay
//! ([`Classification::retry_after`]), which the engine clamps to
//! `max_retry_after` and spreads like any `Retry-After`. A negative or
//! unparseable one becomes [`Classification::DoNotRetry`]: the engine
//! gives up after this attempt with [`GiveUp::DoNotRetry`](crate::GiveUp)
//! (`retry_budget_exhausted`, `reason = "server_pushback"`), counting the
//! failure against a shared budget and breaker. Pushback on a code that is
//! not retried anyway is ignored.
//!
//! # With tonic
//!
//! A `tonic::Status` carries both halves: `status.code() as i32` and
//! `status.metadata().get(PUSHBACK_HEADER)`. A classifier for
//! [`Retry::call_async`](crate::Retry::call_async) (an `OK` cannot be an
//! error, so `None` fails closed):
//!
//! ```
//! use std::time::Duration;
//! use herdless::grpc::{classify_status, CodeClassifier, PUSHBACK_HEADER};
//! use herdless::{Classification, Classify, Policy, Retry};
//!
//! let codes = CodeClassifier::new().retry(8); // also RESOURCE_EXHAUSTED
//! let classify = move |s: &tonic::Status| {
//!     let pushback = s.metadata().get(PUSHBACK_HEADER).map(|v| v.as_encoded_bytes());
//!     classify_status(&codes, s.code() as i32, pushback).unwrap_or(Classification::Unknown)
//! };
//! let mut busy = tonic::Status::unavailable("overloaded");
//! busy.metadata_mut().insert(PUSHBACK_HEADER, "750".parse().unwrap());
//! assert_eq!(classify.classify(&busy), Classification::retry_after(Duration::from_millis(750)));
//! busy.metadata_mut().insert(PUSHBACK_HEADER, "-1".parse().unwrap());
//! assert_eq!(classify.classify(&busy), Classification::DoNotRetry);
//! assert_eq!(classify.classify(&tonic::Status::not_found("no such scan")), Classification::Terminal);
//!
//! let _retry = Retry::new(Policy::default(), classify);
//! // let reply = _retry.call_async(|_| client.clone().get_scan(request.clone())).await?;
//! ```
//!
//! (Pass the raw bytes, not `to_str().ok()`: a value that is not text must
//! stop the retries, not vanish.) A whole call, with a stand-in for the status:
//!
//! ```
//! use std::time::Duration;
//! use herdless::grpc::{classify_status, CodeClassifier};
//! use herdless::{Classification, GiveUp, ManualTimer, Policy, Retry};
//!
//! #[derive(Debug)]
//! struct Status { code: i32, pushback: Option<&'static str> }
//! let codes = CodeClassifier::new();
//! let timer = ManualTimer::new();
//! let retry = Retry::builder()
//! .policy(Policy::default())
//! .classifier(move |s: &Status| {
//!     classify_status(&codes, s.code, s.pushback.map(str::as_bytes)).unwrap_or(Classification::Unknown)
//! })
//! .timer(timer.clone())
//! .build();
//!
//! let mut replies = vec![Ok("hello"), Err(Status { code: 14, pushback: Some("300") })];
//! assert_eq!(retry.call(|_| replies.pop().unwrap()).unwrap(), "hello");
//! let slept = timer.sleeps()[0];
//! assert!(slept >= Duration::from_millis(300) && slept <= Duration::from_millis(330)); // spread ≤ 10 %
//!
//! let err = retry.call(|_| Err::<(), _>(Status { code: 14, pushback: Some("-1") })).unwrap_err();
//! assert_eq!((err.reason(), err.attempts()), (GiveUp::DoNotRetry, 1));
//! ```

use crate::classify::Classification;

pub mod pushback;
pub mod status;
pub mod timeout;

pub use pushback::{PUSHBACK_HEADER, ParsePushbackError, parse_pushback};
pub use status::{CodeClass, CodeClassifier, CodeSet, code_name};
pub use timeout::{TIMEOUT_HEADER, format_timeout, parse_timeout};

/// The [`Classification`] of a call that ended with status `code` and an
/// optional raw `grpc-retry-pushback-ms` value, or `None` for `OK` (0).
///
/// | code | pushback | classification |
/// |---|---|---|
/// | retryable | none | [`retryable()`](Classification::retryable): the computed jitter |
/// | retryable | valid (`0` … `u64::MAX` ms) | [`retry_after`](Classification::retry_after) that delay (clamped, spread; zero falls back to the jitter) |
/// | retryable | negative or unparseable | [`DoNotRetry`](Classification::DoNotRetry): not retried |
/// | terminal (1 to 16) | ignored | [`Terminal`](Classification::Terminal) |
/// | not a gRPC code | ignored | [`Unknown`](Classification::Unknown) (fails closed) |
///
/// ```
/// use std::time::Duration;
/// use herdless::grpc::{classify_status, CodeClassifier};
/// use herdless::Classification;
/// let c = CodeClassifier::new();
/// assert_eq!(classify_status(&c, 0, None), None);
/// assert_eq!(classify_status(&c, 14, None), Some(Classification::retryable()));
/// assert_eq!(
///     classify_status(&c, 14, Some(b"1200")),
///     Some(Classification::retry_after(Duration::from_millis(1200))),
/// );
/// assert_eq!(classify_status(&c, 14, Some(b"-1")), Some(Classification::DoNotRetry));
/// assert_eq!(classify_status(&c, 14, Some(b"soon")), Some(Classification::DoNotRetry));
/// assert_eq!(classify_status(&c, 3, Some(b"10")), Some(Classification::Terminal));
/// assert_eq!(classify_status(&c, 42, None), Some(Classification::Unknown));
/// ```
pub fn classify_status(
    codes: &CodeClassifier,
    code: i32,
    pushback: Option<&[u8]>,
) -> Option<Classification> {
    Some(match codes.classify(code) {
        CodeClass::Ok => return None,
        CodeClass::Terminal => Classification::Terminal,
        CodeClass::Unknown => Classification::Unknown,
        CodeClass::Retryable => match pushback.map(parse_pushback) {
            None => Classification::retryable(),
            Some(Ok(delay)) => Classification::retry_after(delay),
            Some(Err(_)) => Classification::DoNotRetry,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Context, Decision, Engine};
    use crate::{Breaker, GiveUp, Policy, RetryBudget, RetryCause, RetryEvent, Rng};
    use proptest::prelude::*;
    use std::cell::RefCell;
    use std::time::Duration;

    /// A refusal is one decision in the engine: no retry, the breaker and the
    /// budget learn a failure, `retry_budget_exhausted` carries the reason.
    #[test]
    fn server_pushback_gives_up_and_charges_the_budget() {
        let policy = Policy::default();
        let budget = RetryBudget::grpc(10.0, 0.5).unwrap();
        let breaker = Breaker::new(1);
        let events = RefCell::new(Vec::new());
        let hook = |e: &RetryEvent<'_>| {
            let mut reason = String::new();
            e.visit(|k, v| {
                if k == "reason" {
                    reason = v.to_string();
                }
            });
            events.borrow_mut().push((e.name(), reason));
        };
        let cx = Context::new(&policy)
            .budget(&budget)
            .breaker(&breaker)
            .notify(&hook);
        let mut call = Engine::new(Duration::ZERO);
        call.begin();
        let c = classify_status(&CodeClassifier::new(), 14, Some(b"-1")).unwrap();
        let d = call.failed(
            &cx,
            Duration::ZERO,
            c,
            RetryCause::Error,
            &mut Rng::with_seed(1),
        );
        assert_eq!(d, Decision::GiveUp(GiveUp::DoNotRetry));
        assert_eq!(budget.tokens(), 9.0);
        assert!(breaker.is_open());
        assert_eq!(
            events.into_inner(),
            vec![("retry_budget_exhausted", "server_pushback".to_string())]
        );
    }

    proptest! {
        /// Any code and any pushback bytes: never panics, and the verdict
        /// follows the table (pushback matters only on retryable codes).
        #[test]
        fn the_table_holds(code in any::<i32>(), value in proptest::collection::vec(any::<u8>(), 0..32)) {
            let c = CodeClassifier::new().retry(8);
            let got = classify_status(&c, code, Some(&value));
            let plain = classify_status(&c, code, None);
            match c.classify(code) {
                CodeClass::Retryable => prop_assert_eq!(
                    got,
                    Some(match parse_pushback(&value) {
                        Ok(d) => Classification::retry_after(d),
                        Err(_) => Classification::DoNotRetry,
                    })
                ),
                _ => prop_assert_eq!(got, plain),
            }
        }
    }
}
