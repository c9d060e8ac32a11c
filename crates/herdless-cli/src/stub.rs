//! `herdless stub`: a real HTTP stub controller on 127.0.0.1, to point a fleet at.
//!
//! ```text
//! herdless stub [--port P] [--fail-first K] [--fail-every K] [--outage DUR] [--capacity N]
//!               [--pushback on|off] [--horizon DUR]
//!               [--retry-after VALUE] [--fail-status CODE]
//! ```
//!
//! Every path except `/stats` is "the device". Each arrival is recorded (time
//! since start, `X-Worker-Id`, status returned) and `GET /stats` returns them
//! all as JSON. The first stdout line is `listening on 127.0.0.1:PORT` (port 0,
//! the default, picks a free one); SIGINT or SIGTERM shut it down cleanly.
//!
//! # Admission is a replaceable component
//!
//! Whether a request is served or rejected is decided by an [`Admission`]
//! implementation, nothing else: the handler records the arrival, asks the
//! admission, answers. The stub chains up to four ([`Chain`], first rejection
//! wins):
//!
//! 1. the outage: rejects everything for `--outage` after start;
//! 2. [`FailFirst`]: rejects each client's first `--fail-first` requests (the
//!    client is named by `X-Worker-Id`; requests without it share one name);
//! 3. [`FailEvery`]: rejects every `--fail-every`-th request (a healthy
//!    endpoint with a small, steady error rate: 1 / K of all requests);
//! 4. the capacity: admits at most `--capacity` requests per second and
//!    answers the rest 503.
//!
//! # Server-guided pushback (the default with `--capacity`)
//!
//! With `--capacity N`, the outage and the capacity are one [`Pushback`]: the
//! library's [`SlotAllocator`] (the same allocator the
//! `herdless::fleet::pushback_layer::PushbackLayer` tower layer wraps), driven by the
//! stub's own clock (time since start). It admits at most N requests per second
//! (GCRA, a burst of 100 ms worth of capacity) and answers each rejected
//! request `503` with **its own slot**: `Retry-After` (whole seconds, rounded
//! up) and `Retry-After-Ms` (milliseconds, rounded up), each rejection the next
//! free slot `1 / N` after the previous one. During `--outage DUR` it sheds
//! everything and the slots start at the outage's end, so a fleet that honors
//! them is booked onto the recovered server at exactly its capacity: a drain
//! at the physical limit `DUR + fleet / N`. No slot is further than
//! `--horizon` (default 60 s) away.
//!
//! The stub answers through the [`Admission`] chain rather than by putting the
//! tower layer in front of the router because every arrival, rejected ones
//! included, must be recorded in `/stats` with the status it got — a layer
//! that answers before the handler would hide its rejections from the book.
//!
//! # Baselines without pushback
//!
//! `--pushback off`, or a fixed `--retry-after VALUE` (one value for everyone,
//! which is what pushback avoids), gives the old behaviour: [`Outage`] and
//! [`Capacity`] (at most N per fixed one-second window since start), every
//! rejection carrying `--retry-after VALUE` verbatim when given (hostile values
//! included, that is the point) and nothing otherwise. `--pushback on`
//! together with `--retry-after` is a usage error (one value for everyone
//! cannot also be a slot each), and so is `--pushback on` without
//! `--capacity` (there is no capacity to spread over).
//!
//! Outage rejections use `--fail-status` (default 503) in both modes; capacity
//! rejections are always 503.

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
use clap::{Args, ValueEnum};
use herdless::fleet::pushback::{Allotment, SlotAllocator};
use herdless::http::RETRY_AFTER_MS;
use serde::Serialize;

use crate::policy_args::parse_duration;
use crate::{exit, limits};

