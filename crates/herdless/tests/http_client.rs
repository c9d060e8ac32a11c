//! The reqwest integration against a scripted HTTP/1.1 server on 127.0.0.1
//! (bodies that break and the sinks they go to: `http_client_body.rs`).

#[path = "support/scripted.rs"]
mod scripted;
#[path = "support/tls.rs"]
mod tls;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use herdless::adapters::reqwest::{HttpRetry, SendError};
use herdless::{GiveUp, Policy, Retry, RetryEvent};
use scripted::scripted;
use tokio::net::TcpListener;

fn fast() -> Policy {
    Policy::builder()
        .base(Duration::from_millis(5))
        .cap(Duration::from_millis(20))
        .build()
        .unwrap()
}

#[tokio::test]
async fn retries_get_and_keeps_one_idempotency_key() {
    let (url, seen) = scripted(vec![(503, ""), (503, ""), (200, "")]).await;
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = events.clone();
    let retry = Retry::builder()
        .policy(fast())
        .classifier(Default::default())
        .notify(move |e: &RetryEvent<'_>| log.lock().unwrap().push(e.name()))
        .build();
    let http = HttpRetry::from_retry(retry).idempotency_key_header(true);
    let client = tls::client();
    let mut attempts = Vec::new();
    let response = http
        .send_observed(client.get(&url), |a| attempts.push((a.number, a.status)))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        attempts,
        vec![(1, Some(503)), (2, Some(503)), (3, Some(200))]
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    let key = seen[0]
        .header("idempotency-key")
        .expect("key sent")
        .to_string();
    assert_eq!(key.len(), 36);
    assert!(
        seen.iter()
            .all(|s| s.header("idempotency-key") == Some(&key))
    );
    assert_eq!(
        *events.lock().unwrap(),
        vec!["retry_scheduled", "retry_scheduled", "retry_succeeded"]
    );
}

#[tokio::test]
async fn each_call_has_its_own_key_and_a_callers_key_is_kept() {
    let (url, seen) = scripted(vec![(200, "")]).await;
    let http = HttpRetry::new(fast()).idempotency_key_header(true);
    let client = tls::client();
    http.send(client.get(&url)).await.unwrap();
    http.send(client.get(&url)).await.unwrap();
    http.send(client.get(&url).header("Idempotency-Key", "mine"))
        .await
        .unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_ne!(
        seen[0].header("idempotency-key"),
        seen[1].header("idempotency-key")
    );
    assert_eq!(seen[2].header("idempotency-key"), Some("mine"));
    // Off by default.
    let (url, seen) = scripted(vec![(200, "")]).await;
    HttpRetry::new(fast()).send(client.get(&url)).await.unwrap();
    assert_eq!(seen.lock().unwrap()[0].header("idempotency-key"), None);
}

#[tokio::test]
async fn post_is_sent_once_unless_opted_in() {
    let (url, seen) = scripted(vec![(503, ""), (200, "")]).await;
    let client = tls::client();
    let err = HttpRetry::new(fast())
        .send(client.post(&url).body("capture"))
        .await
        .unwrap_err();
    let SendError::Retry(e) = err else {
        panic!("expected a retry outcome, got {err}")
    };
    assert_eq!(e.reason(), GiveUp::Terminal);
    assert_eq!(e.attempts(), 1);
    assert!(!e.last_error().is_replayable());
    assert_eq!(e.last_error().status().map(|s| s.as_u16()), Some(503));
    assert_eq!(seen.lock().unwrap().len(), 1);

    let ok = HttpRetry::new(fast())
        .retry_non_idempotent(true)
        .send(client.post(&url).body("capture"))
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|s| s.method == "POST"));
}

