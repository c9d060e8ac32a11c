//! Many held requests: the stub holds every connection of a crowd that
//! arrives during an outage with a known end, and releases them at its
//! capacity however many it holds: 2,000 as fast as 200 here, and 20,000 as
//! fast as 2,000 in the ignored test (too heavy for CI's two cores: 40,000
//! sockets in one process, clients and stub, about 400 MB; it needs a hard
//! open-file limit above 41,000, which a container may refuse to raise; run
//! it with `cargo test -p herdless-cli --release --test stub_hold_many --
//! --ignored`). Each test raises its own soft file-descriptor limit (and the
//! hard one when it is allowed to).

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

/// `n` callers held through an outage of `outage`, then released: the
/// release rate (answers a second, first to last).
async fn held_and_released(n: usize, outage: Duration) -> f64 {
    raise_fd_limit(2 * n as u64 + 1_024);
    let outage_flag = format!("{}ms", outage.as_millis());
    let hold_max = (n + 1).to_string();
    let (stub, _url) = start_stub(&[
        "--capacity",
        &CAPACITY.to_string(),
        "--outage",
        &outage_flag,
        "--outage-end",
        "known",
        "--hold-for",
        "60s",
        "--hold-max",
        &hold_max,
    ]);
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
    let few = held_and_released(2_000, Duration::from_secs(6)).await;
    let many = held_and_released(20_000, Duration::from_secs(30)).await;
    assert_same_rate(few, many, 20_000);
}
