//! The library's worker over a three-server JetStream cluster: three
//! workers, each connected to a different server with
//! [`connect_options`], run 300 tasks while the stream's leader is killed
//! and restarted; every task succeeds exactly once (its acknowledgement and
//! completion record asked again on the new leader, see `confirm.rs`), and
//! the workers drain on their own. The fleet-sized faults (freeze, cut,
//! rolling restart) are the CLI's `tests/cluster_faults.rs`.

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
        .concurrency(4)
        .unwrap()
        .exit_when_idle(true);
    let op = |task: Task| {
        let done = Arc::clone(&done);
        async move {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_leader_killed_mid_run_and_every_task_done_once() {
    let mut cluster = NatsCluster::start();
    let js = cluster.jetstream().await;
    cluster_streams(&js, Duration::from_secs(8)).await;
    let mut acks = Vec::new();
    for i in 0..TASKS {
        acks.push(js.publish("tasks.x", i.to_string().into()).await.unwrap());
    }
    for ack in acks {
        ack.await.expect("stored");
    }
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
