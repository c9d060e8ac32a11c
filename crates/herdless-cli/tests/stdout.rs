//! A stdout that cannot be written never panics: a closed pipe
//! (`herdless simulate | true`) ends the command quietly with exit 1, a full
//! device (`> /dev/full`) prints one line on stderr and exits 1. Covers
//! `simulate`, `check` (text and JSON) and `fleet`.

use std::path::Path;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_herdless");

/// The subcommands under test: each writes a report to stdout and, with a
/// writable stdout, exits with `ok_code`.
fn cases() -> Vec<(&'static str, Vec<&'static str>, i32)> {
    vec![
        (
            "simulate",
            vec![
                "simulate",
                "--no-plots",
                "--clients",
                "200",
                "--jitter",
                "full",
            ],
            0,
        ),
        (
            "simulate --json",
            vec!["simulate", "--json", "--clients", "200", "--jitter", "full"],
            0,
        ),
        ("check", vec!["check"], 0),
        ("check --format json", vec!["check", "--format", "json"], 0),
        // Nothing listens on port 1: every worker's one attempt fails and
        // the budget is exhausted (exit 4), and the report is printed.
        (
            "fleet",
            vec![
                "fleet",
                "--workers",
                "50",
                "--max-attempts",
                "1",
                "http://127.0.0.1:1/",
            ],
            4,
        ),
        (
            "fleet --json",
            vec![
                "fleet",
                "--workers",
                "50",
                "--max-attempts",
                "1",
                "--json",
                "http://127.0.0.1:1/",
            ],
            4,
        ),
    ]
}

fn herdless(dir: &Path, args: &[&str], stdout: Stdio) -> Output {
    let mut c = Command::new(BIN);
    c.current_dir(dir)
        .env("XDG_CONFIG_HOME", dir.join("no-config"))
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("HERDLESS_") {
            c.env_remove(k);
        }
    }
    c.output().unwrap()
}

/// A stream whose reading end is already closed: every write fails with
/// EPIPE, as into `| true` once `true` has exited.
fn closed_pipe() -> Stdio {
    let (writer, reader) = std::os::unix::net::UnixStream::pair().unwrap();
    drop(reader);
    std::os::fd::OwnedFd::from(writer).into()
}

#[test]
fn a_closed_stdout_ends_quietly_with_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    for (name, args, ok_code) in cases() {
        let ok = herdless(dir.path(), &args, Stdio::piped());
        assert_eq!(ok.status.code(), Some(ok_code), "{name}: {ok:?}");
        assert!(!ok.stdout.is_empty(), "{name} prints a report");
        let out = herdless(dir.path(), &args, closed_pipe());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(
            !stderr.contains("stdout"),
            "{name}: a closed pipe is quiet: {stderr}"
        );
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_full_stdout_is_one_line_on_stderr_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    for (name, args, _) in cases() {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = herdless(dir.path(), &args, full.into());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        // fleet's retry events are on stderr too; the rest is one line.
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|l| !l.starts_with("herdless: retry_"))
            .collect();
        assert_eq!(lines.len(), 1, "{name}: {stderr}");
        assert!(
            lines[0].contains("cannot write to stdout"),
            "{name}: {stderr}"
        );
    }
}
