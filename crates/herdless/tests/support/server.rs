//! A scripted HTTP server on 127.0.0.1 (axum, port 0) for the client-side
//! tests: the n-th request gets `script[n]` (the last entry repeats), and
//! every request is logged.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::routing::any;
use tokio::net::TcpListener;

/// A status and extra response headers.
pub(crate) type Reply = (u16, Vec<(&'static str, &'static str)>);

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub method: Method,
    /// Its `Idempotency-Key`, if any.
    pub key: Option<String>,
    pub body: Bytes,
}

/// What the server saw, in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Log(Arc<Mutex<Vec<Seen>>>);

impl Log {
    pub(crate) fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.0.lock().unwrap().clone()
    }
}

/// Starts the server; returns its URL (path `/`) and its log.
pub(crate) async fn serve(script: Vec<Reply>) -> (String, Log) {
    let seen = Log::default();
    let log = seen.clone();
    let app = Router::new().route(
        "/",
        any(move |method: Method, headers: HeaderMap, body: Bytes| {
            let n = {
                let mut log = log.0.lock().unwrap();
                let key = headers.get("idempotency-key");
                log.push(Seen {
                    method,
                    key: key.map(|v| v.to_str().unwrap().to_owned()),
                    body,
                });
                log.len() - 1
            };
            let (status, extra) = script[n.min(script.len() - 1)].clone();
            async move {
                let mut map = HeaderMap::new();
                for (k, v) in extra {
                    map.insert(HeaderName::from_static(k), HeaderValue::from_static(v));
                }
                (StatusCode::from_u16(status).unwrap(), map, "body")
            }
        }),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}