/// `herdless stub` flags.
#[derive(Debug, Clone, Args)]
pub struct StubArgs {
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Fail each client's first K requests (client = X-Worker-Id header).
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub fail_first: u32,
    /// Fail every K-th request (counted over all clients; 0: never).
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub fail_every: u32,
    /// Fail every request for this long after start (e.g. 5s).
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub outage: Option<Duration>,
    /// Admit at most N requests per second; answer the rest 503 (with pushback:
    /// each rejection gets its own Retry-After slot).
    #[arg(long, value_name = "N")]
    pub capacity: Option<u32>,
    /// Server-guided pushback with --capacity: spread Retry-After / Retry-After-Ms
    /// slots (default: on when --capacity is given and --retry-after is not).
    #[arg(long, value_enum, value_name = "on|off")]
    pub pushback: Option<Switch>,
    /// With pushback: the longest Retry-After handed out.
    #[arg(long, value_parser = parse_duration, value_name = "DUR", default_value = "60s")]
    pub horizon: Duration,
    /// Retry-After value sent with every rejection, verbatim and the same for
    /// everyone (e.g. 2, or an HTTP-date); turns pushback off.
    #[arg(long, value_name = "VALUE")]
    pub retry_after: Option<String>,
    /// Status for --fail-first and --outage rejections (400-599).
    #[arg(long, value_name = "CODE", default_value_t = 503)]
    pub fail_status: u16,
}

/// An on/off flag value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Switch {
    /// Enabled.
    On,
    /// Disabled.
    Off,
}

/// What the admission sees of one arrival.
#[derive(Debug, Clone, Copy)]
pub struct Arrival<'a> {
    /// Time since the stub started.
    pub since_start: Duration,
    /// The `X-Worker-Id` header, if any.
    pub worker: Option<&'a str>,
    /// This client's request count, this one included (1-based).
    pub nth_for_worker: u64,
}

/// An admission decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Serve it (200).
    Admit,
    /// Reject it with `status`, and `Retry-After` when given.
    Reject {
        /// The status to answer.
        status: StatusCode,
        /// The `Retry-After` header value, if any.
        retry_after: Option<HeaderValue>,
        /// The `Retry-After-Ms` header value (milliseconds), if any.
        retry_after_ms: Option<u64>,
    },
}

impl Verdict {
    /// A rejection with a fixed (or no) `Retry-After` and no `Retry-After-Ms`.
    pub fn reject(status: StatusCode, retry_after: Option<HeaderValue>) -> Self {
        Verdict::Reject {
            status,
            retry_after,
            retry_after_ms: None,
        }
    }
}

/// Decides whether the stub serves an arrival. See the [module docs](self).
pub trait Admission: Send + Sync + 'static {
    /// The verdict on `arrival`.
    fn admit(&self, arrival: &Arrival<'_>) -> Verdict;
}

/// Rejects every request during the first `duration` after start.
#[derive(Debug, Clone)]
pub struct Outage {
    /// How long the outage lasts.
    pub duration: Duration,
    /// The rejection.
    pub status: StatusCode,
    /// Its `Retry-After`.
    pub retry_after: Option<HeaderValue>,
}

impl Admission for Outage {
    fn admit(&self, a: &Arrival<'_>) -> Verdict {
        if a.since_start < self.duration {
            Verdict::reject(self.status, self.retry_after.clone())
        } else {
            Verdict::Admit
        }
    }
}

/// Rejects each client's first `k` requests.
#[derive(Debug, Clone)]
pub struct FailFirst {
    /// How many requests of each client fail.
    pub k: u64,
    /// The rejection.
    pub status: StatusCode,
    /// Its `Retry-After`.
    pub retry_after: Option<HeaderValue>,
}

impl Admission for FailFirst {
    fn admit(&self, a: &Arrival<'_>) -> Verdict {
        if a.nth_for_worker <= self.k {
            Verdict::reject(self.status, self.retry_after.clone())
        } else {
            Verdict::Admit
        }
    }
}

/// Rejects every `k`-th request (the `k`-th, `2k`-th, … arrival to reach it).
#[derive(Debug)]
pub struct FailEvery {
    k: u64,
    status: StatusCode,
    retry_after: Option<HeaderValue>,
    seen: std::sync::atomic::AtomicU64,
}

impl FailEvery {
    /// Fails every `k`-th request (`k` at least 1) with `status`.
    pub fn new(k: u64, status: StatusCode, retry_after: Option<HeaderValue>) -> Self {
        FailEvery {
            k: k.max(1),
            status,
            retry_after,
            seen: std::sync::atomic::AtomicU64::new(0),
        }
    }
}

impl Admission for FailEvery {
    fn admit(&self, _: &Arrival<'_>) -> Verdict {
        let n = self.seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if n % self.k == 0 {
            Verdict::reject(self.status, self.retry_after.clone())
        } else {
            Verdict::Admit
        }
    }
}

