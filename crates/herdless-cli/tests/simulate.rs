//! `herdless simulate` end to end: the real binary, in a temporary directory.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn herdless(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_herdless"))
        .arg("simulate")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the binary runs")
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("herdless-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON object")
}

#[test]
fn no_arguments_runs_the_outage_table_and_writes_figures_where_it_says() {
    let dir = temp_dir("default");
    let out = herdless(&dir, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("outage: 40000 clients"), "{text}");
    assert!(text.contains("physical limit: T + N/C = 5 s + 40000 / 10000 per s = 9.000 s"));
    let header = text
        .lines()
        .find(|l| l.contains("decorrelated-window"))
        .unwrap();
    for name in [
        "none",
        "full",
        "equal",
        "decorrelated",
        "fixed-1s",
        "full+budget",
        "full+breaker",
        "full+pushback",
        "physical limit",
    ] {
        assert!(header.contains(name), "{header}");
    }
    assert!(
        text.contains("figures written to herdless-report"),
        "{text}"
    );
    for f in ["outage-arrivals.svg", "outage-arrivals.png"] {
        let path = dir.join("herdless-report").join(f);
        assert!(text.contains(&format!("herdless-report/{f}")), "{text}");
        assert!(std::fs::metadata(&path).unwrap().len() > 1000, "{f}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn json_is_one_object_with_the_documented_fields() {
    let dir = temp_dir("json");
    let v = json(&herdless(
        &dir,
        &[
            "--json",
            "--clients",
            "4000",
            "--capacity",
            "1000",
            "--seed",
            "5",
        ],
    ));
    assert_eq!(v["scenario"], "outage");
    assert_eq!(v["seed"], 5);
    assert_eq!(v["parameters"]["clients"], 4000);
    assert_eq!(v["parameters"]["capacity_per_s"], 1000);
    assert_eq!(v["parameters"]["burst"], 100);
    assert_eq!(v["physical_limit_s"], 9.0);
    let strategies = v["strategies"].as_array().unwrap();
    assert_eq!(strategies.len(), 9);
    assert_eq!(strategies[8]["strategy"], "full+pushback");
    for s in strategies {
        for field in [
            "strategy",
            "calls",
            "calls_total",
            "completion_s",
            "last_success_s",
            "drained",
            "succeeded",
            "gave_up",
            "gave_up_retry_budget",
            "give_up_max_bucket_share",
            "give_ups_per_100ms",
            "breaker_waits",
            "peak_over_capacity",
            "max_bucket_share",
            "arrivals_per_100ms",
        ] {
            assert!(!s[field].is_null(), "missing {field} in {s}");
        }
        // A ratio to the physical limit only for a fleet that drained.
        let map = s.as_object().unwrap();
        assert!(map.contains_key("vs_limit") && map.contains_key("drain_vs_limit"));
        assert_eq!(s["vs_limit"].is_null(), s["drained"] == false, "{s}");
        assert_eq!(s["vs_limit"], s["drain_vs_limit"], "{s}");
        if let Some(x) = s["vs_limit"].as_f64() {
            assert!(x >= 1.0, "{s}");
        }
    }
    assert!(
        !dir.join("herdless-report").exists(),
        "--json writes figures only with --out"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn same_seed_same_json_for_every_scenario() {
    let dir = temp_dir("seed");
    for args in [
        &["--scenario", "spread", "--json"][..],
        &[
            "--scenario",
            "contention",
            "--json",
            "--clients",
            "40",
            "--trials",
            "3",
        ][..],
        &[
            "--json",
            "--clients",
            "2000",
            "--capacity",
            "500",
            "--jitter",
            "none,full",
        ][..],
    ] {
        let a = herdless(&dir, args);
        let b = herdless(&dir, args);
        assert_eq!(json(&a), json(&b), "{args:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn contention_and_spread_figures_go_to_out() {
    let dir = temp_dir("out");
    let out_dir = dir.join("figs");
    let out = herdless(
        &dir,
        &[
            "--scenario",
            "contention",
            "--clients",
            "20",
            "--trials",
            "2",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("write calls (mean over trials)"), "{text}");
    for f in ["contention-calls", "contention-time"] {
        let svg = std::fs::read_to_string(out_dir.join(format!("{f}.svg"))).unwrap();
        assert!(
            svg.contains("<svg") && svg.contains("no-backoff"),
            "{f}.svg"
        );
        let png = std::fs::read(out_dir.join(format!("{f}.png"))).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{f}.png");
    }
    let spread = herdless(
        &dir,
        &["--scenario", "spread", "--out", out_dir.to_str().unwrap()],
    );
    assert!(spread.status.success());
    assert!(out_dir.join("spread-retries.png").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_is_a_clear_usage_error() {
    let dir = temp_dir("bad");
    for (args, needle) in [
        (&["--scenario", "storm"][..], "unknown scenario"),
        (&["--jitter", "sometimes"][..], "unknown strategy"),
        (
            &["--workers", "10"][..],
            "--workers applies to --scenario spread",
        ),
        (
            &["--scenario", "spread", "--capacity", "5"][..],
            "--capacity applies",
        ),
        (&["--capacity", "0"][..], "capacity must be at least 1"),
        (&["--clients", "0"][..], "clients must be in"),
        (
            &["--jitter", "no-backoff"][..],
            "no-backoff cannot run in the outage",
        ),
        (&["--cap", "1ms"][..], "invalid cap"),
        (
            &["--scenario", "contention", "--trials", "0"][..],
            "trials must be in",
        ),
        (&["--threads", "0"][..], "--threads must be at least 1"),
        (
            &["--scenario", "spread", "--jitter", "full+budget"][..],
            "full+budget runs in the outage scenario only",
        ),
        (&["--jitter", "full+fuse"][..], "unknown strategy"),
        (
            &["--clients-per-process", "0"][..],
            "clients per process must be at least 1",
        ),
        (
            &["--scenario", "spread", "--clients-per-process", "5"][..],
            "--clients-per-process applies",
        ),
        // u32::MAX is the simulator's "no attempt limit": the number is not
        // silently read as that, it is asked for by name.
        (
            &["--max-attempts", "4294967295"][..],
            "must be 1 to 4294967294, or unlimited",
        ),
        (&["--max-attempts", "0"][..], "must be 1 to 4294967294"),
        // A huge number is written as one, not as its 309 digits.
        (&["--honor", "1e308"][..], "within 0..=1 (got 1e308)"),
        (
            &["--capacity-estimate", "1e300"][..],
            "times the capacity (got 1e300)",
        ),
        (&["--outage", "2d"][..], "at most 1 day (got 2d)"),
        (
            &["--max-elapsed", "585y"][..],
            "is too large (at most 18446744073 s",
        ),
    ] {
        let out = herdless(&dir, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--max-attempts unlimited` is the simulator's no-limit, said so in the
/// table and as `null` in the JSON; the largest count is a count.
#[test]
fn max_attempts_unlimited_is_explicit() {
    let dir = temp_dir("unlimited");
    let run = |n: &str| {
        let args = [
            "--scenario",
            "spread",
            "--workers",
            "10",
            "--max-attempts",
            n,
        ];
        let text = herdless(&dir, &[&args[..], &["--no-plots"]].concat());
        let v = json(&herdless(&dir, &[&args[..], &["--json"]].concat()));
        (String::from_utf8(text.stdout).unwrap(), v)
    };
    let (text, v) = run("unlimited");
    assert!(text.contains("no attempt limit"), "{text}");
    assert!(v["parameters"]["policy"]["max_attempts"].is_null(), "{v}");
    let (text, v) = run("4294967294");
    assert!(text.contains("4294967294 attempts"), "{text}");
    assert_eq!(v["parameters"]["policy"]["max_attempts"], 4294967294u32);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unwritable_out_dir_fails_with_its_own_code_after_the_table() {
    let dir = temp_dir("unwritable");
    let blocker = dir.join("file");
    std::fs::write(&blocker, "not a directory").unwrap();
    let out = herdless(
        &dir,
        &[
            "--scenario",
            "spread",
            "--out",
            blocker.join("sub").to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("spread: 200 workers"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot create"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// An outage longer than any budget: every client gives up, so no strategy
/// drained; the table shows "-" rather than a completion below the physical
/// limit, and the JSON says `drained: false` with every ratio to the limit
/// (`vs_limit`, `drain_vs_limit`) `null`.
#[test]
fn runs_that_gave_up_never_read_as_beating_the_physical_limit() {
    let dir = temp_dir("gave-up");
    let args = [
        "--outage",
        "1h",
        "--jitter",
        "full,full+pushback",
        "--clients",
        "2000",
        "--capacity",
        "500",
        "--no-plots",
    ];
    let out = herdless(&dir, &args);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let cells = |label: &str| -> Vec<String> {
        let line = text
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label} row: {text}"));
        line[label.len()..]
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(cells("completion (s)")[..2], ["-", "-"], "{text}");
    assert_eq!(cells("x physical limit"), ["-", "-", "1.00"], "{text}");
    assert_eq!(cells("gave up")[..2], ["2000", "2000"], "{text}");
    assert!(text.contains("did not drain"), "{text}");
    let v = json(&herdless(
        &dir,
        &[&args[..args.len() - 1], &["--json"][..]].concat(),
    ));
    for s in v["strategies"].as_array().unwrap() {
        assert_eq!(s["drained"], false, "{s}");
        assert!(s["drain_s"].is_null(), "{s}");
        assert!(s["drain_vs_limit"].is_null(), "{s}");
        assert!(
            s["vs_limit"].is_null(),
            "no ratio below 1 without a drain: {s}"
        );
        assert_eq!(s["gave_up"], 2000, "{s}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--scenario robustness`: `--capacity` is the estimate the server is told,
/// the cells run at half, once and twice it, `--jitter` names the strategies
/// under test, and every cell reports its service load and hold.
#[test]
fn robustness_runs_at_a_told_estimate_for_the_strategies_named() {
    let dir = temp_dir("robustness");
    let out = herdless(
        &dir,
        &[
            "--scenario",
            "robustness",
            "--clients",
            "2000",
            "--capacity",
            "500",
            "--jitter",
            "full+hold",
            "--json",
            "--no-plots",
        ],
    );
    let v = json(&out);
    assert_eq!(v["capacity_estimate_per_s"], 500);
    assert_eq!(v["strategies"], serde_json::json!(["full+hold"]));
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 26);
    let mut capacities: Vec<u64> = cells
        .iter()
        .map(|c| c["capacity_per_s"].as_u64().unwrap())
        .collect();
    capacities.dedup();
    assert_eq!(capacities, [250, 500, 1000, 500]); // then the long rows at E
    for c in cells {
        assert_eq!(c["strategy"], "full+hold");
        assert!(
            c["service_peak_over_capacity"].as_f64().unwrap() > 0.0,
            "{c}"
        );
        assert!(c["max_held"].as_u64().unwrap() > 0, "{c}");
    }
    let outages: Vec<f64> = cells
        .iter()
        .map(|c| c["outage_s"].as_f64().unwrap())
        .collect();
    assert!(outages.contains(&20.0) && outages.contains(&60.0));
    // The long rows run the library's default policy, then again labelled
    // `long`; every other cell runs the default.
    let long_policy = |c: &&serde_json::Value| c["policy"] == "long";
    assert_eq!(cells.iter().filter(long_policy).count(), 4);
    assert!(cells.iter().filter(long_policy).all(|c| c["long"] == true));
    assert_eq!(
        cells.iter().filter(|c| c["policy"] == "default").count(),
        22
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// With `--honor 0` the honoring group is empty: its calls per client are
/// shown as "-", not as 0.00 calls (0 / 0).
#[test]
fn an_empty_honoring_group_shows_no_calls_per_client() {
    let dir = temp_dir("honor0");
    let out = herdless(
        &dir,
        &[
            "--scenario",
            "reactivation",
            "--honor",
            "0",
            "--clients",
            "2000",
            "--capacity",
            "1000",
            "--jitter",
            "full,full+waves",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let honoring = text
        .lines()
        .skip_while(|l| !l.starts_with("honoring: drain"))
        .nth(1)
        .expect("the honoring group's calls row");
    assert!(honoring.starts_with("  calls"), "{honoring}");
    assert!(
        honoring.split_whitespace().skip(1).all(|v| v == "-"),
        "{honoring}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A reactivation capacity too small for its replicas names the values at
/// fault, the burst's default included (the user never set a burst).
#[test]
fn a_capacity_below_one_call_per_replica_names_the_values() {
    let dir = temp_dir("cap20");
    let out = herdless(&dir, &["--scenario", "reactivation", "--capacity", "20"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("capacity (20/s)") && err.contains("by default a tenth of the capacity"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
