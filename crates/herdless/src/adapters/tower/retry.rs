//! [`RetryPolicy`]: a `tower::retry::Policy` that drives the engine.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use crate::adapters::tower::clone::{CloneRequest, Cloned};
use crate::adapters::tower::timeout::{NoTimeout, RequestTimeout};
use crate::classify::ClassifyResult;
use crate::engine::{Decision, Engine, Gate};
use crate::events::{NoNotify, Notify};
use crate::retry::Retry;
use crate::rng::{Rng, call_seed};
use crate::timer::{AsyncSleep, Clock, SystemTimer};

/// The configuration every call shares.
struct Shared<C, T, N, K, S> {
    retry: Retry<C, T, N>,
    cloner: K,
    timeout: S,
    not_clonable: AtomicU64,
}

/// One call's state: engine, generator, whether a breaker wait gave up.
struct Call {
    engine: Engine,
    rng: Option<Rng>,
    gave_up: bool,
}

fn lock(call: &Mutex<Call>) -> MutexGuard<'_, Call> {
    call.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A [`tower::retry::Policy`] whose every decision is the
/// [engine](crate::engine)'s: give it to [`tower::retry::RetryLayer`]. See the
/// [module documentation](crate::adapters::tower) for the design.
///
/// The configuration is a [`Retry`] (policy, classifier — a
/// [`ClassifyResult`] —, timer, notify hook, task id, seed, shared budget,
/// breaker, urgency) behind an `Arc`; each clone tower makes for a call starts
/// a fresh call (its own [`Engine`], origin instant and generator).
///
/// ```
/// use std::time::Duration;
/// use herdless::adapters::tower::RetryPolicy;
/// use herdless::{Classification, Policy, Retry};
/// use tower::{Service, ServiceBuilder, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let policy = Policy::builder().base(Duration::from_millis(100)).build()?;
/// let classify = |r: &Result<u16, std::convert::Infallible>| match r {
///     Ok(200) => None,
///     Ok(503) => Some(Classification::retryable()),
///     Ok(_) => Some(Classification::terminal()),
///     Err(e) => match *e {},
/// };
/// let layer = tower::retry::RetryLayer::new(RetryPolicy::new(Retry::new(policy, classify)));
/// let hits = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
/// let mut svc = ServiceBuilder::new().layer(layer).service_fn(move |_req: &'static str| {
///     let n = hits.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
///     async move { Ok(if n < 2 { 503 } else { 200 }) }
/// });
/// assert_eq!(svc.ready().await?.call("GET /").await?, 200); // the third attempt
/// # Ok(())
/// # }
/// ```
pub struct RetryPolicy<C, T = SystemTimer, N = NoNotify, K = Cloned, S = NoTimeout> {
    shared: Arc<Shared<C, T, N, K, S>>,
    origin: Instant,
    /// `origin` on the timer's nanosecond clock (the throttle's).
    origin_ns: u64,
    call: Option<Arc<Mutex<Call>>>,
}

/// The engine's view of `retry` for a call that began at `origin_ns`: with
/// the retrier's throttle, on the timer's clock.
fn context<C, T, N>(retry: &Retry<C, T, N>, origin_ns: u64) -> crate::engine::Context<'_, N> {
    let cx = retry.context();
    match retry.throttle() {
        Some(t) => cx.throttle_at(t, origin_ns),
        None => cx,
    }
}

impl<C, T, N, K, S> fmt::Debug for RetryPolicy<C, T, N, K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("retry", &self.shared.retry)
            .field("attempts", &self.attempts())
            .finish_non_exhaustive()
    }
}

impl<C, T: Clock, N> RetryPolicy<C, T, N, Cloned> {
    /// A policy over `retry`'s configuration that clones requests with
    /// `Clone` ([`Cloned`]).
    ///
    /// ```
    /// use herdless::adapters::tower::RetryPolicy;
    /// use herdless::classify::ByError;
    /// use herdless::{ByTrait, Policy, Retry};
    /// let p = RetryPolicy::new(Retry::new(Policy::default(), ByError(ByTrait)));
    /// assert_eq!(p.retry().policy().max_attempts(), 6);
    /// ```
    pub fn new(retry: Retry<C, T, N>) -> Self {
        Self::with_cloner(retry, Cloned)
    }
}

