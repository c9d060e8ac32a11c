//! Server-guided pushback as a tower [`Layer`]: usable with axum, hyper and any
//! `tower::Service<http::Request<_>>` (feature `tower`).
//!
//! [`PushbackLayer`] puts an [`Allocator`] — the static [`SlotAllocator`] or
//! the [`AdaptiveAllocator`] — in front of a service. Admitted requests go to
//! the inner service untouched; the others are answered at once with `503
//! Service Unavailable` and two headers:
//!
//! | header | value |
//! |---|---|
//! | `Retry-After` | the caller's slot in whole seconds, rounded up (RFC 9110 `delay-seconds`, at least 1) |
//! | `Retry-After-Ms` | the same slot in whole milliseconds, rounded up — clients should prefer it |
//!
//! The layer reports the inner service's answer to every request it admitted:
//! a `503` or `429` of the service's own is a **refusal**
//! ([`Allocator::refused`]; the adaptive allocator learns its capacity from
//! them and books the caller a slot, which the layer adds to that answer as
//! the same two headers, replacing any the service set); anything else is
//! **served** ([`Allocator::served`]). With
//! [`key_header`](PushbackLayer::key_header) the layer names each caller by a
//! request header (hashed, [`caller_key`]), so the adaptive allocator can
//! tell a caller that came back before its slot.
//!
//! The allocator sits behind a `std::sync::Mutex` shared by every clone of the
//! layer and its services; the critical section is a few comparisons and
//! additions (no allocation, no I/O), so the lock is held for nanoseconds. A
//! poisoned lock is recovered, never propagated as a panic.
//!
//! Time comes from a [`Clock`] (default [`SystemTimer`], which follows tokio's
//! clock with the `tokio` feature); the allocator's epoch is the layer's
//! creation, so `SlotAllocator::outage_until(5 s)` means "the first five
//! seconds after the layer was built". [`PushbackLayer::start_outage`] and
//! [`PushbackLayer::recover`] switch outage mode at run time; the adaptive
//! allocator also finds an outage, and its end, on its own.
//!
//! The service forwards `poll_ready` to the inner service and rejects without
//! calling it, which is how tower's own load-shedding middleware behaves; it is
//! meant for services that are always ready (axum routers, hyper services).
//!
//! ```
//! use std::time::Duration;
//! use axum::{routing::get, Router};
//! use herdless::pushback::AdaptiveAllocator;
//! use herdless::adapters::tower::PushbackLayer;
//!
//! // Starts from an estimate of 10,000/s and learns the rest.
//! let pushback = PushbackLayer::new(AdaptiveAllocator::new(10_000.0, Duration::from_secs(60))?)
//!     .key_header("x-client-id");
//! let _app: Router = Router::new().route("/", get(|| async { "ok" })).layer(pushback.clone());
//! // later: pushback.start_outage(None); pushback.recover(); pushback.counts()
//! # Ok::<(), herdless::pushback::PushbackError>(())
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::header::HeaderName;
use http::{header, HeaderValue, Request, Response, StatusCode};
use tower::{Layer, Service};

use crate::http::RETRY_AFTER_MS;
#[allow(unused_imports)] // rustdoc links
use crate::pushback::adaptive::AdaptiveAllocator;
use crate::pushback::allocator::{caller_key, Allocator};
use crate::pushback::{Allotment, SlotAllocator};
use crate::timer::{Clock, SystemTimer};

struct Shared<K, A> {
    alloc: Mutex<A>,
    clock: K,
    epoch: Instant,
}

impl<K: Clock, A> Shared<K, A> {
    fn lock(&self) -> MutexGuard<'_, A> {
        self.alloc.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now(&self) -> Duration {
        self.clock.now().saturating_duration_since(self.epoch)
    }
}

/// What the response future reports back: the inner service's answer.
trait Outcome: Send + Sync {
    fn served(&self);
    fn refused(&self, caller: Option<u64>) -> Option<Allotment>;
}

