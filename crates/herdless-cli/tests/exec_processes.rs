//! `herdless exec` end to end: per-attempt timeouts, process groups, signals,
//! stdin replay and descriptor limits (the real binary, real processes, real signals).
//!
//! Nothing here sleeps to wait for something: readiness is read from the child's
//! or herdless's own output (a pipe), and the only timing bounds are generous
//! upper bounds on things that should be near-instant.

#[allow(dead_code)] // each test binary uses part of it
mod exec_support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use exec_support::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

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
fn the_policy_files_attempt_timeout_bounds_each_attempt_without_a_timeout() {
    let dir = Scratch::new();
    dir.write(
        "herdless.toml",
        "[policy.default]\n\
         attempt_timeout = \"300ms\"\n\
         kill_after = \"300ms\"\n\
         base = \"1ms\"\n\
         cap = \"1ms\"\n\
         max_attempts = 2\n",
    );
    let script = dir.write(
        "hang.sh",
        "n=$(cat count 2>/dev/null || echo 0); echo $((n+1)) > count\nsleep 12\nexit 1\n",
    );
    let started = Instant::now();
    let mut c = dir.herdless();
    c.args(["exec", "--log-format", "json", "--", "sh"])
        .arg(&script);
    let out = run(c);
    let took = started.elapsed();
    // Without `--timeout` or a `timeout` key, `attempt_timeout` ends each
    // attempt's process group: two timed-out attempts, exit 124.
    assert_eq!(out.status.code(), Some(124), "{out:?}");
    assert_eq!(dir.read("count").trim(), "2");
    let events = json_events(&out.stderr);
    assert_eq!(
        names(&events),
        ["retry_scheduled", "retry_budget_exhausted"]
    );
    assert!(events.iter().all(|e| e["timed_out"] == true), "{events:?}");
    assert!(took >= Duration::from_millis(600), "{took:?}");
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
