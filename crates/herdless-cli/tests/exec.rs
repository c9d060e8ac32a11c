//! `herdless exec` end to end: the real binary, real processes, real signals.
//!
//! Nothing here sleeps to wait for something: readiness is read from the child's
//! or herdless's own output (a pipe), and the only timing bounds are generous
//! upper bounds on things that should be near-instant.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

const BIN: &str = env!("CARGO_BIN_EXE_herdless");

/// Every variable herdless reads, so the caller's environment cannot leak in.
const VARS: &[&str] = &[
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
struct Scratch(tempfile::TempDir);

impl Scratch {
    fn new() -> Self {
        Scratch(tempfile::tempdir().expect("temp dir"))
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).expect("write");
        p
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_default()
    }

    fn herdless(&self) -> Command {
        self.env(Command::new(BIN))
    }

    /// `herdless` under `ulimit -n limit` (soft and hard), for that process
    /// only: the test binary keeps its own limit. Arguments follow as usual.
    fn herdless_limited(&self, limit: u32) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg(format!("ulimit -n {limit} && exec \"$0\" \"$@\""))
            .arg(BIN);
        self.env(c)
    }

    fn env(&self, mut c: Command) -> Command {
        c.current_dir(self.0.path())
            .env("XDG_CONFIG_HOME", self.0.path().join("no-config"))
            .stdin(Stdio::null());
        for v in VARS {
            c.env_remove(v);
        }
        c
    }
}

fn run(mut c: Command) -> Output {
    c.output().expect("run herdless")
}

fn json_events(stderr: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn names(events: &[serde_json::Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["event"].as_str().unwrap_or("").to_string())
        .collect()
}

/// A shell snippet counting attempts in `count` and recording the environment.
fn counting_script(dir: &Scratch, then: &str) -> PathBuf {
    dir.write(
        "cmd.sh",
        &format!(
            "n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count\n\
             echo \"$HERDLESS_ATTEMPT $HERDLESS_IDEMPOTENCY_KEY\" >> env.log\n{then}\n"
        ),
    )
}

#[test]
fn a_command_failing_twice_then_succeeding_is_retried_to_success() {
    let dir = Scratch::new();
    let script = counting_script(&dir, "[ $n -ge 3 ] && exit 0; exit 75");
    let mut c = dir.herdless();
    c.args([
        "exec",
        "--base",
        "1ms",
        "--cap",
        "5ms",
        "--log-format",
        "json",
        "--",
    ])
    .arg("sh")
    .arg(&script);
    let out = run(c);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(dir.read("count").trim(), "3");
    let events = json_events(&out.stderr);
    assert_eq!(
        names(&events),
        ["retry_scheduled", "retry_scheduled", "retry_succeeded"]
    );
    assert_eq!(events[0]["exit_status"], 75);
    assert_eq!(events[2]["attempt"], 3);
    // HERDLESS_ATTEMPT counts up; the idempotency key is the same on every attempt.
    let env = dir.read("env.log");
    let lines: Vec<(&str, &str)> = env
        .lines()
        .map(|l| l.split_once(' ').expect("two fields"))
        .collect();
    assert_eq!(
        lines.iter().map(|l| l.0).collect::<Vec<_>>(),
        ["1", "2", "3"]
    );
    assert_eq!(lines[0].1.len(), 36, "{env}");
    assert!(lines.iter().all(|l| l.1 == lines[0].1), "{env}");
}

#[test]
fn exhausted_exits_with_the_childs_last_status() {
    let dir = Scratch::new();
    let script = counting_script(&dir, "exit 9");
    let mut c = dir.herdless();
    c.args([
        "exec",
        "--base",
        "1ms",
        "--max-attempts",
        "3",
        "--log-format",
        "json",
        "--",
        "sh",
    ])
    .arg(&script);
    let out = run(c);
    assert_eq!(out.status.code(), Some(9));
    assert_eq!(dir.read("count").trim(), "3");
    let events = json_events(&out.stderr);
    let last = events.last().expect("an event");
    assert_eq!(last["event"], "retry_budget_exhausted");
    assert_eq!(last["reason"], "max_attempts");
}

#[test]
fn a_terminal_status_makes_exactly_one_attempt() {
    let dir = Scratch::new();
    let script = counting_script(&dir, "exit 3");
    let mut c = dir.herdless();
    c.args([
        "exec",
        "--base",
        "1ms",
        "--terminal-on",
        "2-4",
        "--log-format",
        "json",
        "--",
        "sh",
    ])
    .arg(&script);
    let out = run(c);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(dir.read("count").trim(), "1");
    assert_eq!(
        names(&json_events(&out.stderr)),
        ["retry_abandoned_terminal"]
    );

    // --retry-on is an allowlist: a status outside it is terminal too.
    std::fs::remove_file(dir.path("count")).unwrap();
    let script = counting_script(&dir, "exit 1");
    let mut c = dir.herdless();
    c.args(["exec", "--base", "1ms", "--retry-on", "75,111", "--", "sh"])
        .arg(&script);
    assert_eq!(run(c).status.code(), Some(1));
    assert_eq!(dir.read("count").trim(), "1");

    // 127 is never retried, by default either.
    std::fs::remove_file(dir.path("count")).unwrap();
    let script = counting_script(&dir, "exit 127");
    let mut c = dir.herdless();
    c.args(["exec", "--base", "1ms", "--", "sh"]).arg(&script);
    assert_eq!(run(c).status.code(), Some(127));
    assert_eq!(dir.read("count").trim(), "1");
}

/// The retry event names in a text-format stderr (`herdless: NAME ...` lines).
fn text_events(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("herdless: "))
        .map(|l| l.split(' ').next().unwrap_or("").to_string())
        .collect()
}

