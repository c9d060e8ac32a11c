//! The pushback tower layer holding requests open (a capacity-aware
//! reconnect queue): released to the service, answered with a slot when
//! their hold runs out, and never left waiting by a caller that hangs up, a
//! missing runtime or a runtime that shuts down.

use std::convert::Infallible;
use std::future::Ready;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use herdless::adapters::tower::PushbackLayer;
use herdless::pushback::AdaptiveAllocator;
use http::{Request, Response, StatusCode};
use tokio::time::Instant;
use tower::{Layer, Service, ServiceExt};

type Answer = Result<Response<String>, Infallible>;

/// An allocator that holds requests, told the service is down for the
/// first `end_s` seconds.
fn held_until(estimate: f64, end_s: u64) -> AdaptiveAllocator {
    AdaptiveAllocator::builder()
        .estimate(estimate)
        .hold()
        .build()
        .unwrap()
        .outage_until(Duration::from_secs(end_s))
}

/// When the service was called.
type Calls = Arc<Mutex<Vec<Instant>>>;

/// A service answering `status`, recording when it was called.
fn recording(
    status: StatusCode,
) -> (
    Calls,
    impl Service<Request<()>, Response = Response<String>, Error = Infallible, Future = Ready<Answer>>
    + Clone,
) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&calls);
    let svc = tower::service_fn(move |_req: Request<()>| {
        seen.lock().unwrap().push(Instant::now());
        let mut r = Response::new(String::from("body"));
        *r.status_mut() = status;
        std::future::ready(Ok(r))
    });
    (calls, svc)
}

#[tokio::test(start_paused = true)]
async fn held_requests_reach_the_service_when_the_known_outage_ends() {
    let alloc = held_until(1_000.0, 3);
    let layer = PushbackLayer::new(alloc);
    let (calls, inner) = recording(StatusCode::OK);
    let svc = layer.layer(inner);
    let start = Instant::now();
    // `call` decides at once (the service is always ready).
    let held: Vec<_> = (0..50)
        .map(|_| svc.clone().call(Request::new(())))
        .collect();
    assert_eq!(
        layer.inspect(|a| a.held()),
        50,
        "all held during the outage"
    );
    assert!(calls.lock().unwrap().is_empty(), "none reached the service");
    for future in held {
        let response = future.await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }
    let calls = calls.lock().unwrap();
    assert_eq!(calls.len(), 50);
    let first = calls.iter().min().unwrap().duration_since(start);
    let last = calls.iter().max().unwrap().duration_since(start);
    assert!(
        first >= Duration::from_secs(3),
        "released at the end: {first:?}"
    );
    // After an outage the hold releases from 0.6 of the estimate: 50 requests
    // at 600/s take about 83 ms.
    assert!(
        last < Duration::from_millis(3_200),
        "released at the rate: {last:?}"
    );
    assert_eq!(layer.inspect(|a| a.held()), 0);
    assert_eq!(layer.inspect(|a| a.counts().released), 50);
}

#[tokio::test(start_paused = true)]
async fn a_request_held_past_its_hold_gets_a_slot() {
    // Down with an unknown end, the service refusing everything: the first
    // request is the probe, the second is held until its `hold_for`.
    let alloc = AdaptiveAllocator::builder()
        .estimate(100.0)
        .hold_for(Duration::from_secs(1))
        .probe_interval(Duration::from_secs(10))
        .build()
        .unwrap()
        .outage();
    let layer = PushbackLayer::new(alloc);
    let (_calls, inner) = recording(StatusCode::SERVICE_UNAVAILABLE);
    let svc = layer.layer(inner);
    let probe = svc.clone().oneshot(Request::new(())).await.unwrap();
    assert_eq!(probe.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        probe.headers().contains_key("retry-after-ms"),
        "a refusal carries a slot"
    );
    let start = Instant::now();
    let held = svc.oneshot(Request::new(())).await.unwrap();
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(1),
        "answered at its hold's end"
    );
    assert_eq!(held.status(), StatusCode::SERVICE_UNAVAILABLE);
    let ms: u64 = held.headers()["retry-after-ms"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(ms > 0);
    assert_eq!(layer.inspect(|a| a.counts().expired), 1);
}

