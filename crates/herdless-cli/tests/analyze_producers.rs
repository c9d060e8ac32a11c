//! `herdless analyze` on what other producers and careless pipelines write:
//! a byte order mark, tasks whose `retry_scheduled` lines are filtered out
//! or interleaved under one id, sleeps written rounded.

use serde_json::Value;

#[allow(dead_code)] // each test binary uses part of it
mod support;
use support::*;

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == name)
        .unwrap()
}

async fn analyze_json(args: &[&str]) -> (Option<i32>, Value) {
    let out = herdless(args).await;
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    (out.status.code(), v)
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// A UTF-8 byte order mark (PowerShell's `Out-File -Encoding utf8`,
/// Notepad) does not cost the file its first event.
#[tokio::test]
async fn a_byte_order_mark_does_not_cost_the_first_line() {
    let dir = tempfile::tempdir().unwrap();
    let line = |t: u32, e: &str| {
        format!(
            "{{\"timestamp\":\"2026-01-01T00:00:0{t}Z\",\"event\":\"{e}\",\"task_id\":\"a\",\"attempt\":{t},\"sleep_s\":1}}\n"
        )
    };
    let text = format!(
        "\u{feff}{}{}",
        line(1, "retry_scheduled"),
        line(2, "retry_succeeded")
    );
    let log = write(&dir, "bom.jsonl", &text);
    let (_, report) = analyze_json(&["analyze", "--json", &log]).await;
    assert_eq!(
        (report["events"].as_u64(), report["skipped"].as_u64()),
        (Some(2), Some(0)),
        "{report}"
    );
    assert_eq!(report["retrying_tasks"], 1, "{report}");
}

/// A task that ended after a retry retried, whether or not its
/// `retry_scheduled` lines are there: a log filtered to its ERROR events
/// (`RUST_LOG=herdless=error`: the give-ups), or `exec` runs in parallel
/// without `--task-id` (every event's `task_id` is empty, so their events
/// interleave under one id). Before, such a log counted 1 retrying task of
/// 40 ("40 succeeded after a retry"), a bucket of 1,600 % of the retrying
/// tasks, and `lockstep` "too few to judge".
#[tokio::test]
async fn a_task_that_ended_after_its_first_attempt_counts_as_retrying() {
    let dir = tempfile::tempdir().unwrap();
    // 40 runs of `herdless exec` at once, no --task-id: their events interleave.
    let mut text = String::new();
    for attempt in 1..=2 {
        for run in 0..40 {
            let t = 1_700_000_000.0 + f64::from(attempt) * 0.3 + f64::from(run) * 0.002;
            text += &format!(
                "{{\"timestamp\":{t},\"event\":\"retry_scheduled\",\"task_id\":\"\",\"attempt\":{attempt},\"sleep_s\":{}}}\n",
                0.1 + f64::from(run) * 0.005
            );
        }
    }
    for run in 0..40 {
        let t = 1_700_000_001.0 + f64::from(run) * 0.002;
        text += &format!(
            "{{\"timestamp\":{t},\"event\":\"retry_succeeded\",\"task_id\":\"\",\"attempt\":3}}\n"
        );
    }
    let log = write(&dir, "exec.jsonl", &text);
    let (_, report) = analyze_json(&["analyze", "--json", &log]).await;
    assert_eq!(report["tasks"], 40, "{report}");
    assert_eq!(report["retrying_tasks"], 40, "{report}");
    let share = report["largest_retry_bucket"]["share_of_retrying_tasks"]
        .as_f64()
        .unwrap();
    assert!(share <= 1.0, "{report}");
    assert_ne!(check(&report, "lockstep")["verdict"], "note", "{report}");
    // Only the give-ups of 50 tasks that tried 6 times.
    let text: String = (0..50)
        .map(|i| {
            format!(
                "{{\"timestamp\":{},\"event\":\"retry_budget_exhausted\",\"task_id\":\"t{i}\",\"attempt\":6,\"reason\":\"max_attempts\"}}\n",
                1_700_000_000.0 + f64::from(i) * 0.01
            )
        })
        .collect();
    let log = write(&dir, "errors.jsonl", &text);
    let (code, report) = analyze_json(&["analyze", "--json", &log]).await;
    assert_eq!(report["retrying_tasks"], 50, "{report}");
    assert_eq!(code, Some(1), "every task gave up: {report}");
    assert_eq!(check(&report, "give_ups")["verdict"], "fail", "{report}");
}

/// A fleet's log in another producer's shape (`ts`, `kind`, `job`, `try`,
/// `wait`), its sleeps written with `decimals` digits as that producer
/// rounds them: `workers` tasks failing together within 100 ms, three
/// retries each with the given base and jitter (`none`, `full`, `equal`),
/// then a success.
fn rounded_log(workers: u32, base_s: f64, jitter: &str, decimals: usize, seed: u64) -> String {
    let mut rng = herdless::Rng::with_seed(seed);
    let mut uniform =
        |lo: f64, hi: f64| lo + (hi - lo) * (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let mut lines: Vec<(f64, String)> = Vec::new();
    for w in 0..workers {
        let mut t = 1_700_000_000.0 + uniform(0.0, 0.1);
        for attempt in 1..=3u32 {
            let ceiling = base_s * 2f64.powi(attempt as i32 - 1);
            let sleep = match jitter {
                "none" => ceiling,
                "full" => uniform(0.0, ceiling),
                "equal" => uniform(ceiling / 2.0, ceiling),
                other => unreachable!("{other}"),
            };
            let wait = format!("{sleep:.decimals$}");
            lines.push((
                t,
                format!(r#"{{"ts":{t:.6},"kind":"retry_scheduled","job":"w{w}","try":{attempt},"wait":{wait}}}"#),
            ));
            t += wait.parse::<f64>().unwrap() + uniform(0.001, 0.005);
        }
        lines.push((
            t,
            format!(r#"{{"ts":{t:.6},"kind":"retry_succeeded","job":"w{w}","try":4}}"#),
        ));
    }
    lines.sort_by(|a, b| a.0.total_cmp(&b.0));
    lines.into_iter().map(|(_, l)| l + "\n").collect()
}

/// Sleeps a producer logs rounded (`round(sleep, 1)`, whole seconds) are
/// judged at the resolution they are written with. Before, "slept the same
/// within 2 %" was judged on the rounded values, so a fleet with full jitter
/// at a 300 ms base logged to 0.1 s (every sleep one of 0.0, 0.1, 0.2, 0.3)
/// failed `spread`, as did one at a 10 ms base logged to 0.01 s; a fleet
/// without jitter still fails at any resolution, whole seconds included.
#[tokio::test]
async fn sleeps_logged_rounded_are_judged_at_their_resolution() {
    let dir = tempfile::tempdir().unwrap();
    let fields = [
        "--time-field",
        "ts",
        "--event-field",
        "kind",
        "--task-field",
        "job",
        "--attempt-field",
        "try",
        "--sleep-field",
        "wait",
    ];
    let cases = [
        (0.3, "full", 1, "passed"),
        (0.01, "full", 2, "passed"),
        (0.3, "equal", 1, "passed"),
        (1.0, "full", 1, "passed"),
        (0.3, "none", 1, "failed"),
        (0.01, "none", 2, "failed"),
        (1.0, "none", 0, "failed"),
    ];
    for (base, jitter, decimals, want) in cases {
        for seed in 1..=3 {
            let log = write(
                &dir,
                "rounded.jsonl",
                &rounded_log(200, base, jitter, decimals, seed),
            );
            let mut args = vec!["analyze", "--json", &log];
            args.extend_from_slice(&fields);
            let (code, report) = analyze_json(&args).await;
            let spread = check(&report, "spread");
            assert_eq!(
                report["outcome"], want,
                "{jitter} jitter, base {base} s, sleeps to {decimals} decimals, seed {seed}: {spread}"
            );
            assert_eq!(code, Some(if want == "passed" { 0 } else { 1 }), "{spread}");
        }
    }
    // --follow's storm lines count the sleeps the same way.
    for (jitter, storms) in [("full", false), ("none", true)] {
        let log = write(&dir, "follow.jsonl", &rounded_log(300, 0.3, jitter, 1, 1));
        let mut args = vec!["analyze", "--follow", "-"];
        args.extend_from_slice(&fields);
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_herdless"))
            .args(&args)
            .stdin(std::fs::File::open(&log).unwrap())
            .output()
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let lines = text.lines().filter(|l| l.contains("storm forming")).count();
        assert_eq!(
            lines > 0,
            storms,
            "{jitter} jitter: {lines} storm lines\n{text}"
        );
    }
}
