//! `herdless analyze` on logs of every producer: herdless's own JSON events
//! (each with an RFC 3339 `timestamp`), the library's events through
//! `tracing-subscriber`'s JSON layer, another producer's fields by name,
//! `--follow` on a growing file, exit statuses and bad input.

use std::io::Write as _;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

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

#[tokio::test]
async fn every_json_event_of_exec_carries_an_rfc3339_timestamp() {
    let out = herdless(&[
        "exec",
        "--log-format",
        "json",
        "--max-attempts",
        "3",
        "--base",
        "1ms",
        "--task-id",
        "job-7",
        "--",
        "sh",
        "-c",
        "exit 1",
    ])
    .await;
    let events = events(&out);
    assert_eq!(events.len(), 3, "{out:?}");
    for e in &events {
        let ts = e["timestamp"]
            .as_str()
            .unwrap_or_else(|| panic!("no timestamp in {e}"));
        assert!(humantime::parse_rfc3339(ts).is_ok(), "{ts}");
        assert!(ts.ends_with('Z'), "{ts}");
    }
    // The same lines, read back.
    let dir = tempfile::tempdir().unwrap();
    let lines: Vec<String> = events.iter().map(Value::to_string).collect();
    let log = write(&dir, "exec.jsonl", &(lines.join("\n") + "\n"));
    let (_, report) = analyze_json(&["analyze", "--json", &log]).await;
    assert_eq!(report["tasks"], 1);
    assert_eq!(report["give_ups"], 1);
    assert_eq!(report["give_up_reasons"]["max_attempts"], 1);
    assert_eq!(report["attempts_per_task"]["3"], 1);
}

#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn the_librarys_events_through_tracing_subscribers_json_layer_are_read() {
    use herdless::prelude::*;
    let buf = Buf::default();
    let sink = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_writer(move || sink.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        for task in ["a", "b"] {
            let mut left = 2;
            let policy = Policy::builder()
                .base(Duration::from_millis(1))
                .build()
                .unwrap();
            let retry = Retry::builder().policy(policy).task_id(task);
            let r = (|| {
                left -= 1;
                if left >= 0 {
                    Err(std::io::Error::from(std::io::ErrorKind::TimedOut))
                } else {
                    Ok(())
                }
            })
            .retry(retry);
            assert!(r.is_ok());
        }
    });
    let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert!(
            humantime::parse_rfc3339(v["timestamp"].as_str().unwrap()).is_ok(),
            "{line}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let log = write(&dir, "lib.jsonl", &text);
    let (_, report) = analyze_json(&["analyze", "--json", &log]).await;
    assert_eq!(report["tasks"], 2, "{report}\n{text}");
    assert_eq!(report["retries"], 4);
    assert_eq!(report["succeeded"], 2);
    assert_eq!(report["attempts_per_task"]["3"], 2);
}

#[tokio::test]
async fn another_producers_fields_are_read_by_name() {
    // A Python worker logging through a JSON formatter: its own field names,
    // epoch-second times, an asctime-like string, nested extras.
    let mut log = String::new();
    for task in 0..12 {
        for attempt in 1..=2 {
            log.push_str(&format!(
                "{{\"created\":{},\"msg\":\"retry_scheduled\",\"extra\":{{\"job\":\"j{task}\"}},\"try\":{attempt},\"sleep_s\":0}}\n",
                1_000.0 + f64::from(attempt) * 5.0
            ));
        }
        log.push_str(&format!(
            "{{\"created\":1020.0,\"msg\":\"retry_budget_exhausted\",\"extra\":{{\"job\":\"j{task}\"}},\"try\":3,\"reason\":\"max_attempts\"}}\n"
        ));
    }
    log.push_str("not json at all\n{\"created\":1,\"msg\":\"something_else\"}\n");
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "py.jsonl", &log);
    let (code, report) = analyze_json(&[
        "analyze",
        "--json",
        "--time-field",
        "created",
        "--event-field",
        "msg",
        "--task-field",
        "extra.job",
        "--attempt-field",
        "try",
        &path,
    ])
    .await;
    assert_eq!(report["tasks"], 12, "{report}");
    assert_eq!(report["skipped"], 2);
    assert_eq!(report["attempts_per_task"]["3"], 12);
    // Every retry of a wave in one bucket, every give-up in one bucket.
    assert_eq!(check(&report, "spread")["verdict"], "fail");
    assert_eq!(check(&report, "give_up_sync")["verdict"], "fail");
    assert_eq!(check(&report, "give_ups")["verdict"], "fail");
    assert_eq!(report["largest_give_up_bucket"]["share_of_give_ups"], 1.0);
    assert_eq!(code, Some(1));
    // The same log without the field names: nothing is an event, nothing
    // judged.
    let (code, report) = analyze_json(&["analyze", "--json", &path]).await;
    assert_eq!(
        (code, report["events"].as_u64()),
        (Some(4), Some(0)),
        "{report}"
    );
}