impl<C, T: Clock, N, K> RetryPolicy<C, T, N, K> {
    /// A policy that copies requests with `cloner` (a [`CloneRequest`], e.g.
    /// a closure returning `None` for streaming bodies).
    ///
    /// ```
    /// use herdless::adapters::tower::RetryPolicy;
    /// use herdless::classify::ByError;
    /// use herdless::{AlwaysRetry, Policy, Retry};
    /// let never = |_: &String| None::<String>; // e.g. every body is a one-shot stream
    /// let _p = RetryPolicy::with_cloner(Retry::new(Policy::default(), ByError(AlwaysRetry)), never);
    /// ```
    pub fn with_cloner(retry: Retry<C, T, N>, cloner: K) -> Self {
        RetryPolicy::with_request_timeout(retry, cloner, NoTimeout)
    }
}

impl<C, T: Clock, N, K, S> RetryPolicy<C, T, N, K, S> {
    /// A policy that copies requests with `cloner` and sets each retry's
    /// timeout with `timeout` (a [`RequestTimeout`]: [`GrpcTimeout`](crate::adapters::tower::GrpcTimeout)
    /// for `grpc-timeout`, or a closure) to the time the retry may take:
    /// the policy's `attempt_timeout`, or what is left of `max_elapsed`,
    /// whichever is smaller, reckoned from when the retry is due (see
    /// [the module documentation](crate::adapters::tower#timeouts-from-the-deadline)
    /// for what it does not cover).
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::adapters::tower::{Cloned, RetryPolicy};
    /// use herdless::classify::ByError;
    /// use herdless::{AlwaysRetry, Policy, Retry};
    /// let policy = Policy::builder().attempt_timeout(Duration::from_secs(2)).build()?;
    /// let stamp = |r: &mut http::Request<String>, left: Duration| {
    ///     r.headers_mut().insert("x-timeout-ms", left.as_millis().to_string().parse().unwrap());
    /// };
    /// let _p = RetryPolicy::with_request_timeout(Retry::new(policy, ByError(AlwaysRetry)), Cloned, stamp);
    /// # Ok::<(), herdless::PolicyError>(())
    /// ```
    pub fn with_request_timeout(retry: Retry<C, T, N>, cloner: K, timeout: S) -> Self {
        let (origin, origin_ns) = (retry.timer.now(), retry.timer.now_ns());
        RetryPolicy {
            shared: Arc::new(Shared {
                retry,
                cloner,
                timeout,
                not_clonable: AtomicU64::new(0),
            }),
            origin,
            origin_ns,
            call: None,
        }
    }
}

impl<C, T, N, K, S> RetryPolicy<C, T, N, K, S> {
    /// The shared configuration.
    ///
    /// ```
    /// use herdless::adapters::tower::RetryPolicy;
    /// use herdless::classify::ByError;
    /// use herdless::{AlwaysRetry, Policy, Retry};
    /// let p = RetryPolicy::new(Retry::builder().policy(Policy::default()).classifier(ByError(AlwaysRetry)).task_id("sync").build());
    /// assert_eq!(p.retry().task_id(), "sync");
    /// ```
    pub fn retry(&self) -> &Retry<C, T, N> {
        &self.shared.retry
    }

    /// How many requests (over every clone) were sent without a retry
    /// because their cloner returned `None`.
    ///
    /// ```
    /// use herdless::adapters::tower::RetryPolicy;
    /// use herdless::classify::ByError;
    /// use herdless::{AlwaysRetry, Policy, Retry};
    /// let p = RetryPolicy::new(Retry::new(Policy::default(), ByError(AlwaysRetry)));
    /// assert_eq!(p.not_clonable(), 0);
    /// ```
    pub fn not_clonable(&self) -> u64 {
        self.shared.not_clonable.load(Ordering::Relaxed)
    }

    /// Attempts this call has made so far (0 before its first result).
    ///
    /// ```
    /// use herdless::adapters::tower::RetryPolicy;
    /// use herdless::classify::ByError;
    /// use herdless::{AlwaysRetry, Policy, Retry};
    /// let p = RetryPolicy::new(Retry::new(Policy::default(), ByError(AlwaysRetry)));
    /// assert_eq!(p.attempts(), 0);
    /// ```
    pub fn attempts(&self) -> u32 {
        self.call.as_ref().map_or(0, |c| lock(c).engine.attempts())
    }
}

/// A clone is a fresh call (tower clones the policy per request): its own engine, from now.
impl<C, T: Clock, N, K, S> Clone for RetryPolicy<C, T, N, K, S> {
    fn clone(&self) -> Self {
        let timer = &self.shared.retry.timer;
        RetryPolicy {
            shared: Arc::clone(&self.shared),
            origin: timer.now(),
            origin_ns: timer.now_ns(),
            call: None,
        }
    }
}

/// A call dropped early settles the engine (refunds an unstarted retry, releases a probe).
impl<C, T, N, K, S> Drop for RetryPolicy<C, T, N, K, S> {
    fn drop(&mut self) {
        if let Some(call) = &self.call {
            lock(call)
                .engine
                .cancel(&context(&self.shared.retry, self.origin_ns));
        }
    }
}