impl<K: Clock + Send + Sync, A: Allocator> Outcome for Shared<K, A> {
    fn served(&self) {
        let now = self.now();
        self.lock().served(now);
    }

    fn refused(&self, caller: Option<u64>) -> Option<Allotment> {
        let now = self.now();
        self.lock().refused(now, caller)
    }
}

/// A tower layer admitting up to a capacity and answering the excess `503`
/// with spread `Retry-After` slots. See the [module
/// documentation](crate::adapters::tower::pushback). Clones share one allocator.
///
/// ```
/// use std::time::Duration;
/// use herdless::pushback::SlotAllocator;
/// use herdless::adapters::tower::PushbackLayer;
/// let layer = PushbackLayer::new(SlotAllocator::new(100.0, Duration::from_secs(30))?);
/// assert_eq!(layer.counts(), (0, 0));
/// # Ok::<(), herdless::pushback::PushbackError>(())
/// ```
pub struct PushbackLayer<K = SystemTimer, A = SlotAllocator> {
    shared: Arc<Shared<K, A>>,
    key_header: Option<HeaderName>,
}

impl<K, A> Clone for PushbackLayer<K, A> {
    fn clone(&self) -> Self {
        PushbackLayer {
            shared: Arc::clone(&self.shared),
            key_header: self.key_header.clone(),
        }
    }
}

impl<K, A: fmt::Debug> fmt::Debug for PushbackLayer<K, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("PushbackLayer");
        if let Ok(a) = self.shared.alloc.try_lock() {
            d.field("allocator", &*a);
        }
        d.finish_non_exhaustive()
    }
}

impl<A: Allocator> PushbackLayer<SystemTimer, A> {
    /// A layer on the system clock; its epoch is now.
    ///
    /// ```
    /// use std::time::Duration;
    /// let _ = herdless::adapters::tower::PushbackLayer::new(
    ///     herdless::pushback::SlotAllocator::new(5.0, Duration::from_secs(10))?,
    /// );
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn new(allocator: A) -> Self {
        Self::with_clock(allocator, SystemTimer)
    }
}