/// `exec` of a command failing 3 times with status 9 (writing to stdout and
/// stderr each time), with `extra` flags and `env` variables.
fn failing_exec(extra: &[&str], env: &[(&str, &str)]) -> (Output, Scratch) {
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

#[test]
fn quiet_and_rust_log_filter_the_retry_events_not_the_results() {
    let scheduled_twice = [
        "retry_scheduled",
        "retry_scheduled",
        "retry_budget_exhausted",
    ];
    let (out, dir) = failing_exec(&[], &[]);
    assert_eq!(out.status.code(), Some(9));
    assert_eq!(text_events(&out.stderr), scheduled_twice, "{out:?}");
    assert_eq!(dir.read("count").trim(), "3");

    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)]);
    let silent: [Case<'_>; 5] = [
        (&["--quiet"], &[]),
        (&["-q"], &[]),
        (&[], &[("HERDLESS_QUIET", "true")]),
        (&[], &[("RUST_LOG", "off")]),
        (&["--log-format", "json"], &[("RUST_LOG", "off")]),
    ];
    for (flags, env) in silent {
        let (out, dir) = failing_exec(flags, env);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(9), "{flags:?} {env:?}");
        assert!(!stderr.contains("retry_"), "{flags:?} {env:?}: {stderr}");
        assert_eq!(dir.read("count").trim(), "3", "{flags:?} {env:?}");
        // The child's own output still flows.
        assert_eq!(String::from_utf8_lossy(&out.stdout), "out\nout\nout\n");
        assert_eq!(stderr.matches("child-err").count(), 3, "{stderr}");
    }

    // Levels: retry_scheduled is WARN, retry_budget_exhausted ERROR.
    let (out, _) = failing_exec(&[], &[("RUST_LOG", "herdless=error")]);
    assert_eq!(text_events(&out.stderr), ["retry_budget_exhausted"]);
    let (out, _) = failing_exec(&[], &[("RUST_LOG", "warn")]);
    assert_eq!(text_events(&out.stderr), scheduled_twice);
    // --quiet wins over RUST_LOG.
    let (out, _) = failing_exec(&["--quiet"], &[("RUST_LOG", "trace")]);
    assert!(text_events(&out.stderr).is_empty());

    // Errors are still printed under --quiet.
    let dir = Scratch::new();
    let mut c = dir.herdless();
    c.args(["exec", "--quiet", "--", "herdless-no-such-command"]);
    let out = run(c);
    assert_eq!(out.status.code(), Some(127));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("command not found"), "{stderr}");
    assert!(!stderr.contains("retry_"), "{stderr}");
}

