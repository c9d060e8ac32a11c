//! herdless in a `reqwest_middleware` stack, against a server on 127.0.0.1
//! that answers 503 (with `Retry-After-Ms`) twice, then 200.
//!
//! ```text
//! cargo run -p herdless --example reqwest_middleware --features reqwest-middleware
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use herdless::adapters::reqwest::HttpRetry;
use herdless::adapters::reqwest::ReqwestClassifier;
use herdless::adapters::reqwest::middleware::{RetryMiddleware, Stopped};
use herdless::{Policy, Retry, RetryBudget};
use reqwest_middleware::ClientBuilder;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A server that is busy for its first two requests.
    let hits = Arc::new(AtomicU32::new(0));
    let counter = hits.clone();
    let app = Router::new().route(
        "/scan/7",
        get(move || async move {
            match counter.fetch_add(1, Ordering::SeqCst) {
                0 | 1 => {
                    let busy = [("retry-after-ms", "40")];
                    (StatusCode::SERVICE_UNAVAILABLE, busy, "busy").into_response()
                }
                _ => "page 7".into_response(),
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/scan/7", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });

    // The middleware: a policy, a budget shared by every call of the client,
    // an Idempotency-Key stable across one call's attempts.
    let policy = Policy::builder()
        .base(Duration::from_millis(50))
        .max_retry_after(Duration::from_secs(2))
        .build()?;
    let retry = Retry::builder()
        .policy(policy)
        .classifier(ReqwestClassifier::default())
        .task_id("scan-7")
        .budget(Arc::new(RetryBudget::aws()))
        .build();
    let http = HttpRetry::from_retry(retry).idempotency_key_header(true);
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::from(http))
        .build();

    let response = client.get(&url).send().await?;
    let status = response.status();
    if let Some(stopped) = response.extensions().get::<Stopped>() {
        println!(
            "stopped after {} attempts: {}",
            stopped.attempts, stopped.reason
        );
    }
    println!(
        "{status} after {} requests: {}",
        hits.load(Ordering::SeqCst),
        response.text().await?
    );
    Ok(())
}
