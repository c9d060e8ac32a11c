//! Server-guided pushback as a tower [`Layer`](tower::Layer): usable with axum, hyper and any
//! `tower::Service<http::Request<_>>` (feature `tower`).
//!
//! [`PushbackLayer`] puts an [`Allocator`] — the static [`SlotAllocator`](crate::pushback::SlotAllocator) or
//! the [`AdaptiveAllocator`] — in front of a service. Admitted requests go to
//! the inner service untouched; the others are answered at once with `503
//! Service Unavailable` and two headers:
//!
//! | header | value |
//! |---|---|
//! | `Retry-After` | the caller's slot in whole seconds, rounded up (RFC 9110 `delay-seconds`, at least 1) |
//! | `Retry-After-Ms` | the same slot in whole milliseconds, rounded up — clients should prefer it |
//!
//! The layer reports the inner service's answer to every request it admitted:
//! a `503` or `429` of the service's own is a **refusal**
//! ([`Allocator::refused`]; the adaptive allocator learns its capacity from
//! them and books the caller a slot, which the layer adds to that answer as
//! the same two headers, replacing any the service set); anything else is
//! **served** ([`Allocator::served`]). With
//! [`key_header`](PushbackLayer::key_header) the layer names each caller by a
//! request header (hashed, [`caller_key`]), so the adaptive allocator can
//! tell a caller that came back before its slot.
//!
//! The allocator sits behind a `std::sync::Mutex` shared by every clone of the
//! layer and its services; the critical section is a few comparisons and
//! additions (no allocation, no I/O; with [`PushbackLayer::share`], once a
//! second, the peers' reports copied out of the store), so the lock is held
//! for nanoseconds. A poisoned lock is recovered, never propagated as a panic.
//! While the service passes requests through with room to spare, each thread
//! admits from a [`Allowance`](crate::pushback::Allowance) of its own instead (a few
//! admissions the allocator decided ahead of time), so that threads do not
//! queue for that one lock (`allowance.rs`; the bounds in
//! [`pushback::allowance`](crate::pushback::allowance)).
//!
//! Time comes from a [`Clock`] (default [`SystemTimer`](crate::SystemTimer), which follows tokio's
//! clock with the `tokio` feature); the allocator's epoch is the layer's
//! creation, so `SlotAllocator::outage_until(5 s)` means "the first five
//! seconds after the layer was built". [`PushbackLayer::start_outage`] and
//! [`PushbackLayer::recover`] switch outage mode at run time; the adaptive
//! allocator also finds an outage, and its end, on its own.
//!
//! The service forwards `poll_ready` to the inner service and rejects without
//! calling it, which is how tower's own load-shedding middleware behaves; it is
//! meant for services that are always ready (axum routers, hyper services).
//!
//! ## Holding requests (a capacity-aware reconnect queue)
//!
//! An [`AdaptiveAllocator`] built with a hold
//! ([`AdaptiveBuilder::hold`](crate::pushback::AdaptiveBuilder::hold)) may
//! answer a request [`Allotment::Hold`]: the layer keeps it open instead of
//! answering. Its response future waits, the request and a clone of the
//! inner service inside it, until the allocator releases it: then the
//! request goes to the service as if admitted (after `poll_ready` on the
//! clone), or, its hold run out, it is answered `503` with a slot. One driver
//! task per layer, spawned on the current tokio runtime by the first hold,
//! sleeps on the layer's timer until the allocator's
//! [`next_release`](Allocator::next_release) or the next hold, and hands out
//! what is due. A response future dropped while held (the client hung up)
//! leaves the queue. Without a tokio runtime to run the driver on, a held
//! request is answered `503` at once.
//!
//! Once the layer has handed a request to the service, the request is the
//! service's: a refusal of the service's own, for an admitted request or a
//! released one, is answered with a slot ([`Allocator::refused_unheld`]),
//! never held again. Unless the layer kept a clone
//! ([`PushbackLayer::clone_requests`], with a
//! [`CloneRequest`](crate::adapters::tower::CloneRequest): requests without
//! a body, or with a buffered one): then the allocator decides the refusal
//! as it would for a request it never handed over, and the clone may wait
//! in the hold and go to the service again when released; its caller sees
//! only that answer (`herdless stub` serves this way).
//!
//! ## Several replicas
//!
//! A service run as several replicas, each with this layer, in front of one
//! device: [`PushbackLayer::share`] gives the layer a
//! [`SharedState`](crate::pushback::SharedState) through which its
//! allocator tells the others what it learns, about once a second, and
//! moves toward its share of the device from theirs (see
//! [`replicas`](crate::pushback::replicas); `share.rs` for how the layer
//! drives it without a timer of its own).
//!
//! What a held request costs: 24 bytes in the allocator's queue, a map entry
//! (its ticket and a oneshot sender, 40 bytes plus the table's slack) and one
//! oneshot channel (one allocation) in the layer, and the response future
//! itself with the request and the service clone, which the server keeps
//! anyway; over a socket the open connection dominates (what one costs in
//! `herdless stub`, measured in `docs/fleet-protection.md`).
//!
//! ```
//! use std::time::Duration;
//! use herdless::adapters::tower::PushbackLayer;
//! use herdless::pushback::AdaptiveAllocator;
//! use tower::{Layer, ServiceExt, service_fn};
//! # let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
//! # rt.block_on(async {
//! // Told the service is down for the next 2 s: requests wait, then go through.
//! let alloc = AdaptiveAllocator::builder().estimate(100.0).hold().build()?
//!     .outage_until(Duration::from_secs(2));
//! let svc = PushbackLayer::new(alloc).layer(service_fn(|_req: http::Request<()>| async {
//!     Ok::<_, std::convert::Infallible>(http::Response::new(String::from("ok")))
//! }));
//! let started = tokio::time::Instant::now();
//! let response = svc.oneshot(http::Request::new(())).await.unwrap();
//! assert_eq!(response.status(), 200);
//! assert_eq!(started.elapsed(), Duration::from_secs(2));
//! # Ok::<(), herdless::pushback::PushbackError>(())
//! # }).unwrap();
//! ```
//!
//! ```
//! use std::time::Duration;
//! use axum::{routing::get, Router};
//! use herdless::pushback::AdaptiveAllocator;
//! use herdless::adapters::tower::PushbackLayer;
//!
//! // Starts from an estimate of 10,000/s and learns the rest.
//! let pushback = PushbackLayer::new(AdaptiveAllocator::new(10_000.0, Duration::from_secs(60))?)
//!     .key_header("x-client-id");
//! let _app: Router = Router::new().route("/", get(|| async { "ok" })).layer(pushback.clone());
//! // later: pushback.start_outage(None); pushback.recover(); pushback.counts()
//! # Ok::<(), herdless::pushback::PushbackError>(())
//! ```

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::pushback::allocator::Allocator;
use crate::pushback::waves::WavePlan;
use crate::pushback::{Allotment, Caller, Ticket};
#[allow(unused_imports)] // rustdoc links
use crate::pushback::{adaptive::AdaptiveAllocator, allocator::caller_key};
use crate::timer::{AsyncSleep, Clock};

