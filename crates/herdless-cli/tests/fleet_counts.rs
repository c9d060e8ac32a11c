//! What `herdless fleet` counts as sent is what reached the server, over
//! real sockets: no call counted that was never sent (a throttled call
//! whose time ran out at the gate), none lost that was (an interrupted
//! fleet's requests in flight).

use std::time::Duration;

use serde_json::Value;

#[allow(dead_code)] // each test binary uses part of it
mod support;
use support::raw_server::{Reply, serve};
use support::{fleet_json, herdless, start_stub};

/// A throttled fleet against an endpoint down for an hour: the throttle
/// probes, the workers wait at its gate, and a worker whose time runs out
/// there sends nothing. Every call the fleet counts reached the stub, none
/// timed out, and the give-ups are `max_elapsed` (it used to count 500
/// calls and 488 timeouts, 488 connections opened and dropped at 4.95 s,
/// while the stub saw 24 to 36 requests).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_fleet_counts_no_call_it_did_not_send() {
    let (stub, url) = start_stub(&["--outage", "1h"]);
    let out = herdless(&[
        "fleet",
        "--workers",
        "500",
        "--throttle",
        "--max-elapsed",
        "5s",
        "--timeout",
        "2s",
        "--seed",
        "1",
        "--json",
        "-q",
        &url,
    ])
    .await;
    let r = fleet_json(&out);
    let n = |k: &str| r[k].as_u64().unwrap();
    let seen = stub.stats().total as u64;
    assert_eq!(
        n("calls"),
        seen,
        "the fleet's calls are the stub's arrivals: {r}"
    );
    assert!(seen < 100, "the throttle let few go: {seen}");
    assert_eq!(n("timed_out_attempts"), 0, "{r}");
    assert_eq!(n("exhausted"), 500, "{r}");
    assert_eq!(
        r["give_ups"]["max_elapsed"],
        500 - r["give_ups"]["max_attempts"].as_u64().unwrap()
    );
    let peak = r["peak_100ms"]["attempts"].as_u64().unwrap();
    assert!(
        peak < 50,
        "no burst of phantom attempts at the limit: {peak}"
    );
}

/// An interrupted fleet counts the requests it has in flight: 300 workers
/// whose responses stall mid-body are interrupted, and the report's calls
/// are the 300 requests the server read (it said 0).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_fleet_counts_its_requests_in_flight() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    // The server tells when it has read the 300th request.
    let all_read = std::sync::Arc::new(tokio::sync::Notify::new());
    let told = all_read.clone();
    let (url, _) = serve(move |n| {
        if n + 1 == 300 {
            told.notify_one();
        }
        Reply::Stall { promised: 100 }
    })
    .await;
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_herdless"))
        .args([
            "fleet",
            "--workers",
            "300",
            "--timeout",
            "1h",
            "--json",
            "-q",
            &url,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    tokio::time::timeout(Duration::from_secs(60), all_read.notified())
        .await
        .expect("300 requests within 60 s");
    let pid = Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    kill(pid, Signal::SIGTERM).unwrap();
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("the fleet ends promptly on SIGTERM")
        .unwrap();
    assert_eq!(out.status.code(), Some(143));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["interrupted"], true, "{r}");
    assert_eq!(r["interrupted_workers"], 300, "{r}");
    assert_eq!(r["calls"], 300, "every request sent is counted: {r}");
}
