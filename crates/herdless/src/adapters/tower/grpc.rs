//! The gRPC flavour: [`GrpcClassifier`] for `http::Response<B>` results of a
//! gRPC channel (features `tower` + `grpc`).

use http::Response;

use crate::classify::{Classification, Classify};
use crate::classify::{ClassifyResult, FailClosed};
use crate::grpc::{CodeClassifier, PUSHBACK_HEADER, classify_status};

/// The header a trailers-only gRPC response carries its status in.
const GRPC_STATUS: &str = "grpc-status";

/// Classifies `Result<http::Response<B>, E>` from a gRPC channel (tonic's
/// `Channel`, or any HTTP/2 client speaking gRPC) by the `grpc-status` and
/// `grpc-retry-pushback-ms` headers, with [`classify_status`]: `UNAVAILABLE`
/// (plus any configured code) is retried, after the pushback when the server
/// sent a valid one; a negative or unparseable pushback stops the retries
/// ([`GiveUp::DoNotRetry`](crate::GiveUp::DoNotRetry)); other codes
/// are terminal, unknown ones fail closed. A transport error is classified by
/// an error classifier (default [`FailClosed`]: not retried).
///
/// # What a tower policy can see
///
/// tower hands the policy the response when its *headers* arrive. A call that
/// fails before sending a message answers **trailers-only**: its status is in
/// the headers, and this classifier sees it (tonic and grpc-go servers answer
/// this way for an error returned by a unary handler). A status sent in
/// trailers after a message body is not visible here: the response counts
/// as a success, and the caller reads the status from the body. Classify
/// those with [`classify_status`] on the final `tonic::Status` in
/// [`Retry::call_async`](crate::Retry::call_async) (see [`grpc`](crate::grpc)).
///
/// Without `grpc-status`, a `200` is a success so far (the status follows in
/// the trailers) and any other HTTP status (a proxy's answer) is mapped as
/// gRPC's "HTTP to gRPC status code mapping" specifies: 400 → `INTERNAL`,
/// 401 → `UNAUTHENTICATED`, 403 → `PERMISSION_DENIED`, 404 →
/// `UNIMPLEMENTED`, 429, 502, 503, 504 → `UNAVAILABLE`, others → `UNKNOWN`.
/// A `grpc-status` that is not a decimal number fails closed
/// ([`Unknown`](Classification::Unknown)).
///
/// tower retries a copy of the request: buffer the message
/// (`http::Request<Full<Bytes>>`, [`Cloned`](crate::adapters::tower::Cloned))
/// and convert it to the channel's body type inside the retry layer.
///
/// ```
/// use std::time::Duration;
/// use herdless::adapters::tower::GrpcClassifier;
/// use herdless::classify::ClassifyResult;
/// use herdless::Classification;
/// let c = GrpcClassifier::new();
/// let reply = |pairs: &[(&str, &str)]| {
///     let mut r = http::Response::builder().header("content-type", "application/grpc");
///     for (k, v) in pairs { r = r.header(*k, *v); }
///     Ok::<_, ()>(r.body(()).unwrap())
/// };
/// assert_eq!(c.classify(&reply(&[])), None); // status in the trailers
/// assert_eq!(c.classify(&reply(&[("grpc-status", "0")])), None);
/// assert_eq!(c.classify(&reply(&[("grpc-status", "14")])), Some(Classification::retryable()));
/// assert_eq!(
///     c.classify(&reply(&[("grpc-status", "14"), ("grpc-retry-pushback-ms", "250")])),
///     Some(Classification::retry_after(Duration::from_millis(250))),
/// );
/// assert_eq!(
///     c.classify(&reply(&[("grpc-status", "14"), ("grpc-retry-pushback-ms", "-1")])),
///     Some(Classification::DoNotRetry),
/// );
/// assert_eq!(c.classify(&reply(&[("grpc-status", "5")])), Some(Classification::Terminal));
/// assert_eq!(c.classify(&reply(&[("grpc-status", "x")])), Some(Classification::Unknown));
/// let proxy = Ok::<_, ()>(http::Response::builder().status(503).body(()).unwrap());
/// assert_eq!(c.classify(&proxy), Some(Classification::retryable()));
/// ```
#[derive(Debug, Clone, Default)]
pub struct GrpcClassifier<C = FailClosed> {
    codes: CodeClassifier,
    errors: C,
}

