//! [`PushbackLayer`]: the handle users build, clone and steer (outage
//! switches, inspection); every clone shares one allocator.

use std::fmt;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::header::HeaderName;
use tokio::sync::Notify;
use tower::Layer;

use super::allowance::{Allowances, Alone};
use super::hold::State;
use super::share::Sharing;
use super::{PushbackService, Shared};
use crate::adapters::tower::NotCloned;
#[allow(unused_imports)] // rustdoc links
use crate::adapters::tower::{CloneBody, CloneRequest};
use crate::pushback::allocator::Allocator;
#[allow(unused_imports)] // rustdoc links
use crate::pushback::allocator::caller_key;
use crate::pushback::{Allotment, SharedState, SlotAllocator};
use crate::timer::{Clock, SystemTimer};

/// A tower layer admitting up to a capacity and answering the excess `503`
/// with spread `Retry-After` slots. See the [module
/// documentation](crate::adapters::tower::pushback). Clones share one allocator.
/// `C` clones the requests it hands to the service, so that a refusal can
/// wait in the hold ([`clone_requests`](Self::clone_requests); by default
/// [`NotCloned`]: nothing is held again).
///
/// ```
/// use std::time::Duration;
/// use herdless::pushback::SlotAllocator;
/// use herdless::adapters::tower::PushbackLayer;
/// let layer = PushbackLayer::new(SlotAllocator::new(100.0, Duration::from_secs(30))?);
/// assert_eq!(layer.counts(), (0, 0));
/// # Ok::<(), herdless::pushback::PushbackError>(())
/// ```
pub struct PushbackLayer<K = SystemTimer, A = SlotAllocator, C = NotCloned> {
    shared: Arc<Shared<K, A>>,
    key_header: Option<HeaderName>,
    cloner: Arc<C>,
}

impl<K, A, C> Clone for PushbackLayer<K, A, C> {
    fn clone(&self) -> Self {
        PushbackLayer {
            shared: Arc::clone(&self.shared),
            key_header: self.key_header.clone(),
            cloner: Arc::clone(&self.cloner),
        }
    }
}

impl<K, A: fmt::Debug, C> fmt::Debug for PushbackLayer<K, A, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("PushbackLayer");
        if let Ok(state) = self.shared.state.0.try_lock() {
            d.field("allocator", &state.alloc);
        }
        d.finish_non_exhaustive()
    }
}

impl<A: Allocator> PushbackLayer<SystemTimer, A> {
    /// A layer on the system clock; its epoch is now.
    ///
    /// ```
    /// use std::time::Duration;
    /// let _ = herdless::adapters::tower::PushbackLayer::new(
    ///     herdless::pushback::SlotAllocator::new(5.0, Duration::from_secs(10))?,
    /// );
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn new(allocator: A) -> Self {
        Self::with_clock(allocator, SystemTimer)
    }
}

impl<K: Clock, A: Allocator> PushbackLayer<K, A> {
    /// A layer reading time from `clock` (e.g. [`ManualTimer`](crate::ManualTimer)
    /// in tests); its epoch is the clock's current time.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::adapters::tower::PushbackLayer;
    /// use herdless::pushback::SlotAllocator;
    /// use herdless::ManualTimer;
    /// let t = ManualTimer::new();
    /// let layer = PushbackLayer::with_clock(SlotAllocator::new(5.0, Duration::from_secs(10))?, t.clone());
    /// t.advance(Duration::from_secs(2));
    /// assert_eq!(layer.elapsed(), Duration::from_secs(2));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn with_clock(allocator: A, clock: K) -> Self {
        let epoch = clock.now();
        PushbackLayer {
            shared: Arc::new(Shared {
                state: Alone(Mutex::new(State::new(allocator))),
                allowances: Allowances::new(A::ALLOWANCES),
                clock,
                epoch,
                wake: Arc::new(Notify::new()),
                driving: AtomicBool::new(false),
            }),
            key_header: None,
            cloner: Arc::new(NotCloned),
        }
    }
}

