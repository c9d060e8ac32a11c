//! `get` and `fleet` against a hostile server: a raw TCP server on
//! 127.0.0.1 answering every request with bytes drawn by proptest — random
//! status lines (valid, out of range, garbage), header names and values
//! (arbitrary bytes, CR/LF and colon injection, lying or huge
//! `Content-Length`, `Transfer-Encoding`, `Retry-After`, plans of waves in
//! `Herdless-Plan` with members out of range, missing, repeated or not
//! numbers), chunked bodies
//! whose declared sizes lie, then an early close, a stall or an endless
//! body.
//!
//! Every case asserts: no panic (exit status one of the documented codes,
//! no "panicked" on stderr), no hang (each run ends within a wall-clock
//! bound far above what its `--timeout`, attempts and `--max-retry-after`
//! allow), and bounded memory (the peak RSS of every child, from
//! `getrusage(RUSAGE_CHILDREN)`, under 128 MiB: a streamed body holds one
//! chunk; an endless body buffered for the 300 ms timeout alone would pass
//! it). 24 cases by default (`PROPTEST_CASES` overrides), a few seconds.
//!
//! Alone in its binary, so the children's peak is only this test's.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// How a response ends once its bytes are sent.
#[derive(Debug, Clone, Copy)]
enum End {
    Close,
    /// Held open, silent, until the client leaves.
    Stall,
    /// Chunks of 64 KiB for ever.
    Endless,
}

/// One hostile response: its bytes, and how it ends.
#[derive(Debug, Clone)]
struct Hostile {
    bytes: Vec<u8>,
    end: End,
}

fn status_line() -> impl Strategy<Value = Vec<u8>> {
    let code = prop_oneof![
        4 => Just(200u16),
        2 => Just(503u16),
        1 => prop::sample::select(vec![204u16, 301, 304, 404, 429, 500]),
        1 => 100u16..1000,
    ];
    prop_oneof![
        8 => code.prop_map(|c| format!("HTTP/1.1 {c} X\r\n").into_bytes()),
        1 => Just(b"HTTP/1.0 200\r\n".to_vec()),
        1 => Just(b"HTTP/1.1 99999999999999999999 Big\r\n".to_vec()),
        1 => prop::collection::vec(any::<u8>(), 0..40).prop_map(|mut v| {
            v.extend_from_slice(b"\r\n");
            v
        }),
    ]
}

fn header() -> impl Strategy<Value = Vec<u8>> {
    let name = prop_oneof![
        Just(b"retry-after".to_vec()),
        Just(b"retry-after-ms".to_vec()),
        Just(b"herdless-plan".to_vec()),
        Just(b"connection".to_vec()),
        Just(b"content-type".to_vec()),
        "[a-zA-Z-]{1,24}".prop_map(String::into_bytes),
    ]
    // Never a redirect to a host of the server's choosing (tests talk to
    // 127.0.0.1 only); a relative one is drawn in `hostile`.
    .prop_filter("no location", |n| !n.eq_ignore_ascii_case(b"location"));
    let value = prop_oneof![
        any::<u64>().prop_map(|n| n.to_string().into_bytes()),
        Just(b"-1".to_vec()),
        Just(b"99999999999999999999999".to_vec()),
        Just(b"close".to_vec()),
        "[ -~]{0,60}".prop_map(String::into_bytes),
        Just(vec![b'9'; 9_000]),
        plan(),
    ];
    let line = (name, value).prop_map(|(mut n, v)| {
        n.extend_from_slice(b": ");
        n.extend_from_slice(&v);
        n.extend_from_slice(b"\r\n");
        n
    });
    prop_oneof![
        8 => line,
        // Arbitrary bytes: non-UTF-8, CR/LF and colon injection.
        1 => prop::collection::vec(any::<u8>(), 1..80).prop_map(|mut v| {
            v.extend_from_slice(b"\r\n");
            v
        }),
    ]
}

/// A `Herdless-Plan` value: each member drawn from numbers in range, out
/// of it, negative, huge, not numbers, or left out, the members in any
/// order and sometimes twice.
fn plan() -> impl Strategy<Value = Vec<u8>> {
    let number = prop_oneof![
        Just("0".to_owned()),
        Just("0.001".to_owned()),
        Just("-86400".to_owned()),
        Just("86400.0".to_owned()),
        Just("-1".to_owned()),
        Just("1000000".to_owned()),
        Just("281474976710655".to_owned()),
        Just("99999999999999999999".to_owned()),
        Just("NaN".to_owned()),
        Just("1e9".to_owned()),
        Just(String::new()),
        (0u32..5_000).prop_map(|n| format!("{}.{:03}", n / 1_000, n % 1_000)),
    ];
    let member = (
        prop::sample::select(vec!["start", "waves", "spacing", "salt", "x"]),
        number,
    )
        .prop_map(|(k, v)| format!("{k}={v}"));
    (
        prop::collection::vec(member, 0..7),
        prop::sample::select(vec![", ", "; ", ","]),
    )
        .prop_map(|(members, sep)| members.join(sep).into_bytes())
}