#[tokio::test(start_paused = true)]
async fn a_released_request_the_service_refuses_is_answered_with_a_slot() {
    let alloc = held_until(100.0, 1);
    let layer = PushbackLayer::new(alloc);
    let (calls, inner) = recording(StatusCode::TOO_MANY_REQUESTS);
    let svc = layer.layer(inner);
    let response = svc.oneshot(Request::new(())).await.unwrap();
    assert_eq!(
        calls.lock().unwrap().len(),
        1,
        "released to the service once"
    );
    assert_eq!(
        response.status(),
        StatusCode::TOO_MANY_REQUESTS,
        "the service's answer"
    );
    assert!(response.headers().contains_key("retry-after-ms"));
    assert_eq!(
        layer.inspect(|a| a.held()),
        0,
        "not parked again: the request is spent"
    );
}

/// A service that refuses (503) its first `refusals` calls, then serves.
fn refusing_first(
    refusals: usize,
) -> (
    Calls,
    impl Service<Request<()>, Response = Response<String>, Error = Infallible, Future = Ready<Answer>>
    + Clone,
) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&calls);
    let svc = tower::service_fn(move |_req: Request<()>| {
        let mut seen = seen.lock().unwrap();
        seen.push(Instant::now());
        let status = if seen.len() <= refusals {
            StatusCode::SERVICE_UNAVAILABLE
        } else {
            StatusCode::OK
        };
        let mut r = Response::new(String::from("body"));
        *r.status_mut() = status;
        std::future::ready(Ok(r))
    });
    (calls, svc)
}

/// With a cloner, a released request the service refuses waits in the hold
/// again (its clone), and its caller sees only the later answer; so does an
/// admitted one the service refuses.
#[tokio::test(start_paused = true)]
async fn with_clones_a_refused_request_is_held_again_and_served_later() {
    let alloc = held_until(100.0, 1);
    let layer = PushbackLayer::new(alloc).clone_requests(|r: &Request<()>| Some(r.clone()));
    let (calls, inner) = refusing_first(2);
    let svc = layer.layer(inner);
    let start = Instant::now();
    let response = svc.clone().oneshot(Request::new(())).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK, "served in the end");
    assert!(!response.headers().contains_key("retry-after-ms"));
    let calls_now = calls.lock().unwrap().clone();
    assert_eq!(calls_now.len(), 3, "refused twice, then served");
    assert!(calls_now[0].duration_since(start) >= Duration::from_secs(1));
    assert!(calls_now.windows(2).all(|w| w[1] > w[0]), "each later");
    let counts = layer.inspect(|a| a.counts());
    assert_eq!(counts.put_back, 2, "{counts:?}");
    assert_eq!(layer.inspect(|a| a.held()), 0);
    // A request the allocator admits at once: the service's refusal holds it.
    let (calls, inner) = refusing_first(1);
    let alloc = AdaptiveAllocator::builder()
        .estimate(100.0)
        .hold()
        .build()
        .unwrap();
    let layer = PushbackLayer::new(alloc).clone_requests(|r: &Request<()>| Some(r.clone()));
    let response = layer.layer(inner).oneshot(Request::new(())).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(calls.lock().unwrap().len(), 2);
    assert_eq!(layer.inspect(|a| a.counts().held), 1);
}

/// A request the cloner declines (a streamed body) is answered with a slot,
/// as without a cloner.
#[tokio::test(start_paused = true)]
async fn a_request_the_cloner_declines_is_answered_with_a_slot() {
    let alloc = held_until(100.0, 1);
    let layer = PushbackLayer::new(alloc).clone_requests(|_: &Request<()>| None);
    let (calls, inner) = refusing_first(1);
    let response = layer.layer(inner).oneshot(Request::new(())).await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(response.headers().contains_key("retry-after-ms"));
    assert_eq!(calls.lock().unwrap().len(), 1);
    assert_eq!(layer.inspect(|a| a.held()), 0);
}