impl<K: Clock, A: Allocator, C> PushbackLayer<K, A, C> {
    /// Clones each request the layer hands to the service with `cloner`
    /// (a [`CloneRequest`]: a closure, or [`CloneBody`]), so that a refusal
    /// of the service's own (503 or 429) can wait in the hold: the
    /// allocator decides it as it would a request it never handed over
    /// ([`Allocator::refused`] for an admitted request,
    /// [`Allocator::refused_held`] for a released one) and, when it holds
    /// it, the clone goes to the service when it is released; its caller
    /// sees only that later answer. A request `cloner` declines (`None`: a
    /// streamed body) is answered with a slot, as without this. An
    /// allocator without a hold never holds: this only costs the clones.
    ///
    /// ```
    /// use herdless::adapters::tower::PushbackLayer;
    /// use herdless::pushback::AdaptiveAllocator;
    /// // Requests without a body (unit bodies here) are sent again.
    /// let layer = PushbackLayer::new(AdaptiveAllocator::builder().estimate(5.0).hold().build()?)
    ///     .clone_requests(|r: &http::Request<()>| Some(r.clone()));
    /// # let _ = layer;
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn clone_requests<C2>(self, cloner: C2) -> PushbackLayer<K, A, C2> {
        PushbackLayer {
            shared: self.shared,
            key_header: self.key_header,
            cloner: Arc::new(cloner),
        }
    }

    /// Names each caller by the request header `name` (its value hashed with
    /// [`caller_key`]); requests without it are unnamed. The services this
    /// handle (and its later clones) makes use it; the allocator is shared
    /// by every clone either way.
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::adapters::tower::PushbackLayer;
    /// use herdless::pushback::AdaptiveAllocator;
    /// let layer = PushbackLayer::new(AdaptiveAllocator::new(5.0, Duration::from_secs(10))?)
    ///     .key_header("x-worker-id");
    /// # let _ = layer;
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    ///
    /// # Panics
    ///
    /// When `name` is not a valid header name (a programming error: names
    /// are constants).
    pub fn key_header(mut self, name: &str) -> Self {
        self.key_header = Some(HeaderName::try_from(name).expect("a valid header name"));
        self
    }

    /// Makes this layer one replica among several in front of one service:
    /// about once a [`PERIOD`](crate::pushback::replicas::PERIOD), on a
    /// request, the allocator's report goes to `store` and the peers'
    /// reports it holds come back to the allocator, under the lock the layer
    /// takes anyway (no timer, no I/O: the store moves the reports in the
    /// background, e.g. [`KvShared`](crate::adapters::nats::KvShared) with
    /// the `nats` feature). Every clone of the layer shares it. An
    /// allocator that does not share (the static one) ignores it; with no
    /// peer heard, the layer decides exactly as without it. See
    /// [`replicas`](crate::pushback::replicas) for what is shared and why.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use herdless::adapters::tower::PushbackLayer;
    /// use herdless::pushback::{AdaptiveAllocator, PeerReport, ReplicaReport, SharedState};
    ///
    /// /// Keeps this replica's last report; hears nobody.
    /// #[derive(Default)]
    /// struct Alone(Mutex<Option<ReplicaReport>>);
    /// impl SharedState for Alone {
    ///     fn publish(&self, report: &ReplicaReport) {
    ///         *self.0.lock().unwrap() = Some(*report);
    ///     }
    ///     fn peers(&self) -> Vec<PeerReport> {
    ///         Vec::new()
    ///     }
    /// }
    ///
    /// let layer = PushbackLayer::new(AdaptiveAllocator::builder().estimate(500.0).hold().build()?)
    ///     .share(Arc::new(Alone::default()));
    /// # let _ = layer;
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn share(self, store: Arc<dyn SharedState>) -> Self {
        self.shared.lock().sharing = Some(Sharing::new(store));
        self
    }