#[test]
fn command_not_found_is_127_and_not_executable_is_126() {
    let dir = Scratch::new();
    let mut c = dir.herdless();
    c.args(["exec", "--base", "1ms", "--", "./no-such-command"]);
    let out = run(c);
    assert_eq!(out.status.code(), Some(127));
    assert!(String::from_utf8_lossy(&out.stderr).contains("command not found"));

    let plain = dir.write("plain.txt", "not a program\n");
    let mut c = dir.herdless();
    c.args(["exec", "--base", "1ms", "--"]).arg(&plain);
    assert_eq!(run(c).status.code(), Some(126));
}

/// Whether `pid` is gone: no such process, or a zombie waiting for a reaper
/// (dead: it runs no code and holds nothing but its process-table slot).
fn is_dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

/// Polls `is_dead` until `limit` (for processes that cannot be awaited).
fn dies_within(pid: i32, limit: Duration) -> bool {
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

#[test]
fn the_per_attempt_timeout_ends_a_child_ignoring_sigterm_and_its_grandchildren() {
    let dir = Scratch::new();
    // The child ignores TERM and starts a grandchild that ignores TERM too (the
    // ignored disposition survives exec) and records its pid. The grandchild does
    // not hold herdless's output pipes, so a survivor fails the test instead of
    // hanging it.
    let script = dir.write(
        "stubborn.sh",
        "trap '' TERM\n\
         n=$(cat count 2>/dev/null || echo 0); echo $((n+1)) > count\n\
         sh -c 'echo $$ >> grandchildren; exec sleep 1000' </dev/null >/dev/null 2>&1 &\n\
         wait\n",
    );
    let started = Instant::now();
    let mut c = dir.herdless();
    c.args([
        "exec",
        "--timeout",
        "300ms",
        "--kill-after",
        "300ms",
        "--base",
        "1ms",
        "--max-attempts",
        "2",
        "--log-format",
        "json",
        "--",
        "sh",
    ])
    .arg(&script);
    let out = run(c);
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(124), "{out:?}");
    // Two attempts: the timeout counts as a retryable failure.
    assert_eq!(dir.read("count").trim(), "2");
    let events = json_events(&out.stderr);
    assert_eq!(
        names(&events),
        ["retry_scheduled", "retry_budget_exhausted"]
    );
    assert_eq!(events[0]["timed_out"], true);
    let pids: Vec<i32> = dir
        .read("grandchildren")
        .lines()
        .map(|l| l.trim().parse().expect("a pid"))
        .collect();
    assert_eq!(pids.len(), 2, "one grandchild per attempt");
    // SIGKILL is sent before herdless exits, but a killed process that is not
    // herdless's child cannot be awaited, and on a loaded machine it may not have
    // been scheduled to die yet: allow it a generous 5 s (a survivor sleeps 1000 s).
    let survivors: Vec<i32> = pids
        .into_iter()
        .filter(|p| !dies_within(*p, Duration::from_secs(5)))
        .collect();
    for pid in &survivors {
        let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
    }
    assert!(
        survivors.is_empty(),
        "grandchildren {survivors:?} survived the timeout"
    );
    // 2 × (timeout + grace) plus process start-up; a generous bound.
    assert!(took >= Duration::from_millis(1200), "{took:?}");
    assert!(took < Duration::from_secs(30), "{took:?}");
}

