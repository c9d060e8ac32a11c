//! `herdless tune`: the facts in, a policy `herdless check --strict` passes
//! out, its figures from seeds the search did not use; unsatisfiable facts
//! name the fact to change.
//!
//! The fleets are small (a few hundred workers) and the grids narrowed with
//! the grid flags, so each search is a few hundred simulations in a debug
//! build.

use std::process::Output;

use serde_json::Value;

#[allow(dead_code)] // each test binary uses part of it
mod support;
use support::*;

async fn tune(args: &[&str]) -> (Output, Value) {
    let mut all = vec!["tune", "--json"];
    all.extend_from_slice(args);
    let out = herdless(&all).await;
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    (out, v)
}

const SMALL: [&str; 10] = [
    "--workers",
    "300",
    "--capacity",
    "100",
    "--outage",
    "5s..20s",
    "--bases",
    "250ms,1s,4s",
    "--attempts",
    "5,8,12",
];

#[tokio::test]
async fn the_recommendation_passes_check_strict_and_is_resimulated_on_fresh_seeds() {
    let (out, r) = tune(&SMALL).await;
    assert_eq!(out.status.code(), Some(0), "{r}");
    let rec = &r["recommended"];
    assert!(rec.is_object(), "{r}");
    // The block passes the real `herdless check --strict`, run apart.
    let block = r["toml"].as_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("herdless.toml");
    std::fs::write(&file, block).unwrap();
    let check = herdless(&[
        "check",
        "--strict",
        "--config",
        file.to_str().unwrap(),
        "--policy",
        "tuned",
    ])
    .await;
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}\n{block}",
        String::from_utf8_lossy(&check.stdout)
    );
    assert!(
        block.contains("recovery_time = \"20s\"") && block.contains("workers = 300"),
        "{block}"
    );
    // Jitter none synchronizes a fleet: check refuses it, so it was never simulated.
    let pruned = r["search"]["pruned"].as_array().unwrap();
    let jitter = pruned
        .iter()
        .find(|p| p["check"] == "jitter")
        .expect("jitter none pruned");
    assert_eq!(
        jitter["count"].as_u64().unwrap(),
        r["search"]["grid"].as_u64().unwrap() / 5,
        "one of five modes"
    );
    assert_ne!(rec["policy"]["jitter"], "none");
    assert!(
        rec["policy"]["cap_s"].as_f64().unwrap() >= 20.0,
        "cap covers the recovery"
    );
    assert!(
        r["search"]["candidates"].as_u64().unwrap() >= 100,
        "{}",
        r["search"]
    );
    // Honest: the printed figures come from seeds the search did not use.
    let seeds = |k: &str| -> Vec<u64> {
        r["search"][k]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_u64().unwrap())
            .collect()
    };
    let (search, verify) = (seeds("search_seeds"), seeds("verify_seeds"));
    assert_eq!((search.len(), verify.len()), (3, 3));
    assert!(verify.iter().all(|s| !search.contains(s)));
    let runs = rec["verify"]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3 * 3, "3 outage lengths x 3 fresh seeds");
    assert!(
        runs.iter()
            .all(|run| verify.contains(&run["seed"].as_u64().unwrap()))
    );
    let searched = rec["search"]["runs"].as_array().unwrap();
    assert!(
        searched
            .iter()
            .all(|run| search.contains(&run["seed"].as_u64().unwrap()))
    );
    // What the table prints is the fresh run, and it meets the facts.
    assert_eq!(rec["verify"]["violations"].as_array().unwrap().len(), 0);
    assert!(rec["verify"]["peak_over_capacity"].as_f64().unwrap() <= 2.0);
    assert_eq!(rec["verify"]["give_up_share"], 0.0);
    assert!(
        rec["verify"]["max_bucket_share"].as_f64().unwrap() <= 0.25,
        "analyze's spread"
    );
    // Beside it: full jitter with the defaults, on the same fresh seeds.
    let base = &r["baselines"][0];
    assert_eq!(base["label"], "full jitter, defaults");
    assert!(
        base["check"].as_str().unwrap().contains("recovery_time"),
        "{base}"
    );
    assert!(!r["pareto"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn the_text_report_shows_the_block_the_front_the_explanation_and_the_figure() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("figs");
    let mut args = vec![
        "tune",
        "--explain",
        "--out",
        out_dir.to_str().unwrap(),
        "--jitters",
        "full,equal",
    ];
    args.extend_from_slice(&SMALL);
    let out = herdless(&args).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    for want in [
        "[policy.tuned]",
        "re-simulated on 3 seeds the search did not use",
        "Pareto front",
        "explain:",
        "runner-up",
        "full jitter, defaults",
    ] {
        assert!(text.contains(want), "{want:?} missing:\n{text}");
    }
    assert!(
        out_dir.join("outage-arrivals.svg").exists()
            && out_dir.join("outage-arrivals.png").exists()
    );
}

#[tokio::test]
async fn facts_no_policy_can_satisfy_name_the_fact_to_change() {
    // A 60 s recovery behind a 30 s visibility timeout: no budget outlasts it.
    let (out, r) = tune(&[
        "--workers",
        "100",
        "--capacity",
        "50",
        "--outage",
        "60s",
        "--visibility-timeout",
        "30s",
    ])
    .await;
    assert_eq!(out.status.code(), Some(1), "{r}");
    assert!(r["recommended"].is_null());
    assert_eq!(r["unsatisfied"]["fact"], "visibility_timeout", "{r}");
    assert!(
        r["unsatisfied"]["message"]
            .as_str()
            .unwrap()
            .contains("at least 75 s"),
        "{r}"
    );
    // A peak no policy can keep.
    let mut args = vec!["--max-peak", "0.01"];
    args.extend_from_slice(&SMALL);
    let (out, r) = tune(&args).await;
    assert_eq!(out.status.code(), Some(1), "{r}");
    assert_eq!(r["unsatisfied"]["fact"], "max_peak", "{r}");
    let text = herdless(&[
        "tune",
        "--max-peak",
        "0.01",
        "--workers",
        "300",
        "--capacity",
        "100",
        "--outage",
        "5s..20s",
        "--bases",
        "1s",
        "--attempts",
        "8",
    ])
    .await;
    assert_eq!(text.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("no policy fits the facts: change max_peak")
    );
}

#[tokio::test]
async fn the_policy_files_fact_keys_are_facts_and_the_current_policy_is_shown() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("herdless.toml");
    std::fs::write(
        &file,
        "[policy.ingest]\njitter = \"full\"\nbase = \"500ms\"\ncap = \"10s\"\nmax_attempts = 10\n\
         max_elapsed = \"2m\"\nworkers = 120\nrecovery_time = \"15s\"\nvisibility_timeout = \"2m\"\n",
    )
    .unwrap();
    let (out, r) = tune(&[
        "--config",
        file.to_str().unwrap(),
        "--policy",
        "ingest",
        "--capacity",
        "40",
        "--bases",
        "1s,4s",
    ])
    .await;
    assert_eq!(out.status.code(), Some(0), "{r}");
    assert_eq!(r["facts"]["clients"], 120);
    assert_eq!(r["facts"]["recovery_time_s"], 15.0);
    assert_eq!(r["facts"]["visibility_timeout_s"], 120.0);
    assert_eq!(
        r["facts"]["outages_s"],
        serde_json::json!([5.0, 10.0, 15.0])
    );
    let current = r["baselines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["label"] == "current (ingest)")
        .unwrap();
    assert_eq!(current["policy"]["cap_s"], 10.0);
    assert!(
        current["check"]
            .as_str()
            .unwrap()
            .contains("cap 10 s is below recovery_time 15 s"),
        "{current}"
    );
    // max_elapsed stays within 80% of the visibility timeout.
    assert!(
        r["recommended"]["policy"]["max_elapsed_s"]
            .as_f64()
            .unwrap()
            <= 96.0
    );
    // A flag beats the file's fact.
    let (_, r) = tune(&[
        "--config",
        file.to_str().unwrap(),
        "--policy",
        "ingest",
        "--workers",
        "60",
        "--bases",
        "1s",
    ])
    .await;
    assert_eq!(r["facts"]["clients"], 60);
    // An outage longer than the recovery time is a usage error.
    let out = herdless(&["tune", "--outage", "10s..60s", "--recovery-time", "30s"]).await;
    assert_eq!(out.status.code(), Some(2));
}

/// A grid axis that makes no valid policy is a usage error naming the flag,
/// before any simulation: not "no policy fits: change recovery_time" (a
/// fact) with exit 1 after the whole search.
#[tokio::test]
async fn a_grid_that_holds_no_valid_policy_is_a_usage_error_naming_its_flag() {
    let cases: [(&[&str], &str); 4] = [
        (&["--bases", "0s"], "--bases"),
        (&["--elapsed", "0s"], "--elapsed"),
        (&["--caps", "0s"], "--caps"),
        (&["--caps", "100ms"], "--caps"),
    ];
    for (grid, flag) in cases {
        let mut args = vec![
            "tune",
            "--workers",
            "50",
            "--capacity",
            "20",
            "--recovery-time",
            "45s",
        ];
        args.extend_from_slice(grid);
        let out = herdless(&args).await;
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{grid:?}: {err}");
        assert!(err.contains(flag), "{grid:?}: {err}");
        assert!(!err.contains("recovery_time"), "{grid:?}: {err}");
        assert!(out.stdout.is_empty(), "{grid:?}: no search, no report");
    }
    // A cap below some bases only is not an error: those pairs are pruned.
    let (out, r) = tune(&[
        "--workers",
        "50",
        "--capacity",
        "20",
        "--recovery-time",
        "45s",
        "--bases",
        "250ms,1m",
        "--caps",
        "50s",
    ])
    .await;
    assert_ne!(out.status.code(), Some(2), "{r}");
}
