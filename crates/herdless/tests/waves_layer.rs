//! A plan of waves on the wire: the tower pushback layer announces it
//! beside each rejection (`Herdless-Plan`, and a `Retry-After-Ms` at the
//! caller's own point), and the clients' guard waits for its wave: the
//! reqwest sender over a real socket, and tower's retry policy.

#[path = "support/tls.rs"]
mod tls;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use herdless::adapters::reqwest::{HttpRetry, ReqwestClassifier};
use herdless::adapters::tower::{HttpClassifier, PushbackLayer, RetryPolicy};
use herdless::guard::waves::WaveGuard;
use herdless::pushback::allocator::caller_key;
use herdless::pushback::waves::{WavePlan, WavePlanner};
use herdless::{ManualTimer, Policy, Retry};
use http::{Request, Response};
use tower::{Layer, ServiceBuilder, ServiceExt};

fn ok() -> impl tower::Service<
    Request<()>,
    Response = Response<String>,
    Error = Infallible,
    Future = std::future::Ready<Result<Response<String>, Infallible>>,
> + Clone {
    tower::service_fn(|_req: Request<()>| std::future::ready(Ok(Response::new(String::from("ok")))))
}

/// 20 requests/s, a population of 100 told: a plan of 100 / 19 per s =
/// 5.26 s, in 6 waves.
fn planner() -> WavePlanner {
    WavePlanner::builder()
        .capacity(20.0)
        .population(100)
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_layer_announces_the_plan_and_each_callers_own_point() {
    let timer = ManualTimer::new();
    let layer = PushbackLayer::with_clock(planner(), timer.clone()).key_header("x-worker-id");
    let svc = layer.layer(ok());
    let mut plans = Vec::new();
    for i in 0..40 {
        let id = format!("w{i}");
        let req = Request::builder()
            .header("x-worker-id", &id)
            .body(())
            .unwrap();
        let r = svc.clone().oneshot(req).await.unwrap();
        if r.status() == 200 {
            assert!(r.headers().get("herdless-plan").is_none());
            continue;
        }
        assert_eq!(r.status(), 503);
        let plan = WavePlan::from_header(r.headers()["herdless-plan"].as_bytes()).unwrap();
        let ms: i64 = r.headers()["retry-after-ms"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        let point = plan.point_ms(caller_key(id.as_bytes()));
        assert!((point..=point + 1).contains(&ms), "{id}: {ms} vs {point}");
        plans.push(plan);
    }
    assert!(
        plans.len() >= 35,
        "the burst (2) admitted, the rest turned away"
    );
    assert!(plans.windows(2).all(|w| w[0] == w[1]), "one plan for all");
    assert_eq!(plans[0].waves(), 6);
    // An unnamed caller still learns the plan it may follow (placed after it).
    let r = svc.oneshot(Request::new(())).await.unwrap();
    assert_eq!(r.status(), 503);
    assert!(r.headers().contains_key("herdless-plan"));
}

#[tokio::test]
async fn the_reqwest_sender_waits_for_its_wave_over_a_socket() {
    let layer = PushbackLayer::new(planner()).key_header("x-worker-id");
    let app = axum::Router::new()
        .route("/", axum::routing::get(|| async { "ok" }))
        .layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let client = tls::client();
    let url = format!("http://{addr}/");
    // Use up the burst.
    for i in 0..5 {
        let _ = client
            .get(&url)
            .header("x-worker-id", format!("b{i}"))
            .send()
            .await;
    }
    // What the server announces (the same plan for everyone).
    let raw = client
        .get(&url)
        .header("x-worker-id", "w-77")
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status(), 503);
    let plan = WavePlan::from_header(raw.headers()["herdless-plan"].as_bytes()).unwrap();
    let timer = ManualTimer::new();
    let guard = Arc::new(WaveGuard::new("w-77"));
    let retry = Retry::builder()
        .policy(
            Policy::builder()
                .max_retry_after(Duration::from_secs(30))
                .retry_after_spread(0.0)
                .build()
                .unwrap(),
        )
        .classifier(ReqwestClassifier::default())
        .timer(timer.clone())
        .waves(Arc::clone(&guard))
        .build();
    let http = HttpRetry::from_retry(retry);
    let mut seen = Vec::new();
    // A manual timer does not wait: every retry comes at once, early, and
    // is told again; what matters is what the guard asked to sleep.
    let _ = http
        .send_observed(client.get(&url).header("x-worker-id", "w-77"), |a| {
            seen.push(a.status)
        })
        .await;
    server.abort();
    assert_eq!(seen.first(), Some(&Some(503)));
    let wave = plan.wave_of(guard.key());
    let first = timer.sleeps()[0];
    // Its wave, from the plan's start as first announced (the sender's own
    // answer came a socket's round trip later).
    let start = Duration::from_millis(plan.start_ms().max(0) as u64);
    let lo = (start + plan.spacing() * wave).saturating_sub(Duration::from_millis(250));
    let hi = start + plan.spacing() * (wave + 1);
    assert!(
        first >= lo && first < hi,
        "{first:?} not in wave {wave} ({lo:?}..{hi:?})"
    );
    // Drawn by the guard, not the Retry-After-Ms it also got (whole
    // milliseconds, unspread with this policy).
    assert_ne!(first.subsec_nanos() % 1_000_000, 0, "{first:?}");
}

/// A service whose first answer is a 503 with `Retry-After: 30` and `plan`,
/// and every later one a 200.
fn refused_once_with(
    plan: WavePlan,
) -> impl FnMut(Request<()>) -> std::future::Ready<Result<Response<String>, Infallible>> + Clone {
    let calls = Arc::new(std::sync::atomic::AtomicU32::new(0));
    move |_req: Request<()>| {
        let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut r = Response::new(String::new());
        if n == 0 {
            *r.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
            r.headers_mut().insert("retry-after", "30".parse().unwrap());
            r.headers_mut()
                .insert("herdless-plan", plan.to_string().parse().unwrap());
        }
        std::future::ready(Ok(r))
    }
}

#[tokio::test]
async fn the_tower_retry_policy_waits_for_its_wave() {
    let timer = ManualTimer::new();
    let guard = Arc::new(WaveGuard::new("w-5"));
    let retry = Retry::builder()
        .classifier(HttpClassifier::new())
        .timer(timer.clone())
        .waves(Arc::clone(&guard))
        .build();
    let plan = WavePlan::new(1_000, 4, 500, 77).unwrap();
    let svc = ServiceBuilder::new()
        .layer(tower::retry::RetryLayer::new(RetryPolicy::new(retry)))
        .service_fn(refused_once_with(plan));
    let r = svc.oneshot(Request::new(())).await.unwrap();
    assert_eq!(r.status(), 200);
    let wave = plan.wave_of(guard.key());
    let slept = timer.sleeps()[0];
    let from = Duration::from_millis(1_000 + 500 * u64::from(wave));
    assert!(
        slept >= from && slept < from + Duration::from_millis(500),
        "{slept:?}"
    );
}

/// An answer with two `Herdless-Plan` lines (an intermediary added its
/// own) is read as one structured-field dictionary, the lines joined: of a
/// member given twice the last wins, in the HTTP and the gRPC classifier
/// alike; lines joined past 256 bytes are no plan.
#[test]
fn several_plan_lines_are_one_dictionary_the_last_member_winning() {
    use herdless::classify::ClassifyResult;
    let answer = |lines: &[&str]| {
        let mut b = Response::builder().status(503).header("grpc-status", "14");
        for l in lines {
            b = b.header("herdless-plan", *l);
        }
        Ok::<_, Infallible>(b.body(()).unwrap())
    };
    let two = answer(&[
        "start=0.3, waves=1, spacing=0.1, salt=1",
        "start=30, waves=2, spacing=0.1, salt=2",
    ]);
    let long = "x".repeat(250);
    let too_long = answer(&["start=0.3, waves=1, spacing=0.1, salt=1", &long]);
    let mut read = vec![(
        HttpClassifier::new().plan(&two),
        HttpClassifier::new().plan(&too_long),
    )];
    #[cfg(feature = "grpc")]
    {
        let grpc = herdless::adapters::tower::GrpcClassifier::new();
        read.push((grpc.plan(&two), grpc.plan(&too_long)));
    }
    for (plan, none) in read {
        let plan = plan.expect("read");
        assert_eq!((plan.start_ms(), plan.waves(), plan.salt()), (30_000, 2, 2));
        assert_eq!(none, None);
    }
}

/// The hedged tower client follows a plan too: a round whose copies were
/// all refused with a plan retries at the caller's own wave, not at the
/// `Retry-After` every plain client got.
#[tokio::test]
async fn the_hedged_tower_client_waits_for_its_wave() {
    use herdless::adapters::tower::{Cloned, HedgeLayer};
    use herdless::hedge::Hedge;
    let timer = ManualTimer::new();
    let guard = Arc::new(WaveGuard::new("w-9"));
    let retry = Retry::builder()
        .classifier(HttpClassifier::new())
        .timer(timer.clone())
        .waves(Arc::clone(&guard))
        .build();
    let hedge = Hedge::builder()
        .delay(Duration::from_secs(60))
        .build()
        .unwrap();
    let plan = WavePlan::new(1_000, 4, 500, 91).unwrap();
    let stamp = |_: &mut Request<()>, _: Duration| {};
    let svc = ServiceBuilder::new()
        .layer(HedgeLayer::with_parts(retry, hedge, Cloned, stamp))
        .service_fn(refused_once_with(plan));
    let r = svc.oneshot(Request::new(())).await.unwrap();
    assert_eq!(r.status(), 200);
    let wave = plan.wave_of(guard.key());
    // The timer also sleeps the hedge's delay (60 s, never reached: the
    // first copy answers at once); the other sleep is the retry's.
    let hedge_delay = Duration::from_secs(60);
    let retries: Vec<Duration> = timer
        .sleeps()
        .into_iter()
        .filter(|&d| d != hedge_delay)
        .collect();
    assert_eq!(retries.len(), 1, "{:?}", timer.sleeps());
    let slept = retries[0];
    let from = Duration::from_millis(1_000 + 500 * u64::from(wave));
    assert!(
        slept >= from && slept < from + Duration::from_millis(500),
        "slept {slept:?}, wave {wave} from {from:?}: {:?}",
        timer.sleeps()
    );
}
