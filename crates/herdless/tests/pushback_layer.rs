//! The pushback tower layer in front of an axum router, over a real socket.

use std::time::Duration;

use axum::{Router, routing::get};
use herdless::ManualTimer;
use herdless::adapters::tower::PushbackLayer;
use herdless::pushback::SlotAllocator;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One HTTP/1.1 GET over a fresh connection: (status, retry-after, retry-after-ms, body).
async fn get_once(addr: std::net::SocketAddr) -> (u16, Option<u64>, Option<u64>, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).await.unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let (mut ra, mut ra_ms) = (None, None);
    for line in lines {
        let (k, v) = line.split_once(':').unwrap();
        match k.to_ascii_lowercase().as_str() {
            "retry-after" => ra = Some(v.trim().parse().unwrap()),
            "retry-after-ms" => ra_ms = Some(v.trim().parse().unwrap()),
            _ => {}
        }
    }
    (status, ra, ra_ms, body.to_string())
}

#[tokio::test]
async fn axum_over_a_socket_sheds_an_outage_with_spread_slots_then_admits() {
    let timer = ManualTimer::new();
    let pushback = PushbackLayer::with_clock(
        SlotAllocator::new(10.0, Duration::from_secs(30))
            .unwrap()
            .burst(2)
            .outage_until(Duration::from_secs(5)),
        timer.clone(),
    );
    let app = Router::new()
        .route("/", get(|| async { "served" }))
        .layer(pushback.clone());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    // During the outage (virtual time 0): every request is shed, each with the
    // next slot: 5.0 s, 5.1 s, 5.2 s, ... (capacity 10/s).
    let mut slots_ms = Vec::new();
    for k in 0..20u64 {
        let (status, ra, ra_ms, body) = get_once(addr).await;
        assert_eq!(status, 503);
        assert!(body.is_empty());
        let ms = ra_ms.expect("Retry-After-Ms");
        assert_eq!(ms, 5_000 + 100 * k);
        assert_eq!(
            ra,
            Some(ms.div_ceil(1000)),
            "Retry-After is the slot rounded up"
        );
        slots_ms.push(ms);
    }
    assert!(slots_ms.windows(2).all(|w| w[0] < w[1]));

    // After the outage, within capacity: served.
    timer.advance(Duration::from_secs(6));
    let (status, ra, ra_ms, body) = get_once(addr).await;
    assert_eq!(
        (status, ra, ra_ms, body.as_str()),
        (200, None, None, "served")
    );
    assert_eq!(pushback.counts(), (1, 20));

    // Past the capacity (burst 2 at 10/s, no time passing): shed again.
    let statuses: Vec<u16> = {
        let mut v = Vec::new();
        for _ in 0..4 {
            v.push(get_once(addr).await.0);
        }
        v
    };
    assert_eq!(statuses, [200, 503, 503, 503]);
    server.abort();
}

#[tokio::test]
async fn runtime_outage_switch() {
    use tower::{Layer, ServiceExt};
    let timer = ManualTimer::new();
    let layer = PushbackLayer::with_clock(
        SlotAllocator::new(100.0, Duration::from_secs(60)).unwrap(),
        timer.clone(),
    );
    let svc = layer.layer(tower::service_fn(|_req: http::Request<()>| async {
        Ok::<_, std::convert::Infallible>(http::Response::new(String::from("ok")))
    }));
    let ok = svc.clone().oneshot(http::Request::new(())).await.unwrap();
    assert_eq!(ok.status(), 200);
    layer.start_outage(Some(Duration::from_secs(3)));
    let shed = svc.clone().oneshot(http::Request::new(())).await.unwrap();
    assert_eq!(shed.status(), 503);
    assert_eq!(shed.headers()["retry-after"], "3");
    assert_eq!(shed.headers()["retry-after-ms"], "3000");
    layer.recover();
    let ok = svc.oneshot(http::Request::new(())).await.unwrap();
    assert_eq!(ok.status(), 200);
}

/// A handler that serves `rate` requests per second on `timer`'s clock (a
/// token bucket with a burst of a tenth of a second, empty at first) and
/// answers the rest 503 itself, without Retry-After.
fn limited_handler(
    timer: ManualTimer,
    rate: f64,
) -> impl Fn() -> std::future::Ready<Result<http::Response<String>, std::convert::Infallible>> + Clone
{
    use herdless::Clock;
    let state = std::sync::Arc::new(std::sync::Mutex::new((0.0f64, timer.now())));
    move || {
        let mut s = state.lock().unwrap();
        let now = timer.now();
        s.0 = (s.0 + now.duration_since(s.1).as_secs_f64() * rate).min(rate * 0.1);
        s.1 = now;
        let response = if s.0 >= 1.0 {
            s.0 -= 1.0;
            http::Response::new(String::from("ok"))
        } else {
            let mut r = http::Response::new(String::new());
            *r.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
            r
        };
        std::future::ready(Ok(response))
    }
}

