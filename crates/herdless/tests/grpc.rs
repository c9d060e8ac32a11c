//! gRPC retries against a real tonic server on 127.0.0.1: the `tonic::Status`
//! classifier in `Retry::call_async`, and `GrpcClassifier` in a tower
//! `RetryLayer` over a tonic `Channel`. The protobuf messages and the service
//! are written by hand (`prost::Message` derive, tonic's `server::Grpc` and
//! `client::Grpc`): no `protoc`, no build script.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use herdless::adapters::tower::{Cloned, GrpcClassifier, GrpcTimeout, RetryPolicy};
use herdless::grpc::TIMEOUT_HEADER;
use herdless::grpc::{CodeClassifier, PUSHBACK_HEADER, classify_status, parse_timeout};
use herdless::{Classification, GiveUp, Jitter, ManualTimer, Policy, Retry, RetryEvent};
use http::uri::PathAndQuery;
use http_body_util::{BodyExt, Full};
use prost::Message;
use tokio::net::TcpListener;
use tonic::codec::ProstCodec;
use tonic::metadata::MetadataValue;
use tonic::server::{NamedService, UnaryService};
use tonic::transport::{Channel, Server};
use tonic::{Code, Request, Response, Status};
use tower::retry::RetryLayer;
use tower::{Service, ServiceBuilder, ServiceExt};

#[derive(Clone, PartialEq, Message)]
struct Ping {
    #[prost(string, tag = "1")]
    name: String,
}

#[derive(Clone, PartialEq, Message)]
struct Pong {
    #[prost(string, tag = "1")]
    message: String,
}

const PATH: &str = "/herdless.test.Pinger/Ping";

/// The n-th call's answer (the last entry repeats): a code and an optional
/// `grpc-retry-pushback-ms`.
type Script = Arc<Vec<(Code, Option<&'static str>)>>;

/// The hand-written service: routes `PATH` to the scripted handler.
#[derive(Clone)]
struct Pinger {
    script: Script,
    hits: Arc<AtomicUsize>,
    /// The `grpc-timeout` of every request, as the server received it.
    timeouts: Arc<Mutex<Vec<Option<String>>>>,
}

impl NamedService for Pinger {
    const NAME: &'static str = "herdless.test.Pinger";
}

impl UnaryService<Ping> for Pinger {
    type Response = Pong;
    type Future = std::future::Ready<Result<Response<Pong>, Status>>;

    fn call(&mut self, request: Request<Ping>) -> Self::Future {
        let n = self.hits.fetch_add(1, Ordering::SeqCst);
        let (code, pushback) = self.script[n.min(self.script.len() - 1)];
        std::future::ready(if code == Code::Ok {
            let message = format!("pong {} #{}", request.into_inner().name, n + 1);
            Ok(Response::new(Pong { message }))
        } else {
            let mut status = Status::new(code, "scripted");
            if let Some(ms) = pushback {
                let value = MetadataValue::try_from(ms).unwrap();
                status.metadata_mut().insert(PUSHBACK_HEADER, value);
            }
            Err(status)
        })
    }
}

impl Service<http::Request<tonic::body::Body>> for Pinger {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        let this = self.clone();
        let timeout = req.headers().get(TIMEOUT_HEADER);
        let timeout = timeout.map(|v| v.to_str().unwrap().to_owned());
        self.timeouts.lock().unwrap().push(timeout);
        Box::pin(async move {
            if req.uri().path() != PATH {
                return Ok(Status::unimplemented(req.uri().path().to_string()).into_http());
            }
            let mut grpc = tonic::server::Grpc::new(ProstCodec::<Pong, Ping>::default());
            Ok(grpc.unary(this, req).await)
        })
    }
}

