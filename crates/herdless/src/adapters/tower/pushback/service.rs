//! [`PushbackService`] and its [`ResponseFuture`]: decide each request, and
//! report the inner service's answer back to the allocator.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::header::HeaderName;
use http::{Request, Response};
use tokio::sync::oneshot;
use tower::Service;

use super::answer::{is_refusal, rejection, with_slot};
use super::{Answer, Outcome, Refusal, Shared};
use crate::adapters::tower::{CloneRequest, NotCloned};
use crate::http::prefer_wait;
use crate::pushback::allocator::{Allocator, caller_key};
use crate::pushback::{Allotment, Caller, SlotAllocator, Ticket};
use crate::timer::{AsyncSleep, SystemTimer};

/// The service [`PushbackLayer`](super::PushbackLayer) wraps around an inner
/// service.
///
/// ```
/// use std::time::Duration;
/// use herdless::adapters::tower::PushbackLayer;
/// use herdless::pushback::SlotAllocator;
/// use tower::{Layer, ServiceExt, service_fn};
/// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// # rt.block_on(async {
/// let layer = PushbackLayer::new(SlotAllocator::new(1.0, Duration::from_secs(30))?.burst(1));
/// let svc = layer.layer(service_fn(|_req: http::Request<()>| async {
///     Ok::<_, std::convert::Infallible>(http::Response::new(String::from("ok")))
/// }));
/// let first = svc.clone().oneshot(http::Request::new(())).await.unwrap();
/// assert_eq!(first.status(), 200);
/// let second = svc.oneshot(http::Request::new(())).await.unwrap();
/// assert_eq!(second.status(), 503);
/// assert_eq!(second.headers()["retry-after"], "1");
/// assert_eq!(second.headers()["retry-after-ms"], "1000");
/// # Ok::<(), herdless::pushback::PushbackError>(())
/// # }).unwrap();
/// ```
pub struct PushbackService<S, K = SystemTimer, A = SlotAllocator, C = NotCloned> {
    pub(super) inner: S,
    pub(super) shared: Arc<Shared<K, A>>,
    pub(super) key_header: Option<HeaderName>,
    pub(super) cloner: Arc<C>,
}

impl<S: Clone, K, A, C> Clone for PushbackService<S, K, A, C> {
    fn clone(&self) -> Self {
        PushbackService {
            inner: self.inner.clone(),
            shared: Arc::clone(&self.shared),
            key_header: self.key_header.clone(),
            cloner: Arc::clone(&self.cloner),
        }
    }
}

impl<S: fmt::Debug, K, A, C> fmt::Debug for PushbackService<S, K, A, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PushbackService")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl<S, K, A, C, ReqB, ResB> Service<Request<ReqB>> for PushbackService<S, K, A, C>
where
    S: Service<Request<ReqB>, Response = Response<ResB>> + Clone,
    ResB: Default,
    K: AsyncSleep + Send + Sync + 'static,
    A: Allocator,
    C: CloneRequest<Request<ReqB>> + Send + Sync + 'static,
{
    type Response = Response<ResB>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future, ResB, S, ReqB>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqB>) -> Self::Future {
        let caller = Caller {
            key: self
                .key_header
                .as_ref()
                .and_then(|name| request.headers().get(name))
                .map(|v| caller_key(v.as_bytes())),
            wait: prefer_wait(request.headers()),
            ..Caller::new()
        };
        let now = self.shared.now();
        if A::ALLOWANCES && self.shared.allowances.spend(now, caller.key.is_some()) {
            // Admitted from this thread's allowance (see `allowance.rs`).
            return ResponseFuture {
                kind: self.admitted(request, caller),
            };
        }
        let mut state = self.shared.lock_at(now);
        state.share_due(now);
        let decision = state.alloc.decide_caller(now, caller);
        self.shared.decided(&mut state, now, decision.is_admit());
        let kind = match decision {
            Allotment::Admit => {
                drop(state);
                self.admitted(request, caller)
            }
            Allotment::Hold { ticket } => {
                // Parked under the allocator's lock (see `hold`).
                let answer = state.park(ticket);
                drop(state);
                let outcome = Arc::clone(&self.shared) as Arc<dyn Outcome>;
                let parked = Parked {
                    outcome,
                    ticket: Some(ticket),
                };
                if self.shared.ensure_driver() {
                    self.shared.wake.notify_one();
                    // The clone waits with the request; `self.inner`, which
                    // the caller made ready, stays ready for the next call.
                    let service = self.inner.clone();
                    Kind::Held {
                        answer,
                        parked,
                        next: Some(Box::new(Next {
                            service,
                            request,
                            caller,
                            cloner: Arc::clone(&self.cloner) as Arc<Cloner<ReqB>>,
                        })),
                    }
                } else {
                    // No runtime to release it on: answered now.
                    drop(parked);
                    Kind::Rejected {
                        response: Some(rejection(Allotment::Hold { ticket }, None)),
                    }
                }
            }
            rejected => {
                let plan = state.alloc.plan(now);
                drop(state);
                Kind::Rejected {
                    response: Some(rejection(rejected, plan)),
                }
            }
        };
        ResponseFuture { kind }
    }
}