impl<K: Clock, A: Allocator> PushbackLayer<K, A> {
    /// A layer reading time from `clock` (e.g. [`ManualTimer`](crate::ManualTimer)
    /// in tests); its epoch is the clock's current time.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::adapters::tower::PushbackLayer;
    /// use herdless::pushback::SlotAllocator;
    /// use herdless::ManualTimer;
    /// let t = ManualTimer::new();
    /// let layer = PushbackLayer::with_clock(SlotAllocator::new(5.0, Duration::from_secs(10))?, t.clone());
    /// t.advance(Duration::from_secs(2));
    /// assert_eq!(layer.elapsed(), Duration::from_secs(2));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn with_clock(allocator: A, clock: K) -> Self {
        let epoch = clock.now();
        PushbackLayer {
            shared: Arc::new(Shared {
                alloc: Mutex::new(allocator),
                clock,
                epoch,
            }),
            key_header: None,
        }
    }

    /// Names each caller by the request header `name` (its value hashed with
    /// [`caller_key`]); requests without it are unnamed. The services this
    /// handle (and its later clones) makes use it; the allocator is shared
    /// by every clone either way.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::adapters::tower::PushbackLayer;
    /// use herdless::pushback::AdaptiveAllocator;
    /// let layer = PushbackLayer::new(AdaptiveAllocator::new(5.0, Duration::from_secs(10))?)
    ///     .key_header("x-worker-id");
    /// # let _ = layer;
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    ///
    /// # Panics
    ///
    /// When `name` is not a valid header name (a programming error: names
    /// are constants).
    pub fn key_header(mut self, name: &str) -> Self {
        self.key_header = Some(HeaderName::try_from(name).expect("a valid header name"));
        self
    }

    /// Time since the layer's epoch (the allocator's `now`).
    ///
    /// ```
    /// use std::time::Duration;
    /// let l = herdless::adapters::tower::PushbackLayer::new(
    ///     herdless::pushback::SlotAllocator::new(5.0, Duration::from_secs(10))?);
    /// assert!(l.elapsed() < Duration::from_secs(60));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn elapsed(&self) -> Duration {
        self.shared.now()
    }

    /// Decides one request now (what the service does for each request).
    ///
    /// ```
    /// use std::time::Duration;
    /// let l = herdless::adapters::tower::PushbackLayer::new(
    ///     herdless::pushback::SlotAllocator::new(5.0, Duration::from_secs(10))?.outage());
    /// assert!(!l.decide().is_admit());
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn decide(&self) -> Allotment {
        let now = self.shared.now();
        self.shared.lock().decide(now, None)
    }

    /// Sheds everything from now for `duration` (or, with `None`, until
    /// [`recover`](Self::recover)); the rejected callers are booked from the
    /// outage's end.
    ///
    /// ```
    /// use std::time::Duration;
    /// let l = herdless::adapters::tower::PushbackLayer::new(
    ///     herdless::pushback::SlotAllocator::new(5.0, Duration::from_secs(10))?);
    /// l.start_outage(Some(Duration::from_secs(3)));
    /// assert!(l.decide().retry_after().unwrap() >= Duration::from_secs(2));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn start_outage(&self, duration: Option<Duration>) {
        let now = self.shared.now();
        self.shared
            .lock()
            .start_outage(now, duration.map(|d| now.saturating_add(d)));
    }

    /// Leaves outage mode.
    ///
    /// ```
    /// use std::time::Duration;
    /// let l = herdless::adapters::tower::PushbackLayer::new(
    ///     herdless::pushback::SlotAllocator::new(5.0, Duration::from_secs(10))?.outage());
    /// l.recover();
    /// assert!(l.decide().is_admit());
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn recover(&self) {
        let now = self.shared.now();
        self.shared.lock().recover(now);
    }

    /// Looks at the allocator (its estimate, its counts).
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::adapters::tower::PushbackLayer;
    /// use herdless::pushback::AdaptiveAllocator;
    /// let l = PushbackLayer::new(AdaptiveAllocator::new(5.0, Duration::from_secs(10))?);
    /// assert_eq!(l.inspect(|a| a.capacity()), 5.0);
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn inspect<R>(&self, f: impl FnOnce(&A) -> R) -> R {
        f(&self.shared.lock())
    }

    /// Requests admitted and rejected so far.
    ///
    /// ```
    /// use std::time::Duration;
    /// let l = herdless::adapters::tower::PushbackLayer::new(
    ///     herdless::pushback::SlotAllocator::new(5.0, Duration::from_secs(10))?);
    /// let _ = l.decide();
    /// assert_eq!(l.counts(), (1, 0));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn counts(&self) -> (u64, u64) {
        self.shared.lock().counts()
    }
}

impl<S, K, A> Layer<S> for PushbackLayer<K, A> {
    type Service = PushbackService<S, K, A>;

    fn layer(&self, inner: S) -> Self::Service {
        PushbackService {
            inner,
            shared: Arc::clone(&self.shared),
            key_header: self.key_header.clone(),
        }
    }
}

/// The service [`PushbackLayer`] wraps around an inner service.
///
/// ```
/// use std::time::Duration;
/// use herdless::adapters::tower::PushbackLayer;
/// use herdless::pushback::SlotAllocator;
/// use tower::{Layer, ServiceExt, service_fn};
/// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// # rt.block_on(async {
/// let layer = PushbackLayer::new(SlotAllocator::new(1.0, Duration::from_secs(30))?.burst(1));
/// let svc = layer.layer(service_fn(|_req: http::Request<()>| async {
///     Ok::<_, std::convert::Infallible>(http::Response::new(String::from("ok")))
/// }));
/// let first = svc.clone().oneshot(http::Request::new(())).await.unwrap();
/// assert_eq!(first.status(), 200);
/// let second = svc.oneshot(http::Request::new(())).await.unwrap();
/// assert_eq!(second.status(), 503);
/// assert_eq!(second.headers()["retry-after"], "1");
/// assert_eq!(second.headers()["retry-after-ms"], "1000");
/// # Ok::<(), herdless::pushback::PushbackError>(())
/// # }).unwrap();
/// ```
pub struct PushbackService<S, K = SystemTimer, A = SlotAllocator> {
    inner: S,
    shared: Arc<Shared<K, A>>,
    key_header: Option<HeaderName>,
}

