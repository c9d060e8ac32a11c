//! A request's timeout set from the attempt's deadline: [`RequestTimeout`].

use std::time::Duration;

/// Sets on a request the time its attempt may take
/// ([`Engine::remaining`](crate::engine::Engine::remaining): the policy's
/// `attempt_timeout`, or what is left of `max_elapsed`, whichever is
/// smaller). Given to [`RetryPolicy::with_request_timeout`](crate::adapters::tower::RetryPolicy::with_request_timeout)
/// (set on every retry) and to the [hedging layer](crate::adapters::tower::HedgeLayer)
/// (set on every copy).
///
/// Implemented by [`NoTimeout`] (the default: the request is left alone),
/// [`GrpcTimeout`](crate::adapters::tower::GrpcTimeout) (the `grpc-timeout`
/// header, with `grpc`) and every `Fn(&mut Req, Duration)` closure, e.g.
/// reqwest's own per-request timeout when reqwest's `Client` is the
/// service:
///
/// ```
/// use std::time::Duration;
/// use herdless::adapters::tower::RequestTimeout;
/// let reqwest_timeout = |r: &mut http::Request<()>, left: Duration| {
///     r.extensions_mut().insert(left); // or, for a reqwest::Request: *r.timeout_mut() = Some(left)
/// };
/// let mut req = http::Request::new(());
/// reqwest_timeout.set_timeout(&mut req, Duration::from_millis(300));
/// assert_eq!(req.extensions().get::<Duration>(), Some(&Duration::from_millis(300)));
/// ```
pub trait RequestTimeout<Req> {
    /// Sets `remaining` as `req`'s timeout.
    fn set_timeout(&self, req: &mut Req, remaining: Duration);
}

/// Leaves requests alone: their attempts are bounded by the inner
/// service's own timeout, if any (the default).
///
/// ```
/// use herdless::adapters::tower::{NoTimeout, RequestTimeout};
/// let mut req = "GET /";
/// NoTimeout.set_timeout(&mut req, std::time::Duration::from_secs(1));
/// assert_eq!(req, "GET /");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTimeout;

impl<Req> RequestTimeout<Req> for NoTimeout {
    #[inline]
    fn set_timeout(&self, _req: &mut Req, _remaining: Duration) {}
}

impl<Req, F: Fn(&mut Req, Duration)> RequestTimeout<Req> for F {
    fn set_timeout(&self, req: &mut Req, remaining: Duration) {
        self(req, remaining)
    }
}
