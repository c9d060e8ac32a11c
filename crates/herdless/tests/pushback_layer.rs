//! The pushback tower layer in front of an axum router, over a real socket.

use std::time::Duration;

use axum::{routing::get, Router};
use herdless::fleet::pushback::SlotAllocator;
use herdless::fleet::pushback_layer::PushbackLayer;
use herdless::ManualTimer;
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
