//! The arrivals' book and `/stats`: every request to the device is recorded
//! exactly once, when it is answered or when its client leaves first.
//!
//! The recorder sits in front of the pushback layer (a layer that answers
//! before the handler would otherwise hide its refusals from the book). For
//! each arrival it takes the time and the `X-Worker-Id`, hands the request
//! on, and records the outcome:
//!
//! * **answered**: the status sent (the layer's, the device's, or `431` for
//!   an `X-Worker-Id` over [`MAX_WORKER_ID`] bytes), with `held_s` when the
//!   request waited in the layer's hold before its answer;
//! * **abandoned** (status `499`, the code servers log for "client closed
//!   request"): the connection failed or closed before the answer, or the
//!   client ended its input while its request was held. A request its client
//!   half-closed (sent it, then shut down its sending side) is answered as
//!   any other when the answer is ready at once; only a held one is taken
//!   out of the hold then, and sent `503` (a half-closed client still
//!   reads it; one that hung up never does).
//!
//! When the stub shuts down, a held request is answered `503` with
//! `Retry-After: 1` (and `Retry-After-Ms: 1000`) at once, and recorded so.

use std::collections::VecDeque;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use herdless::http::RETRY_AFTER_MS;
use serde::Serialize;
use tokio::sync::watch;

use super::device::MAX_WORKER_ID;
use super::front::{Answered, Front};
use super::relay::Relay;
use super::server::Peer;
use herdless::pushback::SharedState;

/// One recorded arrival (an element of `/stats`'s `arrivals`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ArrivalRecord {
    /// Seconds since the stub started, at arrival.
    pub t_s: f64,
    /// The `X-Worker-Id` header, if any (none for one over
    /// 256 bytes).
    pub worker: Option<String>,
    /// The status sent; `499` when the client left first.
    pub status: u16,
    /// How long the request waited in the hold, seconds (`null`: answered
    /// at once). Records are made when a request is answered, so a held
    /// request's record comes after those of later arrivals.
    pub held_s: Option<f64>,
    /// `answered`, or `abandoned` when the client left first.
    pub outcome: ArrivalOutcome,
}

/// How an arrival ended.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ArrivalOutcome {
    /// Answered with its status.
    Answered,
    /// The client left before its answer (status 499).
    Abandoned,
}

/// The status recorded for an abandoned arrival (nginx's "client closed
/// request").
pub(crate) const ABANDONED: u16 = 499;

/// How many arrivals `/stats` keeps: the most recent [`ARRIVALS_KEPT`], so a
/// long run's memory stays bounded (at most a few hundred bytes each, ids
/// included); `total` still counts every arrival.
pub const ARRIVALS_KEPT: usize = 100_000;

/// The `/stats` document.
#[derive(Debug, Clone, Serialize)]
pub struct StubStats {
    /// Arrivals since start, all of them (also those no longer kept), each
    /// once it is answered or abandoned.
    pub total: usize,
    /// Arrivals no longer kept (`total` minus the length of `arrivals`).
    pub dropped: usize,
    /// Arrivals whose client left before the answer (all of them, kept or not).
    pub abandoned: usize,
    /// Requests held open now (`--hold-max`, `--hold-for`; 0 without a hold).
    pub held: usize,
    /// With `--upstream`: requests forwarded to the upstream (0 without).
    pub forwarded: u64,
    /// With `--upstream`: forwarded requests that got no answer (connection
    /// refused or reset, `--upstream-timeout` passed), each answered 503.
    pub upstream_errors: u64,
    /// With `--coordinate`: the other replicas heard from within the last
    /// 3 s (their reports in the shared bucket; 0 without).
    pub peers: usize,
    /// The most recent arrivals (at most [`ARRIVALS_KEPT`]), in the order
    /// they were answered.
    pub arrivals: Vec<ArrivalRecord>,
}

/// The arrivals so far: a ring of the last `keep`, and the counts.
#[derive(Debug)]
pub(crate) struct Book {
    ring: Mutex<Ring>,
    keep: usize,
}

#[derive(Debug, Default)]
struct Ring {
    total: usize,
    abandoned: usize,
    arrivals: VecDeque<ArrivalRecord>,
}

impl Book {
    pub(crate) fn new(keep: usize) -> Self {
        Book {
            ring: Mutex::new(Ring::default()),
            keep: keep.max(1),
        }
    }

    fn record(&self, record: ArrivalRecord) {
        let mut ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        if ring.arrivals.len() >= self.keep {
            ring.arrivals.pop_front();
        }
        ring.total += 1;
        if record.outcome == ArrivalOutcome::Abandoned {
            ring.abandoned += 1;
        }
        ring.arrivals.push_back(record);
    }

    fn stats(
        &self,
        held: usize,
        (forwarded, upstream_errors): (u64, u64),
        peers: usize,
    ) -> StubStats {
        let ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        StubStats {
            total: ring.total,
            dropped: ring.total - ring.arrivals.len(),
            abandoned: ring.abandoned,
            held,
            forwarded,
            upstream_errors,
            peers,
            arrivals: ring.arrivals.iter().cloned().collect(),
        }
    }
}

