//! The claim and the completion record over a real `nats-server`: a
//! delivery claims its task before running it, a success is recorded on the
//! claim before it is acked, a delivery whose task is recorded as completed
//! is acked without running, and a copy the broker hands out while the
//! first still runs is not run; with the record off, a completed task runs
//! again.

#[path = "support/nats_server.rs"]
mod nats_server;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream;
use herdless::adapters::nats::{Summary, Task, Worker};
use herdless::{AlwaysRetry, Policy};
use nats_server::{NatsServer, publish, task_streams};

const BUCKET_STREAM: &str = "KV_herdless_done_TASKS";

/// Attempts run: (attempt, key).
type Seen = Arc<Mutex<Vec<(u32, String)>>>;

/// An attempt's start, its end (dropped or finished), and whether it ran
/// to its end.
type Span = Arc<Mutex<(Option<Instant>, Option<Instant>, bool)>>;

async fn consumer(js: &jetstream::Context) -> jetstream::consumer::PullConsumer {
    js.get_stream("TASKS")
        .await
        .unwrap()
        .get_consumer("workers")
        .await
        .unwrap()
}

fn policy() -> Policy {
    Policy::builder()
        .base(Duration::from_millis(20))
        .max_attempts(4)
        .build()
        .unwrap()
}

/// Runs `worker` until idle with an operation whose attempt number
/// `fail_first` and below fail and which takes `each`.
async fn drain(
    js: &jetstream::Context,
    worker: Worker<AlwaysRetry>,
    fail_first: u32,
    each: Duration,
    seen: &Seen,
) -> Summary {
    let consumer = consumer(js).await;
    let op = |task: Task| {
        let seen = Arc::clone(seen);
        async move {
            seen.lock()
                .unwrap()
                .push((task.attempt, task.key.to_string()));
            tokio::time::sleep(each).await;
            if task.attempt <= fail_first {
                return Err(std::io::Error::other("fails"));
            }
            Ok(())
        }
    };
    let worker = worker.exit_when_idle(true);
    let run = worker.run(
        js,
        &consumer,
        op,
        std::future::pending::<()>(),
        std::future::pending::<()>(),
    );
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the worker drains")
        .expect("the worker runs")
}

/// The latest value of `subject` in the bucket, as text.
async fn record(js: &jetstream::Context, subject: &str) -> String {
    let bucket = js.get_stream(BUCKET_STREAM).await.expect("the bucket");
    let m = bucket
        .get_last_raw_message_by_subject(subject)
        .await
        .unwrap_or_else(|e| panic!("{subject}: {e}"));
    String::from_utf8_lossy(&m.payload).into_owned()
}

/// The same task again: its payload, with its key in `Herdless-State`.
async fn republish(js: &jetstream::Context, key: &str) {
    let mut h = async_nats::HeaderMap::new();
    h.insert("Herdless-State", format!("1;k={key}").as_str());
    publish(js, "tasks.scan", "a", Some(h)).await;
}

#[tokio::test]
async fn a_delivery_recorded_as_completed_is_acked_without_running() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    task_streams(&js, Duration::from_secs(30)).await;
    publish(&js, "tasks.scan", "a", None).await;
    let seen = Seen::default();
    let first = drain(
        &js,
        Worker::new(policy(), AlwaysRetry),
        0,
        Duration::ZERO,
        &seen,
    )
    .await;
    assert_eq!((first.acked, first.already_completed), (1, 0));
    let key = seen.lock().unwrap()[0].1.clone();
    // The same task comes back (its ack lost, or published again with its key).
    republish(&js, &key).await;
    let again = drain(
        &js,
        Worker::new(policy(), AlwaysRetry),
        0,
        Duration::ZERO,
        &seen,
    )
    .await;
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "the completed task ran again"
    );
    assert_eq!((again.acked, again.already_completed), (0, 1));
    let bucket = js.get_stream(BUCKET_STREAM).await.expect("the bucket");
    let config = &bucket.cached_info().config;
    assert_eq!(config.max_messages_per_subject, 1);
    assert!(
        config.max_age >= Duration::from_secs(120),
        "{:?}",
        config.max_age
    );
}

#[tokio::test]
async fn each_attempt_takes_a_turn_and_a_success_is_recorded_on_its_own() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    task_streams(&js, Duration::from_secs(30)).await;
    publish(&js, "tasks.scan", "b", None).await;
    let seen = Seen::default();
    let summary = drain(
        &js,
        Worker::new(policy(), AlwaysRetry),
        1,
        Duration::ZERO,
        &seen,
    )
    .await;
    assert_eq!((summary.retried, summary.acked), (1, 1));
    let key = seen.lock().unwrap()[1].1.clone();
    let first = record(&js, &format!("$KV.herdless_done_TASKS.{key}.1")).await;
    let second = record(&js, &format!("$KV.herdless_done_TASKS.{key}.2")).await;
    assert!(first.starts_with("free;by="), "{first}");
    assert!(second.starts_with("done;by="), "{second}");
    assert!(second.contains(";task=TASKS:1;a=2;t="), "{second}");
}

