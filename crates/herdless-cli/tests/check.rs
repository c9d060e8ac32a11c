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
    let file = "[policy.scanner]\ncap = \"30s\"\nrecovery_time = \"45s\"\n";
    let out = check(&dir, file, &["--policy", "scanner", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "warnings alone pass");
    let report = json(&out);
    assert_eq!(level(&report, "recovery_time"), "warn");
    assert_eq!(level(&report, "max_retry_after"), "warn");
    let out = check(&dir, file, &["--policy", "scanner", "--strict"]);
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
