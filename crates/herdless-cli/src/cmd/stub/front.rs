//! The device behind the library's pushback layer, as the flags ask:
//!
//! * `--pushback on` (the default with `--capacity`): a
//!   [`PushbackLayer`] over the `AdaptiveAllocator`, told `--capacity` (times
//!   `--capacity-estimate`), in front of the whole device (outage,
//!   fail-first, fail-every, capacity) as users put it in front of a
//!   handler. The device's own 503s are refusals (the allocator learns from
//!   them and books a slot); each caller is named by its `X-Worker-Id`
//!   (`key_header`). With a hold (`--hold-max`, `--hold-for`), the layer
//!   clones each request without a body (`clone_requests`), so a request
//!   the device refuses waits in the hold again instead of being answered.
//! * `--pushback static`: the same layer over the static `SlotAllocator`.
//!   With `--outage-end unknown` it is told the end as an operator would
//!   (`recover()` at the first arrival after it).
//! * `--waves`: the same layer over the wave planner (`waves.rs`), each
//!   caller named by its `X-Worker-Id`.
//! * `--pushback off`, or a fixed `--retry-after`: the device alone.
//!
//! With `--upstream` the layer is in front of the relay to the upstream
//! instead of the device (`relay.rs`), and with `--coordinate` the adaptive
//! allocator shares its reports with the other gateways
//! (`PushbackLayer::share`, `coordinate.rs`).
//!
//! The stub adds one thing to the layer's answers: while the allocator
//! takes the device to be down, its own refusals (not the device's) carry
//! `--fail-status` instead of 503, as the device's outage refusals do
//! ([`Front::outage_status`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::{Body, HttpBody};
use axum::http::{Request, StatusCode};
use axum::response::{IntoResponse, Response};
use herdless::SystemTimer;
use herdless::adapters::tower::{CloneRequest, PushbackLayer};
use herdless::pushback::waves::WavePlanner;
use herdless::pushback::{AdaptiveAllocator, Allocator, SharedState, SlotAllocator};
use tower::Layer;
use tower::util::BoxCloneSyncService;

use super::device::{Device, DeviceAnswer};
use super::relay::{self, Relay};

/// The device's service, the pushback layer in front of it when there is
/// one.
pub(crate) type DeviceService =
    BoxCloneSyncService<Request<Body>, Response, std::convert::Infallible>;

/// Marks a response the device answered (not the layer).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Answered;

/// What the stub reads from its front: the clock, the hold, the outage.
pub(crate) trait Front: Send + Sync {
    /// Time since the stub started (the allocator's clock when there is one).
    fn elapsed(&self) -> Duration;
    /// Requests held now.
    fn held(&self) -> usize;
    /// An arrival at `now`: the static allocator with an unknown end is
    /// told the outage is over at the first arrival after it.
    fn arrival(&self, now: Duration);
    /// The status of the layer's own refusal of `status` at `now`: the
    /// outage's (`--fail-status`) while the allocator takes the device to
    /// be down.
    fn outage_status(&self, status: StatusCode, now: Duration) -> StatusCode;
}

/// No pushback: the device alone on a clock of its own.
struct Plain {
    start: tokio::time::Instant,
}

impl Front for Plain {
    fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }
    fn held(&self) -> usize {
        0
    }
    fn arrival(&self, _now: Duration) {}
    fn outage_status(&self, status: StatusCode, _now: Duration) -> StatusCode {
        status
    }
}

/// What the stub needs of either allocator beyond [`Allocator`].
trait Outage {
    fn in_outage(&self, now: Duration) -> bool;
}

impl Outage for SlotAllocator {
    fn in_outage(&self, now: Duration) -> bool {
        SlotAllocator::in_outage(self, now)
    }
}

impl Outage for AdaptiveAllocator {
    fn in_outage(&self, now: Duration) -> bool {
        AdaptiveAllocator::in_outage(self, now)
    }
}

impl Outage for WavePlanner {
    fn in_outage(&self, now: Duration) -> bool {
        WavePlanner::in_outage(self, now)
    }
}

/// The pushback layer in front of the device.
struct Layered<A, C> {
    layer: PushbackLayer<SystemTimer, A, C>,
    outage_status: StatusCode,
    /// With the static allocator and an unknown end: when to tell it.
    recover_at: Option<Duration>,
    recovered: AtomicBool,
}

impl<A: Allocator + Outage + Sync, C: Send + Sync> Front for Layered<A, C> {
    fn elapsed(&self) -> Duration {
        self.layer.elapsed()
    }
    fn held(&self) -> usize {
        self.layer.inspect(|a| a.held())
    }
    fn arrival(&self, now: Duration) {
        if self.recover_at.is_some_and(|t| now >= t) && !self.recovered.swap(true, Ordering::AcqRel)
        {
            self.layer.recover();
        }
    }
    fn outage_status(&self, status: StatusCode, now: Duration) -> StatusCode {
        if status == StatusCode::SERVICE_UNAVAILABLE && self.layer.inspect(|a| a.in_outage(now)) {
            self.outage_status
        } else {
            status
        }
    }
}

/// Clones a request without a body (what `herdless fleet` and `get` send),
/// so a refusal can wait in the hold; a request with a body is sent once.
#[derive(Debug, Clone, Copy)]
struct Bodiless;

