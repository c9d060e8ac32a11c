//! A fleet of `herdless worker` processes over a three-server cluster, and
//! the count of what became of every task.
//!
//! 1,000 tasks: one in 20 fails terminally (exit 3, `--terminal-on 3`), one
//! in 4 of the others fails its first two attempts, the rest succeed at
//! once. Every attempt appends `KEY INDEX ATTEMPT WORKER START` to
//! `attempts`; a success appends `KEY INDEX WORKER START END` to `done`
//! (times from `$EPOCHREALTIME`). Six workers, two per server, each given
//! one server's URL (they learn the others from it).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_nats::jetstream;
use futures_util::future::join_all;

use crate::nats_cluster::{NatsCluster, SETTLE, cluster_streams};

const BIN: &str = env!("CARGO_BIN_EXE_herdless");
pub(crate) const TASKS: usize = 1000;
pub(crate) const WORKERS: usize = 6;
/// The consumer's ack wait: longer than a leader election and a worker's
/// move to another server (about 5 s here), shorter than the SIGSTOP.
pub(crate) const ACK_WAIT: Duration = Duration::from_secs(8);
/// How long the fleet may take to drain after the fault: generous, bounded.
const DRAIN: Duration = Duration::from_secs(90);
const WINDOW: f64 = 0.1;

const SCRIPT: &str = r#"start=$EPOCHREALTIME; read -r i kind
echo "$HERDLESS_IDEMPOTENCY_KEY $i $HERDLESS_ATTEMPT $WORKER $start" >> "$DIR/attempts"
case $kind in terminal) exit 3;; flaky) [ "$HERDLESS_ATTEMPT" -ge 3 ] || exit 1;; esac
echo "$HERDLESS_IDEMPOTENCY_KEY $i $WORKER $start $EPOCHREALTIME" >> "$DIR/done""#;

/// What task `i` does.
pub(crate) fn kind(i: usize) -> &'static str {
    if i % 20 == 7 {
        "terminal"
    } else if i % 4 == 1 {
        "flaky"
    } else {
        "ok"
    }
}

/// Seconds since the Unix epoch, as `$EPOCHREALTIME` reads.
pub(crate) fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The fleet: its directory, its workers, the tasks' stream sequences.
pub(crate) struct Fleet {
    dir: tempfile::TempDir,
    workers: Vec<tokio::process::Child>,
    sequences: Vec<u64>,
}

/// What became of the tasks, and how the retries spread.
pub(crate) struct Report {
    /// Tasks neither succeeded nor dead-lettered.
    pub lost: usize,
    /// Tasks whose success ran more than once.
    pub twice: usize,
    /// Dead letters stored, and terminal tasks without exactly one.
    pub dead_letters: usize,
    pub dead_wrong: usize,
    /// Largest 100 ms window of redeliveries, as a share of the retrying tasks.
    pub spread: f64,
    pub retrying: usize,
    /// From the fault to the first success of an attempt started after it (s).
    pub first_success_s: f64,
    /// The longest time without a success, from the fault on (s).
    pub stall_s: f64,
    /// Per worker: whether it said its connection was re-established.
    pub reconnected: Vec<bool>,
    pub wall_s: f64,
    /// What the duplicates and lost tasks did, and the workers' warnings,
    /// for a failure's message.
    pub trail: String,
}

impl Report {
    /// The figures on one line.
    pub(crate) fn line(&self) -> String {
        format!(
            "lost {}, twice {}, dead letters {} ({} wrong), spread {:.3} of {} retrying, \
             first success after {:.3}s, longest gap {:.3}s, reconnected {:?}, drained {:.1}s \
             after the fault's end",
            self.lost,
            self.twice,
            self.dead_letters,
            self.dead_wrong,
            self.spread,
            self.retrying,
            self.first_success_s,
            self.stall_s,
            self.reconnected,
            self.wall_s
        )
    }
}

