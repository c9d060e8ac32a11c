//! `herdless analyze` on real runs: `herdless fleet` against `herdless stub
//! --fail-first 3` over real sockets on 127.0.0.1, its `--log-format json`
//! events read back by the built binary.
//!
//! 200 workers retry three times each, at a 300 ms base. Without jitter
//! every worker sleeps exactly 300, 600 and 1200 ms after failures that all
//! come within a few tens of milliseconds, so each wave of 200 retries goes
//! out within about one 100 ms bucket and its sleeps are all the same: the
//! spread check must fail. With full jitter the first wave is spread
//! uniformly over 300 ms, which puts 29 to 34 % of the fleet in some 100 ms
//! bucket: the old check (at most 25 % of the retrying tasks in a bucket)
//! failed it, the wave-by-wave check sees sleeps spread as full jitter
//! spreads them and passes it. The seed fixes the draws; machine timing
//! only smears.

use std::process::Output;

use serde_json::Value;

#[allow(dead_code)] // each test binary uses part of it
mod support;
use support::*;

/// Runs the fleet, writes its stderr (the JSON events) to a file and
/// returns the fleet's report and analyze's output on that file.
async fn fleet_then_analyze(fleet: &[&str], analyze: &[&str]) -> (Value, Output, Value) {
    let out = herdless(fleet).await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("fleet.jsonl");
    std::fs::write(&log, &out.stderr).unwrap();
    let report = fleet_json(&out);
    let log_s = log.to_str().unwrap();
    let mut args = vec!["analyze", "--json", log_s];
    args.extend_from_slice(analyze);
    let a = herdless(&args).await;
    let json: Value = serde_json::from_slice(&a.stdout).unwrap_or_else(|e| panic!("{e}: {a:?}"));
    (report, a, json)
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no check {name} in {report}"))
}

