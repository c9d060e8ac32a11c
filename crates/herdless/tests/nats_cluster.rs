//! The library's worker over a three-server JetStream cluster: three
//! workers, each connected to a different server with
//! [`connect_options`], run 300 tasks while the stream's leader is killed
//! and restarted; every task succeeds exactly once (its acknowledgement and
//! completion record asked again on the new leader, see `confirm.rs`), and
//! the workers drain on their own (ignored: the CLI's `cluster_faults.rs`
//! runs the same fault by default); and a worker whose server is cut off
//! leaves it within seconds. The fleet-sized faults are the CLI's
//! `tests/cluster_faults.rs`.

#[path = "support/nats_cluster.rs"]
mod nats_cluster;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream;
use futures_util::future::join_all;
use herdless::adapters::nats::{Summary, Task, Worker, connect_options};
use herdless::{AlwaysRetry, Policy};
use nats_cluster::{NatsCluster, SETTLE, cluster_streams};

const TASKS: usize = 300;

type Done = Arc<Mutex<BTreeMap<String, u32>>>;

async fn worker(url: String, done: Done) -> Summary {
    worker_with(url, done, Duration::ZERO, true).await
}

/// A worker on `url` whose every task takes `each`, with or without the
/// completion record.
async fn worker_with(url: String, done: Done, each: Duration, record: bool) -> Summary {
    let client = connect_options()
        .connect(url.as_str())
        .await
        .expect("connect");
    let js = jetstream::new(client);
    let consumer = js
        .get_stream("TASKS")
        .await
        .unwrap()
        .get_consumer::<jetstream::consumer::pull::Config>("workers")
        .await
        .unwrap();
    let policy = Policy::builder()
        .base(Duration::from_millis(100))
        .max_attempts(8)
        .build()
        .unwrap();
    let w = Worker::new(policy, AlwaysRetry)
        .concurrency(8)
        .unwrap()
        .completion_record(record)
        .exit_when_idle(true);
    let op = |task: Task| {
        let done = Arc::clone(&done);
        async move {
            tokio::time::sleep(each).await;
            let payload = String::from_utf8_lossy(&task.payload).into_owned();
            *done.lock().unwrap().entry(payload).or_default() += 1;
            Ok::<(), std::io::Error>(())
        }
    };
    let stop = std::future::pending::<()>();
    w.run(&js, &consumer, op, stop, std::future::pending::<()>())
        .await
        .expect("the worker runs")
}

/// Publishes `n` tasks (payloads `0` to `n - 1`), all stored.
async fn publish_tasks(js: &jetstream::Context, n: usize) {
    let mut acks = Vec::new();
    for i in 0..n {
        acks.push(js.publish("tasks.x", i.to_string().into()).await.unwrap());
    }
    for ack in acks {
        ack.await.expect("stored");
    }
}