impl Fleet {
    /// Creates the streams, publishes the tasks, starts the workers; `extra`
    /// flags go to every worker.
    pub(crate) async fn start(
        cluster: &NatsCluster,
        js: &jetstream::Context,
        extra: &[&str],
    ) -> Fleet {
        cluster_streams(js, ACK_WAIT).await;
        let mut acks = Vec::new();
        for i in 0..TASKS {
            let payload = format!("{i} {}\n", kind(i));
            acks.push(
                js.publish("tasks.scan", payload.into())
                    .await
                    .expect("publish"),
            );
        }
        let sequences = join_all(acks.into_iter().map(std::future::IntoFuture::into_future))
            .await
            .into_iter()
            .map(|a| a.expect("stored").sequence)
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let mut workers = Vec::new();
        for w in 0..WORKERS {
            let mut cmd = tokio::process::Command::new(BIN);
            for (k, _) in std::env::vars() {
                if k.starts_with("HERDLESS_") || k == "RUST_LOG" || k == "NATS_URL" {
                    cmd.env_remove(k);
                }
            }
            cmd.args(["worker", "--nats", cluster.url(w % 3), "--stream", "TASKS"])
                .args(["--consumer", "workers", "--dead-letter", "dead.tasks"])
                .args(["--jitter", "full", "--base", "200ms", "--max-attempts", "6"])
                .args([
                    "--terminal-on",
                    "3",
                    "--concurrency",
                    "3",
                    "--exit-when-idle",
                ])
                .args(["--quiet", "--log-format", "json"])
                .args(extra)
                .args(["--", "bash", "-c", SCRIPT])
                .env("DIR", dir.path())
                .env("WORKER", w.to_string())
                .stdin(Stdio::null())
                // Files, not pipes: a pipe nobody reads during the fault
                // would fill and stall the worker on its own warnings.
                .stdout(log_file(dir.path(), &format!("worker{w}.out")))
                .stderr(log_file(dir.path(), &format!("worker{w}.err")))
                .kill_on_drop(true);
            workers.push(cmd.spawn().expect("start herdless worker"));
        }
        Fleet {
            dir,
            workers,
            sequences,
        }
    }

