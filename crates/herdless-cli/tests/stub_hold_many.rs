//! Many held requests: the stub holds every connection of a crowd that
//! arrives during an outage with a known end, and releases them at its
//! capacity however many it holds: 2,000 as fast as 200 here, and 20,000 as
//! fast as 2,000 in the ignored test (too heavy for CI's two cores: about
//! 400 MB, and 20,000 sockets in this process, the clients, and 20,000 in
//! the stub's, a `herdless stub` process of its own there; each process
//! needs an open-file limit a little above 20,000, which a container may
//! refuse to raise; run it with `cargo test -p herdless-cli --release --test
//! stub_hold_many -- --ignored`, and with `HERDLESS_HELD=N` to hold N
//! instead of 20,000). Each test raises its own soft file-descriptor limit
//! (and the hard one when it is allowed to); the stub process raises its
//! own to its hard limit.

#[allow(dead_code)] // each test binary uses part of it
mod support;

use std::time::{Duration, Instant};

use nix::sys::resource::{Resource, getrlimit, setrlimit};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use support::start_stub;

/// The stub's capacity: the release rate every test expects.
const CAPACITY: f64 = 1_000.0;

/// Raises this process's open-file limit to at least `n` (the hard limit
/// too when it is below and the process may raise it).
fn raise_fd_limit(n: u64) {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    if soft >= n {
        return;
    }
    setrlimit(Resource::RLIMIT_NOFILE, n, hard.max(n))
        .unwrap_or_else(|e| panic!("raising RLIMIT_NOFILE to {n} (soft {soft}, hard {hard}): {e}"));
}

/// One held caller: connects, sends one request, and waits for its answer;
/// returns its status and when it came.
async fn caller(addr: std::net::SocketAddr, k: usize) -> (u16, Instant) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!("GET /device HTTP/1.1\r\nhost: 127.0.0.1\r\nx-worker-id: w{k}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0, "caller {k}: the connection closed before an answer");
        head.extend_from_slice(&buf[..n]);
    }
    let at = Instant::now();
    let status = std::str::from_utf8(&head[9..12]).unwrap().parse().unwrap();
    (status, at)
}

/// The stub's flags: `n` callers held through an outage of `outage`.
fn hold_flags(n: usize, outage: Duration) -> Vec<String> {
    let outage = format!("{}ms", outage.as_millis());
    let capacity = CAPACITY.to_string();
    let hold_max = (n + 1).to_string();
    [
        "--capacity",
        &capacity,
        "--outage",
        &outage,
        "--outage-end",
        "known",
        "--hold-for",
        "60s",
        "--hold-max",
        &hold_max,
    ]
    .map(String::from)
    .to_vec()
}

/// `n` callers held through an outage of `outage`, then released: the
/// release rate (answers a second, first to last).
async fn held_and_released(n: usize, outage: Duration) -> f64 {
    // The clients and the stub's connections, both in this process.
    raise_fd_limit(2 * n as u64 + 1_024);
    let flags = hold_flags(n, outage);
    let (stub, _url) = start_stub(&flags.iter().map(String::as_str).collect::<Vec<_>>());
    let started = Instant::now();
    let addr = stub.addr();
    let callers: Vec<_> = (0..n).map(|k| tokio::spawn(caller(addr, k))).collect();
    // Every caller is held before the outage ends, or the test says so.
    while stub.stats().held < n {
        assert!(
            started.elapsed() < outage,
            "{} of {n} held when the outage ended",
            stub.stats().held
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    release_rate(callers).await
}

/// The callers' answers, each a 200: their rate, first to last.
async fn release_rate(callers: Vec<tokio::task::JoinHandle<(u16, Instant)>>) -> f64 {
    let n = callers.len();
    let mut answered = Vec::with_capacity(n);
    for c in callers {
        let (status, at) = c.await.unwrap();
        assert_eq!(status, 200, "a held caller is let through, not refused");
        answered.push(at);
    }
    let first = answered.iter().min().unwrap();
    let last = answered.iter().max().unwrap();
    (n - 1) as f64 / last.duration_since(*first).as_secs_f64()
}

fn assert_same_rate(few: f64, many: f64, n: usize) {
    assert!(
        many >= 0.8 * few && many >= 0.7 * CAPACITY,
        "{n} held released at {many:.0}/s, a tenth of them at {few:.0}/s (capacity {CAPACITY}/s)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_held_are_released_as_fast_as_two_hundred() {
    let few = held_and_released(200, Duration::from_secs(3)).await;
    let many = held_and_released(2_000, Duration::from_secs(6)).await;
    assert_same_rate(few, many, 2_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "heavy: 40,000 sockets and about 400 MB (see the file's documentation)"]
async fn twenty_thousand_held_are_released_as_fast_as_two_thousand() {
    let n = std::env::var("HERDLESS_HELD")
        .map_or(20_000, |v| v.parse().expect("HERDLESS_HELD: a count"));
    let few = held_and_released(2_000, Duration::from_secs(6)).await;
    let many = held_apart_and_released(n, Duration::from_secs(30)).await;
    println!("{n} held released at {many:.0}/s, 2,000 at {few:.0}/s");
    assert_same_rate(few, many, n);
}

/// [`held_and_released`] with the stub a `herdless stub` process of its own
/// (each process then holds `n` sockets, not both sides in one), ended by
/// its id.
async fn held_apart_and_released(n: usize, outage: Duration) -> f64 {
    raise_fd_limit(n as u64 + 64);
    let mut stub = tokio::process::Command::new(env!("CARGO_BIN_EXE_herdless"))
        .arg("stub")
        .args(hold_flags(n, outage))
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut out = tokio::io::BufReader::new(stub.stdout.take().unwrap());
    let mut line = String::new();
    tokio::io::AsyncBufReadExt::read_line(&mut out, &mut line)
        .await
        .unwrap();
    let addr: std::net::SocketAddr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("the stub's first line: {line:?}"))
        .parse()
        .unwrap();
    let started = Instant::now();
    let callers: Vec<_> = (0..n).map(|k| tokio::spawn(caller(addr, k))).collect();
    loop {
        let held = held_now(addr).await;
        if held >= n {
            break;
        }
        assert!(
            started.elapsed() < outage,
            "{held} of {n} held when the outage ended"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let rate = release_rate(callers).await;
    let pid = nix::unistd::Pid::from_raw(stub.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
    stub.wait().await.unwrap();
    rate
}

/// The stub's `held` from its `/stats`.
async fn held_now(addr: std::net::SocketAddr) -> usize {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /stats HTTP/1.0\r\nhost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    let raw = String::from_utf8_lossy(&raw);
    let body = raw.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let stats: serde_json::Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("/stats: {e}: {body:.200}"));
    stats["held"].as_u64().unwrap() as usize
}