/// Admits at most `per_second` requests in each one-second window since start
/// (fixed windows); answers the rest 503.
#[derive(Debug)]
pub struct Capacity {
    per_second: u64,
    retry_after: Option<HeaderValue>,
    window: Mutex<(u64, u64)>,
}

impl Capacity {
    /// A capacity of `per_second` (at least 1).
    pub fn new(per_second: u64, retry_after: Option<HeaderValue>) -> Self {
        Self {
            per_second: per_second.max(1),
            retry_after,
            window: Mutex::new((0, 0)),
        }
    }
}

impl Admission for Capacity {
    fn admit(&self, a: &Arrival<'_>) -> Verdict {
        let second = a.since_start.as_secs();
        let mut w = self.window.lock().unwrap_or_else(|p| p.into_inner());
        if w.0 != second {
            *w = (second, 0);
        }
        if w.1 < self.per_second {
            w.1 += 1;
            Verdict::Admit
        } else {
            Verdict::reject(StatusCode::SERVICE_UNAVAILABLE, self.retry_after.clone())
        }
    }
}

/// Server-guided pushback: the library's [`SlotAllocator`] on the stub's clock
/// (time since start). See the [module docs](self#server-guided-pushback-the-default-with---capacity).
///
/// One allocator serves two places in the chain, so the order "outage, then
/// fail-first, then capacity" holds: [`Pushback::outage_gate`] rejects (with a
/// slot past the outage's end) only while the outage lasts, and
/// [`Pushback::capacity`] decides every request that reaches it.
#[derive(Debug, Clone)]
pub struct Pushback {
    alloc: Arc<Mutex<SlotAllocator>>,
    outage_status: StatusCode,
    outage_only: bool,
}

impl Pushback {
    /// Pushback at `capacity` requests per second, slots no further than
    /// `horizon`, and an outage of `outage` after start (its rejections
    /// answered `outage_status`).
    ///
    /// # Errors
    ///
    /// A message when the capacity or horizon is invalid.
    pub fn new(
        capacity: u32,
        horizon: Duration,
        outage: Option<Duration>,
        outage_status: StatusCode,
    ) -> Result<Self, String> {
        let mut alloc = SlotAllocator::new(f64::from(capacity), horizon)
            .map_err(|e| format!("--capacity {capacity} --horizon {horizon:?}: {e}"))?;
        if let Some(d) = outage {
            alloc = alloc.outage_until(d);
        }
        Ok(Pushback {
            alloc: Arc::new(Mutex::new(alloc)),
            outage_status,
            outage_only: false,
        })
    }

    /// The admission for the outage's place in the chain: rejects with a slot
    /// while the outage lasts, admits (passes on) otherwise.
    pub fn outage_gate(&self) -> Pushback {
        Pushback {
            outage_only: true,
            ..self.clone()
        }
    }

    /// The admission for the capacity's place in the chain.
    pub fn capacity(&self) -> Pushback {
        Pushback {
            outage_only: false,
            ..self.clone()
        }
    }

    /// Admitted and rejected counts so far.
    pub fn counts(&self) -> (u64, u64) {
        self.alloc
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .counts()
    }
}

impl Admission for Pushback {
    fn admit(&self, a: &Arrival<'_>) -> Verdict {
        let mut alloc = self.alloc.lock().unwrap_or_else(|p| p.into_inner());
        let in_outage = alloc.in_outage(a.since_start);
        if self.outage_only && !in_outage {
            return Verdict::Admit;
        }
        let decision = alloc.decide(a.since_start);
        drop(alloc);
        match decision {
            Allotment::Admit => Verdict::Admit,
            rejected => Verdict::Reject {
                status: if in_outage {
                    self.outage_status
                } else {
                    StatusCode::SERVICE_UNAVAILABLE
                },
                retry_after: rejected.retry_after_secs().map(HeaderValue::from),
                retry_after_ms: rejected.retry_after_ms(),
            },
        }
    }
}

/// Asks each admission in order; the first rejection wins.
#[derive(Default)]
pub struct Chain(pub Vec<Box<dyn Admission>>);

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Chain({} admissions)", self.0.len())
    }
}