#[tokio::test]
async fn without_the_record_a_completed_task_runs_again() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    task_streams(&js, Duration::from_secs(30)).await;
    publish(&js, "tasks.scan", "c", None).await;
    let seen = Seen::default();
    drain(
        &js,
        Worker::new(policy(), AlwaysRetry),
        0,
        Duration::ZERO,
        &seen,
    )
    .await;
    let key = seen.lock().unwrap()[0].1.clone();
    republish(&js, &key).await;
    let off = Worker::new(policy(), AlwaysRetry).completion_record(false);
    let summary = drain(&js, off, 0, Duration::ZERO, &seen).await;
    assert_eq!(seen.lock().unwrap().len(), 2);
    assert_eq!((summary.acked, summary.already_completed), (1, 0));
}

/// The broker hands out a second copy while the first still runs (here:
/// an ack wait of 1 s, an attempt of 3 s and no in-progress acks; on a
/// cluster, acks lost to a frozen leader or a consumer leader's handover):
/// the copy finds the task claimed, waits, and acks it once it is done.
#[tokio::test]
async fn a_copy_delivered_while_the_first_runs_is_not_run() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    task_streams(&js, Duration::from_secs(1)).await;
    publish(&js, "tasks.scan", "d", None).await;
    let seen = Seen::default();
    let worker = || {
        Worker::new(policy(), AlwaysRetry)
            .progress_every(Duration::from_secs(60))
            .concurrency(2)
            .unwrap()
    };
    let each = Duration::from_secs(3);
    let (a, b) = tokio::join!(
        drain(&js, worker(), 0, each, &seen),
        drain(&js, worker(), 0, each, &seen)
    );
    let attempts = seen.lock().unwrap().clone();
    assert_eq!(
        attempts.len(),
        1,
        "run more than once: {attempts:?}; {a:?} {b:?}"
    );
    assert_eq!(a.acked + b.acked, 1, "{a:?} {b:?}");
    // Copies did come, and none ran.
    let copies = a.already_completed + a.held_elsewhere + b.already_completed + b.held_elsewhere;
    assert!(copies >= 1, "no second copy was delivered: {a:?} {b:?}");
}

/// A holder that cannot renew its claim (here the bucket is deleted under
/// it) stops its attempt at the lease's fence, an ack wait after it took the
/// claim, rather than run on beside a delivery that may take the task over;
/// the task comes back and, with the bucket still gone, runs without a
/// claim after the worker has asked for 4 ack waits.
#[tokio::test]
async fn an_attempt_whose_claim_cannot_be_renewed_stops_at_its_fence() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    task_streams(&js, Duration::from_secs(1)).await;
    publish(&js, "tasks.scan", "e", None).await;
    let consumer = consumer(&js).await;
    let first = Span::default();
    struct Dropped(Span);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.lock().unwrap().1 = Some(Instant::now());
        }
    }
    let op = |task: Task| {
        let (first, js) = (Arc::clone(&first), js.clone());
        async move {
            if task.attempt > 1 {
                return Ok(());
            }
            first.lock().unwrap().0 = Some(Instant::now());
            let _guard = Dropped(Arc::clone(&first));
            // The bucket's stream in place, refusing every write (a
            // bucket merely deleted is created again at the renewal).
            js.delete_stream(BUCKET_STREAM)
                .await
                .expect("delete the bucket");
            js.create_stream(async_nats::jetstream::stream::Config {
                name: BUCKET_STREAM.into(),
                subjects: vec!["$KV.herdless_done_TASKS.>".into()],
                max_message_size: 1,
                ..Default::default()
            })
            .await
            .expect("a bucket that refuses writes");
            tokio::time::sleep(Duration::from_secs(10)).await;
            first.lock().unwrap().2 = true;
            Ok::<(), std::io::Error>(())
        }
    };
    let worker = Worker::new(policy(), AlwaysRetry).exit_when_idle(true);
    let run = worker.run(
        &js,
        &consumer,
        op,
        std::future::pending::<()>(),
        std::future::pending::<()>(),
    );
    let summary = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the worker drains")
        .expect("the worker runs");
    let (started, ended, finished) = *first.lock().unwrap();
    let ran = ended.unwrap() - started.unwrap();
    assert!(!finished, "attempt 1 ran to its end: {summary:?}");
    // The lease (the ack wait, 1 s) ran from the claim, taken just before.
    assert!(ran < Duration::from_millis(1500), "stopped after {ran:?}");
    assert_eq!((summary.lease_lost, summary.acked), (1, 1), "{summary:?}");
}