/// A worker whose server is cut off mid-run moves to another server within
/// seconds and goes on taking tasks there. Without the probe
/// (`liveness.rs`) it stays on the unreachable server until async-nats's
/// pings, held back by the worker's own commands, give up (11 s and more
/// here, most runs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_leaves_an_unreachable_server_within_seconds() {
    const N: usize = 400;
    let mut cluster = NatsCluster::start();
    if !cluster.isolated() {
        println!(
            "skipped: without network namespaces a cut is a SIGSTOP, and a reconnect that \
             lands on a stopped server waits for it (see connect.rs)"
        );
        return;
    }
    let js = cluster.jetstream().await;
    cluster_streams(&js, Duration::from_secs(8)).await;
    publish_tasks(&js, N).await;
    // The worker's server is one that leads neither the stream nor the
    // consumer (the cluster goes on without an election); the completion
    // record is off (its bucket's leader could be anywhere). Cut, not
    // frozen: a reconnect that picks a frozen server waits for its greeting
    // with no bound (async-nats bounds the TCP connect only), which is no
    // part of what this test asks.
    let leaders = [
        cluster.stream_leader("TASKS").await,
        cluster.consumer_leader("TASKS", "workers").await,
    ];
    let cut = (0..3)
        .find(|i| !leaders.contains(i))
        .expect("three servers, two leaders");
    let done: Done = Arc::default();
    let url = cluster.url(cut).to_owned();
    let work = worker_with(url, Arc::clone(&done), Duration::from_millis(25), false);
    let count = || done.lock().unwrap().len();
    let fault = async {
        let deadline = std::time::Instant::now() + SETTLE;
        while count() < 10 {
            assert!(
                std::time::Instant::now() < deadline,
                "the worker never started"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        cluster.cut(cut);
        let (at, before) = (std::time::Instant::now(), count());
        // Tasks delivered after the cut can only come through another server.
        while count() < before + 20 && at.elapsed() < Duration::from_secs(30) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let took = at.elapsed();
        cluster.heal(cut);
        took
    };
    let (summary, took) = tokio::join!(tokio::time::timeout(Duration::from_secs(90), work), fault);
    let summary = summary.expect("the worker drains");
    assert_eq!(count(), N, "{summary:?}");
    // Measured: 3 to 4 s with the probe.
    assert!(
        took < Duration::from_secs(7),
        "20 tasks more only {took:?} after the cut"
    );
    println!("20 tasks more {took:?} after its server was cut off");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the CLI's cluster_faults runs the kill by default, and the cluster tests keep under 2 minutes; with the claim 5 runs of 5 held (before it, 1 in about 13 ran a task twice); run with --ignored"]
async fn the_stream_leader_killed_mid_run_and_every_task_done_once() {
    let mut cluster = NatsCluster::start();
    let js = cluster.jetstream().await;
    cluster_streams(&js, Duration::from_secs(8)).await;
    publish_tasks(&js, TASKS).await;
    let done: Done = Arc::default();
    // Worker::run's future is not Send: the workers and the fault run
    // side by side in this task.
    let urls: Vec<String> = (0..3).map(|i| cluster.url(i).to_owned()).collect();
    let workers = join_all(urls.into_iter().map(|u| worker(u, Arc::clone(&done))));
    let fault = async {
        let deadline = std::time::Instant::now() + SETTLE;
        while done.lock().unwrap().len() < TASKS / 4 {
            assert!(
                std::time::Instant::now() < deadline,
                "the workers never started"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let leader = cluster.stream_leader("TASKS").await;
        cluster.kill(leader);
        while cluster.stream_leader("TASKS").await == leader {}
        cluster.restart(leader);
        leader
    };
    let (summaries, leader) = tokio::join!(
        tokio::time::timeout(Duration::from_secs(120), workers),
        fault
    );
    let summaries = summaries.expect("every worker drains on its own");
    let done = done.lock().unwrap();
    let twice: Vec<_> = done.iter().filter(|(_, n)| **n > 1).collect();
    assert_eq!(done.len(), TASKS, "tasks never run");
    assert!(
        twice.is_empty(),
        "tasks run twice: {twice:?}; {summaries:?}"
    );
    let acked: u64 = summaries.iter().map(|s| s.acked).sum();
    let again: u64 = summaries.iter().map(|s| s.already_completed).sum();
    assert_eq!(acked, TASKS as u64, "{summaries:?}");
    println!("leader n{leader} killed: {acked} acked, {again} acked as already completed");
}

/// How many of `keys` keys had more than one of `writers` concurrent
/// conditional writes accepted (the writers spread over the three servers):
/// creates (`Nats-Expected-Last-Subject-Sequence: 0`) or, with `update`,
/// writes at the key's current revision.
async fn winners_beyond_one(
    cluster: &NatsCluster,
    keys: usize,
    writers: usize,
    update: bool,
) -> usize {
    let js = cluster.jetstream().await;
    let config = jetstream::stream::Config {
        name: "KV_race".into(),
        subjects: vec!["$KV.race.>".into()],
        max_messages_per_subject: 1,
        num_replicas: 3,
        discard: jetstream::stream::DiscardPolicy::New,
        allow_rollup: true,
        deny_delete: true,
        ..Default::default()
    };
    let deadline = std::time::Instant::now() + SETTLE;
    let bucket = loop {
        match js.get_or_create_stream(config.clone()).await {
            Ok(s) => break s,
            Err(e) => assert!(std::time::Instant::now() < deadline, "the bucket: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut servers = Vec::new();
    for i in 0..3 {
        let client = async_nats::connect(cluster.url(i)).await.expect("connect");
        servers.push(jetstream::new(client));
    }
    let mut beyond = 0;
    for k in 0..keys {
        let subject = format!("$KV.race.k{k}");
        let expected = if update {
            js.publish(subject.clone(), "first".into())
                .await
                .unwrap()
                .await
                .unwrap();
            let m = bucket
                .get_last_raw_message_by_subject(&subject)
                .await
                .unwrap();
            m.sequence
        } else {
            0
        };
        let writes = (0..writers).map(|w| {
            let (js, subject) = (servers[(k + w) % 3].clone(), subject.clone());
            async move {
                let mut h = async_nats::HeaderMap::new();
                h.insert(
                    "Nats-Expected-Last-Subject-Sequence",
                    expected.to_string().as_str(),
                );
                let sent = js
                    .publish_with_headers(subject, h, format!("w{w}").into())
                    .await;
                sent.expect("sent").await.is_ok()
            }
        });
        let won = join_all(writes).await.into_iter().filter(|w| *w).count();
        assert!(update || won >= 1, "key {k}: no create won");
        beyond += usize::from(won > 1);
    }
    beyond
}

/// The claim's premise (`redelivery/claim/mod.rs`): of concurrent creates of
/// one key on an R3 stream, sent through different servers, exactly one is
/// stored. (An update at a revision does not hold on nats-server 2.9.10: see
/// the ignored test below.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_on_a_replicated_bucket_has_one_winner() {
    let cluster = NatsCluster::start();
    let beyond = winners_beyond_one(&cluster, 300, 6, false).await;
    assert_eq!(beyond, 0, "keys created by more than one writer");
}

/// Why the claim takes turns instead of updating one key at a revision:
/// measured 1,371 of 2,000 keys (8 writers each) with more than one winner
/// on nats-server 2.9.10. Fails once a server serializes such updates (then
/// the turns could be one key).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "measures the server: an update at a revision is not exclusive on nats-server 2.9.10 R3"]
async fn an_update_at_a_revision_can_have_two_winners_on_this_server() {
    let cluster = NatsCluster::start();
    let beyond = winners_beyond_one(&cluster, 300, 6, true).await;
    println!("{beyond} of 300 keys updated by more than one writer");
    assert!(beyond > 0, "every update at a revision had one winner");
}