/// Serves the script on 127.0.0.1 (port 0); returns a connected channel and
/// the hit count.
async fn serve(script: Vec<(Code, Option<&'static str>)>) -> (Channel, Arc<AtomicUsize>) {
    let (channel, hits, _) = serve_seeing_timeouts(script).await;
    (channel, hits)
}

/// As [`serve`], with the `grpc-timeout` of every request the server got.
async fn serve_seeing_timeouts(
    script: Vec<(Code, Option<&'static str>)>,
) -> (Channel, Arc<AtomicUsize>, Arc<Mutex<Vec<Option<String>>>>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let timeouts = Arc::default();
    let pinger = Pinger {
        script: Arc::new(script),
        hits: hits.clone(),
        timeouts: Arc::clone(&timeouts),
    };
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    tokio::spawn(
        Server::builder()
            .add_service(pinger)
            .serve_with_incoming(incoming),
    );
    let channel = Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    (channel, hits, timeouts)
}

type Events = Arc<Mutex<Vec<String>>>;

/// Records each event as `name` or `name:reason`.
fn recorder() -> (Events, impl Fn(&RetryEvent<'_>) + Send + Sync + 'static) {
    let events: Events = Arc::default();
    let log = events.clone();
    let hook = move |e: &RetryEvent<'_>| {
        let mut line = e.name().to_string();
        e.visit(|k, v| {
            if k == "reason" {
                line = format!("{line}:{v}");
            }
        });
        log.lock().unwrap().push(line);
    };
    (events, hook)
}

/// The classifier a tonic user writes: code and raw pushback bytes.
fn classify(status: &Status) -> Classification {
    let pushback = status
        .metadata()
        .get(PUSHBACK_HEADER)
        .map(|v| v.as_encoded_bytes());
    classify_status(&CodeClassifier::new(), status.code() as i32, pushback)
        .unwrap_or(Classification::Unknown)
}

/// One unary call through tonic's client.
async fn ping(channel: Channel) -> Result<Response<Pong>, Status> {
    let mut client = tonic::client::Grpc::new(channel);
    client
        .ready()
        .await
        .map_err(|e| Status::unavailable(e.to_string()))?;
    let request = Request::new(Ping { name: "a".into() });
    let codec = ProstCodec::<Ping, Pong>::default();
    client
        .unary(request, PathAndQuery::from_static(PATH), codec)
        .await
}

fn policy() -> Policy {
    Policy::builder()
        .base(Duration::from_millis(100))
        .retry_after_spread(0.0) // a honored pushback is then exact
        .build()
        .unwrap()
}

#[tokio::test]
async fn unavailable_twice_then_ok() {
    let (channel, hits) = serve(vec![
        (Code::Unavailable, None),
        (Code::Unavailable, None),
        (Code::Ok, None),
    ])
    .await;
    let timer = ManualTimer::new();
    let (events, hook) = recorder();
    let retry = Retry::builder()
        .policy(policy())
        .classifier(classify)
        .timer(timer.clone())
        .notify(hook)
        .build();
    let reply = retry.call_async(|_| ping(channel.clone())).await.unwrap();
    assert_eq!(reply.into_inner().message, "pong a #3");
    assert_eq!(hits.load(Ordering::SeqCst), 3);
    let sleeps = timer.sleeps();
    assert_eq!(sleeps.len(), 2);
    assert!(
        sleeps[0] <= Duration::from_millis(100) && sleeps[1] <= Duration::from_millis(200),
        "{sleeps:?}"
    );
    assert_eq!(
        *events.lock().unwrap(),
        ["retry_scheduled", "retry_scheduled", "retry_succeeded"]
    );
}

#[tokio::test]
async fn pushback_is_honored_exactly() {
    let (channel, hits) = serve(vec![(Code::Unavailable, Some("1250")), (Code::Ok, None)]).await;
    let timer = ManualTimer::new();
    let retry = Retry::builder()
        .policy(policy())
        .classifier(classify)
        .timer(timer.clone())
        .build();
    let reply = retry.call_async(|_| ping(channel.clone())).await.unwrap();
    assert_eq!(reply.into_inner().message, "pong a #2");
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    assert_eq!(timer.sleeps(), [Duration::from_millis(1250)]);
}

#[tokio::test]
async fn a_huge_pushback_is_clamped_by_max_retry_after() {
    let (channel, _) = serve(vec![
        (Code::Unavailable, Some("99999999999")),
        (Code::Ok, None),
    ])
    .await;
    let timer = ManualTimer::new();
    let policy = Policy::builder()
        .max_retry_after(Duration::from_secs(3))
        .retry_after_spread(0.0)
        .build()
        .unwrap();
    let retry = Retry::builder()
        .policy(policy)
        .classifier(classify)
        .timer(timer.clone())
        .build();
    retry.call_async(|_| ping(channel.clone())).await.unwrap();
    assert_eq!(timer.sleeps(), [Duration::from_secs(3)]);
}

#[tokio::test]
async fn negative_pushback_stops_with_the_reason() {
    for refusal in ["-1", "soon"] {
        let (channel, hits) =
            serve(vec![(Code::Unavailable, Some(refusal)), (Code::Ok, None)]).await;
        let timer = ManualTimer::new();
        let (events, hook) = recorder();
        let retry = Retry::builder()
            .policy(policy())
            .classifier(classify)
            .timer(timer.clone())
            .notify(hook)
            .build();
        let err = retry
            .call_async(|_| ping(channel.clone()))
            .await
            .unwrap_err();
        assert_eq!(err.reason(), GiveUp::DoNotRetry, "{refusal}");
        assert!(err.is_exhausted() && !err.is_terminal());
        assert_eq!(err.attempts(), 1);
        assert_eq!(err.last_error().code(), Code::Unavailable);
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        assert!(timer.sleeps().is_empty());
        assert_eq!(
            *events.lock().unwrap(),
            ["retry_budget_exhausted:server_pushback"]
        );
        assert!(err.to_string().contains("(server_pushback)"), "{err}");
    }
}

#[tokio::test]
async fn other_codes_are_terminal_even_with_a_pushback() {
    let (channel, hits) = serve(vec![
        (Code::ResourceExhausted, Some("10")),
        (Code::Ok, None),
    ])
    .await;
    let retry = Retry::builder()
        .policy(policy())
        .classifier(classify)
        .timer(ManualTimer::new())
        .build();
    let err = retry
        .call_async(|_| ping(channel.clone()))
        .await
        .unwrap_err();
    assert_eq!((err.reason(), err.attempts()), (GiveUp::Terminal, 1));
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

/// A gRPC frame: uncompressed flag, big-endian length, the message.
fn frame(message: &impl Message) -> Bytes {
    let body = message.encode_to_vec();
    let mut out = BytesMut::with_capacity(5 + body.len());
    out.put_u8(0);
    out.put_u32(u32::try_from(body.len()).unwrap());
    out.put_slice(&body);
    out.freeze()
}

fn request() -> http::Request<Full<Bytes>> {
    http::Request::post(PATH)
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(Full::new(frame(&Ping { name: "t".into() })))
        .unwrap()
}

#[tokio::test]
async fn tower_retry_layer_over_a_tonic_channel() {
    let (channel, hits) = serve(vec![
        (Code::Unavailable, None),
        (Code::Unavailable, Some("400")),
        (Code::Ok, None),
        (Code::Unavailable, Some("-1")),
    ])
    .await;
    let timer = ManualTimer::new();
    let (events, hook) = recorder();
    let retry = Retry::builder()
        .policy(policy())
        .classifier(GrpcClassifier::new())
        .timer(timer.clone())
        .notify(hook)
        .build();
    // The buffered request is what tower copies; the channel gets tonic's body.
    let mut svc = ServiceBuilder::new()
        .layer(RetryLayer::new(RetryPolicy::new(retry)))
        .map_request(|r: http::Request<Full<Bytes>>| r.map(tonic::body::Body::new))
        .service(channel);

    let res = svc.ready().await.unwrap().call(request()).await.unwrap();
    assert_eq!(res.status(), 200);
    let body = res.into_body().collect().await.unwrap();
    assert_eq!(body.trailers().unwrap()["grpc-status"], "0");
    let bytes = body.to_bytes();
    assert_eq!(Pong::decode(&bytes[5..]).unwrap().message, "pong t #3");
    let sleeps = timer.sleeps();
    assert_eq!(sleeps.len(), 2);
    assert!(sleeps[0] <= Duration::from_millis(100), "{sleeps:?}");
    assert_eq!(sleeps[1], Duration::from_millis(400)); // the pushback, exactly

    // The next request is a fresh call: the refusal stops it after one attempt.
    let res = svc.ready().await.unwrap().call(request()).await.unwrap();
    assert_eq!(res.headers()["grpc-status"], "14");
    assert_eq!(hits.load(Ordering::SeqCst), 4);
    assert_eq!(timer.sleeps().len(), 2);
    assert_eq!(
        *events.lock().unwrap(),
        [
            "retry_scheduled",
            "retry_scheduled",
            "retry_succeeded",
            "retry_budget_exhausted:server_pushback"
        ]
    );
}

#[tokio::test]
async fn each_retry_carries_grpc_timeout_from_what_is_left() {
    let (channel, hits, timeouts) = serve_seeing_timeouts(vec![
        (Code::Unavailable, None),
        (Code::Unavailable, None),
        (Code::Ok, None),
    ])
    .await;
    let ms = Duration::from_millis;
    let policy = Policy::builder()
        .attempt_timeout(Duration::from_secs(1))
        .max_elapsed(ms(1150))
        .base(ms(100))
        .cap(ms(100))
        .multiplier(1.0)
        .jitter(Jitter::None)
        .build()
        .unwrap();
    let retry = Retry::builder()
        .policy(policy)
        .classifier(GrpcClassifier::new())
        .timer(ManualTimer::new())
        .build();
    let layer = RetryLayer::new(RetryPolicy::with_request_timeout(
        retry,
        Cloned,
        GrpcTimeout,
    ));
    let mut svc = ServiceBuilder::new()
        .layer(layer)
        .map_request(|r: http::Request<Full<Bytes>>| r.map(tonic::body::Body::new))
        .service(channel);
    let res = svc.ready().await.unwrap().call(request()).await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(hits.load(Ordering::SeqCst), 3);
    // The first request goes as built; each retry carries the attempt
    // timeout, then what is left of 1.15 s (due at 100 ms, then 200 ms).
    let seen = timeouts.lock().unwrap().clone();
    assert_eq!(
        seen,
        [None, Some("1000000u".into()), Some("950000u".into())]
    );
    let read: Vec<_> = seen
        .iter()
        .flatten()
        .map(|v| parse_timeout(v.as_bytes()).unwrap())
        .collect();
    assert_eq!(read, [ms(1000), ms(950)]);
}
