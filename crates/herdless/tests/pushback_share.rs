//! The pushback layer as one replica among several
//! (`PushbackLayer::share`): it reports once a period, on requests, and
//! applies its peers' reports; alone, it decides exactly as without a
//! store; the static allocator shares nothing.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use herdless::adapters::tower::PushbackLayer;
use herdless::pushback::replicas::PERIOD;
use herdless::pushback::{
    AdaptiveAllocator, PeerReport, ReplicaReport, SharedState, SlotAllocator,
};
use http::{Request, Response, StatusCode};
use tokio::time::Instant;
use tower::{Layer, ServiceExt};

/// A store that records what it is given and answers fixed peers.
#[derive(Default)]
struct Store {
    published: Mutex<Vec<(Instant, ReplicaReport)>>,
    peers: Vec<PeerReport>,
}

impl SharedState for Store {
    fn publish(&self, report: &ReplicaReport) {
        self.published
            .lock()
            .unwrap()
            .push((Instant::now(), *report));
    }
    fn peers(&self) -> Vec<PeerReport> {
        self.peers.clone()
    }
}

/// A device down for `down` after `start`, then serving at most `per_s`
/// requests a second (a token bucket of one).
fn device(
    start: Instant,
    down: Duration,
    per_s: f64,
) -> impl tower::Service<
    Request<()>,
    Response = Response<String>,
    Error = Infallible,
    Future = std::future::Ready<Result<Response<String>, Infallible>>,
> + Clone
+ Send
+ 'static {
    let next = Arc::new(Mutex::new(start + down));
    tower::service_fn(move |_r: Request<()>| {
        let now = Instant::now();
        let mut next = next.lock().unwrap();
        let status = if now >= *next {
            *next = now.max(*next) + Duration::from_secs_f64(1.0 / per_s);
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        let mut r = Response::new(String::new());
        *r.status_mut() = status;
        std::future::ready(Ok(r))
    })
}

/// What one request saw: its status, its slot, when it was answered.
type Seen = (u16, Option<String>, Duration);

/// An adaptive allocator told 100/s that holds requests.
fn adaptive() -> AdaptiveAllocator {
    AdaptiveAllocator::builder()
        .estimate(100.0)
        .hold()
        .build()
        .unwrap()
}

/// 1,600 requests, one every 5 ms, through a layer (sharing through
/// `store`, if given) in front of a device down for 3 s, then serving
/// 80/s; in a fresh paused runtime. Returns what each request saw, in
/// order, and the allocator's counts and capacity at the end.
fn drive(store: Option<Arc<dyn SharedState>>) -> (Vec<Seen>, String) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let mut layer = PushbackLayer::new(adaptive());
        if let Some(store) = store {
            layer = layer.share(store);
        }
        let start = Instant::now();
        let svc = layer.layer(device(start, Duration::from_secs(3), 80.0));
        let mut calls = Vec::new();
        for _ in 0..1_600 {
            let svc = svc.clone();
            calls.push(tokio::spawn(async move {
                let r = svc.oneshot(Request::new(())).await.unwrap();
                let slot = r.headers().get("retry-after-ms");
                let slot = slot.map(|v| v.to_str().unwrap().to_owned());
                (r.status().as_u16(), slot, start.elapsed())
            }));
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let mut seen = Vec::new();
        for c in calls {
            seen.push(c.await.unwrap());
        }
        let end = layer.inspect(|a| format!("{:?} {}", a.counts(), a.capacity()));
        (seen, end)
    })
}

#[test]
fn alone_a_sharing_layer_decides_exactly_as_one_without_a_store() {
    let store = Arc::new(Store::default());
    let (plain, plain_end) = drive(None);
    let (shared, shared_end) = drive(Some(Arc::clone(&store) as Arc<dyn SharedState>));
    assert_eq!(plain_end, shared_end);
    assert_eq!(plain.len(), shared.len());
    for (i, (a, b)) in plain.iter().zip(&shared).enumerate() {
        assert_eq!(a, b, "request {i}");
    }
    // Not vacuous: the run saw the outage, slots and service...
    assert!(plain.iter().any(|s| s.0 == 503) && plain.iter().any(|s| s.0 == 200));
    // ...and the layer reported about once a period, never more often.
    let published = store.published.lock().unwrap();
    assert!(published.len() >= 6, "{} reports", published.len());
    assert!(
        published.windows(2).all(|w| w[1].0 - w[0].0 >= PERIOD),
        "at most one report a period"
    );
    assert!(published.iter().any(|(_, r)| r.down), "the outage was told");
}

#[tokio::test(start_paused = true)]
async fn a_peer_with_the_larger_backlog_takes_the_larger_share() {
    // A peer holding 2,000 requests while the device refuses some of
    // them; this replica holds none.
    let peer = ReplicaReport {
        served_per_s: 100.0,
        refused: 5,
        arrivals_per_s: 100.0,
        estimate: 100.0,
        held: 2_000,
        down: false,
    };
    let store = Arc::new(Store {
        peers: vec![PeerReport {
            report: peer,
            age: Duration::from_millis(500),
        }],
        ..Store::default()
    });
    let shared = PushbackLayer::new(adaptive()).share(Arc::clone(&store) as Arc<dyn SharedState>);
    let plain = PushbackLayer::new(adaptive());
    for layer in [&shared, &plain] {
        let svc = layer.layer(device(Instant::now(), Duration::ZERO, 1_000.0));
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(2_500) {
            let r = svc.clone().oneshot(Request::new(())).await.unwrap();
            assert_eq!(r.status(), StatusCode::OK);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    let (with, without) = (
        shared.inspect(|a| a.capacity()),
        plain.inspect(|a| a.capacity()),
    );
    assert!(without >= 100.0, "{without}");
    assert!(
        with < 0.9 * without,
        "cut to its share: {with} vs {without}"
    );
    assert_eq!(store.published.lock().unwrap().len(), 2, "at 1 s and 2 s");
}

#[tokio::test(start_paused = true)]
async fn the_static_allocator_shares_nothing() {
    let store = Arc::new(Store::default());
    let layer = PushbackLayer::new(SlotAllocator::new(100.0, Duration::from_secs(30)).unwrap())
        .share(Arc::clone(&store) as Arc<dyn SharedState>);
    let svc = layer.layer(device(Instant::now(), Duration::ZERO, 1_000.0));
    for _ in 0..30 {
        let _ = svc.clone().oneshot(Request::new(())).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(store.published.lock().unwrap().is_empty());
}