    /// Waits until `n` tasks have succeeded (bounded by [`SETTLE`]).
    pub(crate) async fn await_successes(&self, n: usize) {
        let deadline = Instant::now() + SETTLE;
        while lines(&self.dir.path().join("done")).len() < n {
            assert!(Instant::now() < deadline, "fewer than {n} successes");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits for every worker to exit on its own (`--exit-when-idle`) and
    /// counts; `fault` is when the fault began (seconds since the epoch).
    pub(crate) async fn finish(self, js: &jetstream::Context, fault: f64) -> Report {
        let started = Instant::now();
        let mut reconnected = Vec::new();
        let mut trail = String::new();
        for (w, mut child) in self.workers.into_iter().enumerate() {
            let status = tokio::time::timeout(DRAIN, child.wait())
                .await
                .unwrap_or_else(|_| panic!("worker {w} did not drain within {DRAIN:?}"))
                .unwrap();
            let read = |name: String| std::fs::read_to_string(self.dir.path().join(name)).unwrap();
            let stderr = read(format!("worker{w}.err"));
            assert!(status.success(), "worker {w}: {status:?}\n{stderr}");
            reconnected.push(stderr.contains("re-established"));
            let stdout = read(format!("worker{w}.out"));
            trail.push_str(&format!("worker {w}: {}\n", stdout.trim()));
            for l in stderr.lines().filter(|l| !l.starts_with('{')) {
                trail.push_str(&format!("worker {w}: {l}\n"));
            }
        }
        let wall_s = started.elapsed().as_secs_f64();
        let dir = self.dir.path();
        let mut done: BTreeMap<usize, usize> = BTreeMap::new();
        let mut first = f64::MAX;
        let mut ends = vec![fault];
        for f in lines(&dir.join("done")) {
            *done.entry(f[1].parse().unwrap()).or_default() += 1;
            let (start, end): (f64, f64) = (f[3].parse().unwrap(), f[4].parse().unwrap());
            if start > fault {
                first = first.min(end - fault);
            }
            if end > fault {
                ends.push(end);
            }
        }
        ends.sort_by(f64::total_cmp);
        let stall_s = ends.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
        let dead = dead_by_sequence(js).await;
        let (mut lost, mut twice, mut dead_wrong) = (0, 0, 0);
        for (i, seq) in self.sequences.iter().enumerate() {
            let ran = done.get(&i).copied().unwrap_or(0);
            let letters = dead.get(seq).copied().unwrap_or(0);
            if ran > 1 || (ran == 0 && letters == 0) {
                trail.push_str(&format!(
                    "task {i} ({}, seq {seq}): ran {ran}, letters {letters}\n",
                    kind(i)
                ));
                for f in lines(&dir.join("attempts"))
                    .iter()
                    .filter(|f| f[1] == i.to_string())
                {
                    let t: f64 = f[4].parse().unwrap();
                    trail.push_str(&format!(
                        "  attempt {} on worker {} at {:+.3}s\n",
                        f[2],
                        f[3],
                        t - fault
                    ));
                }
            }
            if kind(i) == "terminal" {
                lost += usize::from(letters == 0);
                dead_wrong += usize::from(letters != 1 || ran != 0);
            } else {
                lost += usize::from(ran == 0);
                twice += usize::from(ran > 1);
                dead_wrong += usize::from(letters != 0);
            }
        }
        let redeliveries: Vec<(String, f64)> = lines(&dir.join("attempts"))
            .into_iter()
            .filter(|f| f[2] != "1")
            .map(|f| (f[0].clone(), f[4].parse().unwrap()))
            .collect();
        let retrying = redeliveries
            .iter()
            .map(|r| r.0.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        let spread = largest_window(redeliveries.iter().map(|r| r.1).collect()) as f64
            / retrying.max(1) as f64;
        Report {
            lost,
            twice,
            dead_letters: dead.values().sum(),
            dead_wrong,
            spread,
            retrying,
            first_success_s: first,
            stall_s,
            reconnected,
            wall_s,
            trail,
        }
    }
}

/// A new file in `dir` for a worker's output.
fn log_file(dir: &Path, name: &str) -> std::fs::File {
    std::fs::File::create(dir.join(name)).expect("a worker's log file")
}

/// The lines of a log, split at spaces.
fn lines(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split(' ').map(str::to_owned).collect())
        .collect()
}

/// The most starts in any window of 100 ms.
pub(crate) fn largest_window(mut starts: Vec<f64>) -> usize {
    starts.sort_by(f64::total_cmp);
    let (mut best, mut lo) = (0, 0);
    for hi in 0..starts.len() {
        while starts[hi] - starts[lo] >= WINDOW {
            lo += 1;
        }
        best = best.max(hi - lo + 1);
    }
    best
}

/// Dead letters per task sequence (`Herdless-Sequence`), read once the
/// `DEAD` stream answers (its leader may still be settling after the fault).
async fn dead_by_sequence(js: &jetstream::Context) -> BTreeMap<u64, usize> {
    let deadline = Instant::now() + SETTLE;
    loop {
        match try_dead(js).await {
            Ok(out) => return out,
            Err(e) => assert!(Instant::now() < deadline, "the DEAD stream: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn try_dead(js: &jetstream::Context) -> Result<BTreeMap<u64, usize>, async_nats::Error> {
    let mut out = BTreeMap::new();
    let mut dead = js.get_stream("DEAD").await?;
    let count = dead.info().await?.state.last_sequence;
    for seq in 1..=count {
        let m = dead.get_raw_message(seq).await?;
        let task = m
            .headers
            .get("Herdless-Sequence")
            .and_then(|v| v.as_str().parse().ok())
            .expect("a dead letter names its task");
        *out.entry(task).or_default() += 1;
    }
    Ok(out)
}