impl Admission for Chain {
    fn admit(&self, a: &Arrival<'_>) -> Verdict {
        for admission in &self.0 {
            let v = admission.admit(a);
            if v != Verdict::Admit {
                return v;
            }
        }
        Verdict::Admit
    }
}

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

/// The `/stats` document.
#[derive(Debug, Clone, Serialize)]
pub struct Stats {
    /// Number of arrivals.
    pub total: usize,
    /// Every arrival, in order.
    pub arrivals: Vec<ArrivalRecord>,
}

#[derive(Default)]
struct Book {
    per_worker: std::collections::HashMap<Option<String>, u64>,
    arrivals: Vec<ArrivalRecord>,
}

struct Shared {
    start: Instant,
    admission: Box<dyn Admission>,
    book: Mutex<Book>,
}

/// Whether the flags ask for server-guided pushback.
///
/// # Errors
///
/// A message for `--pushback on` with `--retry-after` or without `--capacity`.
pub fn pushback_enabled(args: &StubArgs) -> Result<bool, String> {
    match (args.pushback, &args.retry_after, args.capacity) {
        (Some(Switch::Off), _, _) => Ok(false),
        (Some(Switch::On), Some(v), _) => Err(format!(
            "--pushback on gives each rejection its own Retry-After slot; --retry-after {v:?} \
             sends one value to everyone (drop one of them, or add --pushback off)"
        )),
        (Some(Switch::On), None, None) => {
            Err("--pushback on needs --capacity N (the rate to spread the callers over)".into())
        }
        (Some(Switch::On), None, Some(_)) => Ok(true),
        (None, retry_after, capacity) => Ok(retry_after.is_none() && capacity.is_some()),
    }
}

