//! The JetStream worker driven as the tests of `nats.rs` drive it: the
//! operation's error, its classifier and policy, what the operation saw,
//! and a run of the worker until its stream is drained.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use herdless::adapters::nats::{Summary, Task, Worker};
use herdless::{Classification, Jitter, Policy, RetryEvent};

use crate::nats_server::NatsServer;

/// The operation's error in these tests.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Fault {
    Busy,
    Refused,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Fault::Busy => "device busy",
            Fault::Refused => "request refused",
        })
    }
}

pub(crate) fn classify(f: &Fault) -> Classification {
    match f {
        Fault::Busy => Classification::retryable(),
        Fault::Refused => Classification::terminal(),
    }
}

pub(crate) fn policy(max_attempts: u32) -> Policy {
    Policy::builder()
        .base(Duration::from_millis(40))
        .jitter(Jitter::Full)
        .max_attempts(max_attempts)
        .max_elapsed(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// One attempt as the operation saw it.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) payload: String,
    pub(crate) attempt: u32,
    pub(crate) key: String,
    pub(crate) started: Instant,
    pub(crate) ended: Instant,
}

pub(crate) type Log = Arc<Mutex<Vec<Seen>>>;

/// Runs a worker until the consumer is idle; `fail(payload, attempt)` says
/// how each attempt ends. Returns the summary, the attempts, and the sleeps
/// the engine scheduled.
pub(crate) async fn run_worker(
    server: &NatsServer,
    worker: Worker<fn(&Fault) -> Classification>,
    fail: fn(&str, u32) -> Option<Fault>,
) -> (Summary, Vec<Seen>, Vec<Duration>, Vec<String>) {
    let js = server.jetstream().await;
    let consumer = js
        .get_stream("TASKS")
        .await
        .unwrap()
        .get_consumer::<async_nats::jetstream::consumer::pull::Config>("workers")
        .await
        .unwrap();
    let log: Log = Arc::default();
    let sleeps: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let names: Arc<Mutex<Vec<String>>> = Arc::default();
    let hook = {
        let (sleeps, names) = (Arc::clone(&sleeps), Arc::clone(&names));
        move |e: &RetryEvent<'_>| {
            names.lock().unwrap().push(e.name().to_owned());
            if let RetryEvent::Scheduled { sleep, .. } = e {
                sleeps.lock().unwrap().push(*sleep);
            }
        }
    };
    let worker = worker.notify(hook).exit_when_idle(true);
    let op = |task: Task| {
        let log = Arc::clone(&log);
        async move {
            let started = Instant::now();
            let payload = String::from_utf8_lossy(&task.payload).into_owned();
            let result = fail(&payload, task.attempt).map_or(Ok(()), Err);
            log.lock().unwrap().push(Seen {
                payload,
                attempt: task.attempt,
                key: task.key.to_string(),
                started,
                ended: Instant::now(),
            });
            result
        }
    };
    let summary = worker
        .run(
            &js,
            &consumer,
            op,
            std::future::pending::<()>(),
            std::future::pending::<()>(),
        )
        .await
        .unwrap();
    let seen = log.lock().unwrap().clone();
    let sleeps = sleeps.lock().unwrap().clone();
    let names = names.lock().unwrap().clone();
    (summary, seen, sleeps, names)
}

pub(crate) fn worker(max_attempts: u32) -> Worker<fn(&Fault) -> Classification> {
    Worker::new(
        policy(max_attempts),
        classify as fn(&Fault) -> Classification,
    )
    .dead_letter("dead.tasks")
}