/// What the recorder reads: the book, the front (clock, hold, outage), the
/// relay's counts and the peers heard (a gateway), and whether the stub is
/// stopping.
pub(crate) struct Recorder {
    pub(crate) book: Book,
    pub(crate) front: Arc<dyn Front>,
    pub(crate) relay: Option<Arc<Relay>>,
    pub(crate) share: Option<Arc<dyn SharedState>>,
    pub(crate) stopping: watch::Receiver<bool>,
}

impl Recorder {
    /// What `/stats` returns.
    pub(crate) fn stats(&self) -> StubStats {
        let counts = self.relay.as_ref().map_or((0, 0), |r| r.counts());
        let peers = self.share.as_ref().map_or(0, |s| s.peers().len());
        self.book.stats(self.front.held(), counts, peers)
    }
}

/// An arrival not yet recorded: dropped before [`settle`](Self::settle)
/// (its future dropped: the connection failed or closed), it is recorded
/// abandoned.
struct Pending<'a> {
    recorder: &'a Recorder,
    arrived: Duration,
    worker: Option<String>,
    waited: bool,
    settled: bool,
}

impl Pending<'_> {
    fn settle(&mut self, status: u16, outcome: ArrivalOutcome) {
        self.settled = true;
        let now = self.recorder.front.elapsed();
        let held = now.saturating_sub(self.arrived);
        self.recorder.book.record(ArrivalRecord {
            t_s: self.arrived.as_secs_f64(),
            worker: self.worker.take(),
            status,
            held_s: self.waited.then_some(held.as_secs_f64()),
            outcome,
        });
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.settle(ABANDONED, ArrivalOutcome::Abandoned);
        }
    }
}

/// How a request that did not get its answer at once ended.
enum Waited {
    Answered(Response),
    PeerClosed,
    Stopping,
}

/// The recording middleware in front of the pushback layer (see the module
/// documentation).
pub(crate) async fn record(
    State(recorder): State<Arc<Recorder>>,
    request: Request,
    next: Next,
) -> Response {
    let arrived = recorder.front.elapsed();
    let id = request.headers().get("x-worker-id");
    if id.is_some_and(|v| v.len() > MAX_WORKER_ID) {
        let mut p = pending(&recorder, arrived, None);
        p.settle(431, ArrivalOutcome::Answered);
        let text = format!("X-Worker-Id longer than {MAX_WORKER_ID} bytes\n");
        return (StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, text).into_response();
    }
    let worker = id.map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    recorder.front.arrival(arrived);
    let peer = request.extensions().get::<Peer>().cloned();
    let mut p = pending(&recorder, arrived, worker);
    let mut inner = pin!(next.run(request));
    // The device answers at once: a request still pending after its first
    // poll waits in the layer's hold.
    let first = poll_fn(|cx| Poll::Ready(inner.as_mut().poll(cx))).await;
    let mut response = match first {
        Poll::Ready(r) => r,
        Poll::Pending => {
            p.waited = true;
            let mut stopping = recorder.stopping.clone();
            let waited = tokio::select! {
                biased;
                r = &mut inner => Waited::Answered(r),
                () = peer_closed(peer) => Waited::PeerClosed,
                _ = stopping.wait_for(|s| *s) => Waited::Stopping,
            };
            match waited {
                Waited::Answered(r) => r,
                Waited::PeerClosed => {
                    p.settle(ABANDONED, ArrivalOutcome::Abandoned);
                    let mut r = (StatusCode::SERVICE_UNAVAILABLE, "unavailable\n").into_response();
                    r.headers_mut()
                        .insert(header::CONNECTION, HeaderValue::from_static("close"));
                    return r;
                }
                Waited::Stopping => {
                    let mut r =
                        (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n").into_response();
                    r.headers_mut()
                        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                    r.headers_mut()
                        .insert(RETRY_AFTER_MS, HeaderValue::from_static("1000"));
                    // The connection closes after this answer: say so, or a
                    // keep-alive client sends its next request into it.
                    r.headers_mut()
                        .insert(header::CONNECTION, HeaderValue::from_static("close"));
                    p.settle(503, ArrivalOutcome::Answered);
                    return r;
                }
            }
        }
    };
    if response.extensions().get::<Answered>().is_none() {
        // The layer's own answer: in an outage, the outage's status.
        let now = recorder.front.elapsed();
        *response.status_mut() = recorder.front.outage_status(response.status(), now);
    }
    p.settle(response.status().as_u16(), ArrivalOutcome::Answered);
    response
}

fn pending(recorder: &Recorder, arrived: Duration, worker: Option<String>) -> Pending<'_> {
    Pending {
        recorder,
        arrived,
        worker,
        waited: false,
        settled: false,
    }
}

/// Completes when the client has ended its input (never without a
/// connection to watch).
async fn peer_closed(peer: Option<Peer>) {
    match peer {
        Some(peer) => peer.closed().await,
        None => std::future::pending().await,
    }
}

/// `GET /stats`.
pub(crate) async fn stats(State(recorder): State<Arc<Recorder>>) -> axum::Json<StubStats> {
    axum::Json(recorder.stats())
}