/// A caller that hangs up while its clone is held again leaves the queue.
#[tokio::test(start_paused = true)]
async fn a_caller_that_hangs_up_while_held_again_leaves_the_queue() {
    let alloc = held_until(100.0, 1);
    let layer = PushbackLayer::new(alloc).clone_requests(|r: &Request<()>| Some(r.clone()));
    let (calls, inner) = refusing_first(usize::MAX);
    let svc = layer.layer(inner);
    let gone = tokio::time::timeout(Duration::from_millis(1_500), svc.oneshot(Request::new(())));
    assert!(gone.await.is_err(), "still held after its first refusal");
    assert!(!calls.lock().unwrap().is_empty(), "it reached the service");
    assert_eq!(layer.inspect(|a| a.held()), 0, "out of the queue");
    assert_eq!(layer.inspect(|a| a.counts().cancelled), 1);
}

#[tokio::test(start_paused = true)]
async fn a_caller_that_hangs_up_while_held_leaves_the_queue() {
    let alloc = held_until(100.0, 5);
    let layer = PushbackLayer::new(alloc);
    let (calls, inner) = recording(StatusCode::OK);
    let svc = layer.layer(inner);
    let gave_up = tokio::time::timeout(
        Duration::from_secs(1),
        svc.clone().oneshot(Request::new(())),
    );
    assert!(gave_up.await.is_err(), "still held after 1 s");
    assert_eq!(layer.inspect(|a| a.held()), 0);
    assert_eq!(layer.inspect(|a| a.counts().cancelled), 1);
    // The next one waits for the end and is served; the gone one never is.
    let served = svc.oneshot(Request::new(())).await.unwrap();
    assert_eq!(served.status(), StatusCode::OK);
    assert_eq!(calls.lock().unwrap().len(), 1);
}

/// Polls `future` once with a waker that does nothing.
fn poll_once<F: std::future::Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    std::pin::Pin::new(future).poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn without_a_runtime_a_held_request_is_answered_at_once() {
    let alloc = held_until(100.0, 5);
    let layer = PushbackLayer::new(alloc);
    let (calls, inner) = recording(StatusCode::OK);
    let mut svc = layer.layer(inner);
    let mut future = svc.call(Request::new(()));
    match poll_once(&mut future) {
        Poll::Ready(Ok(r)) => assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE),
        other => panic!("answered at once, not {other:?}"),
    }
    assert_eq!(layer.inspect(|a| a.held()), 0, "nothing left in the queue");
    assert!(calls.lock().unwrap().is_empty());
}

#[test]
fn held_requests_are_answered_when_the_drivers_runtime_shuts_down() {
    let alloc = held_until(100.0, 5);
    let layer = PushbackLayer::new(alloc);
    let (_calls, inner) = recording(StatusCode::OK);
    let mut svc = layer.layer(inner);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    // Called inside the runtime (the driver starts on it), then held.
    let mut future = {
        let _inside = runtime.enter();
        svc.call(Request::new(()))
    };
    assert!(poll_once(&mut future).is_pending(), "held");
    assert_eq!(layer.inspect(|a| a.held()), 1);
    drop(runtime); // the driver with it
    match poll_once(&mut future) {
        Poll::Ready(Ok(r)) => assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE),
        other => panic!("answered once the driver is gone, not {other:?}"),
    }
    assert_eq!(layer.inspect(|a| a.held()), 0);
}

/// Over a real socket, an axum router behind the holding layer: the
/// connection stays open while held, then the handler answers it.
/// (`ManualTimer`: the driver's sleep moves the virtual clock to the end.)
#[tokio::test]
async fn over_a_socket_an_axum_router_holds_then_serves() {
    use axum::{Router, routing::get};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let timer = herdless::ManualTimer::new();
    let alloc = held_until(100.0, 4);
    let layer = PushbackLayer::with_clock(alloc, timer.clone());
    let app = Router::new()
        .route("/", get(|| async { "served" }))
        .layer(layer.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).await.unwrap();
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert!(raw.ends_with("served"), "{raw}");
    assert!(
        timer.elapsed() >= Duration::from_secs(4),
        "answered after the end"
    );
    assert_eq!(
        layer.inspect(|a| (a.counts().held, a.counts().released)),
        (1, 1)
    );
    server.abort();
}

