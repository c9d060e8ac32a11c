//! `herdless get`, `stub` and `fleet` over real sockets on 127.0.0.1.
//!
//! The stub runs in-process (the library's `stub::Stub`, built from the same
//! flags the binary parses) on port 0; `get` and `fleet` run as the built
//! binary. Time-dependent checks use small bases and bounds that hold on a
//! loaded 2-core machine.

use std::collections::BTreeMap;
use std::process::Output;
use std::time::Duration;

use herdless_cli::stub::ArrivalRecord;
use herdless_sim::metrics::{Timeline, BUCKET};
use serde_json::Value;

mod support;
use support::start_stub;

/// The busiest 100 ms window of `times_s` (seconds since the stub started):
/// its count and start, measured as `herdless fleet` measures its own.
fn busiest_100ms(times_s: &[f64]) -> (u64, f64) {
    let t: Timeline = times_s.iter().map(|s| (s * 1e9).round() as u64).collect();
    let p = t.peak(BUCKET);
    (p.count, p.start_ns as f64 / 1e9)
}

async fn herdless(args: &[&str]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_herdless"))
        .args(args)
        .output()
        .await
        .unwrap()
}

/// The JSON retry events on stderr (other lines are ignored).
fn events(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("event").is_some())
        .collect()
}

fn statuses(arrivals: &[ArrivalRecord]) -> Vec<u16> {
    arrivals.iter().map(|a| a.status).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_401_makes_exactly_one_request() {
    let (stub, url) = start_stub(&["--fail-first", "1", "--fail-status", "401"]);
    let out = herdless(&["get", "--base", "10ms", "--log-format", "json", &url]).await;
    assert_eq!(out.status.code(), Some(3), "terminal exit code");
    assert!(out.stdout.is_empty());
    assert_eq!(statuses(&stub.stats().arrivals), vec![401]);
    let ev = events(&out);
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(ev[0]["event"], "retry_abandoned_terminal");
    assert_eq!(ev[0]["attempt"], 1);
    assert_eq!(ev[0]["classification"], "terminal");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_503_503_200_succeeds_on_the_third_with_events() {
    let (stub, url) = start_stub(&["--fail-first", "2"]);
    let out = herdless(&[
        "get",
        "--base",
        "20ms",
        "--log-format",
        "json",
        "--task-id",
        "scan-7",
        &url,
    ])
    .await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(out.stdout, b"ok\n");
    assert_eq!(statuses(&stub.stats().arrivals), vec![503, 503, 200]);
    let ev = events(&out);
    let names: Vec<&str> = ev.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        vec!["retry_scheduled", "retry_scheduled", "retry_succeeded"]
    );
    assert_eq!(ev[0]["attempt"], 1);
    assert_eq!(ev[1]["attempt"], 2);
    assert_eq!(ev[2]["attempt"], 3);
    for e in &ev {
        assert_eq!(e["task_id"], "scan-7");
        assert!(e["elapsed_s"].is_f64());
    }
    // Full jitter: the first retry waits at most the base, the second twice it.
    assert!(ev[0]["sleep_s"].as_f64().unwrap() <= 0.020);
    assert!(ev[1]["sleep_s"].as_f64().unwrap() <= 0.040);
    assert_eq!(ev[0]["honored_retry_after"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_2_is_honored_within_the_spread() {
    let (stub, url) = start_stub(&["--fail-first", "1", "--retry-after", "2"]);
    let out = herdless(&["get", "--base", "10ms", "--log-format", "json", &url]).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let ev = events(&out);
    assert_eq!(ev[0]["event"], "retry_scheduled");
    assert_eq!(ev[0]["honored_retry_after"], true);
    let sleep = ev[0]["sleep_s"].as_f64().unwrap();
    // The default spread is +0 % to +10 %: never earlier than asked.
    assert!((2.0..=2.2).contains(&sleep), "slept {sleep}");
    // The server saw the retry about 2 s later (upper bound loose for a loaded machine).
    let a = stub.stats().arrivals;
    assert_eq!(statuses(&a), vec![503, 200]);
    let gap = a[1].t_s - a[0].t_s;
    assert!((2.0..3.5).contains(&gap), "gap {gap}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_retry_after_is_clamped() {
    let (stub, url) = start_stub(&["--fail-first", "2", "--retry-after", "99999999999999999999"]);
    let out = herdless(&[
        "get",
        "--base",
        "10ms",
        "--max-retry-after",
        "300ms",
        "--log-format",
        "json",
        &url,
    ])
    .await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let ev = events(&out);
    for e in ev.iter().filter(|e| e["event"] == "retry_scheduled") {
        assert_eq!(e["honored_retry_after"], true);
        let sleep = e["sleep_s"].as_f64().unwrap();
        // Clamped to 300 ms, then spread by +0 to 10 %: never below the clamp.
        assert!((0.3..=0.33 + 1e-9).contains(&sleep), "slept {sleep}");
    }
    assert_eq!(statuses(&stub.stats().arrivals), vec![503, 503, 200]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_date_in_the_past_falls_back_to_jitter() {
    let (stub, url) = start_stub(&[
        "--fail-first",
        "1",
        "--retry-after",
        "Wed, 21 Oct 2015 07:28:00 GMT",
    ]);
    let out = herdless(&["get", "--base", "50ms", "--log-format", "json", &url]).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let ev = events(&out);
    assert_eq!(ev[0]["event"], "retry_scheduled");
    assert_eq!(ev[0]["honored_retry_after"], false);
    assert_eq!(ev[0]["sleep_s"], ev[0]["computed_jitter_s"]);
    assert!(ev[0]["sleep_s"].as_f64().unwrap() <= 0.05);
    assert_eq!(statuses(&stub.stats().arrivals), vec![503, 200]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_exhausts_the_budget_with_exit_4_and_rejects_bad_input_with_2() {
    let (stub, url) = start_stub(&["--fail-first", "100"]);
    let out = herdless(&[
        "get",
        "--base",
        "5ms",
        "--max-attempts",
        "3",
        "--log-format",
        "json",
        &url,
    ])
    .await;
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert_eq!(stub.stats().total, 3);
    let last = events(&out).pop().unwrap();
    assert_eq!(last["event"], "retry_budget_exhausted");
    assert_eq!(last["reason"], "max_attempts");
    for bad in [
        vec!["get", "ftp://127.0.0.1/"],
        vec!["get", "--header", "nocolon", &url],
        vec!["get", "--base", "soon", &url],
        vec!["get", "--cap", "1ms", "--base", "1s", &url],
    ] {
        let out = herdless(&bad).await;
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {out:?}");
        assert!(!out.stderr.is_empty());
    }
}

/// `herdless ARGS` under `ulimit -n limit` (soft and hard, for that process
/// only: the test binary keeps its own limit).
async fn herdless_limited(limit: u32, args: &[&str]) -> Output {
    tokio::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -n {limit} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_herdless"))
        .args(args)
        .output()
        .await
        .unwrap()
}

/// "Too many open files" is a local, transient shortage: a `get` that cannot
/// open its socket retries instead of giving up after one attempt. Scans the
/// limits around the one where the runtime starts but the socket cannot be
/// opened (where exactly depends on the descriptors the process inherits).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_retries_when_out_of_file_descriptors() {
    let (_stub, url) = start_stub(&[]);
    let mut exercised = false;
    for limit in 3..=24 {
        let out = herdless_limited(
            limit,
            &[
                "get",
                "--base",
                "1ms",
                "--max-attempts",
                "2",
                "--log-format",
                "json",
                &url,
            ],
        )
        .await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let names: Vec<String> = events(&out)
            .iter()
            .map(|e| e["event"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert!(
            !names.iter().any(|n| n == "retry_abandoned_terminal"),
            "ulimit -n {limit}: out of descriptors is not terminal: {stderr}"
        );
        if stderr.contains("Too many open files") && names.iter().any(|n| n == "retry_scheduled") {
            assert_eq!(out.status.code(), Some(4), "ulimit -n {limit}: {stderr}");
            exercised = true;
        }
        if out.status.success() {
            break;
        }
    }
    assert!(exercised, "no limit made the socket fail");
}

/// The retries (every arrival after a worker's first) as seen by the server:
/// per worker, sorted by time.
fn retries_by_worker(arrivals: &[ArrivalRecord]) -> BTreeMap<String, Vec<f64>> {
    let mut by: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for a in arrivals {
        by.entry(a.worker.clone().unwrap_or_default())
            .or_default()
            .push(a.t_s);
    }
    for v in by.values_mut() {
        v.sort_by(f64::total_cmp);
        v.remove(0); // the first try
    }
    by
}

fn fleet_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

/// Measure spread, not just the mean: 200 workers against `--fail-first 3`.
///
/// Full jitter, base b = 0.5 s, multiplier 2: worker w's retries arrive at
/// S1 = U1, S2 = U1 + U2, S3 = U1 + U2 + U3 after its first try, with
/// U1 ~ U(0, 0.5), U2 ~ U(0, 1), U3 ~ U(0, 2) independent. Their densities are
/// at most f1 = 1/0.5 = 2 /s, f2 ≤ 1/1 = 1 /s (a trapezoid; below 0.5 s it is
/// 2t), f3 ≤ 1/2 /s (and t²/2 below 0.5 s). A 100 ms window [t, t + 0.1]
/// therefore holds in expectation at most
///   N · ∫ (f1 + f2 + f3) ≤ N · 0.1 · (2 + 1 + 0.5) = 0.35 N,
/// and the tightest window, [0.4, 0.5], holds 0.2 + 0.09 + 0.01 ≈ 0.30 N
/// (60 of 200 retries). The count is a sum of independent indicators with
/// variance ≤ 60, σ ≈ 7.7; the assertion allows 0.45 N = 90, the expectation
/// bound 0.35 N plus about 2.6 σ, or the tight mean plus 3.9 σ — while the
/// no-jitter fleet puts 1.0 N in one window three times. The seed is fixed so
/// the draws are reproducible; only the machine's timing varies, and timing
/// noise only smears retries further apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_workers_full_jitter_spread_and_no_jitter_spikes() {
    const N: usize = 200;

    // Full jitter, base 0.5 s.
    let (stub, url) = start_stub(&["--fail-first", "3"]);
    let out = herdless(&[
        "fleet",
        "--workers",
        "200",
        "--jitter",
        "full",
        "--base",
        "500ms",
        "--seed",
        "42",
        "--json",
        "--log-format",
        "json",
        &url,
    ])
    .await;
    let report = fleet_json(&out);
    assert_eq!(report["succeeded"], N, "{report}");
    assert_eq!(report["calls"], 4 * N);
    let retries = retries_by_worker(&stub.stats().arrivals);
    assert_eq!(retries.len(), N);
    let mut all: Vec<f64> = retries.values().flatten().copied().collect();
    all.sort_by(f64::total_cmp);
    assert_eq!(all.len(), 3 * N);
    let (peak, at) = busiest_100ms(&all);
    let share = peak as f64 / N as f64;
    eprintln!("full jitter: busiest 100 ms window holds {peak} retries ({share:.2} of the fleet) at {at:.3} s");
    assert!(
        share <= 0.45,
        "full jitter piled {peak} retries into 100 ms at {at:.3} s"
    );
    // The fleet's own view agrees.
    assert!(
        report["peak_100ms_retries"]["share_of_fleet"]
            .as_f64()
            .unwrap()
            <= 0.45
    );

    // No jitter, base 0.3 s: worker w retries exactly 0.3, 0.6 and 1.2 s after
    // each failure, i.e. 0.3, 0.9 and 2.1 s after its first try. Every worker
    // computes the same delays, so each retry wave is a copy of the fleet's own
    // start burst: a spike holding the whole fleet. On a fast machine a burst
    // fits in 100 ms; a loaded 2-core debug build needs up to ~200 ms just to
    // serve 200 requests, so "spike" is checked robustly: splitting the retries
    // at every silence of 100 ms or more yields exactly three spikes, each
    // holding all N workers (spike k = every worker's k-th retry) and each
    // narrower than the base. (Full jitter fails this: its retries leave no
    // such silences.)
    let (stub, url) = start_stub(&["--fail-first", "3"]);
    let out = herdless(&[
        "fleet",
        "--workers",
        "200",
        "--jitter",
        "none",
        "--base",
        "300ms",
        "--json",
        "--log-format",
        "json",
        &url,
    ])
    .await;
    let report = fleet_json(&out);
    assert_eq!(report["succeeded"], N, "{report}");
    let arrivals = stub.stats().arrivals;
    let mut firsts: BTreeMap<String, f64> = BTreeMap::new();
    for a in &arrivals {
        let t = firsts
            .entry(a.worker.clone().unwrap_or_default())
            .or_insert(a.t_s);
        *t = t.min(a.t_s);
    }
    let first_lo = firsts.values().copied().fold(f64::INFINITY, f64::min);
    let first_hi = firsts.values().copied().fold(0.0, f64::max);
    let burst = first_hi - first_lo;
    let retries = retries_by_worker(&arrivals);
    let mut all: Vec<f64> = retries.values().flatten().copied().collect();
    all.sort_by(f64::total_cmp);
    let mut spikes: Vec<Vec<f64>> = vec![vec![all[0]]];
    for w in all.windows(2) {
        if w[1] - w[0] >= 0.1 {
            spikes.push(Vec::new());
        }
        spikes.last_mut().unwrap().push(w[1]);
    }
    let (peak, _) = busiest_100ms(&all);
    eprintln!(
        "no jitter: first-try burst {burst:.3} s; spikes {:?}; busiest 100 ms holds {peak}",
        spikes
            .iter()
            .map(|s| (s.len(), s[0], s[s.len() - 1]))
            .collect::<Vec<_>>()
    );
    assert_eq!(spikes.len(), 3, "three spikes");
    for (k, spike) in spikes.iter().enumerate() {
        assert_eq!(spike.len(), N, "spike {} holds the whole fleet", k + 1);
        let mut kth: Vec<f64> = retries.values().map(|v| v[k]).collect();
        kth.sort_by(f64::total_cmp);
        assert_eq!(
            &kth,
            spike,
            "spike {} is every worker's retry {}",
            k + 1,
            k + 1
        );
        let width = spike[N - 1] - spike[0];
        assert!(
            width <= burst + 0.1,
            "spike {} is {width:.3} s wide, burst {burst:.3} s",
            k + 1
        );
    }
    // The fleet's own 100 ms view: the no-jitter peak exceeds the full-jitter bound.
    let no_jitter_share = report["peak_100ms_retries"]["share_of_fleet"]
        .as_f64()
        .unwrap();
    assert!(
        no_jitter_share > 0.45,
        "no-jitter peak share {no_jitter_share}"
    );
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_text_report_and_terminal_count() {
    let (_stub, url) = start_stub(&["--fail-first", "1", "--fail-status", "404"]);
    let out = herdless(&["fleet", "--workers", "5", &url]).await;
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("terminal     5"), "{text}");
    assert!(text.contains("attempts per 100 ms"), "{text}");
    assert!(
        !text.contains('\u{1b}'),
        "no progress bar when stdout is not a terminal"
    );
}

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
    let client = reqwest::Client::new();
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
    assert!(events(&out)
        .iter()
        .filter(|e| e["event"] == "retry_scheduled")
        .all(|e| e["honored_retry_after"] == false));
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
    assert!(arrivals
        .iter()
        .filter(|a| a.status != 200)
        .all(|a| a.status == 503));
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
    let client = reqwest::Client::new();
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
    let client = reqwest::Client::new();
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
    // The first four: refused by the handler, each a slot at the rate. From
    // the fifth on (the fifth refusal found the outage): held 2 s at least.
    assert!(told[..4].iter().all(|&ms| ms < 1_000), "{told:?}");
    assert!(told[4..].iter().all(|&ms| ms >= 1_900), "{told:?}");
}

/// A shared budget (gRPC throttling, AWS quota) never gives up while the
/// endpoint is healthy: with one request in 20 failing (`--fail-every 20`),
/// successes refund far more than failures cost (gRPC: +0.1 × 19 vs −1 per 20
/// requests; AWS: a success after a retry returns its cost), so the bucket
/// stays near full and every worker succeeds. The same budget does give up
/// during an outage, so the zero above is not for lack of a working budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_budget_never_gives_up_while_the_endpoint_is_healthy() {
    let (_stub, url) = start_stub(&["--fail-every", "20"]);
    for kind in ["grpc", "aws"] {
        let out = herdless(&[
            "fleet",
            "--workers",
            "2000",
            "--base",
            "50ms",
            "--retry-budget",
            kind,
            "--json",
            &url,
        ])
        .await;
        let r = fleet_json(&out);
        assert_eq!(out.status.code(), Some(0), "{r}");
        assert_eq!(r["succeeded"], 2000, "{r}");
        assert_eq!(r["give_ups"]["retry_budget"], 0, "{r}");
        assert_eq!(r["budget_denials"], 0, "{r}");
        assert_eq!(r["strategy"]["retry_budget"], kind);
        // About one call in 20 failed and was retried through the budget.
        let retries = r["retries"].as_u64().unwrap();
        assert!((50..=200).contains(&retries), "{r}");
    }
    let (_stub, url) = start_stub(&["--outage", "1s"]);
    let out = herdless(&[
        "fleet",
        "--workers",
        "500",
        "--base",
        "50ms",
        "--retry-budget",
        "grpc",
        "--json",
        &url,
    ])
    .await;
    let r = fleet_json(&out);
    assert_eq!(out.status.code(), Some(4), "{r}");
    let denied = r["give_ups"]["retry_budget"].as_u64().unwrap();
    assert!(denied > 0, "{r}");
    assert_eq!(r["budget_denials"].as_u64().unwrap(), denied);
    let sum = ["succeeded", "terminal", "exhausted"]
        .iter()
        .map(|k| r[*k].as_u64().unwrap())
        .sum::<u64>();
    assert_eq!(sum, 500, "{r}");
}

/// `fleet --urgent DUR`: against an endpoint that stays down, every urgent
/// call gives up by its own deadline instead of backing off for the policy's
/// 120 s, and never because of the budget (its first two retries skip it).
/// `--breaker` runs end to end and is echoed in `strategy`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_urgent_calls_end_by_their_deadline() {
    let (stub, url) = start_stub(&["--outage", "60s"]);
    let out = herdless(&[
        "fleet",
        "--workers",
        "100",
        "--base",
        "100ms",
        "--max-attempts",
        "20",
        "--urgent",
        "400ms",
        "--retry-budget",
        "grpc",
        "--budget-tokens",
        "4",
        "--breaker",
        "1000",
        "--json",
        &url,
    ])
    .await;
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let r = fleet_json(&out);
    assert_eq!(r["strategy"]["urgent_s"], 0.4, "{r}");
    assert_eq!(r["strategy"]["urgent_workers"], 100, "{r}");
    assert_eq!(r["strategy"]["breaker"], 1000, "{r}");
    assert_eq!(r["exhausted"], 100, "{r}");
    // Retries past the quota of 2 go through the tiny budget and may be
    // denied; none of the first two is, and every call that was not denied
    // stopped at its deadline.
    let g = &r["give_ups"];
    assert_eq!(
        g["max_elapsed"].as_u64().unwrap() + g["retry_budget"].as_u64().unwrap(),
        100,
        "{r}"
    );
    assert!(r["max_calls_per_worker"].as_u64().unwrap() >= 3, "{r}");
    // Every worker's last call starts within 400 ms of its call's start (no
    // sleep may end past the deadline), so on the stub's clock its last
    // arrival is at most 400 ms plus one request's latency after its first
    // (0.5 s of slack for a loaded machine).
    let mut first: BTreeMap<String, f64> = BTreeMap::new();
    let mut last: BTreeMap<String, f64> = BTreeMap::new();
    for a in stub.stats().arrivals {
        let w = a.worker.unwrap_or_default();
        first.entry(w.clone()).or_insert(a.t_s);
        last.insert(w, a.t_s);
    }
    for (w, t0) in &first {
        let span = last[w] - t0;
        assert!(span <= 0.4 + 0.5, "worker {w} kept calling for {span:.3} s");
    }
    assert!(r["duration_s"].as_f64().unwrap() < 5.0, "{r}");
}

/// A redirect to an unreachable host: the error names the URL that failed
/// (not the one asked for) and the redirect chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_redirect_names_the_url_that_failed_and_the_chain() {
    use axum::http::{header, StatusCode};
    let app = axum::Router::new()
        .route(
            "/start",
            axum::routing::get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/hop")]) }),
        )
        .route(
            "/hop",
            axum::routing::get(|| async {
                (
                    StatusCode::FOUND,
                    [(header::LOCATION, "http://127.0.0.1:1/gone")],
                )
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let start = format!("http://{addr}/start");
    let out = herdless(&["get", "--max-attempts", "1", &start]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("for url (http://127.0.0.1:1/gone)"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "(the request to http://127.0.0.1:1/gone failed, after redirects: \
             {start} -> http://{addr}/hop -> http://127.0.0.1:1/gone)"
        )),
        "{stderr}"
    );
}

/// Interrupting a fleet keeps the run: the partial report is printed (marked
/// interrupted, every worker counted in exactly one outcome) and the exit is
/// 128 + the signal. The stub fails everything for an hour, so every call is
/// still retrying; the signal is sent once every worker has scheduled a retry
/// (its `retry_scheduled` event on fleet's stderr).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_fleet_prints_its_partial_report_and_exits_128_plus_the_signal() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
    let (stub, url) = start_stub(&["--outage", "1h"]);
    for (signal, json, code) in [(Signal::SIGTERM, true, 143), (Signal::SIGINT, false, 130)] {
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

/// `/stats` keeps only the most recent arrivals (a ring), so a long run's
/// memory stays bounded, while `total` still counts every arrival.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stub_stats_keep_the_last_arrivals_and_count_all() {
    use herdless_cli::stub::{admission_from_args, Stub, StubArgs};
    let args = StubArgs {
        port: 0,
        fail_first: 0,
        fail_every: 0,
        outage: None,
        capacity: None,
        pushback: None,
        capacity_estimate: None,
        outage_end: None,
        horizon: None,
        retry_after: None,
        fail_status: 503,
    };
    let admission = admission_from_args(&args).unwrap();
    let listener = Stub::bind(0).unwrap();
    let (stub, _task) =
        Stub::start_keeping(listener, admission, std::future::pending(), 5).unwrap();
    let base = format!("http://{}", stub.addr());
    let client = reqwest::Client::new();
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
    assert_eq!(herdless_cli::stub::ARRIVALS_KEPT, 100_000, "as documented");
}
