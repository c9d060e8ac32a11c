//! The HTTP server: records every arrival, asks the admission, answers; and
//! `/stats`.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use herdless::http::RETRY_AFTER_MS;
use serde::Serialize;

use super::admission::{Arrival, Rule, Verdict};

/// One recorded arrival (an element of `/stats`'s `arrivals`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ArrivalRecord {
    /// Seconds since the stub started.
    pub t_s: f64,
    /// The `X-Worker-Id` header, if any.
    pub worker: Option<String>,
    /// The status returned.
    pub status: u16,
}

/// How many arrivals `/stats` keeps: the most recent [`ARRIVALS_KEPT`], so a
/// long run's memory stays bounded (tens of bytes each, a few MB in all);
/// `total` still counts every arrival.
pub const ARRIVALS_KEPT: usize = 100_000;

/// The `/stats` document.
#[derive(Debug, Clone, Serialize)]
pub struct Stats {
    /// Number of arrivals since start, all of them (also those no longer kept).
    pub total: usize,
    /// Arrivals no longer kept (`total` minus the length of `arrivals`).
    pub dropped: usize,
    /// The most recent arrivals (at most [`ARRIVALS_KEPT`]), in order.
    pub arrivals: Vec<ArrivalRecord>,
}

#[derive(Default)]
struct Book {
    per_worker: std::collections::HashMap<Option<String>, u64>,
    total: usize,
    /// A ring of the last `keep` arrivals.
    arrivals: std::collections::VecDeque<ArrivalRecord>,
}

struct Shared {
    start: Instant,
    admission: Box<dyn Rule>,
    book: Mutex<Book>,
    keep: usize,
}

/// A running stub: its address and its arrivals.
#[derive(Clone)]
pub struct Stub {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Stub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stub").field("addr", &self.addr).finish()
    }
}

impl Stub {
    /// Binds 127.0.0.1:`port` (0: a free port) with a deep accept backlog.
    ///
    /// # Errors
    ///
    /// The bind error.
    pub fn bind(port: u16) -> io::Result<tokio::net::TcpListener> {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.set_reuseaddr(true)?;
        socket.bind(SocketAddr::from(([127, 0, 0, 1], port)))?;
        // The kernel caps this at net.core.somaxconn; a fleet connects all at once.
        socket.listen(65_535)
    }

    /// Starts serving on `listener` with `admission` until `shutdown` completes.
    /// Returns the stub and the server task (which ends after shutdown).
    /// `/stats` keeps the last [`ARRIVALS_KEPT`] arrivals.
    ///
    /// # Errors
    ///
    /// The listener's address error.
    pub fn start(
        listener: tokio::net::TcpListener,
        admission: impl Rule,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<(Stub, tokio::task::JoinHandle<io::Result<()>>)> {
        Self::start_keeping(listener, admission, shutdown, ARRIVALS_KEPT)
    }

    /// [`Stub::start`], keeping the last `keep` arrivals (at least 1) for
    /// `/stats` instead of [`ARRIVALS_KEPT`].
    ///
    /// # Errors
    ///
    /// The listener's address error.
    pub fn start_keeping(
        listener: tokio::net::TcpListener,
        admission: impl Rule,
        shutdown: impl Future<Output = ()> + Send + 'static,
        keep: usize,
    ) -> io::Result<(Stub, tokio::task::JoinHandle<io::Result<()>>)> {
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            start: Instant::now(),
            admission: Box::new(admission),
            book: Mutex::new(Book::default()),
            keep: keep.max(1),
        });
        let app = Router::new()
            .route("/stats", get(stats))
            .fallback(device)
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await
        });
        Ok((Stub { addr, shared }, task))
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A copy of the arrivals so far (what `/stats` returns).
    pub fn stats(&self) -> Stats {
        stats_of(&self.shared)
    }
}

fn stats_of(shared: &Shared) -> Stats {
    let book = shared.book.lock().unwrap_or_else(|p| p.into_inner());
    Stats {
        total: book.total,
        dropped: book.total - book.arrivals.len(),
        arrivals: book.arrivals.iter().cloned().collect(),
    }
}

async fn stats(State(shared): State<Arc<Shared>>) -> Json<Stats> {
    Json(stats_of(&shared))
}

async fn device(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let worker = headers
        .get("x-worker-id")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let mut book = shared.book.lock().unwrap_or_else(|p| p.into_inner());
    // Read the clock under the lock: the admissions see times in the order
    // they decide, and `/stats` lists the arrivals in time order.
    let since_start = shared.start.elapsed();
    let n = book.per_worker.entry(worker.clone()).or_insert(0);
    *n += 1;
    let verdict = shared.admission.admit(&Arrival {
        since_start,
        worker: worker.as_deref(),
        nth_for_worker: *n,
    });
    let status = match &verdict {
        Verdict::Admit => StatusCode::OK,
        Verdict::Reject { status, .. } => *status,
    };
    if book.arrivals.len() >= shared.keep {
        book.arrivals.pop_front();
    }
    book.arrivals.push_back(ArrivalRecord {
        t_s: since_start.as_secs_f64(),
        worker,
        status: status.as_u16(),
    });
    book.total += 1;
    drop(book);
    match verdict {
        Verdict::Admit => (StatusCode::OK, "ok\n").into_response(),
        Verdict::Reject {
            status,
            retry_after,
            retry_after_ms,
        } => {
            let mut r = (status, "unavailable\n").into_response();
            if let Some(v) = retry_after {
                r.headers_mut().insert(axum::http::header::RETRY_AFTER, v);
            }
            if let Some(ms) = retry_after_ms {
                r.headers_mut()
                    .insert(RETRY_AFTER_MS, HeaderValue::from(ms));
            }
            r
        }
    }
}

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}
