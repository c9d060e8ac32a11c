//! The fleet claim, measured over a real `nats-server`: 200 tasks that each
//! fail their first 3 attempts, consumed by 4 workers, once with `herdless
//! worker` (jittered redeliveries: full jitter, 1 s base, doubling) and once
//! with JetStream's own consumer `BackOff` list of the same ceilings (1 s,
//! 2 s, 4 s). Each attempt is the same `bash` command, which logs its start
//! (`$EPOCHREALTIME`); the figure is the largest number of redeliveries in
//! any 100 ms window, as a share of the tasks.
//!
//! Ignored by default (about 20 s, and it wants a quiet machine). Run:
//!
//! ```text
//! cargo test --release -p herdless-cli --test broker_spread -- --ignored --nocapture
//! ```

mod nats_server;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_nats::jetstream::{self, AckKind, consumer, stream};
use futures_util::StreamExt;
use nats_server::{NatsServer, publish, task_streams};
use tokio::sync::Semaphore;

const BIN: &str = env!("CARGO_BIN_EXE_herdless");
const TASKS: usize = 200;
const WORKERS: usize = 4;
const SLOTS: usize = 50;
const WINDOW: Duration = Duration::from_millis(100);
/// Fails attempts 1 to 3, logging each attempt's start.
const SCRIPT: &str = r#"echo "$HERDLESS_IDEMPOTENCY_KEY $HERDLESS_ATTEMPT $EPOCHREALTIME" >> "$LOG"; [ "$HERDLESS_ATTEMPT" -gt 3 ]"#;

/// One attempt: its task, its number, its start (seconds).
type Attempt = (String, u32, f64);

fn read_log(path: &Path) -> Vec<Attempt> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (
                f[0].to_owned(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
            )
        })
        .collect()
}

/// The most starts in any window of `WINDOW`.
fn largest_window(mut starts: Vec<f64>) -> usize {
    starts.sort_by(f64::total_cmp);
    let mut best = 0;
    let mut lo = 0;
    for hi in 0..starts.len() {
        while starts[hi] - starts[lo] >= WINDOW.as_secs_f64() {
            lo += 1;
        }
        best = best.max(hi - lo + 1);
    }
    best
}

struct Figures {
    redeliveries: usize,
    largest: usize,
    first_wave_s: f64,
    first_largest: usize,
    drain_s: f64,
}

fn figures(log: &[Attempt]) -> Figures {
    // Nothing lost: every task ran attempts 1 to 4 exactly once.
    let mut by_task: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for (key, n, _) in log {
        by_task.entry(key).or_default().push(*n);
    }
    assert_eq!(by_task.len(), TASKS);
    for (key, mut ns) in by_task {
        ns.sort_unstable();
        assert_eq!(ns, [1, 2, 3, 4], "task {key}");
    }
    let at = |pred: &dyn Fn(u32) -> bool| -> Vec<f64> {
        log.iter().filter(|a| pred(a.1)).map(|a| a.2).collect()
    };
    let first = at(&|n| n == 1);
    let redelivered = at(&|n| n >= 2);
    let min = first.iter().copied().fold(f64::MAX, f64::min);
    let max_first = first.iter().copied().fold(f64::MIN, f64::max);
    let end = redelivered.iter().copied().fold(f64::MIN, f64::max);
    Figures {
        redeliveries: redelivered.len(),
        largest: largest_window(redelivered),
        first_wave_s: max_first - min,
        first_largest: largest_window(first),
        drain_s: end - min,
    }
}

/// 4 `herdless worker` processes, 50 slots each.
async fn with_herdless(dir: &Path) -> Vec<Attempt> {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    task_streams(&js, Duration::from_secs(30)).await;
    for i in 0..TASKS {
        publish(&js, "tasks.scan", &i.to_string(), None).await;
    }
    let log = dir.join("herdless.log");
    let mut workers = Vec::new();
    for _ in 0..WORKERS {
        let child = tokio::process::Command::new(BIN)
            .args(["worker", "--nats", server.url(), "--stream", "TASKS"])
            .args(["--consumer", "workers", "--dead-letter", "dead.tasks"])
            .args(["--jitter", "full", "--base", "1s", "--max-attempts", "6"])
            .args([
                "--concurrency",
                &SLOTS.to_string(),
                "--exit-when-idle",
                "--quiet",
            ])
            .args(["--", "bash", "-c", SCRIPT])
            .env("LOG", &log)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        workers.push(child);
    }
    for mut w in workers {
        assert!(w.wait().await.unwrap().success());
    }
    read_log(&log)
}

