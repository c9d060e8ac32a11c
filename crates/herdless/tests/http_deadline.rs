//! The reqwest senders set each attempt's timeout from its deadline
//! (`Attempt::remaining`): through the middleware (seen by the middleware
//! after it) and through `HttpRetry` against a server on 127.0.0.1 that
//! never answers (reqwest ends the attempt; the call ends within
//! `max_elapsed`, on tokio's paused clock).

mod support;
#[path = "support/tls.rs"]
mod tls;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use herdless::adapters::reqwest::middleware::RetryMiddleware;
use herdless::adapters::reqwest::{HttpRetry, ReqwestClassifier, SendError};
use herdless::{GiveUp, Jitter, ManualTimer, Policy, Retry};
use reqwest_middleware::{ClientBuilder, Middleware, Next};
use support::server::serve;

const MS: fn(u64) -> Duration = Duration::from_millis;

/// Records the timeout of every request that passes (after the retry
/// middleware: one entry per attempt).
#[derive(Clone, Default)]
struct Record(Arc<Mutex<Vec<Option<Duration>>>>);

#[async_trait::async_trait]
impl Middleware for Record {
    async fn handle(
        &self,
        req: reqwest::Request,
        extensions: &mut http::Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        self.0.lock().unwrap().push(req.timeout().copied());
        next.run(req, extensions).await
    }
}

/// Three attempts (503, 503, 200) through the middleware with `policy`;
/// `build` makes the request. The recorded timeouts and the sleeps.
async fn timeouts(
    policy: Policy,
    build: impl FnOnce(
        &reqwest_middleware::ClientWithMiddleware,
        &str,
    ) -> reqwest_middleware::RequestBuilder,
) -> (Vec<Option<Duration>>, Vec<Duration>) {
    let (url, log) = serve(vec![(503, vec![]), (503, vec![]), (200, vec![])]).await;
    let timer = ManualTimer::new();
    let retry = Retry::builder()
        .policy(policy)
        .classifier(ReqwestClassifier::default())
        .timer(timer.clone())
        .build();
    let record = Record::default();
    let client = ClientBuilder::new(tls::client())
        .with(RetryMiddleware::from(HttpRetry::from_retry(retry)))
        .with(record.clone())
        .build();
    let response = build(&client, &url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(log.count(), 3);
    let seen = record.0.lock().unwrap().clone();
    (seen, timer.sleeps())
}

fn fixed(base: Duration) -> herdless::PolicyBuilder {
    Policy::builder()
        .base(base)
        .cap(base)
        .multiplier(1.0)
        .jitter(Jitter::None)
}

#[tokio::test]
async fn every_attempt_through_the_middleware_carries_its_remaining_time() {
    let policy = fixed(MS(100))
        .attempt_timeout(Duration::from_secs(1))
        .max_elapsed(MS(1150))
        .build()
        .unwrap();
    let (seen, sleeps) = timeouts(policy, |c, url| c.get(url)).await;
    assert_eq!(sleeps, [MS(100), MS(100)]);
    // The attempt timeout, then what is left of 1.15 s as it runs out.
    assert_eq!(seen, [Some(MS(1000)), Some(MS(1000)), Some(MS(950))]);
}

#[tokio::test]
async fn a_request_with_its_own_timeout_keeps_it_tightened_to_what_is_left() {
    let policy = fixed(MS(20)).max_elapsed(MS(310)).build().unwrap();
    let (seen, _) = timeouts(policy, |c, url| c.get(url).timeout(MS(300))).await;
    assert_eq!(seen, [Some(MS(300)), Some(MS(290)), Some(MS(270))]);
}

#[tokio::test]
async fn without_an_attempt_timeout_the_clients_own_timeout_applies() {
    let policy = fixed(MS(20)).build().unwrap();
    let (seen, _) = timeouts(policy, |c, url| c.get(url)).await;
    // No per-request timeout: it would replace the `Client`'s.
    assert_eq!(seen, [None, None, None]);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_server_that_never_answers_is_cut_by_reqwest_within_max_elapsed() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let (tx, mut accepted) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
            let _ = tx.send(());
        }
    });
    let policy = fixed(MS(50))
        .attempt_timeout(MS(200))
        .max_elapsed(MS(500))
        .build()
        .unwrap();
    let http = HttpRetry::new(policy);
    let client = tls::client();
    let started = tokio::time::Instant::now();
    let sent = tokio::time::timeout(Duration::from_secs(60), http.send(client.get(&url)))
        .await
        .expect("the call was not cut: it outlived a minute");
    let took = started.elapsed();
    let Err(SendError::Retry(err)) = sent else {
        panic!("expected the retries to end: {sent:?}");
    };
    // Attempts at 0 and 250 ms (200 ms each), the third at 500 ms would
    // have no time: the call ends at 450 ms, within 500 ms.
    assert_eq!((err.reason(), err.attempts()), (GiveUp::MaxElapsed, 2));
    let transport = err.last_error().transport().expect("a transport error");
    assert!(transport.is_timeout(), "{transport:?}");
    assert!(took <= MS(500), "{took:?}");
    for _ in 0..2 {
        accepted.recv().await.unwrap();
    }
}
