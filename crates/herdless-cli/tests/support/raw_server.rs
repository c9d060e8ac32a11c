//! A raw HTTP/1.1 server on 127.0.0.1 written byte by byte, for what a
//! well-behaved framework will not send: bodies that break off, stall or
//! never end, and (in `http_hostile.rs`) arbitrary bytes. Also the peak
//! memory of a process the test started.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How to answer one request.
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    /// 200 with this body, with `Content-Length` or chunked (64 KiB chunks).
    Body { body: Arc<Vec<u8>>, chunked: bool },
    /// 200 promising all of `body` (`Content-Length`), sending its first
    /// `sent` bytes, then closing.
    Cut { body: Arc<Vec<u8>>, sent: usize },
    /// 200 promising `promised` bytes, then nothing, the connection held.
    Stall { promised: usize },
    /// 200, chunked, 64 KiB chunks for ever (until the client goes away).
    Endless,
    /// These bytes, then close.
    Raw(Vec<u8>),
}

/// A server answering its n-th request (0-based) with `script(n)`; returns
/// its URL and the count of requests it has read.
pub(crate) async fn serve(
    script: impl Fn(usize) -> Reply + Send + Sync + 'static,
) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let (seen, script) = (count.clone(), Arc::new(script));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (seen, script) = (seen.clone(), script.clone());
            tokio::spawn(async move {
                let mut stream = stream;
                while read_head(&mut stream).await {
                    let n = seen.fetch_add(1, Ordering::SeqCst);
                    if !answer(&mut stream, script(n)).await {
                        return;
                    }
                }
            });
        }
    });
    (url, count)
}

/// Reads a request head (up to the blank line; the requests here have no
/// body); false when the client went away first or sent more than 64 KiB.
async fn read_head(stream: &mut TcpStream) -> bool {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte).await {
            Ok(1) if head.len() < 65_536 => head.push(byte[0]),
            _ => return false,
        }
    }
    true
}

fn chunk_frame(data: &[u8]) -> Vec<u8> {
    let mut f = format!("{:x}\r\n", data.len()).into_bytes();
    f.extend_from_slice(data);
    f.extend_from_slice(b"\r\n");
    f
}

/// Sends one reply; true when the connection may serve another request.
async fn answer(stream: &mut TcpStream, reply: Reply) -> bool {
    match reply {
        Reply::Body {
            body,
            chunked: false,
        } => {
            let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len());
            stream.write_all(head.as_bytes()).await.is_ok() && stream.write_all(&body).await.is_ok()
        }
        Reply::Body {
            body,
            chunked: true,
        } => {
            let head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
            if stream.write_all(head).await.is_err() {
                return false;
            }
            for c in body.chunks(65_536) {
                if stream.write_all(&chunk_frame(c)).await.is_err() {
                    return false;
                }
            }
            stream.write_all(b"0\r\n\r\n").await.is_ok()
        }
        Reply::Cut { body, sent } => {
            let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len());
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(&body[..sent]).await;
            let _ = stream.flush().await;
            false
        }
        Reply::Stall { promised } => {
            let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {promised}\r\n\r\n");
            let _ = stream.write_all(head.as_bytes()).await;
            // Held open (and unread) until the client gives up.
            let mut sink = [0u8; 1024];
            while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
            false
        }
        Reply::Endless => {
            let head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
            let frame = chunk_frame(&[b'x'; 65_536]);
            if stream.write_all(head).await.is_err() {
                return false;
            }
            while stream.write_all(&frame).await.is_ok() {}
            false
        }
        Reply::Raw(bytes) => {
            let _ = stream.write_all(&bytes).await;
            false
        }
    }
}

/// `n` pseudo-random bytes (a fixed xorshift sequence: every byte value, no
/// structure a bug could line up with).
pub(crate) fn noise(n: usize) -> Arc<Vec<u8>> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let body = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    Arc::new(body)
}

/// The peak resident set size of process `pid` in KiB (`VmHWM` in
/// `/proc/PID/status`), or `None` once it has exited.
pub(crate) fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// How often a test samples a child's peak memory while it waits on it.
pub(crate) const SAMPLE: Duration = Duration::from_millis(20);
