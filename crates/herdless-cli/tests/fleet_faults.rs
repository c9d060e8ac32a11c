//! `herdless fleet` over real sockets on 127.0.0.1 when things go wrong:
//! servers that reset, hang or stall a body, and a fleet interrupted by a
//! signal. Every worker still lands in exactly one count.
//!
//! The stub runs in-process (the library's `stub::Stub`, built from the same
//! flags the binary parses) on port 0; `fleet` runs as the built binary.

use std::time::Duration;

use serde_json::Value;

#[allow(dead_code)] // each test binary uses part of it
mod support;
use support::*;

/// A server that accepts and immediately closes, and one that accepts and never
/// answers: every worker still lands in exactly one count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_loses_no_worker_when_the_server_resets_or_hangs() {
    let resets = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let reset_url = format!("http://{}/", resets.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((s, _)) = resets.accept().await {
            drop(s);
        }
    });
    let hangs = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hang_url = format!("http://{}/", hangs.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = hangs.accept().await {
            held.push(s);
        }
    });
    for url in [&reset_url, &hang_url] {
        let out = herdless(&[
            "fleet",
            "--workers",
            "40",
            "--base",
            "10ms",
            "--max-attempts",
            "3",
            "--timeout",
            "300ms",
            "--json",
            "--log-format",
            "json",
            url,
        ])
        .await;
        assert_eq!(out.status.code(), Some(4), "{out:?}");
        let r = fleet_json(&out);
        let sum = r["succeeded"].as_u64().unwrap()
            + r["terminal"].as_u64().unwrap()
            + r["exhausted"].as_u64().unwrap();
        assert_eq!(sum, 40, "{r}");
        assert_eq!(r["exhausted"], 40, "{r}");
        assert_eq!(r["calls"], 120, "{r}");
    }
}

/// A call succeeds when the whole response arrived, not its headers: a
/// server that sends headers promising 1,000 bytes and then stalls makes
/// every attempt time out at `--timeout` (counted in `timed_out_attempts`)
/// and every worker exhaust its attempts. Before, each call was reported
/// `succeeded` as soon as the headers came, in a few milliseconds. A body
/// that does arrive is read to its end (`body_bytes`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_stalls_after_the_headers_is_a_timed_out_attempt() {
    use raw_server::Reply;
    let (stalls, _) = raw_server::serve(|_| Reply::Stall { promised: 1_000 }).await;
    let args = |url: &str| {
        let v = [
            "fleet",
            "--workers",
            "5",
            "--base",
            "10ms",
            "--max-attempts",
            "2",
            "--timeout",
            "300ms",
            "--json",
            "--quiet",
            url,
        ];
        v.map(str::to_owned)
    };
    let run = |url: String| async move {
        let a = args(&url);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        fleet_json(&herdless(&a).await)
    };
    let r = run(stalls).await;
    assert_eq!(
        (r["succeeded"].as_u64(), r["exhausted"].as_u64()),
        (Some(0), Some(5)),
        "{r}"
    );
    assert_eq!(r["calls"], 10, "{r}");
    assert_eq!(r["timed_out_attempts"], 10, "{r}");
    assert_eq!(r["body_bytes"], 0, "{r}");
    // Each attempt lasted its timeout: two attempts and a short sleep.
    assert!(r["duration_s"].as_f64().unwrap() >= 0.6, "{r}");
    let body = raw_server::noise(100_000);
    let (whole, _) = raw_server::serve(move |_| Reply::Body {
        body: body.clone(),
        chunked: true,
    })
    .await;
    let r = run(whole).await;
    assert_eq!(r["succeeded"], 5, "{r}");
    assert_eq!(
        (r["timed_out_attempts"].as_u64(), r["body_bytes"].as_u64()),
        (Some(0), Some(500_000)),
        "{r}"
    );
}

/// Interrupting a fleet keeps the run: the partial report is printed (marked
/// interrupted, every worker counted in exactly one outcome) and the exit is
/// 128 + the signal, SIGHUP's included (a closed terminal used to kill the
/// fleet with no report). The stub fails everything for an hour, so every call is
/// still retrying; the signal is sent once every worker has scheduled a retry
/// (its `retry_scheduled` event on fleet's stderr).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_fleet_prints_its_partial_report_and_exits_128_plus_the_signal() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
    let (stub, url) = start_stub(&["--outage", "1h"]);
    for (signal, json, code) in [
        (Signal::SIGTERM, true, 143),
        (Signal::SIGINT, false, 130),
        (Signal::SIGHUP, true, 129),
    ] {
        let workers = 8;
        let mut args = vec![
            "fleet".to_owned(),
            "--workers".into(),
            workers.to_string(),
            "--base".into(),
            "200ms".into(),
            "--max-attempts".into(),
            "1000".into(),
            "--max-elapsed".into(),
            "1h".into(),
            "--log-format".into(),
            "json".into(),
        ];
        if json {
            args.push("--json".into());
        }
        args.push(url.clone());
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_herdless"))
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let reading = tokio::spawn(async move {
            let mut s = String::new();
            stdout.read_to_string(&mut s).await.unwrap();
            s
        });
        // Readiness: each worker has failed once and is sleeping before a retry.
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut sleeping = std::collections::BTreeSet::new();
        while sleeping.len() < workers {
            let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
                .await
                .expect("retry events within 30 s")
                .unwrap()
                .expect("stderr open until the fleet ends");
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                if v["event"] == "retry_scheduled" {
                    sleeping.insert(v["task_id"].as_str().unwrap().to_owned());
                }
            }
        }
        let drain = tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let pid = Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
        kill(pid, signal).unwrap();
        let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
            .await
            .expect("the fleet ends promptly on a signal")
            .unwrap();
        let out = reading.await.unwrap();
        drain.await.unwrap();
        assert_eq!(status.code(), Some(code), "{signal:?}: {out}");
        if json {
            let v: Value = serde_json::from_str(&out).expect("one JSON report");
            assert_eq!(v["interrupted"], true, "{v}");
            assert_eq!(v["workers"], workers);
            let n = |k: &str| v[k].as_u64().unwrap();
            assert_eq!(
                n("succeeded") + n("terminal") + n("exhausted") + n("interrupted_workers"),
                n("workers"),
                "every worker in exactly one outcome: {v}"
            );
            assert_eq!(n("interrupted_workers"), workers as u64, "{v}");
            assert!(n("calls") >= workers as u64, "{v}");
        } else {
            assert!(out.starts_with("interrupted: partial report"), "{out}");
            assert!(out.contains(&format!("interrupted  {workers}")), "{out}");
        }
    }
    assert!(stub.stats().total >= 16, "both fleets reached the stub");
}
