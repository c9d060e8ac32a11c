//! [`HedgeLayer`]: budgeted hedging as a tower `Layer`, driving the engine's
//! hedging executor ([`Retry::hedge_async`](crate::Retry::hedge_async)).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use tower::{Layer, Service, ServiceExt};

use crate::adapters::tower::clone::{CloneRequest, Cloned};
use crate::adapters::tower::timeout::{NoTimeout, RequestTimeout};
use crate::classify::{Classification, Classify, ClassifyResult};
use crate::events::{NoNotify, Notify};
use crate::hedge::Hedge;
use crate::retry::Retry;
use crate::timer::{AsyncSleep, SystemTimer};

/// Whether a request may be sent twice at once: an HTTP method that RFC
/// 9110 (§9.2.2) calls idempotent (GET, HEAD, OPTIONS, TRACE, PUT, DELETE),
/// or a request carrying an `Idempotency-Key` for the server to deduplicate
/// by. The [`HedgeLayer`] hedges the others only when its [`Hedge`]
/// [allows](crate::hedge::HedgeBuilder::allow_non_idempotent) them.
///
/// ```
/// use herdless::adapters::tower::Idempotent;
/// assert!(http::Request::get("/scan/7").body(()).unwrap().is_idempotent());
/// assert!(!http::Request::post("/scans").body(()).unwrap().is_idempotent());
/// let keyed = http::Request::post("/scans").header("idempotency-key", "k1").body(()).unwrap();
/// assert!(keyed.is_idempotent());
/// ```
pub trait Idempotent {
    /// Whether this request may be sent twice at once.
    fn is_idempotent(&self) -> bool;
}

fn idempotent_method(m: &http::Method) -> bool {
    use http::Method as M;
    matches!(
        *m,
        M::GET | M::HEAD | M::OPTIONS | M::TRACE | M::PUT | M::DELETE
    )
}

const IDEMPOTENCY_KEY: &str = "idempotency-key";

impl<B> Idempotent for http::Request<B> {
    fn is_idempotent(&self) -> bool {
        idempotent_method(self.method()) || self.headers().contains_key(IDEMPOTENCY_KEY)
    }
}

#[cfg(feature = "reqwest")]
impl Idempotent for reqwest::Request {
    fn is_idempotent(&self) -> bool {
        idempotent_method(self.method()) || self.headers().contains_key(IDEMPOTENCY_KEY)
    }
}

/// A [`ClassifyResult`] seen as a [`Classify`] over a failed copy: its
/// whole result, or `None` for a copy the cloner could not make (terminal:
/// nothing more is sent but the request itself, once).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ByResult<C>(pub(crate) C);

impl<Res, E, C: ClassifyResult<Res, E>> Classify<Option<Result<Res, E>>> for ByResult<C> {
    fn classify(&self, failed: &Option<Result<Res, E>>) -> Classification {
        match failed {
            // Only failed results come here; a success would be a bug: fail closed.
            Some(result) => self.0.classify(result).unwrap_or(Classification::Unknown),
            None => Classification::Terminal,
        }
    }

    fn is_timeout(&self, failed: &Option<Result<Res, E>>) -> bool {
        failed.as_ref().is_some_and(|r| self.0.is_timeout(r))
    }

    fn plan(&self, failed: &Option<Result<Res, E>>) -> Option<crate::pushback::waves::WavePlan> {
        failed.as_ref().and_then(|r| self.0.plan(r))
    }
}

struct Shared<C, T, N, K, S> {
    retry: Retry<ByResult<C>, T, N>,
    hedge: Hedge,
    cloner: K,
    timeout: S,
}

/// Hedged requests for any tower client service, bounded by the retry
/// budget: every copy after the first is a hedge the engine admits (budget,
/// breaker, server pushback, idempotency, limits: see
/// [`hedge`](crate::hedge)); the first success wins, the other copies'
/// futures are dropped (cancelled); a failed round is retried per the
/// policy. The response is what the deciding copy got, as it came (an
/// error status that ended the call is returned as `Ok`, like the retry
/// policy's).
///
/// Requests are copied with a [`CloneRequest`] ([`Cloned`] by default); one
/// that cannot be copied is sent once, neither hedged nor retried. Each
/// copy's timeout is set from its deadline by a [`RequestTimeout`]
/// (`grpc-timeout` with [`GrpcTimeout`](crate::adapters::tower::GrpcTimeout);
/// none by default) — the first copy included, unlike a tower retry
/// policy's. The layer cannot cut a copy at its deadline (it has no
/// response to give for one): the request's timeout does.
///
/// ```
/// use std::time::Duration;
/// use herdless::adapters::tower::{HedgeLayer, HttpClassifier};
/// use herdless::hedge::Hedge;
/// use herdless::{Policy, Retry, RetryBudget};
/// use tower::{Service, ServiceBuilder, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let retry = Retry::builder()
///     .policy(Policy::default())
///     .classifier(HttpClassifier::new())
///     .budget(RetryBudget::aws())
///     .build();
/// let hedge = Hedge::builder().delay(Duration::from_millis(10)).build()?;
/// let hits = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
/// let mut client = ServiceBuilder::new()
///     .layer(HedgeLayer::new(retry, hedge))
///     .service_fn(move |_req: http::Request<String>| {
///         let n = hits.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
///         async move {
///             // The first answer is stuck; its hedge is not.
///             let took = if n == 0 { 1000 } else { 2 };
///             tokio::time::sleep(Duration::from_millis(took)).await;
///             Ok::<_, std::convert::Infallible>(http::Response::new(format!("copy {}", n + 1)))
///         }
///     });
/// let req = http::Request::get("http://127.0.0.1/scan/7").body(String::new())?;
/// let res = client.ready().await?.call(req).await?;
/// assert_eq!(res.body(), "copy 2");
/// # Ok(()) }
/// ```
pub struct HedgeLayer<C, T = SystemTimer, N = NoNotify, K = Cloned, S = NoTimeout> {
    shared: Arc<Shared<C, T, N, K, S>>,
}