mod allowance;
mod answer;
mod hold;
mod layer;
mod service;
mod share;

use hold::State;
pub use layer::PushbackLayer;
pub use service::{PushbackService, ResponseFuture};

/// What every clone of the layer, its services and their futures share.
struct Shared<K, A> {
    /// On cache lines of its own: the lock's word and what it guards are
    /// written by the requests that take it, and the rest here is read by
    /// every request, allowances or not.
    state: allowance::Alone<Mutex<State<A>>>,
    /// One allowance per thread (`allowance.rs`).
    allowances: allowance::Allowances,
    clock: K,
    epoch: Instant,
    /// Wakes the hold's driver: a new hold, or the layer is gone.
    wake: Arc<Notify>,
    /// Whether a driver runs (started by the first hold).
    driving: AtomicBool,
}

impl<K, A> Shared<K, A> {
    fn lock(&self) -> MutexGuard<'_, State<A>> {
        self.state.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<K: Clock, A> Shared<K, A> {
    fn now(&self) -> Duration {
        self.clock.now().saturating_duration_since(self.epoch)
    }
}

impl<K, A> Drop for Shared<K, A> {
    fn drop(&mut self) {
        // The driver holds the layer weakly: let it see that it is gone.
        self.wake.notify_one();
    }
}

/// What a response future reports back, its allocator's type erased: the
/// inner service's answer, or that a held request's caller went away.
trait Outcome: Send + Sync {
    fn served(&self);
    fn refused(&self, caller: Caller) -> Option<Answer>;
    fn refused_holding(self: Arc<Self>, caller: Caller, ticket: Option<Ticket>) -> Refusal;
    fn cancel(&self, ticket: Ticket);
}

/// A slot to answer with, and the plan of waves announced beside it.
type Answer = (Allotment, Option<WavePlan>);

/// The allocator's answer to a refusal of a request the layer has a clone
/// of.
enum Refusal {
    /// Held: the clone waits for its answer on the receiver.
    Held(Ticket, tokio::sync::oneshot::Receiver<Allotment>),
    /// Answered now, with this slot (if any).
    Slot(Option<Answer>),
}

impl<K: AsyncSleep + Send + Sync + 'static, A: Allocator> Outcome for Shared<K, A> {
    fn served(&self) {
        if A::LEARNS_FROM_SERVED {
            if A::ALLOWANCES && self.allowances.served() {
                return; // counted on this thread's allowance
            }
            let now = self.now();
            let mut state = self.lock_at(now);
            state.alloc.served(now);
            state.share_due(now);
        }
    }

    /// The layer handed the request over: it cannot hold it again.
    fn refused(&self, caller: Caller) -> Option<Answer> {
        let now = self.now();
        let mut state = self.lock_settled(now);
        let slot = state.alloc.refused_unheld(now, caller.key);
        state.share_due(now);
        Some((slot?, state.alloc.plan(now)))
    }

    /// The layer still has a clone of the request: the allocator may hold
    /// it again ([`Allocator::refused`] for an admitted request,
    /// [`Allocator::refused_held`] for a released one, its `ticket`).
    fn refused_holding(self: Arc<Self>, caller: Caller, ticket: Option<Ticket>) -> Refusal {
        let now = self.now();
        let mut state = self.lock_settled(now);
        let allotment = match ticket {
            Some(t) => state.alloc.refused_held(now, t),
            None => state.alloc.refused_caller(now, caller),
        };
        state.share_due(now);
        let Some(Allotment::Hold { ticket }) = allotment else {
            return Refusal::Slot(allotment.map(|a| (a, state.alloc.plan(now))));
        };
        // Parked under the allocator's lock (see `hold`).
        let answer = state.park(ticket);
        drop(state);
        if self.ensure_driver() {
            self.wake.notify_one();
            Refusal::Held(ticket, answer)
        } else {
            // No runtime to release it on: answered now.
            self.lock().cancel(ticket);
            Refusal::Slot(Some((Allotment::Hold { ticket }, None)))
        }
    }

    fn cancel(&self, ticket: Ticket) {
        self.lock().cancel(ticket);
    }
}
