//! `herdless check` end to end: policy files in, envelope and verdicts out.

use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_herdless");

fn check(dir: &tempfile::TempDir, file: &str, args: &[&str]) -> Output {
    std::fs::write(dir.path().join("herdless.toml"), file).unwrap();
    let mut c = Command::new(BIN);
    c.current_dir(dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("no-config"))
        .stdin(Stdio::null())
        .arg("check")
        .args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("HERDLESS_") {
            c.env_remove(k);
        }
    }
    c.output().unwrap()
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).expect("one JSON object on stdout")
}

fn level<'a>(report: &'a serde_json::Value, check: &str) -> &'a str {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == check)
        .and_then(|c| c["level"].as_str())
        .unwrap()
}

const INGEST: &str = r#"
[policy.ingest]
base = "500ms"
cap = "1m"
max_elapsed = "10m"
max_retry_after = "30s"
visibility_timeout = "5m"
"#;

#[test]
fn check_fails_a_max_elapsed_longer_than_the_visibility_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let out = check(&dir, INGEST, &["--policy", "ingest"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("error visibility_timeout: worst case 10m"),
        "{text}"
    );
    assert!(text.contains("80% of visibility_timeout 5m = 4m"), "{text}");
    assert!(text.trim_end().ends_with("FAILED"), "{text}");

    let out = check(&dir, INGEST, &["--policy", "ingest", "--format", "json"]);
    let report = json(&out);
    assert_eq!(level(&report, "visibility_timeout"), "error");
    assert_eq!(report["passed"], false);

    // Comfortably inside (at most 80 %): passes. A flag overrides the file.
    let out = check(&dir, INGEST, &["--policy", "ingest", "--max-elapsed", "4m"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Inside but not comfortably: fails.
    let out = check(
        &dir,
        INGEST,
        &["--policy", "ingest", "--max-elapsed", "4m30s"],
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn with_redelivery_the_visibility_check_applies_to_one_attempt() {
    let dir = tempfile::tempdir().unwrap();
    // The ten-minute chain fails against the 5 m visibility timeout; with
    // redelivery only one attempt (2 m + 10 s kill grace) must fit.
    let args = ["--policy", "ingest", "--redelivery", "--timeout", "2m"];
    let out = check(&dir, INGEST, &args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("covers one attempt, not the chain"), "{text}");
    assert!(text.contains("worst case 2m 10s (one attempt"), "{text}");
    let out = check(
        &dir,
        INGEST,
        &["--policy", "ingest", "--redelivery", "--timeout", "4m"],
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn check_prints_the_envelope_per_retry() {
    let dir = tempfile::tempdir().unwrap();
    let file = "[policy.cron]\njitter = \"equal\"\nbase = \"1s\"\ncap = \"4s\"\nmax_attempts = 5\n";
    let out = check(&dir, file, &["--policy", "cron", "--format", "json"]);
    let report = json(&out);
    let rows = report["envelope"].as_array().unwrap();
    let col = |k: &str| {
        rows.iter()
            .map(|r| r[k].as_f64().unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(col("retry"), [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(col("ceiling_s"), [1.0, 2.0, 4.0, 4.0]);
    assert_eq!(col("median_s"), [0.75, 1.5, 3.0, 3.0]);
    assert_eq!(col("cumulative_worst_s"), [1.0, 3.0, 7.0, 11.0]);
    assert_eq!(report["worst_case_sleep_s"], 11.0);
}

#[test]
fn check_warns_on_the_other_gotchas_and_strict_fails_on_warnings() {
    let dir = tempfile::tempdir().unwrap();
    // Ten attempts: the chain can sleep 120 s, past the recovery, but no single
    // backoff reaches past it.
    let file = "[policy.scanner]\ncap = \"30s\"\nmax_attempts = 10\nrecovery_time = \"45s\"\n";
    let out = check(&dir, file, &["--policy", "scanner", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "warnings alone pass");
    let report = json(&out);
    assert_eq!(level(&report, "recovery_time"), "warn");
    assert_eq!(level(&report, "max_retry_after"), "warn");
    let out = check(&dir, file, &["--policy", "scanner", "--strict"]);
    assert_eq!(out.status.code(), Some(1));
}

/// A cap that covers one recovery is not enough: the retries must still be
/// going when the shared device is back. The whole chain's worst-case sleep
/// (the sum of its ceilings, bounded by max_elapsed) must reach recovery_time.
#[test]
fn check_fails_a_chain_that_gives_up_before_the_recovery_time() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("empty.toml"), "").unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["--config", "empty.toml", "--max-retry-after", "30s"];
        args.extend_from_slice(extra);
        let out = check(&dir, "", &args);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (out.status.code(), text)
    };

    // Defaults: 5 retries sleep at most 0.5 + 1 + 2 + 4 + 8 = 15.5 s.
    let (code, text) = run(&["--recovery-time", "20s"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("worst case: 15.5 s of sleep"), "{text}");
    assert!(text.contains("error recovery_time:"), "{text}");
    assert!(text.contains("max_attempts to 7"), "names the knob: {text}");
    assert!(!text.contains("covers recovery_time"), "{text}");
    assert!(text.trim_end().ends_with("FAILED"), "{text}");

    // Three attempts of a 1 s base: at most 1 + 2 = 3 s, whatever the 2m cap.
    let (code, text) = run(&[
        "--base",
        "1s",
        "--max-attempts",
        "3",
        "--cap",
        "2m",
        "--recovery-time",
        "90s",
    ]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("error recovery_time:"), "{text}");
    assert!(text.contains("at most 3 s"), "{text}");

    // A budget shorter than the recovery: every call gives up first.
    let (code, text) = run(&[
        "--max-attempts",
        "20",
        "--max-elapsed",
        "60s",
        "--recovery-time",
        "90s",
    ]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("raise max_elapsed"), "{text}");

    // Turning the named knob passes; JSON keeps the check's name.
    let (code, text) = run(&["--recovery-time", "20s", "--max-attempts", "7"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("ok    recovery_time: cap 30 s covers recovery_time 20 s"),
        "{text}"
    );
    let out = check(
        &dir,
        "",
        &[
            "--config",
            "empty.toml",
            "--recovery-time",
            "20s",
            "--format",
            "json",
        ],
    );
    let report = json(&out);
    assert_eq!(level(&report, "recovery_time"), "error");
    assert_eq!(report["passed"], false);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn check_reports_bad_files_with_usage_status() {
    let dir = tempfile::tempdir().unwrap();
    let out = check(
        &dir,
        "[policy.p]\nvisibility_timeout = true\n",
        &["--policy", "p"],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("herdless.toml:2: policy.p.visibility_timeout: expected a duration"),
        "{err}"
    );
}

/// A policy the file does not define, in a file of 20,000: the error names
/// the closest few, not every name (it was 160 KB).
#[test]
fn a_missing_policy_among_thousands_names_the_closest_few() {
    let dir = tempfile::tempdir().unwrap();
    let file: String = (0..20_000)
        .map(|i| format!("[policy.svc-{i}]\nbase = \"1s\"\n"))
        .collect();
    let out = check(&dir, &file, &["--policy", "svc-1234x"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.len() < 500, "{} bytes: {err}", err.len());
    assert!(
        err.contains("no such policy (the file defines 20000; the closest: svc-1234, "),
        "{err}"
    );
    // A few names are all listed.
    let out = check(&dir, "[policy.a]\n[policy.b]\n", &["--policy", "c"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no such policy (the file defines: a, b)"),
        "{err}"
    );
}

/// The README's example policy file parses and passes as the README says.
#[test]
fn the_readme_example_file_checks_as_documented() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let section = readme
        .split("## Policy files")
        .nth(1)
        .expect("a policy-file section");
    let toml = section
        .split("```toml\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("a toml block");
    let dir = tempfile::tempdir().unwrap();
    for policy in ["nightly-mount", "ingest"] {
        let out = check(
            &dir,
            toml,
            &["--policy", policy, "--strict", "--format", "json"],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{policy}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let out = check(&dir, toml, &["--policy", "ingest", "--max-elapsed", "10m"]);
    assert_eq!(out.status.code(), Some(1));
}

/// A cap in the file below a base from a flag or a variable: the error names
/// the flag (or the variable) that introduced the conflict, and the file's cap
/// line beside it, instead of blaming the file alone.
#[test]
fn a_conflict_introduced_by_a_flag_or_variable_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = "[policy.default]\ncap = \"1s\"\n";
    let out = check(&dir, file, &["--base", "10s"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "herdless check: invalid cap: 1s is below base 10s \
         (base from --base; cap from herdless.toml:2 (policy.default.cap))"
    );
    let mut c = Command::new(BIN);
    std::fs::write(dir.path().join("herdless.toml"), file).unwrap();
    c.current_dir(dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("no-config"))
        .env("HERDLESS_BASE", "10s")
        .arg("check");
    let out = c.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("(base from HERDLESS_BASE; cap from herdless.toml:2 (policy.default.cap))"),
        "{stderr}"
    );
    // Both sides in the file: the file's line and key, as documented.
    let out = check(
        &dir,
        "[policy.default]\nbase = \"10s\"\ncap = \"1s\"\n",
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("herdless check: herdless.toml:3: policy.default.cap: invalid cap"),
        "{stderr}"
    );
}

/// `check` refuses the policy files `exec` refuses, and both name the file,
/// line and key; a range that spans 126-127 is accepted without them.
#[test]
fn check_and_exec_refuse_the_same_exec_keys_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "retry_on = \"126\"",
            "herdless.toml:3: policy.a.retry_on: 126 can never be retried",
        ),
        (
            "retry_on = \"0\"",
            "herdless.toml:3: policy.a.retry_on: 0 is success",
        ),
        (
            "retry_on = \"75\"\nterminal_on = \"75\"",
            "herdless.toml:4: policy.a.terminal_on: retry_on (line 3) and terminal_on both list 75",
        ),
        (
            "timeout = \"0s\"",
            "herdless.toml:3: policy.a.timeout: must be greater than zero",
        ),
    ];
    for (keys, expected) in cases {
        let file = format!("[policy.a]\nbase = \"1ms\"\n{keys}\n");
        for args in [&["--policy", "a"][..], &["--policy", "a", "--exec"]] {
            let out = check(&dir, &file, args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{keys} {args:?}: {stderr}");
            assert!(
                stderr.starts_with(&format!("herdless check: {expected}")),
                "{keys}: {stderr}"
            );
        }
        let mut c = Command::new(BIN);
        c.current_dir(dir.path())
            .env("XDG_CONFIG_HOME", dir.path().join("no-config"))
            .stdin(Stdio::null())
            .args(["exec", "--policy", "a", "--", "true"]);
        let out = c.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{keys}: {stderr}");
        assert!(
            stderr.starts_with(&format!("herdless exec: {expected}")),
            "{keys}: {stderr}"
        );
    }
    let out = check(
        &dir,
        "[policy.a]\nretry_on = \"1-255\"\n",
        &["--policy", "a"],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let out = check(&dir, "[policy.a]\n", &["--policy", "a", "--timeout", "0s"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// `check --help` lists only flags that apply to it, and still accepts the
/// hidden ones (scripts may pass a shared set of policy flags).
#[test]
fn check_help_hides_flags_that_do_not_apply() {
    let dir = tempfile::tempdir().unwrap();
    let out = check(&dir, "", &["--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("--base"), "{help}");
    for hidden in ["--seed", "--task-id", "--log-format"] {
        assert!(!help.contains(hidden), "{hidden}: {help}");
    }
    let out = check(
        &dir,
        "",
        &["--seed", "1", "--task-id", "t", "--log-format", "json"],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

/// A broken ./herdless.toml that nobody asked for says why it was read.
#[test]
fn a_broken_implicit_policy_file_says_why_it_was_read() {
    let dir = tempfile::tempdir().unwrap();
    let out = check(&dir, "[policy.a]\ncapp = \"1s\"\n", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with("herdless check: herdless.toml:2: policy.a.capp"),
        "{stderr}"
    );
    assert!(
        stderr.contains("read whenever it exists, even without --policy"),
        "{stderr}"
    );
}