#[test]
fn a_failed_attempts_leftovers_are_ended_before_the_retry() {
    let dir = Scratch::new();
    // Each attempt leaves a background process behind and fails.
    let script = dir.write(
        "leaky.sh",
        "sleep 1000 </dev/null >/dev/null 2>&1 &\n\
         echo $! >> leftovers\n\
         exit 1\n",
    );
    let started = Instant::now();
    let mut c = dir.herdless();
    c.args([
        "exec",
        "--base",
        "1ms",
        "--max-attempts",
        "2",
        "--kill-after",
        "20s",
        "--",
        "sh",
    ])
    .arg(&script);
    let out = run(c);
    assert_eq!(out.status.code(), Some(1));
    let pids: Vec<i32> = dir
        .read("leftovers")
        .lines()
        .map(|l| l.trim().parse().expect("a pid"))
        .collect();
    assert_eq!(pids.len(), 2);
    let survivors: Vec<i32> = pids
        .into_iter()
        .filter(|p| !dies_within(*p, Duration::from_secs(5)))
        .collect();
    for pid in &survivors {
        let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
    }
    assert!(survivors.is_empty(), "leftovers {survivors:?} survived");
    // They took SIGTERM: no need to sit out the 20 s grace.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_timed_out_group_whose_other_members_already_exited_does_not_wait_the_grace() {
    let dir = Scratch::new();
    // The short-lived subshell becomes a zombie member of the group once its
    // parent is gone; herdless adopts and reaps it instead of waiting 20 s for
    // the group to empty.
    let started = Instant::now();
    let mut c = dir.herdless();
    c.args([
        "exec",
        "--max-attempts",
        "1",
        "--timeout",
        "300ms",
        "--kill-after",
        "20s",
        "--",
        "sh",
        "-c",
        "(exit 0) & sleep 1000",
    ]);
    let out = run(c);
    assert_eq!(out.status.code(), Some(124));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

/// Starts herdless with piped stderr and returns it with a line reader.
fn spawn_with_events(
    mut c: Command,
) -> (std::process::Child, BufReader<std::process::ChildStderr>) {
    c.stderr(Stdio::piped()).stdout(Stdio::null());
    let mut child = c.spawn().expect("spawn herdless");
    let err = BufReader::new(child.stderr.take().expect("stderr"));
    (child, err)
}

/// Reads lines until one contains `needle`.
fn await_line(reader: &mut BufReader<std::process::ChildStderr>, needle: &str) -> String {
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

#[test]
fn sigterm_during_backoff_stops_at_once_with_143_and_no_further_attempt() {
    let dir = Scratch::new();
    let script = counting_script(&dir, "exit 1");
    let mut c = dir.herdless();
    // A 60 s backoff: herdless must not sit it out.
    c.args([
        "exec",
        "--jitter",
        "none",
        "--base",
        "60s",
        "--cap",
        "60s",
        "--log-format",
        "json",
        "--",
        "sh",
    ])
    .arg(&script);
    let (mut child, mut err) = spawn_with_events(c);
    // retry_scheduled is emitted just before the sleep starts.
    await_line(&mut err, "retry_scheduled");
    let sent = Instant::now();
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).expect("signal herdless");
    let status = child.wait().expect("wait herdless");
    assert_eq!(status.code(), Some(143));
    assert!(
        sent.elapsed() < Duration::from_secs(10),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(dir.read("count").trim(), "1", "no further attempt");
}

#[test]
fn sigterm_while_the_child_runs_is_forwarded_and_ends_the_retries() {
    let dir = Scratch::new();
    // The child reports readiness on stderr (inherited), then waits for TERM,
    // which it records before failing with a retryable status.
    let script = dir.write(
        "child.sh",
        "n=$(cat count 2>/dev/null || echo 0); echo $((n+1)) > count\n\
         trap 'echo term > got; exit 1' TERM\n\
         echo child-ready >&2\n\
         while :; do sleep 0.05; done\n",
    );
    let mut c = dir.herdless();
    c.args(["exec", "--base", "1ms", "--", "sh"]).arg(&script);
    let (mut child, mut err) = spawn_with_events(c);
    await_line(&mut err, "child-ready");
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).expect("signal herdless");
    let status = child.wait().expect("wait herdless");
    assert_eq!(status.code(), Some(143));
    assert_eq!(
        dir.read("got").trim(),
        "term",
        "the child received the signal"
    );
    assert_eq!(dir.read("count").trim(), "1", "no further attempt");
}

#[test]
fn piped_stdin_is_replayed_to_every_attempt() {
    let dir = Scratch::new();
    let script = counting_script(&dir, "cat >> seen; exit 1");
    let mut c = dir.herdless();
    c.args(["exec", "--base", "1ms", "--max-attempts", "3", "--", "sh"])
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    {
        use std::io::Write;
        let mut input = child.stdin.take().unwrap();
        input.write_all(b"line\n").unwrap();
    }
    assert_eq!(child.wait().unwrap().code(), Some(1));
    assert_eq!(dir.read("seen"), "line\nline\nline\n");
}

fn exec_with_policy(dir: &Scratch, policy: &str, extra: &[&str]) -> Output {
    let mut c = dir.herdless();
    c.args(["exec", "--config", "herdless.toml", "--policy", policy])
        .args(extra)
        .args(["--", "true"]);
    run(c)
}

#[test]
fn bad_policy_files_name_the_file_line_and_key() {
    let dir = Scratch::new();
    dir.write(
        "herdless.toml",
        "[policy.ok]\nbase = \"1ms\"\n\n[policy.typo]\nbase = \"1ms\"\ncapp = \"30s\"\n",
    );
    let out = exec_with_policy(&dir, "ok", &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(
        err.contains("herdless.toml:6: policy.typo.capp: unknown key"),
        "{err}"
    );

    dir.write("herdless.toml", "[policy.p]\ncap = \"half a minute\"\n");
    let out = exec_with_policy(&dir, "p", &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("herdless.toml:2: policy.p.cap: "), "{err}");

    // Valid keys, invalid combination: the line of the key responsible.
    dir.write(
        "herdless.toml",
        "[policy.p]\nbase = \"10s\"\n\ncap = \"1s\"\n",
    );
    let out = exec_with_policy(&dir, "p", &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("herdless.toml:4: policy.p.cap: invalid cap"),
        "{err}"
    );

    let out = exec_with_policy(&dir, "missing", &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("policy.missing: no such policy (the file defines: p)"),
        "{err}"
    );
}

#[test]
fn layers_file_then_env_then_flags() {
    let dir = Scratch::new();
    let script = counting_script(&dir, "exit 1");
    dir.write(
        "herdless.toml",
        "[policy.default]\nbase = \"1ms\"\ncap = \"2ms\"\nmax_attempts = 4\n",
    );
    let attempts = |env: Option<&str>, flag: Option<&str>| {
        let _ = std::fs::remove_file(dir.path("count"));
        let mut c = dir.herdless();
        c.arg("exec");
        if let Some(f) = flag {
            c.args(["--max-attempts", f]);
        }
        if let Some(e) = env {
            c.env("HERDLESS_MAX_ATTEMPTS", e);
        }
        c.args(["--", "sh"]).arg(&script);
        assert_eq!(run(c).status.code(), Some(1));
        dir.read("count").trim().to_string()
    };
    assert_eq!(
        attempts(None, None),
        "4",
        "./herdless.toml's [policy.default]"
    );
    assert_eq!(attempts(Some("3"), None), "3", "env over file");
    assert_eq!(attempts(Some("3"), Some("2")), "2", "flag over env");
}

#[test]
fn usage_errors_exit_125() {
    let dir = Scratch::new();
    for args in [
        &["exec", "--no-such-flag", "--", "true"][..],
        &["exec", "--retry-on", "1,127", "--", "true"],
        &[
            "exec",
            "--retry-on",
            "5",
            "--terminal-on",
            "5",
            "--",
            "true",
        ],
        &["exec", "--cap", "soon", "--", "true"],
        &["exec", "--policy", "nightly", "--", "true"],
        &["exec"],
    ] {
        let mut c = dir.herdless();
        c.args(args);
        let out = run(c);
        assert_eq!(out.status.code(), Some(125), "{args:?}: {out:?}");
    }
    // An invalid variable is named, not only the flag it feeds.
    let mut c = dir.herdless();
    c.env("HERDLESS_CAP", "soon").args(["exec", "--", "true"]);
    let out = run(c);
    assert_eq!(out.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&out.stderr).contains("HERDLESS_CAP"));
}

#[test]
fn a_terminal_on_stdin_reaches_every_attempt() {
    // util-linux `script` (Debian's essential bsdutils) runs herdless on a
    // pseudo-terminal fed from our pipe. The child runs in its own process group;
    // without the terminal's foreground it would be stopped by SIGTTIN on its
    // first read, and the attempt would time out instead of reading a line.
    let dir = Scratch::new();
    let inner = format!(
        "{BIN} exec --timeout 5s --max-attempts 2 --base 1ms -- sh -c 'read x; echo got:$x; exit 1'"
    );
    let mut c = Command::new("script");
    c.current_dir(dir.0.path())
        .env("XDG_CONFIG_HOME", dir.path("no-config"))
        .args(["-qec", &inner, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for v in VARS {
        c.env_remove(v);
    }
    let mut child = c.spawn().expect("util-linux script");
    {
        use std::io::Write;
        let mut input = child.stdin.take().unwrap();
        input.write_all(b"first\nsecond\n").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("got:first"), "{text}");
    assert!(text.contains("got:second"), "{text}");
    assert_eq!(out.status.code(), Some(1), "{text}");
}

#[test]
fn a_file_on_stdin_is_rewound_for_every_attempt_and_first_passes_a_pipe_once() {
    let dir = Scratch::new();
    let input = dir.write("input.txt", "from-file\n");
    let script = counting_script(&dir, "cat >> seen; exit 1");
    let mut c = dir.herdless();
    c.args(["exec", "--base", "1ms", "--max-attempts", "3", "--", "sh"])
        .arg(&script)
        .stdin(std::fs::File::open(&input).unwrap());
    assert_eq!(run(c).status.code(), Some(1));
    assert_eq!(dir.read("seen"), "from-file\n".repeat(3));

    std::fs::remove_file(dir.path("seen")).unwrap();
    let mut c = dir.herdless();
    c.args([
        "exec",
        "--stdin",
        "first",
        "--base",
        "1ms",
        "--max-attempts",
        "3",
        "--",
        "sh",
    ])
    .arg(&script)
    .stdin(Stdio::piped())
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b"once\n").unwrap();
    }
    assert_eq!(child.wait().unwrap().code(), Some(1));
    assert_eq!(dir.read("seen"), "once\n", "later attempts read /dev/null");
}

/// At any descriptor limit, herdless fails with a clear message (or works):
/// never a panic (exit 101), whether the runtime, the signal handlers, stdin
/// or the child cannot get a descriptor.
#[test]
fn no_panic_at_small_descriptor_limits() {
    let dir = Scratch::new();
    for limit in 3..=10 {
        for args in [
            &["exec", "--", "true"][..],
            &[
                "exec",
                "--max-attempts",
                "2",
                "--base",
                "1ms",
                "--",
                "sh",
                "-c",
                "exit 1",
            ],
            &["get", "--max-attempts", "1", "http://127.0.0.1:1/"],
            &[
                "fleet",
                "--workers",
                "2",
                "--max-attempts",
                "1",
                "http://127.0.0.1:1/",
            ],
        ] {
            let mut c = dir.herdless_limited(limit);
            c.args(args);
            let out = run(c);
            let stderr = String::from_utf8_lossy(&out.stderr);
            let code = out.status.code();
            assert_ne!(code, Some(101), "ulimit -n {limit}: {args:?}: {stderr}");
            assert!(
                !stderr.contains("panicked"),
                "ulimit -n {limit}: {args:?}: {stderr}"
            );
            if stderr.contains("error while loading shared libraries") {
                continue; // the dynamic loader, before herdless runs at all
            }
            if code != Some(0) && args[0] == "exec" && args[2] == "true" {
                // A clear one-line error from herdless itself.
                assert_eq!(code, Some(125), "ulimit -n {limit}: {stderr}");
                assert!(stderr.starts_with("herdless exec: "), "{stderr}");
                assert_eq!(stderr.lines().count(), 1, "{stderr}");
            }
        }
    }
}

/// A child killed by SIGPIPE (its reader went away: `exec -- yes | head -1`),
/// or a shell exiting 141, is not retried by default; `--retry-on 141` retries it.
#[test]
fn death_by_sigpipe_is_terminal_unless_retry_on_lists_it() {
    let dir = Scratch::new();
    for script in ["kill -PIPE $$", "exit 141"] {
        let mut c = dir.herdless();
        c.args(["exec", "--base", "1ms", "--log-format", "json", "--"])
            .args(["sh", "-c", script]);
        let out = run(c);
        assert_eq!(out.status.code(), Some(141), "{script}: {out:?}");
        assert_eq!(
            names(&json_events(&out.stderr)),
            ["retry_abandoned_terminal"],
            "{script}"
        );
        let mut c = dir.herdless();
        c.args(["exec", "--base", "1ms", "--max-attempts", "2"])
            .args(["--retry-on", "141", "--log-format", "json", "--"])
            .args(["sh", "-c", script]);
        let out = run(c);
        assert_eq!(
            names(&json_events(&out.stderr)),
            ["retry_scheduled", "retry_budget_exhausted"],
            "{script}"
        );
    }
    // The pipeline itself: one attempt, done at once.
    let mut c = dir.herdless();
    c.args([
        "exec",
        "--base",
        "100ms",
        "--log-format",
        "json",
        "--",
        "yes",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "y\n");
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(141));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        names(&json_events(&out.stderr)),
        ["retry_abandoned_terminal"]
    );
}

