//! `herdless worker` and a completion bucket it cannot use as it found it:
//! a stream in the bucket's place, a bucket whose TTL is too short, one
//! with a limit that evicts records (all refused at start, exit 2, naming
//! the bucket and what is wrong), and a
//! bucket deleted while the worker runs (created again, the run goes on).
//! Real binary, real `nats-server` on 127.0.0.1 (a port it picks).

mod nats_server;
mod worker_support;

use std::time::Duration;

use async_nats::jetstream::stream;
use nats_server::{NatsServer, consumer_state, publish, task_streams};
use worker_support::*;

const BUCKET_STREAM: &str = "KV_herdless_done_TASKS";

/// A worker started against a server whose bucket stream is `bucket`
/// (named `KV_herdless_done_TASKS` here), with one task waiting, that
/// should refuse to start: its exit status and stderr.
async fn refused_with(bucket: stream::Config) -> (Option<i32>, String) {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    task_streams(&js, Duration::from_secs(1)).await;
    js.create_stream(stream::Config {
        name: BUCKET_STREAM.into(),
        ..bucket
    })
    .await
    .unwrap();
    publish(&js, "tasks.scan", "page-1", None).await;
    let dir = tempfile::tempdir().unwrap();
    let out = run(worker(&server, &dir, &["--exit-when-idle"], LOG_ATTEMPT)).await;
    assert!(attempts(&dir).is_empty(), "a task ran");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn a_stream_in_the_buckets_place_is_refused() {
    let (code, stderr) = refused_with(stream::Config {
        subjects: vec!["audit.>".into()],
        ..Default::default()
    })
    .await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("herdless_done_TASKS") && stderr.contains("audit.>"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_bucket_with_a_ttl_under_the_minimum_is_refused() {
    let (code, stderr) = refused_with(stream::Config {
        subjects: vec!["$KV.herdless_done_TASKS.>".into()],
        max_messages_per_subject: 1,
        max_age: Duration::from_secs(1),
        ..Default::default()
    })
    .await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("herdless_done_TASKS") && stderr.contains("TTL is 1.000s"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_bucket_that_can_evict_records_is_refused() {
    let (code, stderr) = refused_with(stream::Config {
        subjects: vec!["$KV.herdless_done_TASKS.>".into()],
        max_messages_per_subject: 1,
        max_messages: 2,
        discard: stream::DiscardPolicy::Old,
        max_age: Duration::from_secs(3600),
        ..Default::default()
    })
    .await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("herdless_done_TASKS") && stderr.contains("`max_msgs` of 2"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_bucket_deleted_mid_run_is_created_again() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    let consumer = task_streams(&js, Duration::from_secs(1)).await;
    publish(&js, "tasks.scan", "page-1", None).await;
    let dir = tempfile::tempdir().unwrap();
    let mut fifo = mkfifo(&dir);
    // Each attempt announces itself, then waits for the test's go.
    let script = format!(
        r#"echo "$HERDLESS_IDEMPOTENCY_KEY" > "$FIFO"; while [ ! -e go ]; do sleep 0.02; done; {LOG_ATTEMPT}"#
    );
    let child = worker(&server, &dir, &["--exit-when-idle"], &script)
        .spawn()
        .unwrap();
    let first = announced(&mut fifo).await;
    js.delete_stream(BUCKET_STREAM).await.unwrap();
    std::fs::write(dir.path().join("go"), "").unwrap();
    let seq = publish(&js, "tasks.scan", "page-2", None).await;
    let second = announced(&mut fifo).await;
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let (s, _) = summary(&out);
    assert_eq!(s["acked"], 2, "{s}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Said once: the bucket was created again once.
    assert_eq!(stderr.matches("creating it again").count(), 1, "{stderr}");
    // Both successes are on record in the bucket created again.
    let bucket = js.get_key_value("herdless_done_TASKS").await.unwrap();
    for key in [first, second] {
        let done = bucket.get(format!("{key}.1")).await.unwrap();
        let done = String::from_utf8_lossy(done.as_deref().unwrap_or_default()).into_owned();
        assert!(done.starts_with("done;"), "{key}: {done:?}");
    }
    assert_eq!(attempts(&dir).len(), 2);
    assert_eq!(consumer_state(&consumer).await, (0, 0, seq));
}
