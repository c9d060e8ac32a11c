//! `herdless exec` end to end: retries, classification of exit statuses,
//! events, configuration layers and usage errors (the real binary, real processes).
//!
//! Nothing here sleeps to wait for something: readiness is read from the child's
//! or herdless's own output (a pipe), and the only timing bounds are generous
//! upper bounds on things that should be near-instant.

#[allow(dead_code)] // each test binary uses part of it
mod exec_support;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use exec_support::*;

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