async fn two_hundred(jitter: &str) -> (Value, Output, Value) {
    let (_stub, url) = start_stub(&["--fail-first", "3"]);
    let fleet = [
        "fleet",
        "--workers",
        "200",
        "--jitter",
        jitter,
        "--base",
        "300ms",
        "--seed",
        "11",
        "--json",
        "--log-format",
        "json",
        &url,
    ];
    fleet_then_analyze(&fleet, &[]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_without_jitter_fails_the_spread_check() {
    let (fleet, out, report) = two_hundred("none").await;
    assert_eq!(fleet["succeeded"], 200, "{fleet}");
    eprintln!("{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed check exits 1: {report}"
    );
    assert_eq!(report["tasks"], 200);
    assert_eq!(report["retrying_tasks"], 200);
    assert_eq!(report["retries"], 600);
    assert_eq!(report["attempts_per_task"]["4"], 200);
    assert_eq!(report["amplification"], 4.0);
    let spread = check(&report, "spread");
    assert_eq!(spread["verdict"], "fail", "{spread}");
    let share = report["largest_retry_bucket"]["share_of_retrying_tasks"]
        .as_f64()
        .unwrap();
    // Each wave is as wide as the fleet's start-up (200 first attempts on a
    // loaded 2-core machine: tens of milliseconds, up to a hundred), so its
    // 100 ms bucket holds most of it even when the machine is busy.
    assert!(
        share >= 0.4,
        "a wave of 200 retries in about one bucket, got {share}"
    );
    assert_eq!(report["passed"], false);
    assert_eq!(report["outcome"], "failed");
    for wave in report["spread"]["waves"].as_array().unwrap() {
        assert_eq!(
            wave["sleep_spread"], 0.0,
            "no jitter: one sleep per wave: {wave}"
        );
    }
}

/// A bound on memory may cost precision, never flip a verdict: the same
/// failing log read with `--max-open-tasks` below the fleet's size (its
/// flushed tasks' later events used to count as new tasks: 1,100 tasks, the
/// largest bucket 20.1 %, "passed", exit 0) still fails, and the checks
/// that count tasks say they were not judged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_bound_never_turns_a_failing_log_into_a_passing_one() {
    let (_stub, url) = start_stub(&["--fail-first", "5"]);
    let fleet = [
        "fleet",
        "--workers",
        "200",
        "--jitter",
        "none",
        "--base",
        "100ms",
        "--max-attempts",
        "8",
        "--json",
        "--log-format",
        "json",
        &url,
    ];
    let out = herdless(&fleet).await;
    assert_eq!(fleet_json(&out)["succeeded"], 200);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("fleet.jsonl");
    std::fs::write(&log, &out.stderr).unwrap();
    let log = log.to_str().unwrap();
    let mut reports = Vec::new();
    for bound in ["1000000", "150"] {
        let a = herdless(&["analyze", "--json", "--max-open-tasks", bound, log]).await;
        let report: Value = serde_json::from_slice(&a.stdout).unwrap();
        reports.push((bound, a.status.code(), report));
    }
    for (bound, code, report) in &reports {
        assert_eq!(*code, Some(1), "--max-open-tasks {bound}: {report}");
    }
    for (bound, _, report) in reports {
        assert_eq!(report["outcome"], "failed");
        assert_eq!(check(&report, "spread")["verdict"], "fail", "{report}");
        if bound == "150" {
            for name in ["lockstep", "amplification", "give_ups"] {
                let c = check(&report, name);
                assert_eq!(c["verdict"], "note", "{c}");
                assert!(
                    c["message"]
                        .as_str()
                        .unwrap()
                        .starts_with("not judged: --max-open-tasks"),
                    "{c}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_with_full_jitter_passes_every_check() {
    let (fleet, out, report) = two_hundred("full").await;
    assert_eq!(fleet["succeeded"], 200, "{fleet}");
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert_eq!(report["tasks"], 200);
    assert_eq!(report["retries"], 600);
    let spread = check(&report, "spread");
    assert_eq!(spread["verdict"], "pass", "{spread}");
    assert_eq!(report["outcome"], "passed");
    for wave in report["spread"]["waves"].as_array().unwrap() {
        let s = wave["sleep_spread"].as_f64().unwrap();
        assert!(s > 1.0, "full jitter spreads each wave's sleeps: {wave}");
    }
    for c in report["checks"].as_array().unwrap() {
        assert_ne!(c["verdict"], "fail", "{c}");
    }
    assert_eq!(check(&report, "terminal_retried")["verdict"], "pass");
    assert_eq!(check(&report, "lockstep")["verdict"], "pass");
    // Attempts per task depend on the outage: a note unless a limit is given.
    assert_eq!(check(&report, "amplification")["verdict"], "note");
    assert_eq!(check(&report, "amplification")["value"], 4.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_status_retried_by_a_wrong_classifier_is_flagged() {
    // The stub answers 404 three times per worker: the library calls 404
    // terminal, `--retry-on 404` retries it anyway.
    let (_stub, url) = start_stub(&["--fail-first", "3", "--fail-status", "404"]);
    let fleet = [
        "fleet",
        "--workers",
        "20",
        "--retry-on",
        "404",
        "--base",
        "20ms",
        "--seed",
        "3",
        "--json",
        "--log-format",
        "json",
        &url,
    ];
    let (fleet, out, report) = fleet_then_analyze(&fleet, &[]).await;
    assert_eq!(
        fleet["succeeded"], 20,
        "retried until the stub answered 200: {fleet}"
    );
    assert_eq!(out.status.code(), Some(1), "{report}");
    let t = check(&report, "terminal_retried");
    assert_eq!(t["verdict"], "fail", "{t}");
    assert_eq!(report["terminal_retried"]["retries"], 60);
    assert_eq!(report["terminal_retried"]["tasks"], 20);
    assert_eq!(report["terminal_retried"]["statuses"]["404"], 60);
    assert!(t["message"].as_str().unwrap().contains("404"), "{t}");

    // The right classifier: 404 ends each call at once, nothing retried.
    let (_stub, url) = start_stub(&["--fail-first", "3", "--fail-status", "404"]);
    let fleet = [
        "fleet",
        "--workers",
        "20",
        "--json",
        "--log-format",
        "json",
        &url,
    ];
    let (fleet, out, report) = fleet_then_analyze(&fleet, &[]).await;
    assert_eq!(fleet["terminal"], 20, "{fleet}");
    // Nothing retried: nothing to judge, never "passed".
    assert_eq!(out.status.code(), Some(4), "{report}");
    assert_eq!(report["outcome"], "not_judged", "{report}");
    assert_eq!(report["abandoned_terminal"], 20);
    assert_eq!(report["retries"], 0);
    assert_eq!(report["terminal_retried"]["retries"], 0);
}