impl<S, K, A, C> PushbackService<S, K, A, C>
where
    K: AsyncSleep + Send + Sync + 'static,
    A: Allocator,
{
    /// An admitted request, handed to the service.
    fn admitted<ReqB, ResB>(
        &mut self,
        request: Request<ReqB>,
        caller: Caller,
    ) -> Kind<S::Future, ResB, S, ReqB>
    where
        S: Service<Request<ReqB>, Response = Response<ResB>> + Clone,
        C: CloneRequest<Request<ReqB>> + Send + Sync + 'static,
    {
        if !A::HEARS_ANSWERS {
            // Nothing to report the answer to: no report, no clone (and no
            // shared count to touch per request).
            return Kind::Inner {
                future: self.inner.call(request),
                report: None,
            };
        }
        // A clone (and the service to send it to) only when the cloner
        // makes one: `NotCloned` costs nothing here. Boxed, as a held
        // request's next work: the future stays small for the requests
        // that are neither cloned nor held.
        let spare = self.cloner.clone_request(&request).map(|copy| {
            Box::new(Spare {
                service: self.inner.clone(),
                request: copy,
                cloner: Arc::clone(&self.cloner) as Arc<Cloner<ReqB>>,
            })
        });
        Kind::Inner {
            future: self.inner.call(request),
            report: Some(Report {
                outcome: Arc::clone(&self.shared) as Arc<dyn Outcome>,
                caller,
                ticket: None,
                spare,
            }),
        }
    }
}

/// A held request's place in the queue: dropped before its answer (the
/// caller hung up), it leaves the queue.
struct Parked {
    outcome: Arc<dyn Outcome>,
    ticket: Option<Ticket>,
}

impl Drop for Parked {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            self.outcome.cancel(ticket);
        }
    }
}

pin_project_lite::pin_project! {
    /// The future of [`PushbackService`]: the inner service's, a ready
    /// `503`, or a held request waiting for its release.
    pub struct ResponseFuture<F, B, S, R> {
        #[pin]
        kind: Kind<F, B, S, R>,
    }
}

/// A cloner with its request type's body erased from the layer's types.
type Cloner<R> = dyn CloneRequest<Request<R>> + Send + Sync;

/// A clone of a request handed to the service, to send again if the
/// service refuses it and the allocator holds it.
struct Spare<S, R> {
    service: S,
    request: Request<R>,
    cloner: Arc<Cloner<R>>,
}

/// Where the inner answer is reported: the caller's key, a released
/// request's ticket, and the clone to hold again, if any.
struct Report<S, R> {
    outcome: Arc<dyn Outcome>,
    caller: Caller,
    ticket: Option<Ticket>,
    spare: Option<Box<Spare<S, R>>>,
}

/// A held request, for the service once it is released.
struct Next<S, R> {
    service: S,
    request: Request<R>,
    caller: Caller,
    cloner: Arc<Cloner<R>>,
}