    /// Time since the layer's epoch (the allocator's `now`).
    ///
    /// ```
    /// use std::time::Duration;
    /// let l = herdless::adapters::tower::PushbackLayer::new(
    ///     herdless::pushback::SlotAllocator::new(5.0, Duration::from_secs(10))?);
    /// assert!(l.elapsed() < Duration::from_secs(60));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn elapsed(&self) -> Duration {
        self.shared.now()
    }

    /// Decides one request now (what the service does for each request); a
    /// hold it answers is cancelled at once (no request waits for it).
    ///
    /// ```
    /// use std::time::Duration;
    /// let l = herdless::adapters::tower::PushbackLayer::new(
    ///     herdless::pushback::SlotAllocator::new(5.0, Duration::from_secs(10))?.outage());
    /// assert!(!l.decide().is_admit());
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn decide(&self) -> Allotment {
        let now = self.shared.now();
        if A::ALLOWANCES && self.shared.allowances.spend(now, false) {
            return Allotment::Admit;
        }
        let mut state = self.shared.lock_at(now);
        let decision = state.alloc.decide(now, None);
        self.shared.decided(&mut state, now, decision.is_admit());
        if let Allotment::Hold { ticket } = decision {
            // Nothing waits for it: out of the queue again.
            state.alloc.cancel(ticket);
        }
        decision
    }

    /// Sheds everything from now for `duration` (or, with `None`, until
    /// [`recover`](Self::recover)); the rejected callers are booked from the
    /// outage's end.
    ///
    /// ```
    /// use std::time::Duration;
    /// let l = herdless::adapters::tower::PushbackLayer::new(
    ///     herdless::pushback::SlotAllocator::new(5.0, Duration::from_secs(10))?);
    /// l.start_outage(Some(Duration::from_secs(3)));
    /// assert!(l.decide().retry_after().unwrap() >= Duration::from_secs(2));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn start_outage(&self, duration: Option<Duration>) {
        let now = self.shared.now();
        self.shared
            .lock_settled(now)
            .alloc
            .start_outage(now, duration.map(|d| now.saturating_add(d)));
    }

    /// Leaves outage mode.
    ///
    /// ```
    /// use std::time::Duration;
    /// let l = herdless::adapters::tower::PushbackLayer::new(
    ///     herdless::pushback::SlotAllocator::new(5.0, Duration::from_secs(10))?.outage());
    /// l.recover();
    /// assert!(l.decide().is_admit());
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn recover(&self) {
        let now = self.shared.now();
        self.shared.lock_settled(now).alloc.recover(now);
    }

    /// Looks at the allocator (its estimate, its counts).
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::adapters::tower::PushbackLayer;
    /// use herdless::pushback::AdaptiveAllocator;
    /// let l = PushbackLayer::new(AdaptiveAllocator::new(5.0, Duration::from_secs(10))?);
    /// assert_eq!(l.inspect(|a| a.capacity()), 5.0);
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn inspect<R>(&self, f: impl FnOnce(&A) -> R) -> R {
        let now = self.shared.now();
        f(&self.shared.lock_settled(now).alloc)
    }

    /// Requests admitted and rejected so far.
    ///
    /// ```
    /// use std::time::Duration;
    /// let l = herdless::adapters::tower::PushbackLayer::new(
    ///     herdless::pushback::SlotAllocator::new(5.0, Duration::from_secs(10))?);
    /// let _ = l.decide();
    /// assert_eq!(l.counts(), (1, 0));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn counts(&self) -> (u64, u64) {
        let now = self.shared.now();
        self.shared.lock_settled(now).alloc.counts()
    }

    /// Answers every held request now, unprocessed (`503`, its own slot in
    /// `Retry-After` and `Retry-After-Ms`, and `Herdless-Requeue: 1`): for a
    /// graceful shutdown or a restart, so that the callers come back spread
    /// at the estimate (to another replica, or to this one once it is back)
    /// instead of all at once, and herdless clients do not count the answer
    /// as an attempt. Returns how many were answered. Requests keep being
    /// decided as usual afterwards.
    ///
    /// ```
    /// use herdless::adapters::tower::PushbackLayer;
    /// use herdless::pushback::AdaptiveAllocator;
    /// let l = PushbackLayer::new(AdaptiveAllocator::builder().estimate(5.0).hold().build()?);
    /// assert_eq!(l.evict_held(), 0);
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn evict_held(&self) -> usize {
        let now = self.shared.now();
        self.shared.lock().evict_all(now)
    }
}

impl<S, K, A, C> Layer<S> for PushbackLayer<K, A, C> {
    type Service = PushbackService<S, K, A, C>;

    fn layer(&self, inner: S) -> Self::Service {
        PushbackService {
            inner,
            shared: Arc::clone(&self.shared),
            key_header: self.key_header.clone(),
            cloner: Arc::clone(&self.cloner),
        }
    }
}
