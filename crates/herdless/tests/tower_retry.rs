//! tower client-side retry (`RetryPolicy` in a `tower::retry::RetryLayer`)
//! over real sockets on 127.0.0.1: an axum server, hyper-util's client.

mod support;

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use herdless::adapters::tower::{CloneBody, HttpClassifier, RetryPolicy};
use herdless::{ManualTimer, Policy, Retry, RetryEvent};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Either, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use support::server::serve;
use tower::retry::RetryLayer;
use tower::{Service, ServiceBuilder, ServiceExt};

type Events = Arc<Mutex<Vec<String>>>;

/// A retrier with a virtual timer (sleeps recorded, never waited) and a hook
/// recording the events' names.
fn retry(
    policy: Policy,
) -> (
    Retry<HttpClassifier, ManualTimer, impl herdless::Notify + Send + Sync>,
    ManualTimer,
    Events,
) {
    let timer = ManualTimer::new();
    let events: Events = Arc::default();
    let log = events.clone();
    let retry = Retry::builder()
        .policy(policy)
        .classifier(HttpClassifier::new())
        .task_id("tower-test")
        .timer(timer.clone())
        .notify(move |e: &RetryEvent<'_>| log.lock().unwrap().push(e.name().to_string()))
        .build();
    (retry, timer, events)
}

fn get(url: &str) -> http::Request<Full<Bytes>> {
    http::Request::get(url)
        .body(Full::new(Bytes::new()))
        .unwrap()
}

#[tokio::test]
async fn fails_twice_then_succeeds_on_the_third_attempt() {
    let (url, hits) = serve(vec![(503, vec![]), (503, vec![]), (200, vec![])]).await;
    let policy = Policy::builder()
        .base(Duration::from_millis(100))
        .build()
        .unwrap();
    let (retry, timer, events) = retry(policy);
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut svc = ServiceBuilder::new()
        .layer(RetryLayer::new(RetryPolicy::new(retry)))
        .service(client);

    let res = svc.ready().await.unwrap().call(get(&url)).await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.into_body().collect().await.unwrap().to_bytes(), "body");
    assert_eq!(hits.count(), 3);
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

    // The next request through the same service is a fresh call.
    let res = svc.ready().await.unwrap().call(get(&url)).await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(hits.count(), 4);
    assert_eq!(timer.sleeps().len(), 2);
}

