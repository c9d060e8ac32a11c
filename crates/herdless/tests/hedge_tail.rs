//! Hedging over real sockets on 127.0.0.1, on tokio's paused clock (the
//! server's latencies are `tokio::time::sleep`s, so every figure is exact
//! virtual time): the latency tail it cuts, and the storm it does not start.
//!
//! * An axum server answers in 2 ms, one request in 20 in 1 s: the p99 of
//!   400 calls without hedging against the budgeted `HedgeLayer` (≥ 5×
//!   lower, ≤ 10 % extra requests).
//! * A full outage (every answer a 503, after 50 ms): the budgeted layer's
//!   hedges stop when the budget is spent, within its bound; tower's own
//!   `hedge` (no budget) doubles the load.
//!
//! Run with `--nocapture` to see the figures.

#[path = "support/tls.rs"]
mod tls;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use herdless::adapters::reqwest::ReqwestClassifier;
use herdless::adapters::tower::{HedgeLayer, Idempotent};
use herdless::hedge::Hedge;
use herdless::{Policy, Retry, RetryBudget};
use tokio::net::TcpListener;
use tokio::time::Instant;
use tower::{Service, ServiceBuilder, ServiceExt};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// Serves `/` on 127.0.0.1: request `n` (0-based) is answered by
/// `answer(n)` (status, latency). Returns the URL and the request count.
async fn serve(answer: fn(u64) -> (StatusCode, Duration)) -> (String, Arc<AtomicU64>) {
    let count = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&count);
    let app = Router::new().route(
        "/",
        get(move || {
            let n = seen.fetch_add(1, Ordering::SeqCst);
            async move {
                let (status, latency) = answer(n);
                tokio::time::sleep(latency).await;
                (status, "ok")
            }
        }),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, count)
}

/// 2 ms, one in 20 (the 11th of every 20) 1 s.
fn tail(n: u64) -> (StatusCode, Duration) {
    let latency = if n % 20 == 10 {
        Duration::from_secs(1)
    } else {
        MS(2)
    };
    (StatusCode::OK, latency)
}

/// Every answer a 503, after 50 ms (an overloaded backend: slow and failing).
fn outage(_: u64) -> (StatusCode, Duration) {
    (StatusCode::SERVICE_UNAVAILABLE, MS(50))
}

fn request(url: &str) -> reqwest::Request {
    reqwest::Request::new(reqwest::Method::GET, url.parse().unwrap())
}

fn p99(mut latencies: Vec<Duration>) -> Duration {
    latencies.sort();
    let rank = (latencies.len() as f64 * 0.99).ceil() as usize - 1;
    latencies[rank]
}

/// p95 of the winners' latencies, never sooner than 5 ms.
fn hedge() -> Hedge {
    Hedge::builder()
        .percentile(0.95)
        .min_delay(MS(5))
        .build()
        .unwrap()
}

/// The budgeted hedging client over reqwest.
fn hedging_client(
    policy: Policy,
    budget: Arc<RetryBudget>,
) -> impl Service<reqwest::Request, Response = reqwest::Response, Error = reqwest::Error> {
    let retry = Retry::builder()
        .policy(policy)
        .classifier(ReqwestClassifier::default())
        .budget(budget)
        .build();
    let cloner = |r: &reqwest::Request| r.try_clone();
    let layer =
        HedgeLayer::with_parts(retry, hedge(), cloner, herdless::adapters::tower::NoTimeout);
    ServiceBuilder::new().layer(layer).service(tls::client())
}

