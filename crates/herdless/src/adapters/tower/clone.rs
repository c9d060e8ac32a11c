//! Whether a request can be sent again: tower retries a copy, made before
//! each attempt, and [`PushbackLayer`](super::PushbackLayer) holds one
//! that its service refused ([`PushbackLayer::clone_requests`](super::PushbackLayer::clone_requests)).

/// Copies a request for a possible retry; `None` means "this request cannot
/// be sent twice" (a streaming body): it is sent once and never retried (see
/// the [module documentation](crate::adapters::tower#requests-that-cannot-be-cloned)).
///
/// Implemented by [`Cloned`] (any `Req: Clone`), [`NotCloned`] (nothing is
/// sent twice) and by every `Fn(&Req) -> Option<Req>` closure.
///
/// ```
/// use herdless::adapters::tower::{CloneRequest, Cloned};
/// assert_eq!(Cloned.clone_request(&"GET /"), Some("GET /"));
/// let never = |_: &String| None;
/// assert_eq!(never.clone_request(&"upload".to_string()), None);
/// ```
pub trait CloneRequest<Req> {
    /// A copy of `req` to send again, or `None` when it cannot be copied.
    fn clone_request(&self, req: &Req) -> Option<Req>;
}

/// Clones requests with `Clone` (every `http::Request<B>` whose body `B` is
/// `Clone`, e.g. a buffered `Full<Bytes>` or a `String`).
///
/// ```
/// use herdless::adapters::tower::{CloneRequest, Cloned};
/// let req = http::Request::new(String::from("{}"));
/// assert_eq!(Cloned.clone_request(&req).unwrap().body(), "{}");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Cloned;

impl<Req: Clone> CloneRequest<Req> for Cloned {
    fn clone_request(&self, req: &Req) -> Option<Req> {
        Some(req.clone())
    }
}

impl<Req, F> CloneRequest<Req> for F
where
    F: Fn(&Req) -> Option<Req>,
{
    fn clone_request(&self, req: &Req) -> Option<Req> {
        self(req)
    }
}

/// Clones nothing: every request is sent once (what
/// [`PushbackLayer`](super::PushbackLayer) does unless told how to clone).
///
/// ```
/// use herdless::adapters::tower::{CloneRequest, NotCloned};
/// assert_eq!(NotCloned.clone_request(&"GET /"), None);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct NotCloned;

impl<Req> CloneRequest<Req> for NotCloned {
    fn clone_request(&self, _req: &Req) -> Option<Req> {
        None
    }
}