#[tokio::test]
async fn a_body_that_cannot_be_cloned_is_refused_before_sending() {
    let (url, seen) = scripted(vec![(200, "")]).await;
    let client = tls::client();
    let stream = || {
        reqwest::Body::wrap(http_body_util::Full::new(bytes::Bytes::from_static(
            b"page",
        )))
    };
    let err = HttpRetry::new(fast())
        .send(client.put(&url).body(stream()))
        .await
        .unwrap_err();
    assert!(matches!(err, SendError::BodyNotCloneable { .. }), "{err}");
    assert!(err.to_string().contains("cannot be cloned"), "{err}");
    assert!(seen.lock().unwrap().is_empty(), "nothing was sent");
    // A non-retried method needs no clone: sent once.
    let ok = HttpRetry::new(fast())
        .send(client.post(&url).body(stream()))
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn terminal_status_is_one_request_and_retry_after_is_honored() {
    let (url, seen) = scripted(vec![(401, "")]).await;
    let client = tls::client();
    let err = HttpRetry::new(fast())
        .send(client.get(&url))
        .await
        .unwrap_err();
    assert_eq!(err.retry_error().unwrap().reason(), GiveUp::Terminal);
    assert_eq!(seen.lock().unwrap().len(), 1);

    // Retry-After: 1 on a 429, clamped to 50 ms by the policy, then spread by +0 to 10 %.
    let (url, _) = scripted(vec![(429, "retry-after: 1\r\n"), (200, "")]).await;
    let sleeps = Arc::new(Mutex::new(Vec::new()));
    let log = sleeps.clone();
    let policy = fast()
        .to_builder()
        .max_retry_after(Duration::from_millis(50))
        .build()
        .unwrap();
    let retry = Retry::builder()
        .policy(policy)
        .classifier(Default::default())
        .notify(move |e: &RetryEvent<'_>| {
            if let RetryEvent::Scheduled {
                sleep,
                honored_retry_after,
                ..
            } = *e
            {
                log.lock().unwrap().push((sleep, honored_retry_after));
            }
        })
        .build();
    HttpRetry::from_retry(retry)
        .send(client.get(&url))
        .await
        .unwrap();
    let sleeps = sleeps.lock().unwrap();
    assert_eq!(sleeps.len(), 1);
    assert!(sleeps[0].1, "honored");
    assert!(
        sleeps[0].0 >= Duration::from_millis(50) && sleeps[0].0 <= Duration::from_millis(55),
        "{:?}",
        sleeps[0]
    );
}

#[tokio::test]
async fn refused_connections_are_retried_until_the_budget_ends() {
    // Bind then drop: nothing listens on the port.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let policy = fast().to_builder().max_attempts(3).build().unwrap();
    let err = HttpRetry::new(policy)
        .send(tls::client().get(format!("http://127.0.0.1:{port}/")))
        .await
        .unwrap_err();
    let e = err.retry_error().unwrap();
    assert_eq!(e.reason(), GiveUp::MaxAttempts);
    assert_eq!(e.attempts(), 3);
    assert!(e.last_error().transport().is_some());
}

#[tokio::test]
async fn an_invalid_url_is_a_build_error() {
    let err = HttpRetry::new(fast())
        .send(tls::client().get("not a url"))
        .await
        .unwrap_err();
    assert!(matches!(err, SendError::Build(_)), "{err}");
}

/// Pushback servers send `Retry-After-Ms` beside `Retry-After`: the
/// millisecond slot wins (still spread by the policy's +0..10 %).
#[tokio::test]
async fn retry_after_ms_is_preferred_to_retry_after() {
    let (url, seen) = scripted(vec![
        (503, "retry-after: 1\r\nretry-after-ms: 30\r\n"),
        (200, ""),
    ])
    .await;
    let sleeps = Arc::new(Mutex::new(Vec::new()));
    let log = sleeps.clone();
    let retry = Retry::builder()
        .policy(fast())
        .classifier(Default::default())
        .notify(move |e: &RetryEvent<'_>| {
            if let RetryEvent::Scheduled {
                sleep,
                honored_retry_after,
                ..
            } = *e
            {
                log.lock().unwrap().push((sleep, honored_retry_after));
            }
        })
        .build();
    HttpRetry::from_retry(retry)
        .send(tls::client().get(&url))
        .await
        .unwrap();
    assert_eq!(seen.lock().unwrap().len(), 2);
    let sleeps = sleeps.lock().unwrap();
    assert_eq!(sleeps.len(), 1);
    let (sleep, honored) = sleeps[0];
    assert!(honored);
    assert!(
        sleep >= Duration::from_millis(30) && sleep <= Duration::from_millis(33),
        "30 ms spread by at most 10 %, not Retry-After's 1 s: {sleep:?}"
    );
}

/// A per-attempt timeout is reported as a timeout, so the AWS quota charges
/// its timeout cost (10) instead of the retry cost (5).
#[tokio::test]
async fn a_per_attempt_timeout_costs_the_aws_timeout_price() {
    let hangs = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hang_url = format!("http://{}/", hangs.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = hangs.accept().await {
            held.push(s);
        }
    });
    let (busy_url, _) = scripted(vec![(503, "")]).await;
    let policy = fast().to_builder().max_attempts(2).build().unwrap();
    let client = tls::client();
    let mut spent = Vec::new();
    for url in [&hang_url, &busy_url] {
        let budget = Arc::new(
            herdless::RetryBudget::builder()
                .aws()
                .max_tokens(100.0)
                .spread(0.0)
                .build()
                .unwrap(),
        );
        let retry = Retry::builder()
            .policy(policy)
            .classifier(Default::default())
            .budget(budget.clone())
            .build();
        let err = HttpRetry::from_retry(retry)
            .send(client.get(url).timeout(Duration::from_millis(100)))
            .await
            .unwrap_err();
        let err = err.retry_error().unwrap();
        assert_eq!((err.reason(), err.attempts()), (GiveUp::MaxAttempts, 2));
        spent.push(100.0 - budget.tokens());
    }
    assert_eq!(spent, vec![10.0, 5.0], "timeout retry vs error retry");
}

