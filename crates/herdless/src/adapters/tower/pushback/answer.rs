//! The layer's own answers: a rejection's `503` with its slot
//! (`Retry-After`, `Retry-After-Ms`, the plan of waves, `Herdless-Requeue`),
//! built without formatting or parsing what repeats from one refusal to
//! the next; and what counts as the service's own refusal.

use std::cell::RefCell;

use http::header::HeaderName;
use http::{HeaderValue, Response, StatusCode, header};

use crate::http::{HERDLESS_PLAN, REQUEUE, RETRY_AFTER_MS};
use crate::pushback::Allotment;
use crate::pushback::waves::WavePlan;

/// `Retry-After-Ms` as a header name, built once: from the `&str` constant
/// `insert` parsed it and copied it into an allocation on every refusal.
const RETRY_AFTER_MS_NAME: HeaderName = HeaderName::from_static(RETRY_AFTER_MS);

thread_local! {
    /// The last `Retry-After` and `Retry-After-Ms` values formatted on this
    /// thread: refusals in a burst mostly repeat them (the seconds nearly
    /// always), and a cached value is a reference count, not an allocation
    /// and a formatting.
    static LAST_VALUES: RefCell<[Option<(u64, HeaderValue)>; 2]> =
        const { RefCell::new([None, None]) };
}

/// `n` as a header value, from this thread's cache when it was the last one
/// formatted for header `which` (0 `Retry-After`, 1 `Retry-After-Ms`).
fn cached_value(which: usize, n: u64) -> HeaderValue {
    LAST_VALUES.with(|last| {
        let mut last = last.borrow_mut();
        match &last[which] {
            Some((m, value)) if *m == n => value.clone(),
            _ => {
                let value = HeaderValue::from(n);
                last[which] = Some((n, value.clone()));
                value
            }
        }
    })
}

/// `Herdless-Plan` as a header name, built once (as `Retry-After-Ms`).
const HERDLESS_PLAN_NAME: HeaderName = HeaderName::from_static(HERDLESS_PLAN);

/// Sets a slot's `Retry-After` and `Retry-After-Ms` on a response, and the
/// plan of waves announced beside it (`Herdless-Plan`), if any.
pub(super) fn with_slot<B>(
    response: &mut Response<B>,
    decision: Allotment,
    plan: Option<WavePlan>,
) {
    let headers = response.headers_mut();
    if let Some(value) = plan.and_then(|p| HeaderValue::try_from(p.to_string()).ok()) {
        headers.insert(HERDLESS_PLAN_NAME, value);
    }
    if let Some(secs) = decision.retry_after_secs() {
        headers.insert(header::RETRY_AFTER, cached_value(0, secs));
    }
    if let Some(ms) = decision.retry_after_ms() {
        headers.insert(RETRY_AFTER_MS_NAME, cached_value(1, ms));
    }
}

/// The `503` answer for a rejected request (with its slot, if it has one;
/// `Herdless-Requeue: 1` when it was queued, not refused).
pub(super) fn rejection<B: Default>(decision: Allotment, plan: Option<WavePlan>) -> Response<B> {
    let mut response = Response::new(B::default());
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    with_slot(&mut response, decision, plan);
    if decision.is_requeue() {
        response
            .headers_mut()
            .insert(REQUEUE, HeaderValue::from_static("1"));
    }
    response
}

/// Whether the service's own answer is a refusal (it could not take the
/// request): `503` or `429`.
pub(super) fn is_refusal(status: StatusCode) -> bool {
    status == StatusCode::SERVICE_UNAVAILABLE || status == StatusCode::TOO_MANY_REQUESTS
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn cached_header_values_follow_the_slot() {
        for ms in [1_500u64, 1_500, 1_501, 2_999, 1_500, 60_000] {
            let mut response = Response::new(());
            with_slot(
                &mut response,
                Allotment::Reject {
                    retry_after: Duration::from_millis(ms),
                },
                None,
            );
            let headers = response.headers();
            assert_eq!(headers[RETRY_AFTER_MS], ms.to_string().as_str());
            assert_eq!(
                headers[header::RETRY_AFTER],
                ms.div_ceil(1_000).to_string().as_str()
            );
        }
    }
}