/// The framing headers and the body: a true, lying or huge
/// `Content-Length`, none (read to close), or chunked with chunks whose
/// declared sizes may lie, with or without the last chunk.
fn framed_body() -> impl Strategy<Value = Vec<u8>> {
    let data = prop::collection::vec(any::<u8>(), 0..3_000);
    let length = prop_oneof![Just(0i64), -50i64..50, Just(1i64 << 40),];
    let sized = (data.clone(), length).prop_map(|(d, delta)| {
        let n = (d.len() as i64).saturating_add(delta).max(0);
        let mut b = format!("content-length: {n}\r\n\r\n").into_bytes();
        b.extend_from_slice(&d);
        b
    });
    let unsized_ = data.prop_map(|d| [b"\r\n".as_slice(), &d].concat());
    let chunk = (
        prop_oneof![
            Just(None),
            Just(Some(0usize)),
            (1usize..100_000).prop_map(Some)
        ],
        prop::collection::vec(any::<u8>(), 0..600),
    )
        .prop_map(|(declared, data)| {
            let size = declared.unwrap_or(data.len());
            let mut c = format!("{size:x}\r\n").into_bytes();
            c.extend_from_slice(&data);
            c.extend_from_slice(b"\r\n");
            c
        });
    let chunked = (prop::collection::vec(chunk, 0..6), any::<bool>()).prop_map(|(chunks, last)| {
        let mut b = b"transfer-encoding: chunked\r\n\r\n".to_vec();
        b.extend_from_slice(&chunks.concat());
        if last {
            b.extend_from_slice(b"0\r\n\r\n");
        }
        b
    });
    prop_oneof![3 => sized, 1 => unsized_, 3 => chunked]
}

fn hostile() -> impl Strategy<Value = Hostile> {
    (
        status_line(),
        prop::collection::vec(header(), 0..6),
        prop::bool::weighted(0.1),
        framed_body(),
        prop_oneof![Just(End::Close), Just(End::Stall), Just(End::Endless)],
    )
        .prop_map(|(status, headers, redirect, body, end)| {
            let mut bytes = status;
            for h in headers {
                bytes.extend_from_slice(&h);
            }
            if redirect {
                bytes.extend_from_slice(b"location: /again\r\n");
            }
            bytes.extend_from_slice(&body);
            Hostile { bytes, end }
        })
}

/// Serves `h` to every connection (after reading whatever the client sent
/// first); returns the URL.
async fn serve(h: Hostile) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let h = Arc::new(h);
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let h = h.clone();
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = s.read(&mut request).await;
                if s.write_all(&h.bytes).await.is_err() {
                    return;
                }
                match h.end {
                    End::Close => {}
                    End::Stall => while matches!(s.read(&mut request).await, Ok(n) if n > 0) {},
                    End::Endless => {
                        let frame = [b"10000\r\n".as_slice(), &[b'x'; 65_536], b"\r\n"].concat();
                        while s.write_all(&frame).await.is_ok() {}
                    }
                }
            });
        }
    });
    url
}

/// The peak RSS of the largest child waited for so far, KiB.
fn children_peak_kib() -> i64 {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_CHILDREN).map_or(0, |u| u.max_rss())
}

/// Runs `herdless ARGS` (stdout discarded), killed if it outlives `bound`:
/// its exit code and stderr, or `None` on a hang.
async fn run(args: &[&str], bound: Duration) -> Option<(Option<i32>, String)> {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_herdless"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let mut text = Vec::new();
    let ran = tokio::time::timeout(bound, async {
        let _ = stderr.read_to_end(&mut text).await;
        child.wait().await
    })
    .await;
    match ran {
        Ok(status) => Some((
            status.unwrap().code(),
            String::from_utf8_lossy(&text).into_owned(),
        )),
        Err(_) => {
            let _ = child.kill().await;
            None
        }
    }
}

/// The policy every run uses: 2 attempts of at most 300 ms, sleeps of at
/// most 100 ms whatever the server says: a run ends within about 1 s.
const POLICY: [&str; 12] = [
    "--timeout",
    "300ms",
    "--max-attempts",
    "2",
    "--base",
    "1ms",
    "--max-retry-after",
    "100ms",
    "--max-elapsed",
    "3s",
    "--log-format",
    "json",
];

/// Far above the ~1 s a run may take, for a loaded 2-core machine.
const HANG: Duration = Duration::from_secs(20);
const PEAK_KIB: i64 = 128 << 10;

fn check(
    what: &str,
    got: Option<(Option<i32>, String)>,
    codes: &[i32],
) -> Result<(), TestCaseError> {
    let (code, stderr) = got.ok_or_else(|| TestCaseError::fail(format!("{what}: hung")))?;
    prop_assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    prop_assert!(
        code.is_some_and(|c| codes.contains(&c)),
        "{what}: exit {code:?}: {stderr}"
    );
    let peak = children_peak_kib();
    prop_assert!(peak < PEAK_KIB, "{what}: peak {peak} KiB");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(24),
        ..ProptestConfig::default()
    })]

    #[test]
    fn get_and_fleet_survive_a_hostile_server(h in hostile()) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let url = serve(h).await;
            let mut get = vec!["get"];
            get.extend(POLICY);
            get.push(&url);
            // 0 success, 3 terminal (or a body broken after its first byte),
            // 4 exhausted.
            check("get", run(&get, HANG).await, &[0, 3, 4])?;
            let mut fleet = vec!["fleet", "--workers", "3", "--json"];
            fleet.extend(POLICY);
            fleet.push(&url);
            check("fleet", run(&fleet, HANG).await, &[0, 3, 4])
        })?;
    }
}
