//! A herdless HTTP client against an axum router behind the pushback layer
//! with a hold, over a real socket: the client tells its patience
//! (`Prefer: wait=N`), the layer holds it that long, answers it unprocessed
//! when the hold runs out (`Herdless-Requeue`), and the client does not count
//! that answer as an attempt.

#[path = "support/tls.rs"]
mod tls;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use herdless::adapters::reqwest::HttpRetry;
use herdless::adapters::tower::{CloneBody, PushbackLayer};
use herdless::pushback::AdaptiveAllocator;
use herdless::{Policy, Retry, RetryEvent};

#[tokio::test]
async fn a_held_client_is_requeued_without_spending_its_attempts() {
    // The device is down for its first 1.5 s, then serves.
    let born = Instant::now();
    let waits: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = Arc::clone(&waits);
    let device = move |headers: HeaderMap| {
        let seen = Arc::clone(&seen);
        async move {
            if let Some(v) = headers.get("prefer") {
                seen.lock().unwrap().push(v.to_str().unwrap().to_owned());
            }
            if born.elapsed() < Duration::from_millis(1_500) {
                (StatusCode::SERVICE_UNAVAILABLE, "down")
            } else {
                (StatusCode::OK, "served")
            }
        }
    };
    let alloc = AdaptiveAllocator::builder()
        .estimate(100.0)
        .hold_for(Duration::from_millis(200))
        .hold_for_max(Duration::from_millis(400))
        .build()
        .unwrap();
    // GET requests carry no body: a copy is sent again if the device
    // refuses the first, so that refusal waits in the hold too.
    let layer = PushbackLayer::new(alloc).clone_requests(CloneBody(|_: &Body| Some(Body::empty())));
    let app = Router::new().route("/", get(device)).layer(layer.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    // One attempt allowed: only requeues can get it through the outage.
    let policy = Policy::builder()
        .max_attempts(1)
        .max_elapsed(Duration::from_secs(20))
        .build()
        .unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&events);
    let retry = Retry::builder()
        .policy(policy)
        .classifier(Default::default())
        .notify(move |e: &RetryEvent<'_>| log.lock().unwrap().push(e.name()))
        .build();
    let http = HttpRetry::from_retry(retry);
    let client = tls::client();
    let response = http.send(client.get(&url)).await.unwrap();
    assert_eq!(response.status(), 200);
    let events = events.lock().unwrap().clone();
    let requeued = events.iter().filter(|e| **e == "retry_requeued").count();
    let scheduled = events.iter().filter(|e| **e == "retry_scheduled").count();
    assert!(
        requeued >= 2,
        "held past its hold, more than once: {events:?}"
    );
    assert_eq!(
        scheduled, 0,
        "the service's refusals were held, never answered: {events:?}"
    );
    let counts = layer.inspect(|a| a.counts());
    assert!(counts.expired >= 1, "{counts:?}");
    let waits = waits.lock().unwrap().clone();
    assert!(
        !waits.is_empty() && waits.iter().all(|w| w.starts_with("wait=")),
        "{waits:?}"
    );
    server.abort();
}