const CALLS: usize = 400;

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn hedging_cuts_the_p99_five_fold_with_few_extra_requests() {
    assert!(request("http://127.0.0.1/").is_idempotent());
    // Without hedging.
    let (url, plain_count) = serve(tail).await;
    let client = tls::client();
    let mut plain = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let started = Instant::now();
        let res = client.execute(request(&url)).await.unwrap();
        assert_eq!(res.status(), 200);
        plain.push(started.elapsed());
    }
    // With the budgeted hedging layer.
    let (url, hedged_count) = serve(tail).await;
    let mut svc = hedging_client(Policy::default(), Arc::new(RetryBudget::aws()));
    let mut hedged = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let started = Instant::now();
        let res = svc
            .ready()
            .await
            .unwrap()
            .call(request(&url))
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        hedged.push(started.elapsed());
    }
    let (p99_plain, p99_hedged) = (p99(plain), p99(hedged));
    let requests = hedged_count.load(Ordering::SeqCst);
    let extra = requests as f64 / CALLS as f64 - 1.0;
    eprintln!(
        "latency tail, {CALLS} calls: p99 without hedging {p99_plain:?} ({} requests), \
         with hedging {p99_hedged:?} ({requests} requests, {:.1} % extra)",
        plain_count.load(Ordering::SeqCst),
        extra * 100.0
    );
    assert_eq!(plain_count.load(Ordering::SeqCst), CALLS as u64);
    assert!(
        p99_plain >= 5 * p99_hedged,
        "{p99_plain:?} vs {p99_hedged:?}"
    );
    assert!(extra <= 0.10, "{:.1} % extra requests", extra * 100.0);
}

/// tower's `hedge` policy: every request may be hedged.
#[derive(Clone)]
struct Always;

impl tower::hedge::Policy<reqwest::Request> for Always {
    fn clone_request(&self, req: &reqwest::Request) -> Option<reqwest::Request> {
        req.try_clone()
    }
    fn can_retry(&self, _: &reqwest::Request) -> bool {
        true
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn in_an_outage_the_budget_stops_the_hedges_and_an_unbudgeted_hedge_doubles_the_load() {
    const CALLS: u64 = 100;
    // herdless: a hedge or a retry costs 1 token of 20; nothing refunds in
    // an outage; at most two copies per call (one hedge, or one retry).
    let tokens = 20.0;
    let budget = Arc::new(
        RetryBudget::builder()
            .aws()
            .max_tokens(tokens)
            .retry_cost(1.0)
            .timeout_cost(1.0)
            .spread(0.0)
            .build()
            .unwrap(),
    );
    let policy = Policy::builder()
        .max_attempts(2)
        .base(MS(10))
        .build()
        .unwrap();
    let (url, ours) = serve(outage).await;
    let mut svc = hedging_client(policy, Arc::clone(&budget));
    for _ in 0..CALLS {
        let res = svc
            .ready()
            .await
            .unwrap()
            .call(request(&url))
            .await
            .unwrap();
        assert_eq!(res.status(), 503);
    }
    let ours = ours.load(Ordering::SeqCst);
    // tower's hedge, its latency histogram primed with the healthy 2 ms
    // (p90: hedge after 2 ms), no budget.
    let (url, theirs) = serve(outage).await;
    let mut tower_hedge = tower::hedge::Hedge::new_with_mock_latencies(
        tls::client(),
        Always,
        10,
        0.9,
        Duration::from_secs(3600),
        &[2; 100],
    );
    for _ in 0..CALLS {
        let res = tower_hedge
            .ready()
            .await
            .unwrap()
            .call(request(&url))
            .await
            .unwrap();
        assert_eq!(res.status(), 503);
    }
    let theirs = theirs.load(Ordering::SeqCst);
    let bound = CALLS + tokens as u64;
    eprintln!(
        "outage, {CALLS} calls: budgeted hedging {ours} requests (bound {bound}, budget left {}), \
         unbudgeted tower hedge {theirs} requests ({:.2}x)",
        budget.tokens(),
        theirs as f64 / CALLS as f64
    );
    assert!(ours <= bound, "{ours} requests, bound {bound}");
    assert!(ours > CALLS, "the budget admitted some hedges first");
    assert_eq!(budget.tokens(), 0.0);
    assert!(
        theirs >= CALLS * 19 / 10,
        "{theirs}: the unbudgeted hedge multiplies the load"
    );
}