/// A request whose caller says it waits long (`Prefer: wait=N`) is held up to
/// `hold_for_max`, one that says nothing up to `hold_for`, one that waits
/// less than `hold_for` and a second is not held; each answer at the end of
/// a hold is a requeue (`Herdless-Requeue: 1`, with its slot).
#[tokio::test(start_paused = true)]
async fn a_callers_patience_sets_its_hold_and_its_end_is_a_requeue() {
    let alloc = AdaptiveAllocator::builder()
        .estimate(100.0)
        .hold_for(Duration::from_secs(2))
        .hold_for_max(Duration::from_secs(20))
        .probe_interval(Duration::from_secs(600))
        .build()
        .unwrap()
        .outage();
    let layer = PushbackLayer::new(alloc);
    let (_calls, inner) = recording(StatusCode::SERVICE_UNAVAILABLE);
    let svc = layer.layer(inner);
    let _probe = svc.clone().oneshot(Request::new(())).await.unwrap();
    let with_wait = |secs: u64| {
        Request::builder()
            .header("prefer", format!("wait={secs}"))
            .body(())
            .unwrap()
    };
    let start = Instant::now();
    let patient = svc.clone().oneshot(with_wait(120));
    let plain = svc.clone().oneshot(Request::new(()));
    let hurried = svc.clone().oneshot(with_wait(2));
    let (patient, plain, hurried) = tokio::join!(patient, plain, hurried);
    let (patient, plain, hurried) = (patient.unwrap(), plain.unwrap(), hurried.unwrap());
    assert_eq!(hurried.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        hurried.headers()["herdless-requeue"],
        "1",
        "queued, not refused"
    );
    assert_eq!(plain.headers()["herdless-requeue"], "1");
    assert_eq!(patient.headers()["herdless-requeue"], "1");
    assert!(patient.headers().contains_key("retry-after-ms"));
    assert_eq!(
        layer.inspect(|a| a.counts().expired),
        2,
        "two held, both ran out"
    );
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(20),
        "the patient one held 20 s"
    );
}

/// `evict_held` answers every held request at once, unprocessed, each with
/// its own slot (spread, not one `Retry-After` for all).
#[tokio::test(start_paused = true)]
async fn evicting_answers_every_held_request_with_its_own_slot() {
    let alloc = AdaptiveAllocator::builder()
        .estimate(10.0)
        .probe_interval(Duration::from_secs(600))
        .hold()
        .build()
        .unwrap()
        .outage();
    let layer = PushbackLayer::new(alloc);
    let (calls, inner) = recording(StatusCode::SERVICE_UNAVAILABLE);
    let svc = layer.layer(inner);
    let probe = svc.clone().oneshot(Request::new(())).await.unwrap();
    assert_eq!(
        probe.status(),
        StatusCode::SERVICE_UNAVAILABLE,
        "the probe, refused"
    );
    let held: Vec<_> = (0..5).map(|_| svc.clone().call(Request::new(()))).collect();
    assert_eq!(layer.inspect(|a| a.held()), 5);
    assert_eq!(layer.evict_held(), 5);
    let mut slots = Vec::new();
    for f in held {
        let r = f.await.unwrap();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers()["herdless-requeue"], "1");
        slots.push(
            r.headers()["retry-after-ms"]
                .to_str()
                .unwrap()
                .parse::<u64>()
                .unwrap(),
        );
    }
    assert!(slots.windows(2).all(|w| w[0] < w[1]), "spread: {slots:?}");
    assert_eq!(
        calls.lock().unwrap().len(),
        1,
        "only the probe reached the service"
    );
    assert_eq!(layer.inspect(|a| (a.held(), a.counts().evicted)), (0, 5));
}
