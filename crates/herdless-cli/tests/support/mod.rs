//! Shared by the real-socket test binaries: an in-process stub built from the
//! same flags `herdless stub` parses, the built binary, and readers for what
//! it and the stub report.

pub(crate) mod raw_server;

use std::collections::BTreeMap;
use std::process::Output;

use herdless_cli::testing::{ArrivalRecord, Stub, StubOptions};
use herdless_sim::metrics::{BUCKET, Timeline};
use serde_json::Value;

/// Starts a stub with `herdless stub` flags on 127.0.0.1 port 0; returns it and
/// its device URL. It stops when the test's runtime ends.
pub(crate) fn start_stub(flags: &[&str]) -> (Stub, String) {
    let stub = herdless_cli::testing::start_stub(flags, StubOptions::default()).unwrap();
    let url = format!("http://{}/device", stub.addr());
    (stub, url)
}

/// The busiest 100 ms window of `times_s` (seconds since the stub started):
/// its count and start, measured as `herdless fleet` measures its own.
pub(crate) fn busiest_100ms(times_s: &[f64]) -> (u64, f64) {
    let t: Timeline = times_s.iter().map(|s| (s * 1e9).round() as u64).collect();
    let p = t.peak(BUCKET);
    (p.count, p.start_ns as f64 / 1e9)
}

pub(crate) async fn herdless(args: &[&str]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_herdless"))
        .args(args)
        .output()
        .await
        .unwrap()
}

/// The JSON retry events on stderr (other lines are ignored).
pub(crate) fn events(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("event").is_some())
        .collect()
}

pub(crate) fn statuses(arrivals: &[ArrivalRecord]) -> Vec<u16> {
    arrivals.iter().map(|a| a.status).collect()
}

/// `herdless ARGS` under `ulimit -n limit` (soft and hard, for that process
/// only: the test binary keeps its own limit).
pub(crate) async fn herdless_limited(limit: u32, args: &[&str]) -> Output {
    tokio::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -n {limit} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_herdless"))
        .args(args)
        .output()
        .await
        .unwrap()
}

/// The retries (every arrival after a worker's first) as seen by the server:
/// per worker, sorted by time.
pub(crate) fn retries_by_worker(arrivals: &[ArrivalRecord]) -> BTreeMap<String, Vec<f64>> {
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

pub(crate) fn fleet_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

/// `herdless fleet --workers N` with the simulator's outage policy (full
/// jitter) at a 300 ms base, seed 7, against `url`: its JSON report.
pub(crate) async fn outage_fleet(workers: u64, url: &str) -> Value {
    outage_fleet_with(workers, url, &[]).await
}

/// [`outage_fleet`] with `extra` fleet flags (before the URL).
pub(crate) async fn outage_fleet_with(workers: u64, url: &str, extra: &[&str]) -> Value {
    let n = workers.to_string();
    let mut args = vec![
        "fleet",
        "--workers",
        &n,
        "--jitter",
        "full",
        "--base",
        "300ms",
        "--seed",
        "7",
        "--json",
    ];
    args.extend(extra);
    args.push(url);
    fleet_json(&herdless(&args).await)
}

/// When the stub served its last request (seconds on its clock): its
/// arrival, plus the time it was held.
pub(crate) fn last_served_s(arrivals: &[ArrivalRecord]) -> f64 {
    arrivals
        .iter()
        .filter(|a| a.status == 200)
        .map(|a| a.t_s + a.held_s.unwrap_or(0.0))
        .fold(0.0, f64::max)
}

/// The first bytes a client sends to a listener on 127.0.0.1 (it answers nothing).
pub(crate) async fn first_bytes_sent(listener: &tokio::net::TcpListener) -> [u8; 3] {
    use tokio::io::AsyncReadExt;
    let (mut socket, _) = listener.accept().await.unwrap();
    let mut head = [0u8; 3];
    socket.read_exact(&mut head).await.unwrap();
    head
}

/// `reqwest::Client::new()` for a test that talks to the stub itself: ring
/// installed first as rustls's provider, as `herdless` does before its own
/// clients (reqwest is built with `rustls-no-provider`).
pub(crate) fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}