/// JetStream's own schedule: a consumer with `BackOff` [1 s, 2 s, 4 s]; 4
/// clients, 50 slots each, run the same command and leave a failure to the
/// ack wait, which the `BackOff` list stretches per delivery.
async fn with_backoff(dir: &Path) -> Vec<Attempt> {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    let tasks = js
        .create_stream(stream::Config {
            name: "TASKS".into(),
            subjects: vec!["tasks.>".into()],
            retention: stream::RetentionPolicy::WorkQueue,
            ..Default::default()
        })
        .await
        .unwrap();
    tasks
        .create_consumer(consumer::pull::Config {
            durable_name: Some("workers".into()),
            ack_policy: consumer::AckPolicy::Explicit,
            ack_wait: Duration::from_secs(1),
            backoff: [1, 2, 4].map(Duration::from_secs).to_vec(),
            max_deliver: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    for i in 0..TASKS {
        publish(&js, "tasks.scan", &i.to_string(), None).await;
    }
    let log = dir.join("backoff.log");
    let done = Arc::new(AtomicUsize::new(0));
    let mut clients = Vec::new();
    for _ in 0..WORKERS {
        let (js, log, done) = (server.jetstream().await, log.clone(), Arc::clone(&done));
        clients.push(tokio::spawn(backoff_client(js, log, done)));
    }
    for c in clients {
        c.await.unwrap();
    }
    read_log(&log)
}

async fn backoff_client(js: jetstream::Context, log: PathBuf, done: Arc<AtomicUsize>) {
    let consumer: consumer::PullConsumer = js
        .get_stream("TASKS")
        .await
        .unwrap()
        .get_consumer("workers")
        .await
        .unwrap();
    let slots = Arc::new(Semaphore::new(SLOTS));
    while done.load(Ordering::SeqCst) < TASKS {
        let free = slots.available_permits();
        if free == 0 {
            drop(slots.acquire().await.unwrap());
            continue;
        }
        let mut batch = consumer
            .batch()
            .max_messages(free)
            .expires(Duration::from_millis(200))
            .messages()
            .await
            .unwrap();
        while let Some(Ok(message)) = batch.next().await {
            let slot = Arc::clone(&slots).acquire_owned().await.unwrap();
            let attempt = message.info().unwrap().delivered;
            let key = format!("task-{}", message.payload.escape_ascii());
            let (log, done) = (log.clone(), Arc::clone(&done));
            tokio::spawn(async move {
                let status = tokio::process::Command::new("bash")
                    .args(["-c", SCRIPT])
                    .env("LOG", log)
                    .env("HERDLESS_ATTEMPT", attempt.to_string())
                    .env("HERDLESS_IDEMPOTENCY_KEY", key)
                    .status()
                    .await
                    .unwrap();
                // A failure is left to the ack wait, which BackOff stretches.
                if status.success() {
                    message.double_ack_with(AckKind::Ack).await.unwrap();
                    done.fetch_add(1, Ordering::SeqCst);
                }
                drop(slot);
            });
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: cargo test --release -p herdless-cli --test broker_spread -- --ignored --nocapture"]
async fn the_largest_100ms_window_of_redeliveries() {
    let dir = tempfile::tempdir().unwrap();
    let herdless = figures(&with_herdless(dir.path()).await);
    let backoff = figures(&with_backoff(dir.path()).await);
    println!(
        "| schedule | redeliveries | largest 100 ms window | share of the {TASKS} tasks | \
         first attempts: span, largest 100 ms window | last redelivery after |"
    );
    println!("|---|---|---|---|---|---|");
    for (name, f) in [
        ("herdless worker (full jitter, base 1 s)", &herdless),
        ("JetStream BackOff [1 s, 2 s, 4 s]", &backoff),
    ] {
        println!(
            "| {name} | {} | {} | {:.2} | {:.2} s, {} | {:.1} s |",
            f.redeliveries,
            f.largest,
            f.largest as f64 / TASKS as f64,
            f.first_wave_s,
            f.first_largest,
            f.drain_s
        );
    }
    assert!(herdless.largest as f64 <= 0.45 * TASKS as f64);
    assert!(backoff.largest > herdless.largest);
}