impl GrpcClassifier {
    /// The default code set (`UNAVAILABLE`); transport errors are not retried.
    ///
    /// ```
    /// use herdless::adapters::tower::GrpcClassifier;
    /// use herdless::classify::ClassifyResult;
    /// let denied = http::Response::builder().header("grpc-status", "7").body(()).unwrap();
    /// let r: Result<_, ()> = Ok(denied);
    /// assert_eq!(GrpcClassifier::new().classify(&r), Some(herdless::Classification::Terminal));
    /// ```
    pub fn new() -> Self {
        Self::default()
    }
}

impl<C> GrpcClassifier<C> {
    /// Replaces the code set.
    ///
    /// ```
    /// use herdless::grpc::CodeClassifier;
    /// use herdless::adapters::tower::GrpcClassifier;
    /// use herdless::classify::ClassifyResult;
    /// let c = GrpcClassifier::new().codes(CodeClassifier::new().retry(8)); // RESOURCE_EXHAUSTED too
    /// let r: Result<_, ()> = Ok(http::Response::builder().header("grpc-status", "8").body(()).unwrap());
    /// assert!(c.classify(&r).unwrap().is_retryable());
    /// ```
    pub fn codes(mut self, codes: CodeClassifier) -> Self {
        self.codes = codes;
        self
    }

    /// Classifies transport errors with `errors` (e.g. a closure over the
    /// channel's error type: a refused connection is usually safe to retry).
    ///
    /// ```
    /// use herdless::adapters::tower::GrpcClassifier;
    /// use herdless::classify::ClassifyResult;
    /// use herdless::Classification;
    /// let c = GrpcClassifier::new().errors(|_: &std::io::Error| Classification::retryable());
    /// let refused = Err::<http::Response<()>, _>(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
    /// assert_eq!(c.classify(&refused), Some(Classification::retryable()));
    /// ```
    pub fn errors<C2>(self, errors: C2) -> GrpcClassifier<C2> {
        GrpcClassifier {
            codes: self.codes,
            errors,
        }
    }
}

/// The gRPC code for an HTTP status without `grpc-status` (gRPC's HTTP to
/// gRPC status code mapping).
fn code_for_http(status: u16) -> i32 {
    match status {
        400 => 13,
        401 => 16,
        403 => 7,
        404 => 12,
        429 | 502 | 503 | 504 => 14,
        _ => 2,
    }
}

/// A `grpc-status` value: one or more ASCII digits fitting an `i32`.
fn parse_code(value: &[u8]) -> Option<i32> {
    if value.is_empty() || value.len() > 10 || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(value).ok()?.parse().ok()
}

impl<B, E, C: Classify<E>> ClassifyResult<Response<B>, E> for GrpcClassifier<C> {
    fn classify(&self, result: &Result<Response<B>, E>) -> Option<Classification> {
        let response = match result {
            Ok(response) => response,
            Err(e) => return Some(self.errors.classify(e)),
        };
        let headers = response.headers();
        let code = match headers.get(GRPC_STATUS) {
            Some(v) => match parse_code(v.as_bytes()) {
                Some(code) => code,
                None => return Some(Classification::Unknown),
            },
            None if response.status() == http::StatusCode::OK => return None,
            None => code_for_http(response.status().as_u16()),
        };
        let pushback = headers.get(PUSHBACK_HEADER).map(|v| v.as_bytes());
        classify_status(&self.codes, code, pushback)
    }

    fn is_timeout(&self, result: &Result<Response<B>, E>) -> bool {
        result
            .as_ref()
            .err()
            .is_some_and(|e| self.errors.is_timeout(e))
    }

