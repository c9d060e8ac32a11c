//! `RetryMiddleware` in a `reqwest_middleware` stack, over real sockets on
//! 127.0.0.1: an axum server on port 0, a virtual timer (sleeps recorded,
//! never waited).

#[path = "support/tls.rs"]
mod tls;

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::Method;
use herdless::adapters::reqwest::ReqwestClassifier;
use herdless::adapters::reqwest::middleware::{RetryMiddleware, Stopped};
use herdless::adapters::reqwest::{HttpRetry, NotRetried};
use herdless::{GiveUp, ManualTimer, Policy, Retry, RetryBudget, RetryEvent};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use support::server::serve;
use tokio::net::TcpListener;

type Events = Arc<Mutex<Vec<&'static str>>>;

fn policy() -> Policy {
    Policy::builder()
        .base(Duration::from_millis(5))
        .cap(Duration::from_millis(20))
        .max_retry_after(Duration::from_millis(50))
        .max_attempts(4)
        .build()
        .unwrap()
}

type Hook = Box<dyn Fn(&RetryEvent<'_>) + Send + Sync>;
type Http = HttpRetry<ManualTimer, Hook>;

/// A client whose retry middleware is `configure(HttpRetry around retry)`,
/// with a virtual timer and a hook recording the events' names.
fn stack(
    retry: Retry<ReqwestClassifier>,
    configure: impl FnOnce(Http) -> Http,
) -> (ClientWithMiddleware, ManualTimer, Events) {
    let timer = ManualTimer::new();
    let events: Events = Arc::default();
    let log = events.clone();
    let notify: Hook = Box::new(move |e: &RetryEvent<'_>| log.lock().unwrap().push(e.name()));
    let retry = retry
        .into_builder()
        .task_id("mw-test")
        .timer(timer.clone())
        .notify(notify)
        .build();
    let client = ClientBuilder::new(tls::client())
        .with(RetryMiddleware::from(configure(HttpRetry::from_retry(
            retry,
        ))))
        .build();
    (client, timer, events)
}

fn stopped(response: &reqwest::Response) -> Stopped {
    *response
        .extensions()
        .get::<Stopped>()
        .expect("an error status carries why the middleware stopped")
}

#[tokio::test]
async fn fails_twice_then_succeeds_on_the_third_attempt() {
    let (url, seen) = serve(vec![(503, vec![]), (502, vec![]), (200, vec![])]).await;
    let (client, timer, events) = stack(Retry::new(policy(), Default::default()), |h| {
        h.idempotency_key_header(true)
    });
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.extensions().get::<Stopped>().is_none());
    assert_eq!(response.text().await.unwrap(), "body");
    let seen = seen.seen();
    assert_eq!(seen.len(), 3);
    // One call, one Idempotency-Key on every attempt.
    let key = seen[0].key.clone().expect("key sent");
    assert!(seen.iter().all(|s| s.key.as_deref() == Some(&key)));
    let sleeps = timer.sleeps();
    assert_eq!(sleeps.len(), 2);
    assert!(
        sleeps.iter().all(|s| *s <= Duration::from_millis(20)),
        "{sleeps:?}"
    );
    assert_eq!(
        *events.lock().unwrap(),
        ["retry_scheduled", "retry_scheduled", "retry_succeeded"]
    );
}

/// `Retry-After: 1` and a hostile `Retry-After` are clamped to
/// `max_retry_after` (50 ms); `Retry-After-Ms: 30` wins over `Retry-After`;
/// each spread upward by at most 10 %.
#[tokio::test]
async fn retry_after_and_retry_after_ms_are_honored_and_clamped() {
    let (url, seen) = serve(vec![
        (429, vec![("retry-after", "1")]),
        (503, vec![("retry-after", "99999999999999999999")]),
        (503, vec![("retry-after", "1"), ("retry-after-ms", "30")]),
        (200, vec![]),
    ])
    .await;
    let (client, timer, _) = stack(Retry::new(policy(), Default::default()), |h| h);
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(seen.count(), 4);
    let within = |s: Duration, ms: u64| {
        s >= Duration::from_millis(ms) && s <= Duration::from_millis(ms) * 11 / 10
    };
    let sleeps = timer.sleeps();
    assert_eq!(sleeps.len(), 3, "{sleeps:?}");
    assert!(within(sleeps[0], 50), "Retry-After 1 s clamped: {sleeps:?}");
    assert!(
        within(sleeps[1], 50),
        "hostile Retry-After clamped: {sleeps:?}"
    );
    assert!(
        within(sleeps[2], 30),
        "Retry-After-Ms preferred: {sleeps:?}"
    );
}

#[tokio::test]
async fn a_terminal_status_is_not_retried() {
    let (url, seen) = serve(vec![(404, vec![("retry-after", "1")]), (200, vec![])]).await;
    let (client, timer, events) = stack(Retry::new(policy(), Default::default()), |h| h);
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 404, "the status comes back as it came");
    let s = stopped(&response);
    assert_eq!(
        (s.reason, s.attempts, s.elapsed, s.not_retried),
        (GiveUp::Terminal, 1, Duration::ZERO, None)
    );
    assert_eq!(seen.count(), 1);
    assert!(timer.sleeps().is_empty());
    assert_eq!(*events.lock().unwrap(), ["retry_abandoned_terminal"]);
}

