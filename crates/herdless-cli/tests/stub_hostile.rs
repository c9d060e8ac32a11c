//! `herdless stub` against careless and hostile clients, over real sockets
//! on 127.0.0.1: the built binary (and, for the head timeout, the stub in
//! process with a short one). Every arrival is recorded once with its
//! outcome; nothing a client does keeps the stub from shutting down within
//! its grace; headers that never end time out; worker ids are bounded; a
//! half-closed client is answered; a held request is a new arrival for
//! `--fail-first` when released.

use std::process::Stdio;
use std::time::{Duration, Instant};

use herdless_cli::testing::{GRACE, StubOptions, start_stub};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// `herdless stub FLAGS` as a process, killed (by its id) when dropped.
struct StubProcess {
    child: tokio::process::Child,
    port: u16,
}

impl StubProcess {
    async fn start(flags: &[&str]) -> StubProcess {
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
        let port = first
            .strip_prefix("listening on 127.0.0.1:")
            .unwrap_or_else(|| panic!("first line: {first:?}"))
            .parse()
            .unwrap();
        StubProcess { child, port }
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.id().unwrap().to_string();
        let sent = std::process::Command::new("kill")
            .args([signal, &pid])
            .status()
            .unwrap();
        assert!(sent.success());
    }

    async fn stats(&self) -> Value {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).await.unwrap();
        s.write_all(b"GET /stats HTTP/1.1\r\nHost: stub\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let text = String::from_utf8(read_all(&mut s).await).unwrap();
        let body = text.split_once("\r\n\r\n").unwrap().1;
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    /// `/stats` once `done` holds of it (the stub is another process: it is
    /// asked every 20 ms, for at most 10 s).
    async fn stats_when(&self, done: impl Fn(&Value) -> bool) -> Value {
        let start = Instant::now();
        loop {
            let stats = self.stats().await;
            if done(&stats) {
                return stats;
            }
            assert!(start.elapsed() < Duration::from_secs(10), "{stats}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn read_all(s: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out))
        .await
        .expect("the stub answers and closes")
        .unwrap();
    out
}

/// A connection that has sent one request for `/device` as `worker`.
async fn send(port: u16, worker: &str) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let request = format!(
        "GET /device HTTP/1.1\r\nHost: stub\r\nX-Worker-Id: {worker}\r\nConnection: close\r\n\r\n"
    );
    s.write_all(request.as_bytes()).await.unwrap();
    s
}

/// SIGTERM (or SIGHUP: a closed terminal used to kill the stub, its held
/// clients reset) with ten requests held (an outage of a minute, holds of
/// up to an hour) and another half sent: each held one is answered 503 with
/// a Retry-After and `Connection: close`, the half-sent one dropped, and the
/// stub exits 0 within its grace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_the_stub_within_its_grace_despite_held_and_half_sent_requests() {
    for signal in ["-TERM", "-HUP"] {
        let stub = StubProcess::start(&[
            "--capacity",
            "100",
            "--outage",
            "60s",
            "--outage-end",
            "known",
            "--hold-for",
            "1h",
        ])
        .await;
        let mut half = TcpStream::connect(("127.0.0.1", stub.port)).await.unwrap();
        half.write_all(b"GET /dev").await.unwrap();
        // Keep-alive clients: nothing but the answer tells them it closes.
        let mut held = Vec::new();
        for k in 0..10 {
            let mut s = TcpStream::connect(("127.0.0.1", stub.port)).await.unwrap();
            let request =
                format!("GET /device HTTP/1.1\r\nHost: stub\r\nX-Worker-Id: w{k}\r\n\r\n");
            s.write_all(request.as_bytes()).await.unwrap();
            held.push(s);
        }
        stub.stats_when(|s| s["held"] == 10).await;
        let start = Instant::now();
        stub.signal(signal);
        for held in &mut held {
            let answer = String::from_utf8(read_all(held).await).unwrap();
            assert!(answer.starts_with("HTTP/1.1 503"), "{signal}: {answer}");
            let answer = answer.to_lowercase();
            assert!(answer.contains("retry-after: 1\r\n"), "{answer}");
            // Each connection closes after its answer: every answer says so.
            assert!(
                answer.contains("connection: close\r\n"),
                "{signal}: {answer}"
            );
        }
        let mut stub = stub;
        let status = tokio::time::timeout(GRACE + Duration::from_secs(3), stub.child.wait())
            .await
            .expect("the stub exits within its grace")
            .unwrap();
        assert!(status.success(), "{signal}: {status:?}");
        assert!(start.elapsed() < GRACE + Duration::from_secs(3));
        assert!(read_all(&mut half).await.is_empty(), "dropped, unanswered");
    }
}

/// A request head that never ends is dropped at the head timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_head_that_never_ends_times_out() {
    let options = StubOptions {
        header_timeout: Duration::from_millis(300),
        ..StubOptions::default()
    };
    let stub = start_stub(&[], options).unwrap();
    let mut slow = TcpStream::connect(stub.addr()).await.unwrap();
    slow.write_all(b"GET /dev").await.unwrap();
    let start = Instant::now();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), slow.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "closed by the stub");
    assert!(start.elapsed() >= Duration::from_millis(250));
    assert_eq!(
        stub.stats().total,
        0,
        "not an arrival: no request reached it"
    );
}

