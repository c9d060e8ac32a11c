//! A scripted HTTP/1.1 server on 127.0.0.1 for the reqwest tests: it
//! answers the n-th request with the n-th entry of its script and records
//! what it received.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// One received request: method and lower-cased headers.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) method: String,
    pub(crate) headers: Vec<(String, String)>,
}

impl Seen {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A script entry whose response body breaks off mid-way.
pub(crate) const TRUNCATE: &str = "truncate";

/// A server answering the n-th request with `script[n]` (the last entry
/// repeats): (status, extra header lines).
pub(crate) async fn scripted(script: Vec<(u16, &'static str)>) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (log, script) = (log.clone(), script.clone());
            tokio::spawn(async move {
                let (r, mut w) = stream.into_split();
                let mut r = BufReader::new(r);
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    let method = line.split(' ').next().unwrap_or("").to_string();
                    let mut headers = Vec::new();
                    let mut len = 0usize;
                    loop {
                        let mut h = String::new();
                        if r.read_line(&mut h).await.unwrap_or(0) == 0 {
                            return;
                        }
                        let h = h.trim_end();
                        if h.is_empty() {
                            break;
                        }
                        if let Some((k, v)) = h.split_once(':') {
                            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_string());
                            if k == "content-length" {
                                len = v.parse().unwrap_or(0);
                            }
                            headers.push((k, v));
                        }
                    }
                    let mut body = vec![0; len];
                    if r.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    let n = {
                        let mut log = log.lock().unwrap();
                        log.push(Seen { method, headers });
                        log.len() - 1
                    };
                    let (status, extra) = script[n.min(script.len() - 1)];
                    if extra == TRUNCATE {
                        // Promise 10 bytes, send 2, close our side (FIN), then
                        // drain until the client hangs up.
                        let reply = format!("HTTP/1.1 {status} X\r\ncontent-length: 10\r\n\r\nok");
                        let _ = w.write_all(reply.as_bytes()).await;
                        let _ = w.shutdown().await;
                        let mut rest = Vec::new();
                        let _ = r.read_to_end(&mut rest).await;
                        return;
                    }
                    let reply =
                        format!("HTTP/1.1 {status} X\r\ncontent-length: 2\r\n{extra}\r\nok");
                    if w.write_all(reply.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, seen)
}