/// `--retry-on 1-255` is accepted: 126 and 127 are left out (never retried),
/// with a note on stderr; a list of nothing but them is still refused. A flag
/// that conflicts with the file names both.
#[test]
fn a_retry_on_range_spanning_126_127_leaves_them_out_with_a_note() {
    let dir = Scratch::new();
    let mut c = dir.herdless();
    c.args([
        "exec",
        "--retry-on",
        "1-255",
        "--base",
        "1ms",
        "--max-attempts",
        "2",
    ])
    .args(["--log-format", "json", "--", "sh", "-c", "exit 127"]);
    let out = run(c);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "{stderr}");
    assert!(
        stderr.starts_with(
            "herdless exec: note: --retry-on: 126-127 left out (never retried: 126 not \
             executable, 127 not found)"
        ),
        "{stderr}"
    );
    assert_eq!(
        names(&json_events(&out.stderr)),
        ["retry_abandoned_terminal"]
    );
    let mut c = dir.herdless();
    c.args(["exec", "--retry-on", "126", "--", "true"]);
    let out = run(c);
    assert_eq!(out.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--retry-on: 126 can never be retried"));
    dir.write("herdless.toml", "[policy.default]\nterminal_on = \"75\"\n");
    let mut c = dir.herdless();
    c.args(["exec", "--retry-on", "75", "--", "true"]);
    let out = run(c);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "herdless exec: --retry-on and herdless.toml:2 (policy.default.terminal_on) both list 75"
    );
}

