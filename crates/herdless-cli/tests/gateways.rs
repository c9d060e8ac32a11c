//! Replicas in the field, over real sockets on 127.0.0.1: one device
//! (`herdless stub --capacity 500 --outage T --pushback off`), three gateway
//! replicas in front of it (`herdless stub --upstream DEVICE --capacity 167
//! --hold-for 10s`: the pushback layer and its hold, each told a third of
//! the device, the outage's end unknown to them), and `herdless fleet` with
//! the default policy spreading its requests over the three as a
//! round-robin balancer. Coordinated (`--coordinate`, a real `nats-server`)
//! and not, in the same test.
//!
//! Every process is the built binary, started here and ended by its id
//! (`kill_on_drop`, and killed explicitly once measured). The drain is read
//! on the device's clock, which starts its outage: the last request it
//! served, against the physical limit `T + N / C`. Every arrival is
//! counted once: the device's `total` is the gateways' `forwarded`, the
//! gateways' arrivals are the fleet's calls, the device's successes the
//! fleet's.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

#[allow(dead_code)] // each test binary uses part of it
mod support;
use support::{fleet_json, herdless, http_client, start_stub};

mod nats_server;
use nats_server::NatsServer;

/// The device's capacity, requests per second.
const C: f64 = 500.0;

/// `herdless stub FLAGS` as a process, killed (by its id) when dropped.
struct Proc {
    child: tokio::process::Child,
    addr: String,
}