#[tokio::test]
async fn lockstep_of_a_fixed_period_loop_is_detected_and_thresholds_are_flags() {
    // 50 tasks retrying every second, in step (the naive fixed loop).
    let mut log = String::new();
    for attempt in 1..=5u32 {
        for task in 0..50 {
            let t = 100.0 + f64::from(attempt - 1) + f64::from(task) * 0.001;
            log.push_str(&format!(
                "{{\"timestamp\":{t},\"event\":\"retry_scheduled\",\"task_id\":\"t{task}\",\"attempt\":{attempt},\"sleep_s\":1.0}}\n"
            ));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "loop.jsonl", &log);
    let (code, report) = analyze_json(&["analyze", "--json", &path]).await;
    assert_eq!(code, Some(1));
    let lock = &report["lockstep"];
    assert_eq!(lock["detected"], true, "{report}");
    assert!(
        (lock["period_s"].as_f64().unwrap() - 1.0).abs() < 0.15,
        "{lock}"
    );
    assert_eq!(check(&report, "lockstep")["verdict"], "fail");
    assert_eq!(report["unfinished_tasks"], 50);
    // Looser thresholds pass the same log.
    let (code, report) = analyze_json(&[
        "analyze",
        "--json",
        "--max-bucket-share",
        "1",
        "--lockstep-spikes",
        "6",
        "--max-amplification",
        "10",
        &path,
    ])
    .await;
    assert_eq!(code, Some(0), "{report}");
}

/// No event, or no task that retried, is its own outcome with its own exit
/// status (4), never "passed": a text log, an empty file and a closed stdin
/// used to print `passed` and exit 0, so a CI gate passed on a broken
/// pipeline.
#[tokio::test]
async fn nothing_to_judge_is_never_passed() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (0..800)
        .map(|i| format!("2026-12-01 10:00:{:02} INFO request {i} served\n", i % 60))
        .collect();
    let text = write(&dir, "app.log", &text);
    let empty = write(&dir, "empty.log", "");
    let first_try = write(
        &dir,
        "terminal.jsonl",
        "{\"timestamp\":1.0,\"event\":\"retry_abandoned_terminal\",\"task_id\":\"a\",\"attempt\":1}\n",
    );
    for (path, why) in [
        (&text, "no retry event in 800 lines"),
        (&empty, "no retry event in 0 lines"),
        (&first_try, "no task retried"),
    ] {
        let out = herdless(&["analyze", path]).await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(4), "{path}: {stdout}");
        assert!(stdout.contains(&format!("NOT JUDGED: {why}")), "{stdout}");
        assert!(!stdout.contains("passed"), "{stdout}");
        let (code, report) = analyze_json(&["analyze", "--json", path]).await;
        assert_eq!(code, Some(4));
        assert_eq!(report["outcome"], "not_judged");
        assert_eq!(report["passed"], false);
    }
    // A closed standard input.
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_herdless"))
        .arg("analyze")
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("NOT JUDGED"));
}

