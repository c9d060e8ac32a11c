//! Shared by the `exec` test binaries: a scratch directory that is herdless's
//! working and config directory, the binary with a clean environment, and
//! readers for its events and processes.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_herdless");

/// Every variable herdless reads, so the caller's environment cannot leak in.
pub(crate) const VARS: &[&str] = &[
    "HERDLESS_JITTER",
    "HERDLESS_BASE",
    "HERDLESS_MULTIPLIER",
    "HERDLESS_CAP",
    "HERDLESS_MAX_ATTEMPTS",
    "HERDLESS_MAX_ELAPSED",
    "HERDLESS_MAX_RETRY_AFTER",
    "HERDLESS_SEED",
    "HERDLESS_TASK_ID",
    "HERDLESS_LOG_FORMAT",
    "HERDLESS_POLICY",
    "HERDLESS_CONFIG",
    "HERDLESS_ATTEMPT",
    "HERDLESS_IDEMPOTENCY_KEY",
    "HERDLESS_QUIET",
    "RUST_LOG",
];

/// A scratch directory that is also herdless's working and config directory.
pub(crate) struct Scratch(pub(crate) tempfile::TempDir);

impl Scratch {
    pub(crate) fn new() -> Self {
        Scratch(tempfile::tempdir().expect("temp dir"))
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }

    pub(crate) fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).expect("write");
        p
    }

    pub(crate) fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_default()
    }

    pub(crate) fn herdless(&self) -> Command {
        self.env(Command::new(BIN))
    }

    /// `herdless` under `ulimit -n limit` (soft and hard), for that process
    /// only: the test binary keeps its own limit. Arguments follow as usual.
    pub(crate) fn herdless_limited(&self, limit: u32) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg(format!("ulimit -n {limit} && exec \"$0\" \"$@\""))
            .arg(BIN);
        self.env(c)
    }

    pub(crate) fn env(&self, mut c: Command) -> Command {
        c.current_dir(self.0.path())
            .env("XDG_CONFIG_HOME", self.0.path().join("no-config"))
            .stdin(Stdio::null());
        for v in VARS {
            c.env_remove(v);
        }
        c
    }
}

pub(crate) fn run(mut c: Command) -> Output {
    c.output().expect("run herdless")
}

pub(crate) fn json_events(stderr: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

pub(crate) fn names(events: &[serde_json::Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["event"].as_str().unwrap_or("").to_string())
        .collect()
}

/// A shell snippet counting attempts in `count` and recording the environment.
pub(crate) fn counting_script(dir: &Scratch, then: &str) -> PathBuf {
    dir.write(
        "cmd.sh",
        &format!(
            "n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count\n\
             echo \"$HERDLESS_ATTEMPT $HERDLESS_IDEMPOTENCY_KEY\" >> env.log\n{then}\n"
        ),
    )
}

/// The retry event names in a text-format stderr (`herdless: NAME ...` lines).
pub(crate) fn text_events(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("herdless: "))
        .map(|l| l.split(' ').next().unwrap_or("").to_string())
        .collect()
}

/// `exec` of a command failing 3 times with status 9 (writing to stdout and
/// stderr each time), with `extra` flags and `env` variables.
pub(crate) fn failing_exec(extra: &[&str], env: &[(&str, &str)]) -> (Output, Scratch) {
    let dir = Scratch::new();
    let script = counting_script(&dir, "echo out; echo child-err >&2; exit 9");
    let mut c = dir.herdless();
    c.args(["exec", "--base", "1ms", "--max-attempts", "3"])
        .args(extra)
        .arg("--")
        .arg("sh")
        .arg(&script);
    for (k, v) in env {
        c.env(k, v);
    }
    (run(c), dir)
}

/// Whether `pid` is gone: no such process, or a zombie waiting for a reaper
/// (dead: it runs no code and holds nothing but its process-table slot).
pub(crate) fn is_dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

/// Polls `is_dead` until `limit` (for processes that cannot be awaited).
pub(crate) fn dies_within(pid: i32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if is_dead(pid) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Starts herdless with piped stderr and returns it with a line reader.
pub(crate) fn spawn_with_events(
    mut c: Command,
) -> (std::process::Child, BufReader<std::process::ChildStderr>) {
    c.stderr(Stdio::piped()).stdout(Stdio::null());
    let mut child = c.spawn().expect("spawn herdless");
    let err = BufReader::new(child.stderr.take().expect("stderr"));
    (child, err)
}

/// Reads lines until one contains `needle`.
pub(crate) fn await_line(
    reader: &mut BufReader<std::process::ChildStderr>,
    needle: &str,
) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader.read_line(&mut line).expect("read stderr");
        assert!(n > 0, "herdless closed stderr before {needle:?}");
        if line.contains(needle) {
            return line;
        }
    }
}

pub(crate) fn exec_with_policy(dir: &Scratch, policy: &str, extra: &[&str]) -> Output {
    let mut c = dir.herdless();
    c.args(["exec", "--config", "herdless.toml", "--policy", policy])
        .args(extra)
        .args(["--", "true"]);
    run(c)
}