impl<Req, Res, E, C, T, N, K, S> tower::retry::Policy<Req, Res, E> for RetryPolicy<C, T, N, K, S>
where
    C: ClassifyResult<Res, E>,
    T: AsyncSleep,
    N: Notify,
    K: CloneRequest<Req>,
    S: RequestTimeout<Req>,
{
    type Future = RetryWait<C, T, N, K, S>;

    fn retry(&mut self, req: &mut Req, result: &mut Result<Res, E>) -> Option<Self::Future> {
        let shared = &self.shared;
        let retry = &shared.retry;
        let now = retry.timer.now().saturating_duration_since(self.origin);
        let call = self.call.get_or_insert_with(|| {
            let mut engine = Engine::new(Duration::ZERO);
            engine.begin();
            Arc::new(Mutex::new(Call {
                engine,
                rng: None,
                gave_up: false,
            }))
        });
        let mut state = lock(call);
        if state.gave_up {
            return None; // the attempt a breaker wait gave up on: its result stands
        }
        let cx = context(retry, self.origin_ns);
        if let Some(guard) = retry.waves() {
            guard.observe(retry.classifier.plan(result));
        }
        let Some((classification, cause)) = retry.classifier.classify_cause(result) else {
            state.engine.succeeded(&cx, now);
            return None;
        };
        let Call { engine, rng, .. } = &mut *state;
        let rng = rng.get_or_insert_with(|| match retry.seed {
            Some(seed) => {
                Rng::with_seed(call_seed(seed, retry.calls.fetch_add(1, Ordering::Relaxed)))
            }
            None => Rng::fresh(),
        });
        match engine.failed(&cx, now, classification, cause, rng) {
            Decision::Retry { delay, .. } => {
                // `req` is what tower sends next, when the wait is over.
                let due = now.saturating_add(delay);
                shared.timeout.set_timeout(req, engine.remaining(&cx, due));
                Some(RetryWait {
                    sleep: retry.timer.sleep(delay),
                    shared: Arc::clone(shared),
                    call: Arc::clone(call),
                    origin: self.origin,
                    origin_ns: self.origin_ns,
                })
            }
            Decision::GiveUp(_) => None,
        }
    }

    fn clone_request(&mut self, req: &Req) -> Option<Req> {
        let copy = self.shared.cloner.clone_request(req);
        if copy.is_none() {
            self.shared.not_clonable.fetch_add(1, Ordering::Relaxed);
            crate::events::emit::not_clonable(self.shared.retry.task_id());
        }
        copy
    }
}

pin_project_lite::pin_project! {
    /// The wait before a retry ([`tower::retry::Policy::Future`]): sleeps the
    /// engine's delay through the timer, then asks [`Engine::ready`], sleeping
    /// again while an open breaker's probe is out.
    ///
    /// ```
    /// use herdless::adapters::tower::{Cloned, RetryWait};
    /// use herdless::classify::ByError;
    /// use herdless::{AlwaysRetry, ManualTimer};
    /// use herdless::events::NoNotify;
    /// fn send<F: Send>() {}
    /// send::<RetryWait<ByError<AlwaysRetry>, ManualTimer, NoNotify, Cloned>>();
    /// ```
    pub struct RetryWait<C, T: AsyncSleep, N, K, S = NoTimeout> {
        #[pin]
        sleep: T::Sleep,
        shared: Arc<Shared<C, T, N, K, S>>,
        call: Arc<Mutex<Call>>,
        origin: Instant,
        origin_ns: u64,
    }
}

impl<C, T: AsyncSleep, N, K, S> fmt::Debug for RetryWait<C, T, N, K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryWait").finish_non_exhaustive()
    }
}

impl<C, T: AsyncSleep, N: Notify, K, S> Future for RetryWait<C, T, N, K, S> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut this = self.project();
        loop {
            ready!(this.sleep.as_mut().poll(cx));
            let retry = &this.shared.retry;
            let now = retry.timer.now().saturating_duration_since(*this.origin);
            let mut state = lock(this.call);
            let Call { engine, rng, .. } = &mut *state;
            let rng = rng.get_or_insert_with(Rng::fresh);
            match engine.ready(&context(retry, *this.origin_ns), now, rng) {
                Gate::Go => {
                    engine.begin();
                    return Poll::Ready(());
                }
                Gate::Wait(wait) => this.sleep.set(retry.timer.sleep(wait)),
                Gate::GiveUp(_) => {
                    state.gave_up = true;
                    return Poll::Ready(());
                }
            }
        }
    }
}
