//! Hostile command lines and environments, through the built binary: bytes
//! that are not UTF-8 in an argument or a variable, empty `HERDLESS_*`
//! variables. Each gets a clear error naming what held it (or, where a path
//! or a command argument is meant, is passed on as is), never a panic.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::process::{Command, Output};

/// `\xff`: never valid UTF-8.
fn bad() -> OsString {
    OsString::from_vec(vec![b'x', 0xff])
}

/// Runs herdless with `args`, `env` added, in a temporary directory (no
/// policy file found by accident), stdin empty.
fn run(args: &[&OsStr], env: &[(&str, &OsStr)]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_herdless"));
    cmd.args(args)
        .current_dir(dir.path())
        .env("XDG_CONFIG_HOME", dir.path())
        .env_remove("RUST_BACKTRACE")
        .stdin(std::process::Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Every subcommand with its required arguments, the usage exit code it
/// promises, and a flag of it that takes text.
fn subcommands() -> Vec<(&'static str, Vec<&'static str>, i32, &'static str)> {
    vec![
        ("simulate", vec![], 2, "--scenario"),
        ("exec", vec![], 125, "--task-id"),
        ("check", vec![], 2, "--policy"),
        ("get", vec!["http://127.0.0.1:9/"], 2, "--task-id"),
        ("stub", vec![], 2, "--retry-after"),
        (
            "fleet",
            vec!["--workers", "1", "http://127.0.0.1:9/"],
            2,
            "--task-id",
        ),
        (
            "worker",
            vec![
                "--nats",
                "nats://127.0.0.1:9",
                "--consumer",
                "c",
                "--stream",
                "s",
            ],
            2,
            "--dead-letter",
        ),
    ]
}

/// The tail every subcommand's command line ends with: `exec` and `worker`
/// need a command.
fn tail(sub: &str) -> Vec<OsString> {
    match sub {
        "exec" | "worker" => os(&["--", "true"]),
        _ => Vec::new(),
    }
}

/// A flag's value that is not UTF-8: a usage error (125 for exec) naming the
/// flag, for every subcommand; never exit 101.
#[test]
fn a_value_that_is_not_utf8_is_a_usage_error_naming_its_flag() {
    for (sub, required, usage, flag) in subcommands() {
        for form in ["separate", "joined"] {
            let mut args = os(&[sub]);
            args.extend(os(&required));
            if form == "separate" {
                args.push(flag.into());
                args.push(bad());
            } else {
                let mut joined = OsString::from(format!("{flag}="));
                joined.push(bad());
                args.push(joined);
            }
            args.extend(tail(sub));
            let argv: Vec<&OsStr> = args.iter().map(OsString::as_os_str).collect();
            let out = run(&argv, &[]);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(usage), "{sub} {form}: {err}");
            assert!(!err.contains("panicked"), "{sub}: {err}");
            let want = format!("herdless: the value of {flag} is not valid UTF-8: \"x\\xFF\"");
            assert!(err.contains(&want), "{sub} {form}: {err}");
        }
    }
}

/// A positional argument that is not UTF-8 (a URL): named by its place.
#[test]
fn a_positional_argument_that_is_not_utf8_is_named_by_its_place() {
    let b = bad();
    let out = run(
        &[OsStr::new("get"), OsStr::new("--idempotency-key"), &b],
        &[],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("herdless: argument 3 is not valid UTF-8: \"x\\xFF\""),
        "{err}"
    );
}

/// A `HERDLESS_*` variable that is not UTF-8 is named; an unrelated one
/// does not matter, neither to a run nor to a usage error's message (which
/// reads the environment to say where a bad value came from).
#[test]
fn variables_that_are_not_utf8() {
    let b = bad();
    for (sub, required, usage, _) in subcommands() {
        // Unrelated, with a bogus flag: the usage error, no panic.
        let mut args = os(&[sub]);
        args.extend(os(&required));
        args.push("--bogus".into());
        args.extend(tail(sub));
        let argv: Vec<&OsStr> = args.iter().map(OsString::as_os_str).collect();
        let out = run(&argv, &[("X", &b)]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(usage), "{sub}: {err}");
        assert!(
            err.contains("unexpected argument '--bogus'"),
            "{sub}: {err}"
        );
        assert!(!err.contains("panicked"), "{sub}: {err}");
        // A variable clap reads for a text flag: named. (simulate and stub
        // take no --task-id: the variable is not theirs, and stub would
        // start serving.)
        if sub == "simulate" || sub == "stub" {
            continue;
        }
        let mut args = os(&[sub]);
        args.extend(os(&required));
        args.extend(tail(sub));
        let argv: Vec<&OsStr> = args.iter().map(OsString::as_os_str).collect();
        let out = run(&argv, &[("HERDLESS_TASK_ID", &b)]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(usage), "{sub}: {err}");
        assert!(
            err.contains("herdless: the environment variable HERDLESS_TASK_ID is not valid UTF-8"),
            "{sub}: {err}"
        );
    }
    // Unrelated, in runs that succeed.
    let ok = |args: &[&str]| {
        let args = os(args);
        let argv: Vec<&OsStr> = args.iter().map(OsString::as_os_str).collect();
        run(&argv, &[("X", &b)])
    };
    for args in [
        &["check"][..],
        &["exec", "--", "true"],
        &[
            "simulate",
            "--scenario",
            "spread",
            "--workers",
            "10",
            "--no-plots",
        ],
    ] {
        let out = ok(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    }
}

/// `exec -- CMD ARGS`: the command's arguments are passed on byte for byte.
#[test]
fn exec_passes_bytes_that_are_not_utf8_to_the_command() {
    let b = bad();
    let out = run(
        &[
            OsStr::new("exec"),
            OsStr::new("--"),
            OsStr::new("printf"),
            OsStr::new("%s"),
            &b,
        ],
        &[("X", &b)],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        out.stdout,
        b.as_bytes(),
        "the exact bytes reached the child"
    );
    // Also when a policy error reads the whole command line to say where
    // each value came from (here: --base is not on it, HERDLESS_BASE is).
    let out = run(
        &[
            OsStr::new("exec"),
            OsStr::new("--cap"),
            OsStr::new("1s"),
            OsStr::new("--"),
            OsStr::new("printf"),
            &b,
        ],
        &[("HERDLESS_BASE", OsStr::new("10s"))],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(
        err.contains("invalid cap: 1s is below base 10s (cap from --cap; base from HERDLESS_BASE)"),
        "{err}"
    );
}

/// A path may be any bytes: `--config` takes it as the OS gives it.
#[test]
fn a_path_that_is_not_utf8_is_taken_as_a_path() {
    let mut path = OsString::from("/nonexistent/");
    path.push(bad());
    let out = run(&[OsStr::new("check"), OsStr::new("--config"), &path], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no such policy file"), "{err}");
}

/// An empty `HERDLESS_*` variable is the same as an unset one (a script's
/// `HERDLESS_QUIET=` was a usage error).
#[test]
fn an_empty_variable_is_unset() {
    let empty = OsStr::new("");
    for var in [
        "HERDLESS_QUIET",
        "HERDLESS_BASE",
        "HERDLESS_JITTER",
        "HERDLESS_SEED",
    ] {
        let out = run(
            &[
                OsStr::new("exec"),
                OsStr::new("--max-attempts"),
                OsStr::new("2"),
                OsStr::new("--base"),
                OsStr::new("1ms"),
                OsStr::new("--"),
                OsStr::new("false"),
            ],
            &[(var, empty)],
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{var}: {err}");
        assert!(
            err.contains("retry_scheduled"),
            "{var}: events as without it: {err}"
        );
    }
    // Also for check (the full parser) and with the flag given.
    let out = run(
        &[OsStr::new("check"), OsStr::new("--base"), OsStr::new("1s")],
        &[("HERDLESS_BASE", empty), ("HERDLESS_QUIET", empty)],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // HERDLESS_QUIET=true still silences, and a value that is neither is
    // refused naming the variable.
    let quiet = run(
        &[
            OsStr::new("exec"),
            OsStr::new("--max-attempts"),
            OsStr::new("2"),
            OsStr::new("--base"),
            OsStr::new("1ms"),
            OsStr::new("--"),
            OsStr::new("false"),
        ],
        &[("HERDLESS_QUIET", OsStr::new("true"))],
    );
    assert!(
        !stderr(&quiet).contains("retry_scheduled"),
        "{}",
        stderr(&quiet)
    );
    let out = run(
        &[OsStr::new("check")],
        &[("HERDLESS_QUIET", OsStr::new("maybe"))],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("HERDLESS_QUIET"), "{err}");
}
