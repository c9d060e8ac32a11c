//! `herdless stub` over real sockets on 127.0.0.1: its port, stats, flags,
//! outage, capacity and pushback.
//!
//! The stub runs in-process (the library's `stub::Stub`, built from the same
//! flags the binary parses) on port 0; `get` and `fleet` run as the built
//! binary. Time-dependent checks use small bases and bounds that hold on a
//! loaded 2-core machine.

use std::time::Duration;

use herdless_cli::testing::ArrivalOutcome;
use herdless_sim::metrics::Timeline;
use serde_json::Value;

#[allow(dead_code)] // each test binary uses part of it
mod support;
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stub_binary_announces_its_port_serves_stats_and_stops_on_sigterm() {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_herdless"))
        .args(["stub", "--fail-first", "1", "--retry-after", "3"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next_line().await.unwrap().unwrap();
    let port: u16 = first
        .strip_prefix("listening on 127.0.0.1:")
        .unwrap_or_else(|| panic!("first line: {first:?}"))
        .parse()
        .unwrap();
    assert_ne!(port, 0);
    let client = http_client();
    let base = format!("http://127.0.0.1:{port}");
    let r = client
        .get(format!("{base}/x"))
        .header("X-Worker-Id", "9")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "3");
    let r = client
        .get(format!("{base}/x"))
        .header("X-Worker-Id", "9")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let stats: Value = client
        .get(format!("{base}/stats"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap();
    assert_eq!(stats["total"], 2);
    assert_eq!(stats["arrivals"][0]["worker"], "9");
    assert_eq!(stats["arrivals"][0]["status"], 503);
    assert_eq!(stats["arrivals"][1]["status"], 200);
    assert!(
        stats["arrivals"][1]["t_s"].as_f64().unwrap()
            >= stats["arrivals"][0]["t_s"].as_f64().unwrap()
    );
    drop(client); // close keep-alive connections
    let pid = child.id().unwrap().to_string();
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("the stub stops on SIGTERM")
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stub_rejects_bad_flags_with_exit_2() {
    for bad in [
        vec!["stub", "--fail-status", "200"],
        vec!["stub", "--capacity", "0"],
        vec!["stub", "--outage", "soon"],
    ] {
        let out = herdless(&bad).await;
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {out:?}");
    }
}

/// A flag that cannot apply is refused (exit 2), naming what it needs,
/// rather than accepted and ignored; an empty Retry-After is never sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flags_that_cannot_apply_are_refused_naming_what_they_need() {
    let url = "http://127.0.0.1:1/";
    for (bad, needs) in [
        (vec!["stub", "--horizon", "5s"], "--capacity"),
        (
            vec![
                "stub",
                "--capacity",
                "10",
                "--pushback",
                "off",
                "--horizon",
                "5s",
            ],
            "pushback",
        ),
        (vec!["stub", "--retry-after", ""], "--retry-after"),
        (vec!["stub", "--capacity-estimate", "2"], "--capacity"),
        (
            vec!["stub", "--capacity", "10", "--outage-end", "known"],
            "--outage",
        ),
        (
            vec!["stub", "--capacity", "10", "--capacity-estimate", "0"],
            "--capacity-estimate",
        ),
        (
            vec!["fleet", "--workers", "2", "--urgent-quota", "3", url],
            "--urgent",
        ),
        (
            vec!["fleet", "--workers", "2", "--urgent-workers", "1", url],
            "--urgent",
        ),
        (
            vec!["fleet", "--workers", "2", "--probe-wait", "1s", url],
            "--breaker",
        ),
    ] {
        let out = herdless(&bad).await;
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needs), "{bad:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{bad:?}: nothing ran");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stub_outage_fails_everything_until_it_ends() {
    let (stub, url) = start_stub(&["--outage", "1s", "--retry-after", "soon"]);
    let out = herdless(&[
        "get",
        "--base",
        "50ms",
        "--cap",
        "100ms",
        "--max-attempts",
        "50",
        "--log-format",
        "json",
        &url,
    ])
    .await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let a = stub.stats().arrivals;
    let (last, rest) = a.split_last().unwrap();
    assert_eq!(last.status, 200);
    assert!(last.t_s >= 1.0, "served only after the outage: {last:?}");
    // (The get process starts well within the 1 s outage, so `rest` is not
    // empty in practice; its content is what is asserted.)
    assert!(
        rest.iter().all(|x| x.status == 503 && x.t_s < 1.0),
        "{rest:?}"
    );
    // An unusable Retry-After ("soon") falls back to the jitter.
    assert!(
        events(&out)
            .iter()
            .filter(|e| e["event"] == "retry_scheduled")
            .all(|e| e["honored_retry_after"] == false)
    );
}

/// The baseline capacity (`--pushback off`): the simulator's token bucket on
/// the stub's clock, N tokens per second, a burst of N / 10 (at least 1),
/// empty when the stub starts; rejections without a Retry-After.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stub_capacity_is_a_token_bucket_empty_at_start() {
    let (stub, url) = start_stub(&["--capacity", "5", "--pushback", "off"]);
    // Waves at about 0, 0.5, 1.5 and 3.5 s: the later ones find tokens.
    let out = herdless(&[
        "fleet",
        "--workers",
        "20",
        "--jitter",
        "none",
        "--base",
        "500ms",
        "--max-attempts",
        "4",
        "--json",
        "--log-format",
        "json",
        &url,
    ])
    .await;
    let r = fleet_json(&out);
    assert_eq!(
        r["succeeded"].as_u64().unwrap() + r["exhausted"].as_u64().unwrap(),
        20,
        "{r}"
    );
    assert!(r["succeeded"].as_u64().unwrap() >= 1, "{r}");
    let arrivals = stub.stats().arrivals;
    let served: Vec<f64> = arrivals
        .iter()
        .filter(|a| a.status == 200)
        .map(|a| a.t_s)
        .collect();
    assert_eq!(served.len() as u64, r["succeeded"].as_u64().unwrap());
    // Empty at start: the k-th admission comes no earlier than k / 5 s.
    for (k, t) in served.iter().enumerate() {
        assert!(
            (k + 1) as f64 <= 5.0 * t + 1e-9,
            "admission {} at {t} s",
            k + 1
        );
    }
    // At most burst + rate · 1 s = 6 in any one-second window.
    let t: Timeline = served.iter().map(|s| (s * 1e9).round() as u64).collect();
    assert!(t.peak(Duration::from_secs(1)).count <= 6, "{served:?}");
    assert!(
        arrivals
            .iter()
            .filter(|a| a.status != 200)
            .all(|a| a.status == 503)
    );
}

/// `--capacity` with the static allocator told the outage's end: each
/// rejection carries its own slot, `Retry-After-Ms` one slot (1 / capacity)
/// after the previous one and `Retry-After` the same slot in whole seconds
/// rounded up; during `--outage` the slots start at the outage's end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stub_pushback_gives_each_rejection_its_own_slot() {
    let (stub, url) = start_stub(&[
        "--capacity",
        "10",
        "--outage",
        "1s",
        "--pushback",
        "static",
        "--outage-end",
        "known",
    ]);
    let client = http_client();
    let mut slots = Vec::new();
    for _ in 0..5 {
        let r = client.get(&url).send().await.unwrap();
        assert_eq!(r.status(), 503);
        let ms: u64 = r.headers()["retry-after-ms"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        let secs: u64 = r.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(secs, ms.div_ceil(1000).max(1));
        slots.push(ms);
    }
    let arrivals = stub.stats().arrivals;
    assert!(arrivals.iter().all(|a| a.status == 503 && a.t_s < 1.0));
    // Slot k is at 1 s + k · 100 ms on the stub's clock: the told delay plus
    // the arrival time lands there (to the millisecond the header rounds up to).
    for (k, (ms, a)) in slots.iter().zip(&arrivals).enumerate() {
        let slot_at = a.t_s + *ms as f64 / 1000.0;
        let expected = 1.0 + 0.1 * k as f64;
        assert!(
            (slot_at - expected).abs() <= 0.0015,
            "rejection {k}: told {ms} ms at {:.4} s, slot at {slot_at:.4} s, expected {expected} s",
            a.t_s
        );
    }
}

/// `--capacity` with the default, adaptive pushback, told nothing: the
/// first requests reach the stub's handler (down), each refusal is answered
/// with a slot; after five the allocator holds callers at least 2 s without
/// passing them on. Every 503 carries both headers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stub_adaptive_pushback_finds_the_outage_and_holds_callers() {
    // 100/s: a burst of 10 admitted at once, so five refusals come quickly.
    let (stub, url) = start_stub(&["--capacity", "100", "--outage", "5s"]);
    let client = http_client();
    let mut told = Vec::new();
    for k in 0..8 {
        let r = client
            .get(&url)
            .header("x-worker-id", k.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 503);
        let ms: u64 = r.headers()["retry-after-ms"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(r.headers().contains_key("retry-after"));
        told.push(ms);
    }
    let arrivals = stub.stats().arrivals;
    assert!(arrivals.iter().all(|a| a.status == 503 && a.t_s < 5.0));
    // The first four: refused by the handler, each a slot at the rate while
    // the refusals have lasted less than the first one's slot, held 2 s at
    // least once they outlast it (a loaded machine may take that long). From
    // the fifth on (the fifth refusal found the outage): held 2 s at least.
    let first_slot = arrivals[0].t_s + told[0] as f64 / 1e3;
    assert!(told[0] < 1_000, "{told:?}");
    for k in 1..4 {
        let held = arrivals[k].t_s >= first_slot;
        assert_eq!(told[k] >= 1_900, held, "{k}: {told:?} {arrivals:?}");
    }
    assert!(told[4..].iter().all(|&ms| ms >= 1_900), "{told:?}");
}

/// A lone `herdless get` against the adaptive stub (the default
/// `--pushback on`) in an outage it was told nothing about (`--outage 3s
/// --capacity 500`, the default policy: 6 attempts): the server must not
/// spend the caller's attempts. Before, each of the first five refusals came
/// with a 2 ms slot and the sixth attempt, after the 2 s hold, was refused
/// too: exhausted in 2.1 s. Now the second refusal (2 ms after the first, at
/// its slot) outlasts the first slot and the caller is held max(2 s, the
/// refusals' age): attempts at about 0, 0.002, 2.0 (refused: before 3 s) and
/// 4.0 s (each wait plus up to 10 % spread), served: 4 attempts. Never more
/// (a machine lagging 0.8 s would only serve it at the third), and every
/// wait after the first at least 2 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_get_in_an_unknown_outage_succeeds_after_it_with_few_attempts() {
    let (stub, url) = start_stub(&["--outage", "3s", "--capacity", "500"]);
    let out = herdless(&["get", "--log-format", "json", &url]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(out.stdout, b"ok\n");
    let arrivals = stub.stats().arrivals;
    let codes = statuses(&arrivals);
    assert!(codes.len() <= 4, "{codes:?}: {stderr}");
    assert_eq!(codes.last(), Some(&200));
    assert!(arrivals.last().unwrap().t_s >= 3.0, "{arrivals:?}");
    let sleeps: Vec<f64> = events(&out)
        .iter()
        .filter(|e| e["event"] == "retry_scheduled")
        .map(|e| e["sleep_s"].as_f64().unwrap())
        .collect();
    assert!(sleeps[1..].iter().all(|s| *s >= 2.0), "{sleeps:?}");
}

/// `/stats` keeps only the most recent arrivals (a ring), so a long run's
/// memory stays bounded, while `total` still counts every arrival.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stub_stats_keep_the_last_arrivals_and_count_all() {
    use herdless_cli::testing::{StubOptions, start_stub};
    let options = StubOptions {
        keep: 5,
        ..StubOptions::default()
    };
    let stub = start_stub(&[], options).unwrap();
    let base = format!("http://{}", stub.addr());
    let client = http_client();
    for i in 0..8 {
        let r = client
            .get(format!("{base}/device"))
            .header("X-Worker-Id", i.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    let stats: Value = client
        .get(format!("{base}/stats"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap();
    assert_eq!(stats["total"], 8);
    assert_eq!(stats["dropped"], 3);
    let workers: Vec<&str> = stats["arrivals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["worker"].as_str().unwrap())
        .collect();
    assert_eq!(workers, ["3", "4", "5", "6", "7"], "the last 5, in order");
    assert_eq!(
        herdless_cli::testing::ARRIVALS_KEPT,
        100_000,
        "as documented"
    );
}

/// `--hold-for`: during an outage whose end the allocator is told, a request
/// is held open instead of answered, and let through when the outage ends:
/// its client sees one `200`, no `503` and no `Retry-After`. A client that
/// hangs up while held leaves the hold, and `/stats` records it once, as
/// abandoned (status 499), beside the one that was answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stub_hold_answers_a_held_request_when_the_outage_ends() {
    let (stub, url) = start_stub(&[
        "--capacity",
        "100",
        "--outage",
        "1500ms",
        "--outage-end",
        "known",
        "--hold-for",
        "8s",
    ]);
    let client = http_client();
    // A caller that hangs up while held: its request leaves the hold.
    let gone = tokio::time::timeout(
        Duration::from_millis(200),
        client.get(&url).header("x-worker-id", "gone").send(),
    )
    .await;
    assert!(gone.is_err(), "held, not answered: {gone:?}");
    let start = std::time::Instant::now();
    let kept = client
        .get(&url)
        .header("x-worker-id", "kept")
        .send()
        .await
        .unwrap();
    assert_eq!(kept.status(), 200);
    assert!(!kept.headers().contains_key("retry-after"));
    let stats = stub.stats();
    assert_eq!(stats.held, 0, "nothing is held after the end");
    // Both arrivals recorded once: the one that hung up as abandoned (when
    // it left, after about 200 ms), the kept one when it was answered, at
    // or after the outage's end (its record says how long it was held).
    let a = &stats.arrivals;
    assert_eq!((stats.total, stats.abandoned), (2, 1), "{a:?}");
    assert_eq!(a[0].worker.as_deref(), Some("gone"));
    assert_eq!(
        (a[0].status, a[0].outcome),
        (499, ArrivalOutcome::Abandoned)
    );
    assert!(a[0].held_s.unwrap() < 1.5, "recorded when it left: {a:?}");
    assert_eq!(a[1].worker.as_deref(), Some("kept"));
    assert_eq!((a[1].status, a[1].outcome), (200, ArrivalOutcome::Answered));
    let held = a[1].held_s.expect("it was held");
    assert!(a[1].t_s < 1.5 && a[1].t_s + held >= 1.5, "{a:?}");
    assert!(
        start.elapsed() < Duration::from_secs(8),
        "released at the end, not at the hold's limit"
    );
}
