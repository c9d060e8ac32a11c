//! `herdless get`'s body over real sockets on 127.0.0.1: streamed in
//! bounded memory, written byte-exact, retried only while nothing of it went
//! out, and a closed stdout refused before anything is sent.
//!
//! The stub runs in-process (the library's `stub::Stub`, built from the same
//! flags the binary parses) on port 0; `get` runs as the built binary.

#[allow(dead_code)] // each test binary uses part of it
mod support;
use support::*;

/// `herdless get URL` with stdout piped to the test: the child (killed on
/// drop, by its handle) and its stdout.
fn spawn_get(args: &[&str]) -> (tokio::process::Child, tokio::process::ChildStdout) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_herdless"))
        .arg("get")
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    (child, stdout)
}

/// An endless chunked body is streamed, not held: the test reads 128 MiB of
/// it through the pipe while sampling the child's peak memory, which stays
/// under 64 MiB (measured: about 19 MiB for a debug build; one chunk and the
/// writer's buffer are in flight at a time). Before, `get` buffered the body
/// until its end, which never comes: nothing reached the pipe and the peak
/// passed the bound within a second. Then the reader goes away: the next
/// write fails with a broken pipe, which ends `get` quietly with exit 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_body_is_streamed_in_bounded_memory() {
    use tokio::io::AsyncReadExt;
    const READ: u64 = 128 << 20;
    const BOUND_KIB: u64 = 64 << 10;
    let (url, _) = raw_server::serve(|_| raw_server::Reply::Endless).await;
    let (mut child, mut stdout) = spawn_get(&["--timeout", "120s", &url]);
    let pid = child.id().unwrap();
    let mut ticks = tokio::time::interval(raw_server::SAMPLE);
    let (mut got, mut peak) = (0u64, 0u64);
    let mut buf = vec![0u8; 1 << 16];
    while got < READ {
        tokio::select! {
            n = stdout.read(&mut buf) => {
                let n = n.unwrap();
                assert!(n > 0, "get ended after {got} bytes: {:?}", child.wait().await);
                assert!(buf[..n].iter().all(|b| *b == b'x'), "the body, without chunk framing");
                got += n as u64;
            }
            _ = ticks.tick() => {}
        }
        peak = peak.max(raw_server::peak_rss_kib(pid).unwrap_or(0));
        assert!(
            peak < BOUND_KIB,
            "peak {peak} KiB after {got} bytes on stdout"
        );
    }
    drop(stdout);
    let out = child.wait_with_output().await.unwrap();
    eprintln!("read {got} bytes, peak {peak} KiB");
    assert_eq!(out.status.code(), Some(1), "broken pipe: {out:?}");
    assert!(out.stderr.is_empty(), "a closed pipe ends quietly: {out:?}");
}

/// A normal body is written byte for byte, with `Content-Length` or chunked,
/// to stdout and to `--output FILE`: 3 MiB of noise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_normal_body_is_written_byte_exact_to_stdout_and_to_a_file() {
    let body = raw_server::noise(3 << 20);
    for chunked in [false, true] {
        let b = body.clone();
        let (url, _) = raw_server::serve(move |_| raw_server::Reply::Body {
            body: b.clone(),
            chunked,
        })
        .await;
        let out = herdless(&["get", &url]).await;
        assert_eq!(out.status.code(), Some(0), "chunked {chunked}");
        assert!(out.stdout == *body, "stdout, chunked {chunked}");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("body");
        let out = herdless(&["get", "--output", file.to_str().unwrap(), &url]).await;
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        assert!(out.stdout.is_empty());
        assert!(
            std::fs::read(&file).unwrap() == *body,
            "file, chunked {chunked}"
        );
    }
}

/// A body that breaks off before its first byte is retried to stdout; one
/// that breaks off after it is not (what went down the pipe cannot be taken
/// back): exit 3, one request, stdout holds a prefix of the body and the
/// error says how much and why. With `--output FILE` the retry starts the
/// file over: exactly the body, not the broken attempt's bytes and then the
/// whole body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_body_is_retried_unless_its_first_bytes_went_to_stdout() {
    use raw_server::Reply;
    let body = raw_server::noise(1 << 20);
    let script = |sent: usize| {
        let b = body.clone();
        move |n: usize| match n {
            0 => Reply::Cut {
                body: b.clone(),
                sent,
            },
            _ => Reply::Body {
                body: b.clone(),
                chunked: false,
            },
        }
    };
    // Nothing of the body before the break: retried, even to stdout.
    let (url, seen) = raw_server::serve(script(0)).await;
    let out = herdless(&["get", "--base", "10ms", &url]).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stdout == *body);
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 2);
    // 300 KB before the break, to stdout: final.
    let (url, seen) = raw_server::serve(script(300_000)).await;
    let out = herdless(&["get", "--base", "10ms", &url]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert_eq!(
        seen.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "not retried"
    );
    assert!(!out.stdout.is_empty() && out.stdout.len() <= 300_000);
    assert!(body.starts_with(&out.stdout), "a prefix of the body");
    let written = format!("after {} bytes were written to stdout", out.stdout.len());
    assert!(stderr.contains(&written), "{stderr}");
    assert!(
        stderr.contains("not retried (--output FILE can start over)"),
        "{stderr}"
    );
    // The same to a file: restarted, exact.
    let (url, seen) = raw_server::serve(script(300_000)).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("body");
    let out = herdless(&["get", "--base", "10ms", "-o", file.to_str().unwrap(), &url]).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert!(std::fs::read(&file).unwrap() == *body, "started over");
}

/// `get >&-`: a closed stdout is an error (exit 1, said on stderr) before
/// any request is sent, not a body dropped with exit 0. `> /dev/null` (and
/// Rust's `Stdio::null()`, write-only too) is a stdout like any other; a
/// `/dev/null` open for reading and writing is what a closed stdout looks
/// like after the Rust runtime reopened it, so it is refused the same way,
/// pointing to `--output /dev/null`, which discards the body with stdout
/// closed or not; a stdout open for reading only is refused. (`get` is
/// started through `sh -c 'exec … REDIRECT'`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_stdout_is_an_error_before_anything_is_sent() {
    use std::sync::atomic::Ordering::SeqCst;
    let (url, seen) = raw_server::serve(|_| raw_server::Reply::Body {
        body: std::sync::Arc::new(b"ok".to_vec()),
        chunked: false,
    })
    .await;
    let run = |args: &'static str| {
        let url = url.clone();
        async move {
            tokio::process::Command::new("sh")
                .arg("-c")
                .arg(format!("exec \"$0\" get \"$1\" {args}"))
                .arg(env!("CARGO_BIN_EXE_herdless"))
                .arg(url)
                .output()
                .await
                .unwrap()
        }
    };
    for closed in [">&-", "1<>/dev/null"] {
        let out = run(closed).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{closed}: {stderr}");
        assert!(
            stderr.contains("herdless get: stdout is closed"),
            "{stderr}"
        );
        assert!(stderr.contains("--output /dev/null"), "{stderr}");
    }
    assert_eq!(seen.load(SeqCst), 0, "nothing was sent");
    let out = run("1</dev/null").await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("open for reading only"));
    for fine in [">/dev/null", "--output /dev/null >&-"] {
        let out = run(fine).await;
        assert_eq!(out.status.code(), Some(0), "{fine}: {out:?}");
    }
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_herdless"))
        .args(["get", &url])
        .stdout(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "Stdio::null(): {out:?}");
    assert_eq!(seen.load(SeqCst), 3);
}
