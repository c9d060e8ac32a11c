//! The completion record over a real `nats-server`: a success is recorded
//! under its idempotency key before it is acked, and a delivery whose key
//! is recorded (a success whose acknowledgement was lost) is acked without
//! running; with the record off, it runs again.

#[path = "support/nats_server.rs"]
mod nats_server;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream;
use herdless::adapters::nats::{Summary, Task, Worker};
use herdless::{AlwaysRetry, Policy};
use nats_server::{NatsServer, publish, task_streams};

const BUCKET_STREAM: &str = "KV_herdless_done_TASKS";

/// Runs a worker (record on or off) until idle; the first attempt of every
/// task fails, and the test then writes the task's key into the bucket, as
/// a worker does after a success whose ack was lost. Returns the summary and
/// the attempts run.
async fn run(js: &jetstream::Context, record: bool, forge: bool) -> (Summary, Vec<(u32, String)>) {
    let consumer = js
        .get_stream("TASKS")
        .await
        .unwrap()
        .get_consumer::<jetstream::consumer::pull::Config>("workers")
        .await
        .unwrap();
    let policy = Policy::builder()
        .base(Duration::from_millis(20))
        .max_attempts(4)
        .build()
        .unwrap();
    let worker = Worker::new(policy, AlwaysRetry)
        .completion_record(record)
        .exit_when_idle(true);
    let seen: Arc<Mutex<Vec<(u32, String)>>> = Arc::default();
    let op = |task: Task| {
        let (seen, js) = (Arc::clone(&seen), js.clone());
        async move {
            let key = task.key.to_string();
            seen.lock().unwrap().push((task.attempt, key.clone()));
            if task.attempt > 1 {
                return Ok(());
            }
            if forge {
                let subject = format!("$KV.herdless_done_TASKS.{key}");
                js.publish(subject, "forged".into())
                    .await
                    .unwrap()
                    .await
                    .unwrap();
            }
            Err(std::io::Error::other("first attempt fails"))
        }
    };
    let run = worker.run(
        js,
        &consumer,
        op,
        std::future::pending::<()>(),
        std::future::pending::<()>(),
    );
    let summary = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the worker drains")
        .expect("the worker runs");
    let seen = seen.lock().unwrap().clone();
    (summary, seen)
}

#[tokio::test]
async fn a_delivery_recorded_as_completed_is_acked_without_running() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    task_streams(&js, Duration::from_secs(30)).await;
    // The bucket exists once a worker with the record on has started.
    publish(&js, "tasks.scan", "a", None).await;
    let (summary, seen) = run(&js, true, true).await;
    assert_eq!(seen.len(), 1, "the recorded task ran again: {seen:?}");
    assert_eq!(
        (summary.retried, summary.already_completed, summary.acked),
        (1, 1, 0)
    );
    let bucket = js
        .get_stream(BUCKET_STREAM)
        .await
        .expect("the completion bucket");
    let config = &bucket.cached_info().config;
    assert_eq!(config.max_messages_per_subject, 1);
    assert!(
        config.max_age >= Duration::from_secs(120),
        "{:?}",
        config.max_age
    );
}

#[tokio::test]
async fn a_success_is_recorded_before_its_ack() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    task_streams(&js, Duration::from_secs(30)).await;
    publish(&js, "tasks.scan", "b", None).await;
    let (summary, seen) = run(&js, true, false).await;
    assert_eq!(seen.len(), 2);
    assert_eq!(
        (summary.retried, summary.acked, summary.already_completed),
        (1, 1, 0)
    );
    let bucket = js.get_stream(BUCKET_STREAM).await.unwrap();
    let subject = format!("$KV.herdless_done_TASKS.{}", seen[1].1);
    let record = bucket
        .get_last_raw_message_by_subject(&subject)
        .await
        .expect("recorded");
    let value = String::from_utf8_lossy(&record.payload).into_owned();
    assert!(value.starts_with("TASKS:1;a=2;t="), "{value}");
}

#[tokio::test]
async fn without_the_record_a_lost_ack_runs_the_task_again() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    task_streams(&js, Duration::from_secs(30)).await;
    // A bucket someone else made, holding the task's key: ignored when off.
    js.create_stream(async_nats::jetstream::stream::Config {
        name: BUCKET_STREAM.into(),
        subjects: vec!["$KV.herdless_done_TASKS.>".into()],
        max_messages_per_subject: 1,
        ..Default::default()
    })
    .await
    .unwrap();
    publish(&js, "tasks.scan", "c", None).await;
    let (summary, seen) = run(&js, false, true).await;
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!((summary.acked, summary.already_completed), (1, 0));
}
