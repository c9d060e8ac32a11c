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
//!
//! Every request forwarded is counted (`forwarded` in `/stats`), and those
//! of them that got no answer (`upstream_errors`): with a device stub behind
//! the gateways, its `total` is the sum of their `forwarded` less the
//! requests that never reached it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, Uri, header};
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
        let sent = self.client.request(Request::from_parts(parts, body));
        let mut response = match tokio::time::timeout(self.timeout, sent).await {
            Ok(Ok(r)) => r.map(Body::new),
            Ok(Err(_)) | Err(_) => return self.failed(),
        };
        strip_hop_by_hop(response.headers_mut());
        response.extensions_mut().insert(Answered);
        response
    }

    /// The upstream did not answer: the device failed.
    fn failed(&self) -> Response {
        self.errors.fetch_add(1, Ordering::Relaxed);
        let mut r = (StatusCode::SERVICE_UNAVAILABLE, "upstream unavailable\n").into_response();
        r.extensions_mut().insert(Answered);
        r
    }
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