#[tokio::test]
async fn retry_after_and_retry_after_ms_are_honored() {
    let (url, hits) = serve(vec![
        (503, vec![("retry-after", "7")]),
        (429, vec![("retry-after", "2"), ("retry-after-ms", "1250")]),
        (200, vec![]),
    ])
    .await;
    let policy = Policy::builder()
        .base(Duration::from_millis(10))
        .build()
        .unwrap();
    let (retry, timer, events) = retry(policy);
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut svc = ServiceBuilder::new()
        .layer(RetryLayer::new(RetryPolicy::new(retry)))
        .service(client);

    let res = svc.ready().await.unwrap().call(get(&url)).await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(hits.count(), 3);
    let sleeps = timer.sleeps();
    // The server's delay, spread upward by at most 10 % (the default spread).
    assert!(
        sleeps[0] >= Duration::from_secs(7) && sleeps[0] <= Duration::from_millis(7_700),
        "{sleeps:?}"
    );
    assert!(
        sleeps[1] >= Duration::from_millis(1250) && sleeps[1] <= Duration::from_millis(1375),
        "{sleeps:?}"
    );
    assert_eq!(events.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn a_terminal_status_is_not_retried() {
    let (url, hits) = serve(vec![(404, vec![("retry-after", "1")]), (200, vec![])]).await;
    let (retry, timer, events) = retry(Policy::default());
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut svc = ServiceBuilder::new()
        .layer(RetryLayer::new(RetryPolicy::new(retry)))
        .service(client);

    let res = svc.ready().await.unwrap().call(get(&url)).await.unwrap();
    assert_eq!(res.status(), 404);
    assert_eq!(hits.count(), 1);
    assert!(timer.sleeps().is_empty());
    assert_eq!(*events.lock().unwrap(), ["retry_abandoned_terminal"]);
}

/// A buffered body (clonable) or a one-shot stream (not).
type Body = Either<Full<Bytes>, UnsyncBoxBody<Bytes, Infallible>>;

#[tokio::test]
async fn a_request_whose_body_cannot_be_cloned_is_sent_once() {
    let (url, hits) = serve(vec![(503, vec![]), (503, vec![]), (200, vec![])]).await;
    let (retry, timer, events) = retry(Policy::default());
    let buffered_only = CloneBody(|body: &Body| match body {
        Either::Left(full) => Some(Either::Left(full.clone())),
        Either::Right(_stream) => None,
    });
    let policy = RetryPolicy::with_cloner(retry, buffered_only);
    let client = Client::builder(TokioExecutor::new()).build_http::<Body>();
    let mut svc = ServiceBuilder::new()
        .layer(RetryLayer::new(policy.clone()))
        .service(client);

    let stream = Either::Right(Full::new(Bytes::from_static(b"chunk")).boxed_unsync());
    let req = http::Request::post(&url).body(stream).unwrap();
    let res = svc.ready().await.unwrap().call(req).await.unwrap();
    assert_eq!(res.status(), 503); // returned as it came: no retry possible
    assert_eq!(hits.count(), 1);
    assert_eq!(policy.not_clonable(), 1); // the documented reason, counted
    assert!(timer.sleeps().is_empty());
    assert!(events.lock().unwrap().is_empty()); // the engine never saw it

    // A buffered body through the same stack is retried.
    let req = http::Request::post(&url)
        .body(Either::Left(Full::new(Bytes::from_static(b"{}"))))
        .unwrap();
    let res = svc.ready().await.unwrap().call(req).await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(hits.count(), 3);
    assert_eq!(policy.not_clonable(), 1);
    assert_eq!(timer.sleeps().len(), 1);
}

/// Sans socket: `tower::service_fn`, the default `SystemTimer` under
/// `tokio::time::pause`, a shared budget; and a call dropped during its
/// backoff refunds the retry it was admitted.
#[tokio::test(start_paused = true)]
async fn service_fn_with_paused_time_and_a_budget() {
    use herdless::{Classification, Jitter, RetryBudget};
    let classify = |r: &Result<u16, Infallible>| match r {
        Ok(200) => None,
        Ok(503) => Some(Classification::retryable()),
        _ => Some(Classification::terminal()),
    };
    let policy = Policy::builder()
        .base(Duration::from_secs(10))
        .jitter(Jitter::None)
        .build()
        .unwrap();
    let budget = Arc::new(RetryBudget::aws());
    let retry = Retry::builder()
        .policy(policy)
        .classifier(classify)
        .budget(budget.clone())
        .seed(7)
        .build();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let mut svc = ServiceBuilder::new()
        .layer(RetryLayer::new(RetryPolicy::new(retry)))
        .service(tower::service_fn(move |()| {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<u16, Infallible>(if n % 3 == 2 { 200 } else { 503 }) }
        }));

    let start = tokio::time::Instant::now();
    assert_eq!(svc.ready().await.unwrap().call(()).await, Ok(200));
    assert_eq!(hits.load(Ordering::SeqCst), 3);
    assert_eq!(start.elapsed(), Duration::from_secs(30)); // 10 s + 20 s, virtual
    assert_eq!(budget.tokens(), 495.0); // two retries at 5; the success returned the last one's cost

    // Dropped 5 s into a 10 s backoff: the admitted retry is refunded.
    let call = svc.ready().await.unwrap().call(());
    let cut = tokio::time::timeout(Duration::from_secs(5), call).await;
    assert!(cut.is_err());
    assert_eq!(hits.load(Ordering::SeqCst), 4);
    assert_eq!(budget.tokens(), 495.0); // 495 − 5 admitted, + 5 refunded on drop
}

/// A shared throttle in the tower retry policy: every answer teaches it (the
/// first attempt's included) and every retry waits for the process's turn
/// beyond its backoff; the first attempt itself is tower's to send.
#[tokio::test]
async fn a_throttled_policy_paces_its_retries_and_learns_from_every_answer() {
    use herdless::guard::Throttle;
    use herdless::{Classification, Jitter};
    let policy = Policy::builder()
        .base(Duration::from_millis(10))
        .cap(Duration::from_millis(10))
        .jitter(Jitter::None)
        .max_attempts(4)
        .build()
        .unwrap();
    let classify = |r: &Result<u16, Infallible>| match r {
        Ok(200) => None,
        Ok(_) => Some(Classification::retryable()),
        Err(e) => match *e {},
    };
    let run = |throttle: Option<Arc<Throttle>>| {
        let timer = ManualTimer::new();
        let builder = Retry::builder()
            .policy(policy)
            .classifier(classify)
            .timer(timer.clone());
        let retry = match throttle {
            Some(t) => builder.throttle(t).build(),
            None => builder.build(),
        };
        let hits = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&hits);
        let svc = ServiceBuilder::new()
            .layer(RetryLayer::new(RetryPolicy::new(retry)))
            .service_fn(move |_req: &'static str| {
                let n = seen.fetch_add(1, Ordering::SeqCst);
                async move { Ok::<u16, Infallible>(if n < 3 { 503 } else { 200 }) }
            });
        (svc, timer, hits)
    };
    let (plain, plain_timer, _) = run(None);
    assert_eq!(plain.oneshot("GET /").await.unwrap(), 200);
    assert_eq!(
        plain_timer.elapsed(),
        Duration::from_millis(30),
        "three backoffs"
    );

    let throttle = Arc::new(Throttle::builder().initial(1).build().unwrap());
    let rate = throttle.rate();
    let (paced, timer, hits) = run(Some(Arc::clone(&throttle)));
    assert_eq!(paced.oneshot("GET /").await.unwrap(), 200);
    assert_eq!(hits.load(Ordering::SeqCst), 4);
    assert!(
        timer.elapsed() >= Duration::from_millis(200),
        "three retries, one turn per 100 ms window: {:?}",
        timer.sleeps()
    );
    assert!(throttle.rate() < rate, "the refusals lowered the rate");
}
