//! The HTTP server: records every arrival, asks the admission, answers; and
//! `/stats`.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use herdless::http::RETRY_AFTER_MS;
use serde::Serialize;

use super::admission::{Arrival, Rule, Verdict};
use super::hold::{Hold, Waiting, drive};

/// One recorded arrival (an element of `/stats`'s `arrivals`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ArrivalRecord {
    /// Seconds since the stub started.
    pub t_s: f64,
    /// The `X-Worker-Id` header, if any.
    pub worker: Option<String>,
    /// The status returned.
    pub status: u16,
    /// How long the request was held before its answer, seconds (`null`:
    /// answered at once). A held request is recorded when it is answered,
    /// with `t_s` its arrival, so records of held requests come after
    /// records of later arrivals.
    pub held_s: Option<f64>,
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
    /// Requests held open now (`--hold-max`, `--hold-for`; 0 without a hold).
    pub held: usize,
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
    admission: Arc<dyn Rule>,
    /// The held requests, when the admission holds (`--hold-max`, `--hold-for`).
    hold: Option<Arc<Hold>>,
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
        let admission: Arc<dyn Rule> = Arc::new(admission);
        let start = Instant::now();
        let hold = admission.holds().then(|| Arc::new(Hold::default()));
        let shared = Arc::new(Shared {
            start,
            admission: Arc::clone(&admission),
            hold: hold.clone(),
            book: Mutex::new(Book::default()),
            keep: keep.max(1),
        });
        // The hold's driver runs while the server does (held requests are
        // in flight: a graceful shutdown waits for their answers).
        let driver = hold.map(|hold| {
            let clock = tokio::time::Instant::from_std(start);
            tokio::spawn(drive(hold, admission, clock, move || start.elapsed()))
        });
        let app = Router::new()
            .route("/stats", get(stats))
            .fallback(device)
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await;
            if let Some(d) = driver {
                d.abort();
            }
            served
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
        held: shared.hold.as_ref().map_or(0, |h| h.len()),
    }
}

async fn stats(State(shared): State<Arc<Shared>>) -> Json<Stats> {
    Json(stats_of(&shared))
}

/// What the admission made of an arrival: answer now, or wait in the hold.
enum Decided {
    Now(Verdict),
    Held(
        herdless::pushback::Ticket,
        Duration,
        tokio::sync::oneshot::Receiver<(Verdict, Duration)>,
    ),
}

/// Counts the arrival and asks the admission; a request it holds is parked
/// (nothing recorded yet: a held request is recorded when it is answered).
fn decide(shared: &Shared, worker: Option<&str>) -> Decided {
    let mut book = shared.book.lock().unwrap_or_else(|p| p.into_inner());
    // Read the clock under the lock: the admissions see times in the order
    // they decide, and `/stats` lists the arrivals in time order.
    let since_start = shared.start.elapsed();
    let n = book
        .per_worker
        .entry(worker.map(str::to_owned))
        .or_insert(0);
    *n += 1;
    let nth = *n;
    // Taken before the decision: a held request waits before the driver can
    // release it (the lock order: hold.rs).
    let mut waiting = shared.hold.as_ref().map(|h| h.lock());
    let verdict = shared.admission.admit(&Arrival {
        since_start,
        worker,
        nth_for_worker: nth,
    });
    let decided = match (verdict, waiting.as_mut()) {
        (Verdict::Hold { ticket }, Some(map)) => {
            let (answer, answered) = tokio::sync::oneshot::channel();
            let worker = worker.map(str::to_owned);
            map.insert(
                ticket.id(),
                Waiting {
                    worker,
                    nth,
                    answer,
                },
            );
            return Decided::Held(ticket, since_start, answered);
        }
        // A hold with nowhere to park it cannot be answered later.
        (Verdict::Hold { .. }, None) => Verdict::reject(StatusCode::SERVICE_UNAVAILABLE, None),
        (verdict, _) => verdict,
    };
    drop(waiting);
    record(
        &mut book,
        shared.keep,
        (since_start, since_start),
        worker,
        &decided,
    );
    Decided::Now(decided)
}

fn status_of(verdict: &Verdict) -> StatusCode {
    match verdict {
        Verdict::Admit => StatusCode::OK,
        Verdict::Reject { status, .. } => *status,
        Verdict::Hold { .. } => StatusCode::SERVICE_UNAVAILABLE,
    }
}

fn record(
    book: &mut Book,
    keep: usize,
    (arrived, answered): (Duration, Duration),
    worker: Option<&str>,
    verdict: &Verdict,
) {
    if book.arrivals.len() >= keep {
        book.arrivals.pop_front();
    }
    book.arrivals.push_back(ArrivalRecord {
        t_s: arrived.as_secs_f64(),
        worker: worker.map(str::to_owned),
        status: status_of(verdict).as_u16(),
        held_s: (answered > arrived).then(|| (answered - arrived).as_secs_f64()),
    });
    book.total += 1;
}

async fn device(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let worker = headers
        .get("x-worker-id")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let verdict = match decide(&shared, worker.as_deref()) {
        Decided::Now(verdict) => verdict,
        Decided::Held(ticket, arrived, answered) => {
            let hold = shared.hold.as_deref().expect("held with a hold");
            hold.parked();
            let parked = Parked {
                hold,
                rules: shared.admission.as_ref(),
                ticket: Some(ticket),
            };
            let out = answered.await;
            parked.answered();
            let (verdict, at) = out.unwrap_or_else(|_| {
                // The driver stopped (the server is shutting down).
                let v = Verdict::reject(StatusCode::SERVICE_UNAVAILABLE, None);
                (v, shared.start.elapsed())
            });
            let mut book = shared.book.lock().unwrap_or_else(|p| p.into_inner());
            record(
                &mut book,
                shared.keep,
                (arrived, at),
                worker.as_deref(),
                &verdict,
            );
            verdict
        }
    };
    match verdict {
        Verdict::Admit => (StatusCode::OK, "ok\n").into_response(),
        Verdict::Hold { .. } => (StatusCode::SERVICE_UNAVAILABLE, "unavailable\n").into_response(),
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

/// A request waiting in the hold: if its future is dropped first (the
/// client hung up), it leaves the hold.
struct Parked<'a> {
    hold: &'a Hold,
    rules: &'a dyn Rule,
    ticket: Option<herdless::pushback::Ticket>,
}

impl Parked<'_> {
    fn answered(mut self) {
        self.ticket = None;
    }
}

impl Drop for Parked<'_> {
    fn drop(&mut self) {
        if let Some(t) = self.ticket.take() {
            self.hold.hung_up(self.rules, t);
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