/// 20 requests held, 10 of their clients hang up: `/stats` records all 20
/// once, the 10 as abandoned (status 499) and the rest as served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_arrival_is_recorded_once_abandoned_where_its_client_left() {
    let stub = StubProcess::start(&[
        "--capacity",
        "100",
        "--outage",
        "3s",
        "--outage-end",
        "known",
        "--hold-for",
        "10s",
        "--hold-max",
        "50",
    ])
    .await;
    let mut clients = Vec::new();
    for i in 0..20 {
        clients.push(send(stub.port, &i.to_string()).await);
    }
    stub.stats_when(|s| s["held"] == 20).await;
    let kept = clients.split_off(10);
    drop(clients); // workers 0 to 9 hang up
    stub.stats_when(|s| s["abandoned"] == 10).await;
    for mut c in kept {
        let answer = String::from_utf8(read_all(&mut c).await).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    let stats = stub.stats_when(|s| s["total"] == 20).await;
    assert_eq!(stats["abandoned"], 10);
    for a in stats["arrivals"].as_array().unwrap() {
        let worker: u32 = a["worker"].as_str().unwrap().parse().unwrap();
        let (status, outcome) = if worker < 10 {
            (499, "abandoned")
        } else {
            (200, "answered")
        };
        assert_eq!(
            (a["status"].as_u64(), a["outcome"].as_str()),
            (Some(status), Some(outcome)),
            "{a}"
        );
        assert!(a["held_s"].as_f64().unwrap() > 0.0, "{a}");
    }
}

/// An `X-Worker-Id` over 256 bytes is answered 431 and recorded without
/// it; one of 256 bytes is kept whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_ids_are_bounded() {
    let stub = StubProcess::start(&["--fail-first", "1"]).await;
    let long = "x".repeat(100_000);
    let mut c = send(stub.port, &long).await;
    let answer = String::from_utf8(read_all(&mut c).await).unwrap();
    assert!(answer.starts_with("HTTP/1.1 431"), "{}", &answer[..100]);
    let most = "y".repeat(256);
    let mut c = send(stub.port, &most).await;
    let answer = String::from_utf8(read_all(&mut c).await).unwrap();
    assert!(answer.starts_with("HTTP/1.1 503"), "fail-first: {answer}");
    let stats = stub.stats().await;
    assert_eq!(stats["total"], 2);
    let a = &stats["arrivals"];
    assert_eq!(
        (a[0]["status"].as_u64(), &a[0]["worker"]),
        (Some(431), &Value::Null)
    );
    assert_eq!(a[1]["worker"], most.as_str());
    assert!(stats.to_string().len() < 2_000, "no 100 KB id kept");
}

/// A client that sends its request and shuts down its sending side gets
/// its answer, and the arrival is counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_closed_client_is_answered_and_counted() {
    let stub = StubProcess::start(&[]).await;
    let mut c = send(stub.port, "half").await;
    c.shutdown().await.unwrap();
    let answer = String::from_utf8(read_all(&mut c).await).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let stats = stub.stats().await;
    assert_eq!(stats["total"], 1);
    assert_eq!(stats["arrivals"][0]["outcome"], "answered");
}

/// With `--fail-first` and a hold, a held request released at the end of
/// the outage is a new arrival for fail-first: refused once by it, it waits
/// in the hold again and is served, long before its hold runs out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_released_request_is_a_new_arrival_for_fail_first() {
    let stub = StubProcess::start(&[
        "--fail-first",
        "1",
        "--capacity",
        "100",
        "--outage",
        "1s",
        "--outage-end",
        "known",
        "--hold-for",
        "5s",
    ])
    .await;
    let start = Instant::now();
    let mut c = send(stub.port, "a").await;
    let answer = String::from_utf8(read_all(&mut c).await).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
    let stats = stub.stats().await;
    assert_eq!(stats["total"], 1, "{stats}");
    assert_eq!(stats["arrivals"][0]["status"], 200);
}