impl<C, T, N, K, S> Clone for HedgeLayer<C, T, N, K, S> {
    fn clone(&self) -> Self {
        HedgeLayer {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<C, T, N, K, S> fmt::Debug for HedgeLayer<C, T, N, K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HedgeLayer")
            .field("retry", &self.shared.retry)
            .field("hedge", &self.shared.hedge)
            .finish_non_exhaustive()
    }
}

impl<C, T, N> HedgeLayer<C, T, N> {
    /// A layer hedging with `hedge`, deciding with `retry` (policy,
    /// classifier — a [`ClassifyResult`] —, timer, hook, budget, breaker),
    /// copying requests with `Clone`, setting no timeout.
    pub fn new(retry: Retry<C, T, N>, hedge: Hedge) -> Self {
        HedgeLayer::with_parts(retry, hedge, Cloned, NoTimeout)
    }
}

impl<C, T, N, K, S> HedgeLayer<C, T, N, K, S> {
    /// A layer that copies requests with `cloner` and sets each copy's
    /// timeout with `timeout`.
    pub fn with_parts(retry: Retry<C, T, N>, hedge: Hedge, cloner: K, timeout: S) -> Self {
        HedgeLayer {
            shared: Arc::new(Shared {
                retry: retry.map_classifier(ByResult),
                hedge,
                cloner,
                timeout,
            }),
        }
    }

    /// The hedge configuration (its tracked delay learns from every call).
    pub fn hedge(&self) -> &Hedge {
        &self.shared.hedge
    }
}

impl<Svc, C, T, N, K, S> Layer<Svc> for HedgeLayer<C, T, N, K, S> {
    type Service = HedgeService<Svc, C, T, N, K, S>;

    fn layer(&self, inner: Svc) -> Self::Service {
        HedgeService {
            inner,
            shared: Arc::clone(&self.shared),
        }
    }
}

/// The service a [`HedgeLayer`] makes.
pub struct HedgeService<Svc, C, T = SystemTimer, N = NoNotify, K = Cloned, S = NoTimeout> {
    inner: Svc,
    shared: Arc<Shared<C, T, N, K, S>>,
}

impl<Svc: Clone, C, T, N, K, S> Clone for HedgeService<Svc, C, T, N, K, S> {
    fn clone(&self) -> Self {
        HedgeService {
            inner: self.inner.clone(),
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<Svc, C, T, N, K, S> fmt::Debug for HedgeService<Svc, C, T, N, K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HedgeService").finish_non_exhaustive()
    }
}

fn lock<X>(m: &Mutex<X>) -> MutexGuard<'_, X> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

type BoxFuture<O> = Pin<Box<dyn Future<Output = O> + Send>>;

impl<Req, Svc, C, T, N, K, S> Service<Req> for HedgeService<Svc, C, T, N, K, S>
where
    Req: Idempotent + Send + 'static,
    Svc: Service<Req> + Clone + Send + 'static,
    Svc::Future: Send + 'static,
    Svc::Response: Send + 'static,
    Svc::Error: Send + 'static,
    C: ClassifyResult<Svc::Response, Svc::Error> + Send + Sync + 'static,
    T: AsyncSleep + Send + Sync + 'static,
    N: Notify + Send + Sync + 'static,
    K: CloneRequest<Req> + Send + Sync + 'static,
    S: RequestTimeout<Req> + Send + Sync + 'static,
{
    type Response = Svc::Response;
    type Error = Svc::Error;
    type Future = BoxFuture<Result<Svc::Response, Svc::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        let shared = Arc::clone(&self.shared);
        let inner = self.inner.clone();
        let Some(template) = shared.cloner.clone_request(&req) else {
            crate::events::emit::not_clonable(shared.retry.task_id());
            return Box::pin(inner.oneshot(req));
        };
        let idempotent = req.is_idempotent();
        Box::pin(async move {
            let mut first = Some(req);
            let shared = &*shared;
            // Behind locks, so that the copies' futures are `Send` without
            // asking `Req` or the service to be `Sync`.
            let (template, inner) = (Mutex::new(template), Mutex::new(inner));
            let result = shared
                .retry
                .hedged(&shared.hedge, idempotent, |attempt| {
                    let req = first.take().or_else(|| {
                        let template = lock(&template);
                        shared.cloner.clone_request(&template)
                    });
                    let svc = lock(&inner).clone();
                    async move {
                        // The template was copied once; a cloner that
                        // changes its mind ends the call (see below).
                        let Some(mut req) = req else {
                            return Err(None);
                        };
                        shared.timeout.set_timeout(&mut req, attempt.remaining());
                        let result = svc.oneshot(req).await;
                        match shared.retry.classifier().0.classify(&result) {
                            None => Ok(result),
                            Some(_) => Err(Some(result)),
                        }
                    }
                })
                .await;
            match result {
                Ok(done) => done,
                Err(e) => match e.into_last_error() {
                    Some(last) => last,
                    // No copy could be made: the request itself, once more.
                    None => {
                        let svc = inner.into_inner().unwrap_or_else(PoisonError::into_inner);
                        let req = template
                            .into_inner()
                            .unwrap_or_else(PoisonError::into_inner);
                        svc.oneshot(req).await
                    }
                },
            }
        })
    }
}
