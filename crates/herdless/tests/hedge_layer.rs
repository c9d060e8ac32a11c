//! The tower `HedgeLayer` over a scripted `service_fn`, on tokio's paused
//! clock: which requests it hedges, and the timeout every copy carries.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use herdless::adapters::tower::{Cloned, HedgeLayer, HttpClassifier};
use herdless::hedge::Hedge;
use herdless::{Policy, Retry};
use tower::{Service, ServiceBuilder, ServiceExt};

const MS: fn(u64) -> Duration = Duration::from_millis;

type Seen = Arc<Mutex<Vec<Option<String>>>>;

/// A layer over a service whose first answer takes 1 s and the others
/// 2 ms; records each request's `x-timeout-ms`.
fn client(
    hedge: Hedge,
) -> (
    impl Service<http::Request<String>, Response = http::Response<String>, Error = Infallible>,
    Seen,
) {
    let policy = Policy::builder().attempt_timeout(MS(800)).build().unwrap();
    let retry = Retry::new(policy, HttpClassifier::new());
    let stamp = |r: &mut http::Request<String>, left: Duration| {
        let v = left.as_millis().to_string();
        r.headers_mut().insert("x-timeout-ms", v.parse().unwrap());
    };
    let seen: Seen = Arc::default();
    let log = Arc::clone(&seen);
    let n = Arc::new(AtomicU32::new(0));
    let svc = ServiceBuilder::new()
        .layer(HedgeLayer::with_parts(retry, hedge, Cloned, stamp))
        .service_fn(move |req: http::Request<String>| {
            let k = n.fetch_add(1, Ordering::SeqCst);
            let t = req.headers().get("x-timeout-ms");
            log.lock()
                .unwrap()
                .push(t.map(|v| v.to_str().unwrap().to_owned()));
            async move {
                tokio::time::sleep(if k == 0 {
                    Duration::from_secs(1)
                } else {
                    MS(2)
                })
                .await;
                Ok::<_, Infallible>(http::Response::new(format!("copy {}", k + 1)))
            }
        });
    (svc, seen)
}

fn hedge(allow_non_idempotent: bool) -> Hedge {
    Hedge::builder()
        .delay(MS(10))
        .allow_non_idempotent(allow_non_idempotent)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn every_copy_carries_its_remaining_time_the_first_included() {
    let (mut svc, seen) = client(hedge(false));
    let req = http::Request::get("/scan/7").body(String::new()).unwrap();
    let res = svc.ready().await.unwrap().call(req).await.unwrap();
    assert_eq!(res.body(), "copy 2");
    // Both copies: the 800 ms attempt timeout, each from its own start.
    assert_eq!(
        *seen.lock().unwrap(),
        [Some("800".into()), Some("800".into())]
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_post_is_not_hedged_unless_allowed_or_keyed() {
    let post = || http::Request::post("/scans").body(String::new()).unwrap();
    let started = tokio::time::Instant::now();
    let (mut svc, seen) = client(hedge(false));
    let res = svc.ready().await.unwrap().call(post()).await.unwrap();
    assert_eq!(
        (res.body().as_str(), started.elapsed()),
        ("copy 1", Duration::from_secs(1))
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
    // With an Idempotency-Key the server can deduplicate: hedged.
    let (mut svc, _) = client(hedge(false));
    let keyed = http::Request::post("/scans")
        .header("idempotency-key", "k-1")
        .body(String::new())
        .unwrap();
    assert_eq!(
        svc.ready().await.unwrap().call(keyed).await.unwrap().body(),
        "copy 2"
    );
    // Or when the hedger allows it.
    let (mut svc, _) = client(hedge(true));
    assert_eq!(
        svc.ready()
            .await
            .unwrap()
            .call(post())
            .await
            .unwrap()
            .body(),
        "copy 2"
    );
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_request_that_cannot_be_copied_is_sent_once() {
    let retry = Retry::new(Policy::default(), HttpClassifier::new());
    let never = |_: &http::Request<String>| None::<http::Request<String>>;
    let hits = Arc::new(AtomicU32::new(0));
    let count = Arc::clone(&hits);
    let layer = HedgeLayer::with_parts(
        retry,
        hedge(false),
        never,
        herdless::adapters::tower::NoTimeout,
    );
    let mut svc =
        ServiceBuilder::new()
            .layer(layer)
            .service_fn(move |_req: http::Request<String>| {
                count.fetch_add(1, Ordering::SeqCst);
                async move {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    Ok::<_, Infallible>(
                        http::Response::builder()
                            .status(503)
                            .body(String::new())
                            .unwrap(),
                    )
                }
            });
    let req = http::Request::get("/stream").body(String::new()).unwrap();
    let res = svc.ready().await.unwrap().call(req).await.unwrap();
    assert_eq!(res.status(), 503);
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}