impl Proc {
    async fn stub(flags: &[&str]) -> Proc {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_herdless"))
            .arg("stub")
            .args(flags)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next_line().await.unwrap().unwrap();
        let addr = first
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("first line: {first:?}"))
            .to_owned();
        Proc { child, addr }
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    async fn stats(&self) -> Value {
        let text = http_client()
            .get(format!("http://{}/stats", self.addr))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    /// Ends it now (SIGKILL to its pid) and reaps it.
    async fn end(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

/// What one run showed.
#[derive(Debug)]
struct Run {
    /// The last request the device served, seconds on its clock.
    drain_s: f64,
    /// `drain_s` over `T + N / C`.
    drain_x: f64,
    report: Value,
    /// The most peers any gateway heard during the run.
    peers: u64,
}

/// One run: the device down for `outage_s`, `workers` workers, the
/// gateways coordinated through `nats` when given.
async fn run(outage_s: u64, workers: u64, nats: Option<&str>) -> Run {
    let outage = format!("{outage_s}s");
    let device = Proc::stub(&[
        "--capacity",
        "500",
        "--outage",
        &outage,
        "--pushback",
        "off",
    ])
    .await;
    let upstream = format!("http://{}", device.addr);
    let mut flags = vec![
        "--upstream",
        &upstream,
        "--capacity",
        "167",
        "--hold-for",
        "10s",
    ];
    if let Some(url) = nats {
        flags.extend(["--coordinate", url]);
    }
    let mut gateways = Vec::new();
    for _ in 0..3 {
        gateways.push(Proc::stub(&flags).await);
    }
    let urls: Vec<String> = gateways.iter().map(Proc::url).collect();
    let n = workers.to_string();
    let mut args = vec!["fleet", "--workers", &n, "--json", "--quiet"];
    args.extend(urls.iter().map(String::as_str));
    // How many peers the gateways hear, sampled as the fleet runs.
    let sampled = {
        let addrs: Vec<String> = gateways.iter().map(|g| g.addr.clone()).collect();
        tokio::spawn(async move {
            let mut most = 0;
            loop {
                tokio::time::sleep(Duration::from_millis(500)).await;
                for a in &addrs {
                    let Ok(r) = http_client().get(format!("http://{a}/stats")).send().await else {
                        continue;
                    };
                    let v: Value = serde_json::from_str(&r.text().await.unwrap_or_default())
                        .unwrap_or_default();
                    most = most.max(v["peers"].as_u64().unwrap_or(0));
                }
                if most >= 2 {
                    return most;
                }
            }
        })
    };
    let report = fleet_json(&herdless(&args).await);
    let peers = match tokio::time::timeout(Duration::from_millis(10), sampled).await {
        Ok(Ok(most)) => most,
        _ => 0,
    };
    let dev = device.stats().await;
    let mut gw = Vec::new();
    for g in &gateways {
        gw.push(g.stats().await);
    }
    for g in gateways {
        g.end().await;
    }
    device.end().await;

    let count = |k: &str| report[k].as_u64().unwrap();
    assert_eq!(
        count("succeeded") + count("terminal") + count("exhausted"),
        workers,
        "every worker ends once: {report}"
    );
    assert_eq!(count("terminal"), 0, "{report}");
    let arrivals = dev["arrivals"].as_array().unwrap();
    let served: Vec<f64> = arrivals
        .iter()
        .filter(|a| a["status"] == 200)
        .map(|a| a["t_s"].as_f64().unwrap())
        .collect();
    assert_eq!(served.len() as u64, count("succeeded"), "served once each");
    let sum = |k: &str| gw.iter().map(|g| g[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!(sum("upstream_errors"), 0, "the device always answers");
    assert_eq!(
        dev["total"].as_u64().unwrap(),
        sum("forwarded"),
        "every arrival at the device is a forward, counted once"
    );
    assert_eq!(sum("total"), count("calls"), "every call reached a gateway");
    for (g, u) in gw.iter().zip(report["urls"].as_array().unwrap()) {
        assert_eq!(
            g["total"], u["calls"],
            "the balancer's count is the gateway's"
        );
    }
    let limit = outage_s as f64 + workers as f64 / C;
    let drain_s = served.iter().copied().fold(0.0, f64::max);
    let run = Run {
        drain_s,
        drain_x: drain_s / limit,
        peers,
        report,
    };
    eprintln!(
        "T = {outage_s} s, N = {workers}, {}: drain {:.2} s = {:.3} x the limit {limit:.1} s; \
         {} exhausted; {:.2} calls per worker; peers heard {}; device arrivals {}",
        if nats.is_some() {
            "coordinated"
        } else {
            "per replica"
        },
        run.drain_s,
        run.drain_x,
        run.report["exhausted"],
        run.report["calls_per_worker"].as_f64().unwrap(),
        run.peers,
        dev["total"],
    );
    run
}

/// Both runs side by side; the coordinated one must meet the goal.
async fn coordinated_and_not(outage_s: u64, workers: u64) -> (Run, Run) {
    let server = NatsServer::start();
    let coordinated = run(outage_s, workers, Some(server.url())).await;
    let alone = run(outage_s, workers, None).await;
    eprintln!(
        "load: {}",
        std::fs::read_to_string("/proc/loadavg").unwrap().trim()
    );
    assert!(
        coordinated.peers >= 1,
        "the coordinated gateways heard each other"
    );
    assert_eq!(alone.peers, 0);
    assert_eq!(coordinated.report["exhausted"], 0, "{}", coordinated.report);
    assert!(
        coordinated.drain_x <= 1.3,
        "coordinated drain {:.2} s = {:.3} x the limit",
        coordinated.drain_s,
        coordinated.drain_x
    );
    (coordinated, alone)
}

/// A 5 s outage, 600 workers (T + N / C = 6.2 s): short enough for a loaded
/// 2-core machine running debug binaries (C = 500/s stays well below what
/// they serve), long enough that every first try meets the outage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateways_drain_a_short_outage_near_the_limit_coordinated_and_not() {
    coordinated_and_not(5, 600).await;
}

/// The field's case: a 20 s outage with an unknown end, 2,000 workers
/// (T + N / C = 24 s). About a minute; run it on a quiet machine:
/// `cargo test -p herdless-cli --test gateways -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a minute of real time; docs/cli.md has the command"]
async fn gateways_drain_a_twenty_second_outage_within_the_goal() {
    coordinated_and_not(20, 2_000).await;
}

/// One gateway, in process: the upstream's answers come back as they were
/// (its refusal, then its success, the worker's id forwarded); an upstream
/// that refuses connections or stays silent past `--upstream-timeout` is
/// a failing device: `503`, with the layer's slot when it has pushback,
/// and counted in `upstream_errors`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_relays_answers_and_takes_a_silent_upstream_for_a_failing_device() {
    let client = http_client();
    let get = |url: String| {
        let client = client.clone();
        async move {
            client
                .get(url)
                .header("x-worker-id", "w1")
                .send()
                .await
                .unwrap()
        }
    };
    let (device, _) = start_stub(&["--fail-first", "1"]);
    let (relay, _) = start_stub(&["--upstream", &format!("http://{}", device.addr())]);
    let first = get(format!("http://{}/scan?x=1", relay.addr())).await;
    assert_eq!(first.status(), 503);
    let second = get(format!("http://{}/scan?x=1", relay.addr())).await;
    assert_eq!(second.status(), 200);
    assert_eq!(second.text().await.unwrap(), "ok\n");
    let d = device.stats();
    assert_eq!(d.total, 2);
    assert!(d.arrivals.iter().all(|a| a.worker.as_deref() == Some("w1")));
    let r = relay.stats();
    assert_eq!((r.total, r.forwarded, r.upstream_errors), (2, 2, 0));

    // Nobody listens there.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let (gw, _) = start_stub(&[
        "--upstream",
        &format!("http://{closed}"),
        "--capacity",
        "100",
    ]);
    let refused = get(format!("http://{}/", gw.addr())).await;
    assert_eq!(refused.status(), 503);
    assert!(
        refused.headers().contains_key("retry-after-ms"),
        "the layer's slot"
    );
    let s = gw.stats();
    assert_eq!((s.forwarded, s.upstream_errors), (1, 1));

    // Accepts, never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_addr = silent.local_addr().unwrap();
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            open.push(socket);
        }
    });
    let (gw, _) = start_stub(&[
        "--upstream",
        &format!("http://{silent_addr}"),
        "--upstream-timeout",
        "200ms",
    ]);
    let start = std::time::Instant::now();
    let timed_out = get(format!("http://{}/", gw.addr())).await;
    assert_eq!(timed_out.status(), 503);
    assert!(start.elapsed() >= Duration::from_millis(200));
    assert_eq!(gw.stats().upstream_errors, 1);
    held.abort();

    // NATS out of reach delays nothing: the replica runs alone.
    let (ok_device, _) = start_stub(&[]);
    let (gw, _) = start_stub(&[
        "--upstream",
        &format!("http://{}", ok_device.addr()),
        "--capacity",
        "100",
        "--coordinate",
        &format!("nats://{closed}"),
    ]);
    let served = get(format!("http://{}/", gw.addr())).await;
    assert_eq!(served.status(), 200);
    assert_eq!(gw.stats().peers, 0);
}