#[tokio::test]
async fn a_post_is_not_retried_unless_allowed() {
    let (url, seen) = serve(vec![(503, vec![]), (200, vec![])]).await;
    let (client, _, events) = stack(Retry::new(policy(), Default::default()), |h| h);
    let response = client.post(&url).body("order").send().await.unwrap();
    assert_eq!(response.status(), 503);
    let s = stopped(&response);
    assert_eq!((s.reason, s.attempts), (GiveUp::Terminal, 1));
    assert_eq!(s.not_retried, Some(NotRetried::NonIdempotent));
    assert_eq!(seen.count(), 1);
    assert_eq!(*events.lock().unwrap(), ["retry_abandoned_terminal"]);

    // Opted in (the server deduplicates by Idempotency-Key): retried.
    let (url, seen) = serve(vec![(503, vec![]), (200, vec![])]).await;
    let (client, _, _) = stack(Retry::new(policy(), Default::default()), |h| {
        h.retry_non_idempotent(true).idempotency_key_header(true)
    });
    let response = client.post(&url).body("order").send().await.unwrap();
    assert_eq!(response.status(), 200);
    let seen = seen.seen();
    assert_eq!(seen.len(), 2);
    assert!(
        seen.iter()
            .all(|s| s.method == Method::POST && s.body == "order")
    );
    assert!(seen[0].key.is_some() && seen[0].key == seen[1].key);
}

/// A streaming body cannot be cloned: the request is sent once (its body
/// arrives whole), the `retry_not_clonable` event says why before it is sent,
/// and the failed status carries the reason. A buffered body is retried.
#[test]
fn a_streaming_body_is_sent_once_with_its_reason() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ((response, url, seen), cap) = support::capture(|| {
        rt.block_on(async {
            let (url, seen) = serve(vec![(503, vec![]), (503, vec![]), (200, vec![])]).await;
            let (client, _, _) = stack(Retry::new(policy(), Default::default()), |h| h);
            let stream = reqwest::Body::wrap(http_body_util::Full::new(bytes::Bytes::from_static(
                b"page",
            )));
            let response = client.put(&url).body(stream).send().await.unwrap();
            (response, url, seen)
        })
    });
    assert_eq!(response.status(), 503);
    let s = stopped(&response);
    assert_eq!((s.reason, s.attempts), (GiveUp::Terminal, 1));
    assert_eq!(s.not_retried, Some(NotRetried::BodyNotCloneable));
    {
        let seen = seen.seen();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].body, "page");
    }
    let names: Vec<String> = cap.events().iter().map(|e| e.name().to_owned()).collect();
    assert_eq!(names, ["retry_not_clonable", "retry_abandoned_terminal"]);
    assert_eq!(cap.named("retry_not_clonable")[0].get("task_id"), "mw-test");

    // The same request with a buffered body is retried to its 200.
    let response = rt.block_on(async {
        let (client, _, _) = stack(Retry::new(policy(), Default::default()), |h| h);
        client.put(&url).body("page").send().await.unwrap()
    });
    assert_eq!(response.status(), 200);
    assert_eq!(seen.count(), 3);
}

/// The attempt limit and a shared budget end a call at its last error
/// status, which comes back with the reason; a refused connection comes back
/// as reqwest's error after the limit.
#[tokio::test]
async fn limits_and_a_shared_budget_stop_the_call() {
    let (url, seen) = serve(vec![(503, vec![])]).await;
    let (client, timer, events) = stack(Retry::new(policy(), Default::default()), |h| h);
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 503);
    let s = stopped(&response);
    assert_eq!(
        (s.reason, s.attempts, s.not_retried),
        (GiveUp::MaxAttempts, 4, None)
    );
    assert_eq!(seen.count(), 4);
    assert_eq!(timer.sleeps().len(), 3);
    assert_eq!(
        events.lock().unwrap().last(),
        Some(&"retry_budget_exhausted")
    );

    // An AWS quota of 5 tokens, shared by two calls: room for one retry of cost 5.
    let budget = Arc::new(
        RetryBudget::builder()
            .aws()
            .max_tokens(5.0)
            .spread(0.0)
            .build()
            .unwrap(),
    );
    let (url, seen) = serve(vec![(503, vec![])]).await;
    let (client, _, _) = stack(
        Retry::builder()
            .policy(policy())
            .classifier(Default::default())
            .budget(budget.clone())
            .build(),
        |h| h,
    );
    let first = client.get(&url).send().await.unwrap();
    assert_eq!(stopped(&first).reason, GiveUp::RetryBudget);
    assert_eq!(stopped(&first).attempts, 2);
    let second = client.get(&url).send().await.unwrap();
    assert_eq!(
        (stopped(&second).reason, stopped(&second).attempts),
        (GiveUp::RetryBudget, 1)
    );
    assert_eq!(seen.count(), 3);

    // No server: reqwest's connect error, unchanged, after the attempt limit.
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", closed.local_addr().unwrap());
    drop(closed);
    let (client, timer, events) = stack(Retry::new(policy(), Default::default()), |h| h);
    let err = client.get(&url).send().await.unwrap_err();
    assert!(
        matches!(err, reqwest_middleware::Error::Reqwest(ref e) if e.is_connect()),
        "{err}"
    );
    assert_eq!(timer.sleeps().len(), 3);
    assert_eq!(
        events.lock().unwrap().last(),
        Some(&"retry_budget_exhausted")
    );
}