impl CloneRequest<Request<Body>> for Bodiless {
    fn clone_request(&self, r: &Request<Body>) -> Option<Request<Body>> {
        if r.body().size_hint().exact() != Some(0) {
            return None;
        }
        let mut copy = Request::new(Body::empty());
        *copy.method_mut() = r.method().clone();
        *copy.uri_mut() = r.uri().clone();
        *copy.version_mut() = r.version();
        *copy.headers_mut() = r.headers().clone();
        *copy.extensions_mut() = r.extensions().clone();
        Some(copy)
    }
}

/// How the flags put a pushback layer in front of the device.
#[derive(Debug)]
pub(crate) enum Pushback {
    /// None.
    Off,
    /// The static allocator; `recover_at`: tell it the end then.
    Static {
        alloc: SlotAllocator,
        recover_at: Option<Duration>,
    },
    /// The adaptive allocator; `hold`: it holds requests.
    Adaptive {
        alloc: Box<AdaptiveAllocator>,
        hold: bool,
    },
    /// The wave planner (`--waves`).
    Waves(Box<WavePlanner>),
}

/// What the layer is in front of: the stub's own device, or an upstream
/// (a gateway, `relay.rs`).
pub(crate) enum Target {
    /// The device the flags describe.
    Device(Box<Device>),
    /// `--upstream`.
    Relay(Arc<Relay>),
}

impl Target {
    /// The target as a service, on `front`'s clock.
    fn service(self, front: Arc<dyn Front>) -> Inner {
        match self {
            Target::Device(device) => Inner::Device(handler(Arc::from(device), front)),
            Target::Relay(relay) => Inner::Relay(relay),
        }
    }
}

/// The device's service, behind the layer `pushback` asks for (sharing
/// through `share` with `--coordinate`), and what the stub reads of it.
/// Call it inside the runtime the stub serves on (the layer's clock and its
/// hold's driver are tokio's).
pub(crate) fn build(
    target: Target,
    pushback: Pushback,
    outage_status: StatusCode,
    share: Option<Arc<dyn SharedState>>,
) -> (Arc<dyn Front>, DeviceService) {
    match pushback {
        Pushback::Off => {
            let front: Arc<dyn Front> = Arc::new(Plain {
                start: tokio::time::Instant::now(),
            });
            let svc = target.service(Arc::clone(&front)).boxed();
            (front, svc)
        }
        Pushback::Static { alloc, recover_at } => {
            let layer = PushbackLayer::new(alloc);
            layered(layer, target, outage_status, recover_at)
        }
        Pushback::Adaptive { alloc, hold } => {
            let mut layer = PushbackLayer::new(*alloc).key_header("x-worker-id");
            if let Some(store) = share {
                layer = layer.share(store);
            }
            if hold {
                let layer = layer.clone_requests(Bodiless);
                layered(layer, target, outage_status, None)
            } else {
                layered(layer, target, outage_status, None)
            }
        }
        Pushback::Waves(planner) => {
            let layer = PushbackLayer::new(*planner).key_header("x-worker-id");
            layered(layer, target, outage_status, None)
        }
    }
}

fn layered<A, C>(
    layer: PushbackLayer<SystemTimer, A, C>,
    target: Target,
    outage_status: StatusCode,
    recover_at: Option<Duration>,
) -> (Arc<dyn Front>, DeviceService)
where
    A: Allocator + Outage + Sync,
    C: CloneRequest<Request<Body>> + Send + Sync + 'static,
{
    let front: Arc<dyn Front> = Arc::new(Layered {
        layer: layer.clone(),
        outage_status,
        recover_at,
        recovered: AtomicBool::new(false),
    });
    let svc = match target.service(Arc::clone(&front)) {
        Inner::Device(device) => BoxCloneSyncService::new(layer.layer(device)),
        Inner::Relay(relay) => BoxCloneSyncService::new(layer.layer(relay::service(relay))),
    };
    (front, svc)
}

/// The target as a service of its own type (the device's future is ready
/// at once; the relay's is boxed).
enum Inner {
    Device(DeviceHandler),
    Relay(Arc<Relay>),
}

impl Inner {
    fn boxed(self) -> DeviceService {
        match self {
            Inner::Device(d) => BoxCloneSyncService::new(d),
            Inner::Relay(r) => BoxCloneSyncService::new(relay::service(r)),
        }
    }
}

/// The device as a service: its answer on the front's clock, marked
/// [`Answered`], ready at once.
#[derive(Clone)]
struct DeviceHandler {
    device: Arc<Device>,
    front: Arc<dyn Front>,
}

fn handler(device: Arc<Device>, front: Arc<dyn Front>) -> DeviceHandler {
    DeviceHandler { device, front }
}

impl tower::Service<Request<Body>> for DeviceHandler {
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = std::future::Ready<Result<Response, std::convert::Infallible>>;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let worker = request
            .headers()
            .get("x-worker-id")
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let verdict = self.device.answer(self.front.elapsed(), worker.as_deref());
        let mut response = match verdict {
            DeviceAnswer::Admit => (StatusCode::OK, "ok\n").into_response(),
            DeviceAnswer::Reject {
                status,
                retry_after,
            } => {
                let mut r = (status, "unavailable\n").into_response();
                if let Some(v) = retry_after {
                    r.headers_mut().insert(axum::http::header::RETRY_AFTER, v);
                }
                r
            }
        };
        response.extensions_mut().insert(Answered);
        std::future::ready(Ok(response))
    }
}