#[tokio::test]
async fn bad_input_is_an_error_not_a_panic() {
    let out = herdless(&["analyze", "/nonexistent/herdless.log"]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read /nonexistent/herdless.log"));
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bin.log");
    let mut f = std::fs::File::create(&p).unwrap();
    f.write_all(b"\xff\xfe\x00garbage\n{\"timestamp\":\"2026-99-01T00:00:00Z\",\"event\":\"retry_scheduled\"}\n").unwrap();
    f.write_all(&vec![b'{'; 2 << 20]).unwrap();
    drop(f);
    let (code, report) = analyze_json(&["analyze", "--json", p.to_str().unwrap()]).await;
    // No event read: nothing judged.
    assert_eq!(code, Some(4));
    assert_eq!(
        (report["lines"].as_u64(), report["skipped"].as_u64()),
        (Some(3), Some(3)),
        "{report}"
    );
    let out = herdless(&["analyze", "--max-bucket-share", "2"]).await;
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test]
async fn follow_prints_a_line_when_a_storm_forms_and_the_report_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("growing.jsonl");
    std::fs::write(&path, "").unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_herdless"))
        .args([
            "analyze",
            "--follow",
            "--window",
            "10s",
            path.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = nix::unistd::Pid::from_raw(child.id().unwrap() as i32);
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    // Spread retries first: no storm.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    for task in 0..20 {
        let t = 1_000.0 + f64::from(task) * 0.3;
        writeln!(f, "{{\"timestamp\":{t},\"event\":\"retry_scheduled\",\"task_id\":\"s{task}\",\"attempt\":1,\"sleep_s\":0.5}}").unwrap();
    }
    f.flush().unwrap();
    // Then 30 tasks failing together, all retrying 1 s later.
    for task in 0..30 {
        let t = 1_010.0 + f64::from(task) * 0.001;
        writeln!(f, "{{\"timestamp\":{t},\"event\":\"retry_scheduled\",\"task_id\":\"w{task}\",\"attempt\":1,\"sleep_s\":1.0}}").unwrap();
    }
    f.flush().unwrap();
    let line = tokio::time::timeout(Duration::from_secs(30), out.next_line())
        .await
        .expect("a storm line within 30 s")
        .unwrap()
        .expect("a line");
    assert!(line.contains("storm forming"), "{line}");
    assert!(
        line.contains("1970-01-01T00:16:51.0"),
        "the bucket the retries go out in: {line}"
    );
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let mut rest = Vec::new();
    while let Ok(Some(l)) = tokio::time::timeout(Duration::from_secs(30), out.next_line())
        .await
        .unwrap()
    {
        rest.push(l);
    }
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .unwrap()
        .unwrap();
    let rest = rest.join("\n");
    assert!(rest.contains("tasks 50"), "{rest}");
    assert!(rest.contains("FAIL spread"), "{rest}");
    assert_eq!(status.code(), Some(1), "{rest}");
}

/// A requeue answer (the server held the call and put it back unprocessed)
/// is counted as such: not a skipped line, not a retry, not an attempt.
#[tokio::test]
async fn requeued_events_are_counted_not_skipped_and_not_retries() {
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        r#"{"timestamp":"2026-01-01T00:00:00Z","event":"retry_requeued","task_id":"t-1","attempt":1,"sleep_s":10.0,"requeues":1,"elapsed_s":10.0}"#,
        r#"{"timestamp":"2026-01-01T00:00:20Z","event":"retry_requeued","task_id":"t-1","attempt":1,"sleep_s":10.0,"requeues":2,"elapsed_s":20.0}"#,
        r#"{"timestamp":"2026-01-01T00:00:31Z","event":"retry_succeeded","task_id":"t-1","attempt":1,"elapsed_s":31.0}"#,
    ];
    let log = write(&dir, "requeued.jsonl", &(lines.join("\n") + "\n"));
    let (_, report) = analyze_json(&["analyze", "--json", &log]).await;
    assert_eq!(report["requeued"], 2, "{report}");
    assert_eq!(report["skipped"], 0, "{report}");
    assert_eq!(report["events"], 3, "{report}");
    assert_eq!(report["retries"], 0, "{report}");
    assert_eq!(report["succeeded"], 1, "{report}");
    assert_eq!(report["attempts_per_task"]["1"], 1, "{report}");
}