/// The adaptive allocator behind the layer, told four times the handler's
/// capacity: the handler's own 503s are reported back, each gets a slot
/// (Retry-After-Ms added by the layer), and the estimate falls to the
/// handler's rate.
#[tokio::test]
async fn the_adaptive_layer_learns_the_capacity_from_the_handlers_refusals() {
    use herdless::pushback::AdaptiveAllocator;
    use tower::{Layer, ServiceExt};
    let timer = ManualTimer::new();
    let layer = PushbackLayer::with_clock(
        AdaptiveAllocator::new(80.0, Duration::from_secs(60)).unwrap(),
        timer.clone(),
    )
    .key_header("x-worker-id");
    let handler = limited_handler(timer.clone(), 20.0);
    let svc = layer.layer(tower::service_fn(move |_req: http::Request<()>| handler()));
    let mut bare_503 = 0;
    for k in 0..400u32 {
        timer.advance(Duration::from_millis(10)); // 100 requests/s offered
        let req = http::Request::builder()
            .header("x-worker-id", k.to_string())
            .body(())
            .unwrap();
        let r = svc.clone().oneshot(req).await.unwrap();
        if r.status() == 503 && !r.headers().contains_key("retry-after-ms") {
            bare_503 += 1;
        }
    }
    assert_eq!(bare_503, 0, "every refusal carries a slot");
    let learned = layer.inspect(|a| a.capacity());
    assert!(
        (15.0..=25.0).contains(&learned),
        "learned {learned}/s for 20/s"
    );
    assert!(layer.inspect(|a| a.counts().refused) > 0);
}

/// Over a real socket: callers named by a header; one that comes back before
/// its slot is told the same slot again.
#[tokio::test]
async fn over_a_socket_an_early_caller_gets_its_slot_again() {
    use herdless::pushback::AdaptiveAllocator;
    let timer = ManualTimer::new();
    let layer = PushbackLayer::with_clock(
        AdaptiveAllocator::builder()
            .estimate(10.0)
            .client_spread(0.0)
            .build()
            .unwrap()
            .outage_until(Duration::from_secs(5)),
        timer.clone(),
    )
    .key_header("x-worker-id");
    let app = Router::new()
        .route("/", get(|| async { "served" }))
        .layer(layer.clone());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let get_as = |id: &'static str| async move {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let req = format!(
            "GET / HTTP/1.1\r\nHost: localhost\r\nX-Worker-Id: {id}\r\nConnection: close\r\n\r\n"
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut raw = String::new();
        s.read_to_string(&mut raw).await.unwrap();
        raw.lines()
            .find_map(|l| l.strip_prefix("retry-after-ms: "))
            .map(|v| v.trim().parse::<u64>().unwrap())
    };
    assert_eq!(get_as("a").await, Some(5_000));
    assert_eq!(get_as("b").await, Some(5_100));
    timer.advance(Duration::from_secs(1));
    assert_eq!(get_as("a").await, Some(4_000), "its slot, 1 s closer");
    assert_eq!(
        get_as("c").await,
        Some(4_200),
        "behind b, not behind a second booking of a"
    );
    assert_eq!(layer.inspect(|a| a.counts().early), 1);
    server.abort();
}

/// The service's own refusal (503) through the layer: the static allocator
/// books no slot for it (the answer passes as the service gave it), the
/// adaptive one does (its slot in `Retry-After`).
#[tokio::test]
async fn only_an_allocator_that_hears_answers_adds_a_slot_to_the_services_refusal() {
    use herdless::pushback::AdaptiveAllocator;
    use tower::{Layer, ServiceExt};
    // The layer over `alloc` in front of a service that refuses everything:
    // the answer's `Retry-After`, if any.
    async fn retry_after<A: herdless::pushback::Allocator>(alloc: A) -> Option<String> {
        let refusing = tower::service_fn(|_: http::Request<()>| async {
            let mut r = http::Response::new(());
            *r.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
            Ok::<_, std::convert::Infallible>(r)
        });
        let svc = PushbackLayer::with_clock(alloc, ManualTimer::new()).layer(refusing);
        let r = svc.oneshot(http::Request::new(())).await.unwrap();
        assert_eq!(r.status(), 503);
        let value = r.headers().get("retry-after")?;
        Some(value.to_str().unwrap().to_string())
    }
    let slots = SlotAllocator::new(1_000.0, Duration::from_secs(30)).unwrap();
    assert_eq!(retry_after(slots).await, None);
    let adaptive = AdaptiveAllocator::new(1_000.0, Duration::from_secs(30)).unwrap();
    assert!(retry_after(adaptive).await.is_some());
}