/// Errors say what actually failed: a `--config` that is a directory, a
/// symlink loop or a device is not "no such policy file", and a replay file
/// that cannot be created is not "cannot read stdin".
#[test]
fn errors_name_what_actually_failed() {
    let dir = Scratch::new();
    std::fs::create_dir(dir.path("conf.d")).unwrap();
    std::os::unix::fs::symlink(dir.path("loop"), dir.path("loop")).unwrap();
    for (config, expected) in [
        ("conf.d", "is a directory"),
        ("loop", "cannot read the policy file"),
        ("/dev/null", "is not a regular file"),
        ("missing.toml", "no such policy file"),
    ] {
        let mut c = dir.herdless();
        c.args(["exec", "--config", config, "--", "true"]);
        let out = run(c);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{config}: {stderr}");
        assert!(stderr.contains(expected), "{config}: {stderr}");
        if config != "missing.toml" {
            assert!(
                !stderr.contains("no such policy file"),
                "{config}: {stderr}"
            );
        }
    }
    let mut c = dir.herdless();
    c.env("TMPDIR", "/nonexistent")
        .args(["exec", "--", "cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(b"data\n");
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(
        stderr.starts_with(
            "herdless exec: cannot create the file that replays stdin to every attempt in \
             /nonexistent"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("cannot read stdin"), "{stderr}");
}

/// A second SIGTERM escalates: a child that ignores the forwarded SIGTERM is
/// killed (SIGKILL to its group), and herdless exits 143 without waiting for
/// the grace period.
#[test]
fn a_second_sigterm_kills_a_child_that_ignores_the_first() {
    let dir = Scratch::new();
    let script = dir.write(
        "child.sh",
        "trap 'echo got-term >&2' TERM\necho child-ready >&2\nwhile :; do sleep 0.05; done\n",
    );
    let mut c = dir.herdless();
    c.args(["exec", "--base", "1ms", "--kill-after", "60s", "--", "sh"])
        .arg(&script);
    let (mut child, mut err) = spawn_with_events(c);
    await_line(&mut err, "child-ready");
    let herdless = Pid::from_raw(child.id() as i32);
    kill(herdless, Signal::SIGTERM).expect("signal herdless");
    await_line(&mut err, "got-term");
    let started = Instant::now();
    kill(herdless, Signal::SIGTERM).expect("signal herdless again");
    let status = child.wait().expect("wait herdless");
    assert_eq!(status.code(), Some(143));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}
