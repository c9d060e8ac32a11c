//! What the tests of `worker.rs` and `worker_fence.rs` share: the worker's command line, what
//! its attempts logged, its summary, and a FIFO an attempt announces
//! itself through, whether a process has ended.

#![allow(dead_code)]

use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::unix::pipe;
use tokio::process::Command;

use crate::nats_server::NatsServer;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_herdless");

/// A worker on `TASKS`/`workers`, dead-lettering to `dead.tasks` unless
/// `extra` names another subject, a fast policy (30 ms base, 3 attempts,
/// through the environment so `extra` can override them), JSON events and
/// summary; `extra` flags, then `sh -c SCRIPT`.
pub(crate) fn worker(
    server: &NatsServer,
    dir: &tempfile::TempDir,
    extra: &[&str],
    script: &str,
) -> Command {
    let mut cmd = Command::new(BIN);
    for (k, _) in std::env::vars() {
        if k.starts_with("HERDLESS_") || k == "RUST_LOG" || k == "NATS_URL" {
            cmd.env_remove(k);
        }
    }
    cmd.current_dir(dir.path())
        .env("LOG", dir.path().join("log"))
        .env("FIFO", dir.path().join("fifo"))
        .env("HERDLESS_BASE", "30ms")
        .env("HERDLESS_MAX_ATTEMPTS", "3")
        .env("HERDLESS_LOG_FORMAT", "json")
        .args(["worker", "--nats", server.url()]);
    if !extra.contains(&"--stream") {
        cmd.args(["--stream", "TASKS"]);
    }
    if !extra.contains(&"--consumer") {
        cmd.args(["--consumer", "workers"]);
    }
    if !extra.contains(&"--dead-letter") {
        cmd.args(["--dead-letter", "dead.tasks"]);
    }
    cmd.args(extra)
        .args(["--", "sh", "-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// Each attempt's line in `$LOG`: attempt, key, payload.
pub(crate) const LOG_ATTEMPT: &str =
    r#"p=$(cat); echo "$HERDLESS_ATTEMPT $HERDLESS_IDEMPOTENCY_KEY $p" >> "$LOG""#;

pub(crate) fn attempts(dir: &tempfile::TempDir) -> Vec<(u32, String, String)> {
    let text = std::fs::read_to_string(dir.path().join("log")).unwrap_or_default();
    text.lines()
        .map(|l| {
            let mut f = l.splitn(3, ' ');
            let n = f.next().unwrap().parse().unwrap();
            (
                n,
                f.next().unwrap().to_owned(),
                f.next().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// The summary (the last stdout line) and the event names on stderr.
pub(crate) fn summary(out: &Output) -> (Value, Vec<String>) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "worker failed: {:?}\n{stderr}",
        out.status
    );
    let last = stdout
        .lines()
        .last()
        .unwrap_or_else(|| panic!("no summary; stderr: {stderr}"));
    let events = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| v["event"].as_str().unwrap_or("").to_owned())
        .collect();
    (serde_json::from_str(last).unwrap(), events)
}

pub(crate) async fn run(mut cmd: Command) -> Output {
    let child = cmd.spawn().expect("start herdless worker");
    tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the worker ends")
        .expect("its output")
}

/// The FIFO attempts announce themselves on (`$FIFO`), opened by the test
/// for reading and writing: a writer's open never blocks, and the read end
/// never sees end-of-file, so reading waits for a line, not for a writer.
pub(crate) struct Fifo(BufReader<pipe::Receiver>);

pub(crate) fn mkfifo(dir: &tempfile::TempDir) -> Fifo {
    let path = dir.path().join("fifo");
    let ok = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(ok.success());
    let receiver = pipe::OpenOptions::new()
        .read_write(true)
        .open_receiver(&path)
        .expect("open the FIFO");
    Fifo(BufReader::new(receiver))
}

/// The next line an attempt writes to the FIFO. A worker that ends before its
/// attempt announces itself fails the test (after 60 s) instead of hanging it.
pub(crate) async fn announced(fifo: &mut Fifo) -> String {
    let mut line = String::new();
    tokio::time::timeout(Duration::from_secs(60), fifo.0.read_line(&mut line))
        .await
        .expect("no attempt announced itself: did the worker end early?")
        .expect("read the FIFO");
    line.trim().to_owned()
}

/// Whether process `pid` has ended (gone, or a zombie nobody reaped yet).
pub(crate) fn ended(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the command's name, which is in parentheses.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Waits up to `within` for `pid` to end: polled every 10 ms, `false` if
/// it still runs then.
pub(crate) async fn ends_within(pid: i32, within: Duration) -> bool {
    tokio::time::timeout(within, async {
        while !ended(pid) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .is_ok()
}