pin_project_lite::pin_project! {
    #[project = KindProj]
    enum Kind<F, B, S, R> {
        Inner { #[pin] future: F, report: Option<Report<S, R>> },
        Held {
            answer: oneshot::Receiver<Allotment>,
            parked: Parked,
            next: Option<Box<Next<S, R>>>,
        },
        Released { next: Option<Box<Next<S, R>>>, outcome: Arc<dyn Outcome>, ticket: Ticket },
        Rejected { response: Option<Response<B>> },
    }
}

impl<F, B, S, R> fmt::Debug for ResponseFuture<F, B, S, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ResponseFuture { .. }")
    }
}

/// The allocator's answer to the service's refusal of `report`'s request:
/// the held clone's next state (`Ok`), or the slot to answer with (`Err`).
fn refusal<F, B, S, R>(report: Report<S, R>) -> Result<Kind<F, B, S, R>, Option<Answer>> {
    let Report {
        outcome,
        caller,
        ticket,
        spare,
    } = report;
    let Some(spare) = spare else {
        // The service consumed the request: it cannot be held again.
        return Err(outcome.refused(caller));
    };
    match Arc::clone(&outcome).refused_holding(caller, ticket) {
        Refusal::Slot(slot) => Err(slot),
        Refusal::Held(ticket, answer) => Ok(Kind::Held {
            answer,
            parked: Parked {
                outcome,
                ticket: Some(ticket),
            },
            next: Some(Box::new(Next {
                service: spare.service,
                request: spare.request,
                caller,
                cloner: spare.cloner,
            })),
        }),
    }
}

impl<F, B, E, S, R> Future for ResponseFuture<F, B, S, R>
where
    F: Future<Output = Result<Response<B>, E>>,
    B: Default,
    S: Service<Request<R>, Future = F, Response = Response<B>, Error = E> + Clone,
{
    type Output = Result<Response<B>, E>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            let next = match self.as_mut().project().kind.project() {
                KindProj::Inner { future, report } => {
                    let mut result = std::task::ready!(future.poll(cx));
                    let (Ok(response), Some(report)) = (&mut result, report.take()) else {
                        return Poll::Ready(result);
                    };
                    if !is_refusal(response.status()) {
                        report.outcome.served();
                        return Poll::Ready(result);
                    }
                    match refusal(report) {
                        Ok(held) => held,
                        Err(slot) => {
                            if let Some((slot, plan)) = slot {
                                with_slot(response, slot, plan);
                            }
                            return Poll::Ready(result);
                        }
                    }
                }
                KindProj::Rejected { response } => match response.take() {
                    Some(r) => return Poll::Ready(Ok(r)),
                    None => panic!("ResponseFuture polled after completion"),
                },
                KindProj::Held {
                    answer,
                    parked,
                    next,
                } => {
                    let verdict = std::task::ready!(Pin::new(answer).poll(cx));
                    // Answered (or the driver is gone): no longer queued.
                    let ticket = parked.ticket.take().expect("a held request has its ticket");
                    match verdict {
                        Ok(Allotment::Admit) => Kind::Released {
                            next: next.take(),
                            outcome: Arc::clone(&parked.outcome),
                            ticket,
                        },
                        Ok(slot) => Kind::Rejected {
                            response: Some(rejection(slot, None)),
                        },
                        // The driver ended (its runtime shut down).
                        Err(_) => Kind::Rejected {
                            response: Some(rejection(Allotment::Admit, None)),
                        },
                    }
                }
                KindProj::Released {
                    next,
                    outcome,
                    ticket,
                } => {
                    let Some(n) = next.as_mut() else {
                        panic!("ResponseFuture polled after completion");
                    };
                    std::task::ready!(n.service.poll_ready(cx))?;
                    let Next {
                        mut service,
                        request,
                        caller,
                        cloner,
                    } = *next.take().expect("checked above");
                    let spare = cloner.clone_request(&request).map(|copy| {
                        Box::new(Spare {
                            service: service.clone(),
                            request: copy,
                            cloner,
                        })
                    });
                    Kind::Inner {
                        future: service.call(request),
                        report: Some(Report {
                            outcome: Arc::clone(outcome),
                            caller,
                            ticket: Some(*ticket),
                            spare,
                        }),
                    }
                }
            };
            self.as_mut().project().kind.set(next);
        }
    }
}