/// reqwest's `Client` is a `tower::Service<reqwest::Request>`: in a
/// `RetryLayer` with a `RetryPolicy`, the same classifier and engine retry it.
/// A 503 twice (the second with `Retry-After-Ms`), then a 200; a 404 is not
/// retried; a streaming body is sent once.
#[tokio::test]
async fn reqwest_client_as_a_tower_service_retries_through_the_engine() {
    use herdless::ManualTimer;
    use herdless::adapters::reqwest::ReqwestClassifier;
    use herdless::adapters::tower::RetryPolicy;
    use tower::{Service, ServiceBuilder, ServiceExt, retry::RetryLayer};

    let (url, seen) = scripted(vec![
        (503, ""),
        (503, "retry-after-ms: 40\r\n"),
        (200, ""),
        (404, ""),
        (503, ""),
    ])
    .await;
    let timer = ManualTimer::new();
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = events.clone();
    let retry = Retry::builder()
        .policy(fast())
        .classifier(ReqwestClassifier::default())
        .timer(timer.clone())
        .notify(move |e: &RetryEvent<'_>| log.lock().unwrap().push(e.name()))
        .build();
    let policy = RetryPolicy::with_cloner(retry, |r: &reqwest::Request| r.try_clone());
    let mut client = ServiceBuilder::new()
        .layer(RetryLayer::new(policy))
        .service(tls::client());
    let get = || reqwest::Request::new(reqwest::Method::GET, url.parse().unwrap());

    let ok = client.ready().await.unwrap().call(get()).await.unwrap();
    assert_eq!(ok.status(), 200);
    assert_eq!(seen.lock().unwrap().len(), 3);
    let sleeps = timer.sleeps();
    assert_eq!(sleeps.len(), 2, "{sleeps:?}");
    assert!(
        sleeps[0] <= Duration::from_millis(5),
        "jitter under base: {sleeps:?}"
    );
    assert!(
        sleeps[1] >= Duration::from_millis(40) && sleeps[1] <= Duration::from_millis(44),
        "Retry-After-Ms 40 spread by at most 10 %: {sleeps:?}"
    );
    assert_eq!(
        *events.lock().unwrap(),
        ["retry_scheduled", "retry_scheduled", "retry_succeeded"]
    );

    // A terminal status is returned after one request.
    let not_found = client.ready().await.unwrap().call(get()).await.unwrap();
    assert_eq!(not_found.status(), 404);
    assert_eq!(seen.lock().unwrap().len(), 4);

    // A body that cannot be cloned: sent once, its 503 returned as it came.
    let mut put = reqwest::Request::new(reqwest::Method::PUT, url.parse().unwrap());
    *put.body_mut() = Some(reqwest::Body::wrap(http_body_util::Full::new(
        bytes::Bytes::from_static(b"page"),
    )));
    let busy = client.ready().await.unwrap().call(put).await.unwrap();
    assert_eq!(busy.status(), 503);
    assert_eq!(seen.lock().unwrap().len(), 5);
}

/// A watch that sends each attempt to the next of two endpoints, as a
/// round-robin balancer would.
struct Alternate {
    urls: [reqwest::Url; 2],
    next: usize,
}

impl herdless::adapters::reqwest::AttemptWatch for Alternate {
    fn started(&mut self, _: u32, _: std::time::Instant) {}
    fn ended(&mut self, _: &herdless::adapters::reqwest::AttemptRecord) {}
    fn sending(&mut self, request: &mut reqwest::Request) {
        *request.url_mut() = self.urls[self.next % 2].clone();
        self.next += 1;
    }
}

#[tokio::test]
async fn a_watch_may_send_each_attempt_to_another_endpoint() {
    let (busy, busy_seen) = scripted(vec![(503, "")]).await;
    let (ok, ok_seen) = scripted(vec![(503, ""), (200, "")]).await;
    let mut watch = Alternate {
        urls: [busy.parse().unwrap(), ok.parse().unwrap()],
        next: 0,
    };
    let mut body = herdless::adapters::reqwest::Discard::default();
    // The call's own request names neither endpoint.
    let got = HttpRetry::new(fast())
        .send_to_watched(
            tls::client().get("http://127.0.0.1:9/"),
            &mut body,
            &mut watch,
        )
        .await
        .unwrap();
    assert_eq!(got.status, 200);
    assert_eq!(got.url.as_str(), ok);
    // busy, ok (503), busy, ok (200).
    assert_eq!(watch.next, 4);
    assert_eq!(busy_seen.lock().unwrap().len(), 2);
    assert_eq!(ok_seen.lock().unwrap().len(), 2);
}