impl<S: Clone, K, A> Clone for PushbackService<S, K, A> {
    fn clone(&self) -> Self {
        PushbackService {
            inner: self.inner.clone(),
            shared: Arc::clone(&self.shared),
            key_header: self.key_header.clone(),
        }
    }
}

impl<S: fmt::Debug, K, A> fmt::Debug for PushbackService<S, K, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PushbackService")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

/// Sets a slot's `Retry-After` and `Retry-After-Ms` on a response.
fn with_slot<B>(response: &mut Response<B>, decision: Allotment) {
    let headers = response.headers_mut();
    if let Some(secs) = decision.retry_after_secs() {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    if let Some(ms) = decision.retry_after_ms() {
        headers.insert(RETRY_AFTER_MS, HeaderValue::from(ms));
    }
}

/// The `503` answer for a rejected request.
fn rejection<B: Default>(decision: Allotment) -> Response<B> {
    let mut response = Response::new(B::default());
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    with_slot(&mut response, decision);
    response
}

/// Whether the service's own answer is a refusal (it could not take the
/// request): `503` or `429`.
fn is_refusal(status: StatusCode) -> bool {
    status == StatusCode::SERVICE_UNAVAILABLE || status == StatusCode::TOO_MANY_REQUESTS
}

impl<S, K, A, ReqB, ResB> Service<Request<ReqB>> for PushbackService<S, K, A>
where
    S: Service<Request<ReqB>, Response = Response<ResB>>,
    ResB: Default,
    K: Clock + Send + Sync + 'static,
    A: Allocator,
{
    type Response = Response<ResB>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future, ResB>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqB>) -> Self::Future {
        let caller = self
            .key_header
            .as_ref()
            .and_then(|name| request.headers().get(name))
            .map(|v| caller_key(v.as_bytes()));
        let now = self.shared.now();
        let decision = self.shared.lock().decide(now, caller);
        match decision {
            Allotment::Admit => ResponseFuture {
                kind: Kind::Inner {
                    future: self.inner.call(request),
                    report: Some((Arc::clone(&self.shared) as Arc<dyn Outcome>, caller)),
                },
            },
            rejected => ResponseFuture {
                kind: Kind::Rejected {
                    response: Some(rejection(rejected)),
                },
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// The future of [`PushbackService`]: the inner service's, or a ready `503`.
    pub struct ResponseFuture<F, B> {
        #[pin]
        kind: Kind<F, B>,
    }
}

/// Where the inner answer is reported, and the caller's key.
type Report = Option<(Arc<dyn Outcome>, Option<u64>)>;

pin_project_lite::pin_project! {
    #[project = KindProj]
    enum Kind<F, B> {
        Inner { #[pin] future: F, report: Report },
        Rejected { response: Option<Response<B>> },
    }
}

impl<F, B> fmt::Debug for ResponseFuture<F, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ResponseFuture { .. }")
    }
}

impl<F, B, E> Future for ResponseFuture<F, B>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<B>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProj::Inner { future, report } => {
                let mut result = std::task::ready!(future.poll(cx));
                if let (Ok(response), Some((outcome, caller))) = (&mut result, report.take()) {
                    if is_refusal(response.status()) {
                        if let Some(slot) = outcome.refused(caller) {
                            with_slot(response, slot);
                        }
                    } else {
                        outcome.served();
                    }
                }
                Poll::Ready(result)
            }
            KindProj::Rejected { response } => match response.take() {
                Some(r) => Poll::Ready(Ok(r)),
                None => panic!("ResponseFuture polled after completion"),
            },
        }
    }
}
