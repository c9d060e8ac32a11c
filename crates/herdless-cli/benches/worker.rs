//! Throughput of `herdless worker` on loopback with a no-op command: each
//! sample publishes a backlog of tasks to a real `nats-server` and times one
//! `herdless worker --exit-when-idle -- true` draining it (process start,
//! connection, one child process per task, the acks; one task = one
//! element); each concurrency with the completion record (the default) and
//! without it (`--no-completion-record`): the difference is its cost.
//!
//! `cargo bench -p herdless-cli --bench worker`
#![allow(missing_docs)] // criterion_group! defines undocumented functions

#[path = "../tests/nats_server/mod.rs"]
mod nats_server;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use nats_server::{NatsServer, publish, task_streams};

const BIN: &str = env!("CARGO_BIN_EXE_herdless");
const BACKLOG: u64 = 1000;

fn drain(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = NatsServer::start();
    let js = rt.block_on(server.jetstream());
    rt.block_on(task_streams(&js, Duration::from_secs(30)));
    let mut group = c.benchmark_group("worker/noop_tasks");
    group
        .sample_size(10)
        .throughput(Throughput::Elements(BACKLOG));
    for (concurrency, record) in [(1u32, true), (1, false), (8, true), (8, false)] {
        let name = if record {
            "concurrency"
        } else {
            "concurrency, no completion record"
        };
        group.bench_function(BenchmarkId::new(name, concurrency), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    rt.block_on(async {
                        for i in 0..BACKLOG {
                            publish(&js, "tasks.noop", &i.to_string(), None).await;
                        }
                    });
                    let start = Instant::now();
                    let mut cmd = Command::new(BIN);
                    cmd.args(["worker", "--nats", server.url(), "--stream", "TASKS"]);
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

criterion_group!(benches, drain);
criterion_main!(benches);
