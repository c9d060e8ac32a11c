//! Throughput of `herdless worker` on loopback with a no-op command: each
//! sample publishes a backlog of tasks and times one `herdless worker
//! --exit-when-idle -- true` draining it (process start, connection, one
//! child process per task, the acks; one task = one element); each
//! concurrency (1 and 16) with the claim and completion record (the
//! default) and without them (`--no-completion-record`): the difference is
//! their cost. Once against one `nats-server`, once against a three-server
//! cluster with the streams and the bucket replicated three times (where
//! each confirmed write waits for a second server).
//!
//! `cargo bench -p herdless-cli --bench worker`
#![allow(missing_docs)] // criterion_group! defines undocumented functions

#[path = "../tests/nats_server/mod.rs"]
mod nats_server;

#[path = "../tests/nats_server/cluster.rs"]
mod nats_cluster;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use async_nats::jetstream;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use nats_server::{NatsServer, task_streams};

const BIN: &str = env!("CARGO_BIN_EXE_herdless");
const BACKLOG: u64 = 1000;

/// One group: `url` reaches the broker, `js` publishes the backlog.
fn group(
    c: &mut Criterion,
    rt: &tokio::runtime::Runtime,
    name: &str,
    url: &str,
    js: &jetstream::Context,
) {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .throughput(Throughput::Elements(BACKLOG));
    for (concurrency, record) in [(1u32, true), (1, false), (16, true), (16, false)] {
        let id = if record {
            "concurrency"
        } else {
            "concurrency, no completion record"
        };
        group.bench_function(BenchmarkId::new(id, concurrency), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    rt.block_on(async {
                        let mut acks = Vec::new();
                        for i in 0..BACKLOG {
                            let sent = js.publish("tasks.noop", i.to_string().into()).await;
                            acks.push(sent.expect("publish"));
                        }
                        for ack in acks {
                            ack.await.expect("stored");
                        }
                    });
                    let start = Instant::now();
                    let mut cmd = Command::new(BIN);
                    cmd.args(["worker", "--nats", url, "--stream", "TASKS"]);
                    if !record {
                        cmd.arg("--no-completion-record");
                    }
                    let status = cmd
                        .args(["--consumer", "workers", "--dead-letter", "dead.tasks"])
                        .args(["--concurrency", &concurrency.to_string()])
                        .args(["--exit-when-idle", "--quiet", "--", "true"])
                        .stdout(Stdio::null())
                        .status()
                        .unwrap();
                    total += start.elapsed();
                    assert!(status.success());
                }
                total
            })
        });
    }
    group.finish();
}

fn drain(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = NatsServer::start();
    let js = rt.block_on(server.jetstream());
    rt.block_on(task_streams(&js, Duration::from_secs(30)));
    group(c, &rt, "worker/noop_tasks", server.url(), &js);
    drop(server);
    let cluster = nats_cluster::NatsCluster::start();
    let js = rt.block_on(cluster.jetstream());
    rt.block_on(nats_cluster::cluster_streams(&js, Duration::from_secs(30)));
    let urls = format!("{},{},{}", cluster.url(0), cluster.url(1), cluster.url(2));
    group(c, &rt, "worker/noop_tasks_r3", &urls, &js);
}

criterion_group!(benches, drain);
criterion_main!(benches);