    /// A trailers-only answer's `herdless-plan` (the shape of an immediate
    /// rejection, whose trailers arrive as headers), if readable.
    fn plan(&self, result: &Result<Response<B>, E>) -> Option<crate::pushback::waves::WavePlan> {
        let lines = result
            .as_ref()
            .ok()?
            .headers()
            .get_all(crate::http::HERDLESS_PLAN);
        crate::pushback::waves::WavePlan::from_headers(lines.iter().map(|v| v.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trailers_only_rejection_carries_its_plan() {
        let c = GrpcClassifier::new();
        let r = Response::builder()
            .header("grpc-status", "14")
            .header("grpc-retry-pushback-ms", "1250")
            .header("herdless-plan", "start=0.5, waves=3, spacing=1.0, salt=7")
            .body(())
            .unwrap();
        let plan = c.plan(&Ok::<_, ()>(r)).unwrap();
        assert_eq!((plan.start_ms(), plan.waves(), plan.salt()), (500, 3, 7));
        let bad = Response::builder()
            .header("grpc-status", "14")
            .header("herdless-plan", "start=soon")
            .body(())
            .unwrap();
        assert_eq!(
            c.plan(&Ok::<_, ()>(bad)),
            None,
            "an unreadable plan is none"
        );
        assert_eq!(c.plan(&Err::<Response<()>, _>(())), None);
    }

    #[test]
    fn grpc_status_values_and_http_fallbacks() {
        assert_eq!(parse_code(b"14"), Some(14));
        assert_eq!(parse_code(b"0014"), Some(14));
        for bad in [&b""[..], b"-1", b"+1", b" 1", b"99999999999", b"2147483648"] {
            assert_eq!(parse_code(bad), None, "{bad:?}");
        }
        let c = GrpcClassifier::new();
        for (http, expected) in [
            (400, Classification::Terminal),
            (404, Classification::Terminal),
            (429, Classification::retryable()),
            (504, Classification::retryable()),
            (418, Classification::Terminal), // UNKNOWN (2) is a gRPC code: terminal
        ] {
            let r = Ok::<_, ()>(Response::builder().status(http).body(()).unwrap());
            assert_eq!(c.classify(&r), Some(expected), "{http}");
        }
        // A proxy's 503 with a refusal: the refusal holds.
        let r = Response::builder()
            .status(503)
            .header(PUSHBACK_HEADER, "nope")
            .body(())
            .unwrap();
        assert_eq!(
            c.classify(&Ok::<_, ()>(r)),
            Some(Classification::DoNotRetry)
        );
    }
}

/// Sets `grpc-timeout` on an `http::Request<B>` to the attempt's remaining
/// time ([`format_timeout`](crate::grpc::format_timeout): eight digits and a
/// unit, rounded down), so the server and the proxies on the way stop
/// working on an attempt its caller has given up on. A
/// [`RequestTimeout`](crate::adapters::tower::RequestTimeout) for
/// [`RetryPolicy::with_request_timeout`](crate::adapters::tower::RetryPolicy::with_request_timeout)
/// and the [hedging layer](crate::adapters::tower::HedgeLayer).
///
/// ```
/// use std::time::Duration;
/// use herdless::adapters::tower::{GrpcTimeout, RequestTimeout};
/// let mut req = http::Request::new(());
/// GrpcTimeout.set_timeout(&mut req, Duration::from_millis(250));
/// assert_eq!(req.headers()["grpc-timeout"], "250000u");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct GrpcTimeout;

impl<B> crate::adapters::tower::RequestTimeout<http::Request<B>> for GrpcTimeout {
    fn set_timeout(&self, req: &mut http::Request<B>, remaining: std::time::Duration) {
        let value = crate::grpc::format_timeout(remaining);
        if let Ok(v) = http::HeaderValue::from_str(&value) {
            req.headers_mut().insert(crate::grpc::TIMEOUT_HEADER, v);
        }
    }
}