/// Builds the admission chain the flags describe.
///
/// # Errors
///
/// A message for an invalid `--fail-status`, `--capacity`, `--horizon`,
/// `--retry-after` or `--pushback` combination.
pub fn admission_from_args(args: &StubArgs) -> Result<Chain, String> {
    let status = StatusCode::from_u16(args.fail_status)
        .ok()
        .filter(|s| s.is_client_error() || s.is_server_error())
        .ok_or_else(|| format!("--fail-status {}: must be 400-599", args.fail_status))?;
    let retry_after = match &args.retry_after {
        Some(v) => Some(HeaderValue::from_bytes(v.as_bytes()).map_err(|_| {
            format!("--retry-after {v:?}: not a valid header value (control characters)")
        })?),
        None => None,
    };
    if args.capacity == Some(0) {
        return Err("--capacity 0: must be at least 1 request per second".into());
    }
    let pushback = match (pushback_enabled(args)?, args.capacity) {
        (true, Some(n)) => Some(Pushback::new(n, args.horizon, args.outage, status)?),
        _ => None,
    };
    let mut chain: Vec<Box<dyn Admission>> = Vec::new();
    if let Some(duration) = args.outage {
        match &pushback {
            Some(p) => chain.push(Box::new(p.outage_gate())),
            None => chain.push(Box::new(Outage {
                duration,
                status,
                retry_after: retry_after.clone(),
            })),
        }
    }
    if args.fail_first > 0 {
        chain.push(Box::new(FailFirst {
            k: u64::from(args.fail_first),
            status,
            retry_after: retry_after.clone(),
        }));
    }
    if args.fail_every > 0 {
        chain.push(Box::new(FailEvery::new(
            u64::from(args.fail_every),
            status,
            retry_after.clone(),
        )));
    }
    match (&pushback, args.capacity) {
        (Some(p), _) => chain.push(Box::new(p.capacity())),
        (None, Some(n)) => chain.push(Box::new(Capacity::new(u64::from(n), retry_after))),
        (None, None) => {}
    }
    Ok(Chain(chain))
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
    ///
    /// # Errors
    ///
    /// The listener's address error.
    pub fn start(
        listener: tokio::net::TcpListener,
        admission: impl Admission,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<(Stub, tokio::task::JoinHandle<io::Result<()>>)> {
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            start: Instant::now(),
            admission: Box::new(admission),
            book: Mutex::new(Book::default()),
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
        total: book.arrivals.len(),
        arrivals: book.arrivals.clone(),
    }
}

async fn stats(State(shared): State<Arc<Shared>>) -> Json<Stats> {
    Json(stats_of(&shared))
}

async fn device(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let since_start = shared.start.elapsed();
    let worker = headers
        .get("x-worker-id")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let mut book = shared.book.lock().unwrap_or_else(|p| p.into_inner());
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
    book.arrivals.push(ArrivalRecord {
        t_s: since_start.as_secs_f64(),
        worker,
        status: status.as_u16(),
    });
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

/// Runs `herdless stub`; returns the exit code.
pub fn run(args: &StubArgs) -> i32 {
    let admission = match admission_from_args(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("herdless stub: {e}");
            return exit::USAGE;
        }
    };
    limits::raise_nofile_limit();
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("herdless stub: cannot start the runtime: {e}");
            return exit::FAILURE;
        }
    };
    rt.block_on(async {
        let listener = match Stub::bind(args.port) {
            Ok(l) => l,
            Err(e) => {
                eprintln!(
                    "herdless stub: cannot listen on 127.0.0.1:{}: {e}",
                    args.port
                );
                return exit::FAILURE;
            }
        };
        let (stub, task) = match Stub::start(listener, admission, shutdown_signal()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("herdless stub: {e}");
                return exit::FAILURE;
            }
        };
        {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "listening on {}", stub.addr());
            let _ = out.flush();
        }
        match task.await {
            Ok(Ok(())) => {
                eprintln!(
                    "herdless stub: shut down after {} arrivals",
                    stub.stats().total
                );
                exit::SUCCESS
            }
            Ok(Err(e)) => {
                eprintln!("herdless stub: {e}");
                exit::FAILURE
            }
            Err(e) => {
                eprintln!("herdless stub: server task failed: {e}");
                exit::FAILURE
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64, nth: u64) -> Arrival<'static> {
        Arrival {
            since_start: Duration::from_millis(ms),
            worker: Some("1"),
            nth_for_worker: nth,
        }
    }

    #[test]
    fn chain_order_outage_then_fail_first_then_capacity() {
        let args = StubArgs {
            port: 0,
            fail_every: 0,
            fail_first: 2,
            outage: Some(Duration::from_secs(1)),
            capacity: Some(2),
            pushback: None,
            horizon: Duration::from_secs(60),
            retry_after: Some("7".into()),
            fail_status: 502,
        };
        let chain = admission_from_args(&args).unwrap();
        let reject = |s: u16| {
            Verdict::reject(
                StatusCode::from_u16(s).unwrap(),
                Some(HeaderValue::from_static("7")),
            )
        };
        assert_eq!(chain.admit(&at(500, 9)), reject(502)); // outage
        assert_eq!(chain.admit(&at(1500, 2)), reject(502)); // fail-first
        assert_eq!(chain.admit(&at(1500, 3)), Verdict::Admit); // capacity 1/2
        assert_eq!(chain.admit(&at(1600, 4)), Verdict::Admit); // capacity 2/2
        assert_eq!(chain.admit(&at(1700, 5)), reject(503)); // over capacity
        assert_eq!(chain.admit(&at(2000, 6)), Verdict::Admit); // next window
    }

    #[test]
    fn bad_flags_are_clear_errors() {
        let base = StubArgs {
            port: 0,
            fail_every: 0,
            fail_first: 0,
            outage: None,
            capacity: None,
            pushback: None,
            horizon: Duration::from_secs(60),
            retry_after: None,
            fail_status: 503,
        };
        let e = admission_from_args(&StubArgs {
            fail_status: 200,
            ..base.clone()
        })
        .unwrap_err();
        assert!(e.contains("400-599"), "{e}");
        let e = admission_from_args(&StubArgs {
            capacity: Some(0),
            ..base.clone()
        })
        .unwrap_err();
        assert!(e.contains("at least 1"), "{e}");
        let e = admission_from_args(&StubArgs {
            retry_after: Some("a\nb".into()),
            ..base.clone()
        })
        .unwrap_err();
        assert!(e.contains("header value"), "{e}");
        let e = admission_from_args(&StubArgs {
            pushback: Some(Switch::On),
            ..base.clone()
        })
        .unwrap_err();
        assert!(e.contains("needs --capacity"), "{e}");
        let e = admission_from_args(&StubArgs {
            pushback: Some(Switch::On),
            capacity: Some(10),
            retry_after: Some("2".into()),
            ..base.clone()
        })
        .unwrap_err();
        assert!(e.contains("--pushback off"), "{e}");
        let e = admission_from_args(&StubArgs {
            capacity: Some(10),
            horizon: Duration::from_millis(10),
            ..base
        })
        .unwrap_err();
        assert!(e.contains("horizon"), "{e}");
    }

    fn base_args() -> StubArgs {
        StubArgs {
            port: 0,
            fail_every: 0,
            fail_first: 0,
            outage: None,
            capacity: None,
            pushback: None,
            horizon: Duration::from_secs(60),
            retry_after: None,
            fail_status: 503,
        }
    }

    /// The slot of a rejection, in milliseconds (asserting both headers agree).
    fn slot_ms(v: &Verdict) -> Option<u64> {
        match v {
            Verdict::Admit => None,
            Verdict::Reject {
                status,
                retry_after,
                retry_after_ms,
            } => {
                assert_eq!(*status, StatusCode::SERVICE_UNAVAILABLE);
                let ms = retry_after_ms.expect("pushback sends Retry-After-Ms");
                let secs: u64 = retry_after
                    .as_ref()
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .parse()
                    .unwrap();
                assert_eq!(
                    secs,
                    ms.div_ceil(1000).max(1),
                    "Retry-After is the slot rounded up"
                );
                Some(ms)
            }
        }
    }

    #[test]
    fn fail_every_rejects_one_request_in_k() {
        let chain = admission_from_args(&StubArgs {
            fail_every: 4,
            ..base_args()
        })
        .unwrap();
        let failed: Vec<bool> = (0..12)
            .map(|_| chain.admit(&at(0, 1)) != Verdict::Admit)
            .collect();
        let every_4th: Vec<bool> = (1..=12).map(|n| n % 4 == 0).collect();
        assert_eq!(failed, every_4th);
    }

    #[test]
    fn which_flags_turn_pushback_on() {
        let on = |a: StubArgs| pushback_enabled(&a).unwrap();
        assert!(!on(base_args()));
        assert!(on(StubArgs {
            capacity: Some(5),
            ..base_args()
        }));
        assert!(!on(StubArgs {
            capacity: Some(5),
            pushback: Some(Switch::Off),
            ..base_args()
        }));
        assert!(!on(StubArgs {
            capacity: Some(5),
            retry_after: Some("2".into()),
            ..base_args()
        }));
    }

    #[test]
    fn capacity_with_pushback_spreads_the_rejections_one_slot_apart() {
        // 10/s: burst 1, slots 100 ms apart.
        let chain = admission_from_args(&StubArgs {
            capacity: Some(10),
            ..base_args()
        })
        .unwrap();
        assert_eq!(chain.admit(&at(0, 1)), Verdict::Admit);
        let slots: Vec<u64> = (0..5)
            .filter_map(|_| slot_ms(&chain.admit(&at(0, 1))))
            .collect();
        // The admitted request holds [0, 100 ms); the next free slot is 100 ms.
        assert_eq!(
            slots,
            vec![100, 200, 300, 400, 500],
            "each rejection the next slot"
        );
    }

    #[test]
    fn outage_with_pushback_books_everyone_past_its_end() {
        // 1000/s, a 1 s outage: 2000 callers at t = 0.25 s are told to come
        // back between 1 s and 1 s + 2000 / 1000 s, 1 ms apart.
        let chain = admission_from_args(&StubArgs {
            capacity: Some(1000),
            outage: Some(Duration::from_secs(1)),
            fail_first: 1,
            ..base_args()
        })
        .unwrap();
        let slots: Vec<u64> = (0..2000)
            .map(|_| slot_ms(&chain.admit(&at(250, 1))).expect("shed during the outage"))
            .collect();
        assert_eq!(slots[0], 750);
        assert!(
            slots.windows(2).all(|w| w[1] == w[0] + 1),
            "strictly one slot apart"
        );
        assert_eq!(*slots.last().unwrap(), 750 + 1999);
        // After the outage: fail-first still applies, then the capacity admits.
        assert!(matches!(chain.admit(&at(1000, 1)), Verdict::Reject { .. }));
        assert_eq!(chain.admit(&at(1000, 2)), Verdict::Admit);
    }
}
