//! A gateway's inner service: each request the pushback layer lets through
//! goes to the upstream (`--upstream`) on a pooled HTTP/1.1 connection
//! (hyper's client), and the upstream's answer comes back as it is.
//!
//! * The request keeps its method, path and query, headers (but the
//!   hop-by-hop ones and `Host`, which names the upstream) and body.
//! * The answer keeps its status, headers (but the hop-by-hop ones) and
//!   body, streamed. It is the device's answer to the layer: a `503` or
//!   `429` is a refusal the allocator learns from, as the stub's own
//!   device's are.
//! * An upstream that does not answer (connection refused or reset, no
//!   response head within `--upstream-timeout`) is the device failing:
//!   answered `503` here, which the layer takes as a refusal too.
//! * **Loops end at once**: each request forwarded carries this gateway's
//!   mark in `Via` (RFC 9110 §7.6.3: `1.1 herdless-N`, `N` drawn when the
//!   stub starts), and a request that comes back with it (an `--upstream`
//!   that is the gateway itself, or two gateways pointing at each other) is
//!   answered `508 Loop Detected`, unforwarded. Without it one request would
//!   return again and again, each time a new arrival on a new connection,
//!   until the descriptors or `--upstream-timeout` ran out.
//!
//! Every request forwarded is counted (`forwarded` in `/stats`), and those
//! of them that got no answer (`upstream_errors`): with a device stub behind
//! the gateways, its `total` is the sum of their `forwarded` less the
//! requests that never reached it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Request, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::front::Answered;
use super::gateway::Gateway;

/// The upstream, the client that reaches it, and the counts.
#[derive(Debug)]
pub(crate) struct Relay {
    client: Client<HttpConnector, Body>,
    upstream: Uri,
    timeout: Duration,
    /// This gateway's `Via` entry (`1.1 herdless-N`).
    via: HeaderValue,
    forwarded: AtomicU64,
    errors: AtomicU64,
}

/// Headers that describe one connection, not the request: never forwarded
/// (RFC 9110 §7.6.1).
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

fn strip_hop_by_hop(headers: &mut HeaderMap) {
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
}

impl Relay {
    /// A relay to `gateway`'s upstream. Call it inside a tokio runtime.
    pub(crate) fn new(gateway: &Gateway) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(gateway.timeout));
        Relay {
            client: Client::builder(TokioExecutor::new()).build(connector),
            upstream: gateway.upstream.clone(),
            timeout: gateway.timeout,
            via: via_mark(),
            forwarded: AtomicU64::new(0),
            errors: AtomicU64::new(0),
        }
    }

    /// Requests sent upstream so far, and those of them that got no answer.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (
            self.forwarded.load(Ordering::Relaxed),
            self.errors.load(Ordering::Relaxed),
        )
    }

    /// Forwards `request` and relays the answer (see the module
    /// documentation); marked [`Answered`], the device's answer.
    pub(crate) async fn forward(self: Arc<Self>, request: Request<Body>) -> Response {
        if self.came_back(request.headers()) {
            let mut r =
                (StatusCode::LOOP_DETECTED, "the upstream leads back here\n").into_response();
            r.extensions_mut().insert(Answered);
            return r;
        }
        self.forwarded.fetch_add(1, Ordering::Relaxed);
        let (mut parts, body) = request.into_parts();
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        let mut uri = self.upstream.clone().into_parts();
        uri.path_and_query = path.parse().ok();
        parts.uri = match Uri::from_parts(uri) {
            Ok(u) => u,
            Err(_) => return self.failed(),
        };
        strip_hop_by_hop(&mut parts.headers);
        parts.headers.remove(header::HOST);
        parts.headers.append(header::VIA, self.via.clone());
        let sent = self.client.request(Request::from_parts(parts, body));
        let mut response = match tokio::time::timeout(self.timeout, sent).await {
            Ok(Ok(r)) => r.map(Body::new),
            Ok(Err(_)) | Err(_) => return self.failed(),
        };
        strip_hop_by_hop(response.headers_mut());
        response.extensions_mut().insert(Answered);
        response
    }

    /// Whether `headers` carry this gateway's own `Via` entry: the request
    /// went round a loop back here.
    fn came_back(&self, headers: &HeaderMap) -> bool {
        let mark = self.via.as_bytes();
        headers.get_all(header::VIA).iter().any(|v| {
            v.as_bytes()
                .split(|&b| b == b',')
                .any(|entry| entry.trim_ascii() == mark)
        })
    }

    /// The upstream did not answer: the device failed.
    fn failed(&self) -> Response {
        self.errors.fetch_add(1, Ordering::Relaxed);
        let mut r = (StatusCode::SERVICE_UNAVAILABLE, "upstream unavailable\n").into_response();
        r.extensions_mut().insert(Answered);
        r
    }
}

/// A `Via` entry naming this process: `1.1 herdless-N`, `N` 64 random bits
/// (std's per-process hash keys), so that two stubs never share one.
fn via_mark() -> HeaderValue {
    use std::hash::{BuildHasher, RandomState};
    let n = RandomState::new().hash_one(std::process::id());
    HeaderValue::from_str(&format!("1.1 herdless-{n:016x}")).expect("ASCII is a header value")
}

/// The relay's answer to come.
type Forwarding = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Response, std::convert::Infallible>> + Send>,
>;

/// `relay` as a service (the layer's inner service in a gateway).
pub(crate) fn service(
    relay: Arc<Relay>,
) -> impl tower::Service<
    Request<Body>,
    Response = Response,
    Error = std::convert::Infallible,
    Future = Forwarding,
> + Clone
+ Send
+ Sync
+ 'static {
    tower::service_fn(move |request: Request<Body>| {
        let relay = Arc::clone(&relay);
        Box::pin(async move { Ok(relay.forward(request).await) }) as Forwarding
    })
}
