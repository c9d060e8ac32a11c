//! [`Worker::run`]: the pull loop, `concurrency` tasks at a time, a graceful
//! stop and an abort, and the [`Summary`] of what it did.

use std::collections::BTreeMap;
use std::fmt::Display;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use async_nats::connection::State;
use async_nats::jetstream::{self, consumer::PullConsumer, consumer::pull::Batch};
use futures_util::stream::{FuturesUnordered, StreamExt};

use super::error::check_consumer;
use super::handle::{Abort, Outcome, Task};
use super::{FETCH_WAIT, IDLE_FETCH_WAIT, NatsError, Site, Worker};
use crate::backoff::Backoff;
use crate::classify::Classify;
use crate::events::Notify;
use crate::policy::Policy;

/// What a [`Worker::run`] did, one count per message: each delivery, and
/// each message the client could not decode, ends in exactly one of the
/// outcome counts, so `deliveries + undecodable = acked +
/// already_completed + held_elsewhere + retried + deferred + dead_lettered
/// + handed_back + lease_lost + unsettled`.
///
/// ```
/// let s = herdless::adapters::nats::Summary::default();
/// assert_eq!(s.deliveries, 0);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Summary {
    /// Messages taken from the consumer.
    pub deliveries: u64,
    /// Messages the NATS client could not decode, found by a sweep (see
    /// [`decode_message`](super::decode_message)); each is also counted as
    /// dead-lettered with reason `undecodable`, or as unsettled.
    pub undecodable: u64,
    /// Attempts that succeeded (acked).
    pub acked: u64,
    /// Deliveries whose key was recorded as completed: acked without running
    /// (a success whose acknowledgement had been lost).
    pub already_completed: u64,
    /// Copies of a task another delivery held (claimed, running or handing
    /// it back): neither run nor acknowledged.
    pub held_elsewhere: u64,
    /// Failed attempts handed to the broker with the engine's delay.
    pub retried: u64,
    /// Retries the breaker held back (NAKed with its wait, not run).
    pub deferred: u64,
    /// Tasks given up (dead-lettered, or terminated without a dead-letter subject).
    pub dead_lettered: u64,
    /// Give-ups by reason (`terminal`, `max_attempts`, …, `undecodable`).
    pub by_reason: BTreeMap<&'static str, u64>,
    /// Attempts abandoned by an abort and handed back.
    pub handed_back: u64,
    /// Attempts stopped (or not started) because their claim could not be
    /// renewed within its lease; the task left to the broker's ack wait.
    pub lease_lost: u64,
    /// Tasks left to the ack wait (a dead letter that could not be stored,
    /// an acknowledgement the broker did not confirm).
    pub unsettled: u64,
}

impl Summary {
    fn record(&mut self, outcome: Result<Outcome, NatsError>) {
        match outcome {
            Ok(Outcome::Acked { .. }) => self.acked += 1,
            Ok(Outcome::AlreadyCompleted) => self.already_completed += 1,
            Ok(Outcome::HeldElsewhere) => self.held_elsewhere += 1,
            Ok(Outcome::LeaseLost) => self.lease_lost += 1,
            Ok(Outcome::Retrying { .. }) => self.retried += 1,
            Ok(Outcome::Deferred { .. }) => self.deferred += 1,
            Ok(Outcome::DeadLettered { reason, .. }) => {
                self.dead_lettered += 1;
                *self.by_reason.entry(reason.as_str()).or_default() += 1;
            }
            Ok(Outcome::HandedBack) => self.handed_back += 1,
            Ok(Outcome::Unsettled) => self.unsettled += 1,
            Ok(Outcome::Undecodable { .. }) => {
                self.dead_lettered += 1;
                *self.by_reason.entry("undecodable").or_default() += 1;
            }
            Err(e) => {
                tracing::warn!(target: "herdless", error = %e, "task left to the ack wait");
                self.unsettled += 1;
            }
        }
    }
}

/// The pace of pulling again after a failed pull request.
fn pull_backoff() -> Backoff {
    let policy = Policy::builder()
        .base(Duration::from_millis(100))
        .cap(Duration::from_secs(5))
        .build()
        .unwrap_or_default();
    Backoff::new(policy)
}

/// How often the loop looks at the client's connection count.
const WATCH_EVERY: Duration = Duration::from_millis(100);

/// A site refresh, with a sweep after a reconnect: the new site and the
/// outcomes of the undecodable messages settled.
type Tending<'a> = Pin<Box<dyn Future<Output = Result<(Site, Vec<Outcome>), NatsError>> + 'a>>;

async fn tend_next(tending: &mut Option<Tending<'_>>) -> Result<(Site, Vec<Outcome>), NatsError> {
    match tending {
        Some(t) => t.await,
        None => std::future::pending().await,
    }
}

async fn next(batch: &mut Option<Batch>) -> Option<Result<jetstream::Message, async_nats::Error>> {
    match batch {
        Some(b) => b.next().await,
        None => std::future::pending().await,
    }
}

/// The pull in progress: the batch, what was asked and taken, and the pace
/// of pulling again after a failure.
struct Pull {
    batch: Option<Batch>,
    taken_in_batch: usize,
    /// When the current pull was asked, and for how many messages.
    asked_at: tokio::time::Instant,
    asked: usize,
    /// What the server had left to deliver at the last message taken.
    left: u64,
    backoff: Backoff,
    paused: bool,
    /// (refresh the site, sweep): wanted, not yet started.
    want: (bool, bool),
}

impl Pull {
    fn new() -> Self {
        Pull {
            batch: None,
            taken_in_batch: 0,
            asked_at: tokio::time::Instant::now(),
            asked: 0,
            left: u64::MAX,
            backoff: pull_backoff(),
            paused: false,
            want: (false, false),
        }
    }

    /// Asks for up to `free` messages; a failed request pauses pulling for
    /// the backoff's next delay (`pause`) and asks for the site again.
    ///
    /// # Errors
    ///
    /// The client has stopped: nothing more can be pulled.
    async fn ask(
        &mut self,
        consumer: &PullConsumer,
        client: &async_nats::Client,
        fetch_wait: Duration,
        free: usize,
        pause: Pin<&mut tokio::time::Sleep>,
    ) -> Result<(), NatsError> {
        let pulled = consumer
            .batch()
            .max_messages(free)
            .expires(fetch_wait)
            .messages()
            .await;
        match pulled {
            Ok(b) => {
                self.backoff.on_success();
                self.batch = Some(b);
                self.taken_in_batch = 0;
                (self.asked_at, self.asked) = (tokio::time::Instant::now(), free);
            }
            Err(e) => {
                if gone(client).await {
                    return Err(NatsError::broker(
                        "pulling messages: the NATS client has stopped (its connection \
                         task ended; async-nats panics on a message whose subject is \
                         not UTF-8); connect again",
                        e,
                    ));
                }
                self.want.0 = true;
                let wait = self.backoff.next_delay();
                tracing::warn!(target: "herdless", error = %e, wait_s = wait.as_secs_f64(), "pull failed");
                pause.reset(tokio::time::Instant::now() + wait);
                self.paused = true;
            }
        }
        Ok(())
    }

    /// The client connected again (its count moved from `connects`): the
    /// pull died with the connection (perhaps on a message the client cannot
    /// decode), so the site is read again and the consumer swept.
    fn on_reconnect(&mut self, now: u64, connects: &mut u64) {
        if now != *connects {
            *connects = now;
            self.batch = None;
            self.want = (true, true);
            tracing::warn!(
                target: "herdless",
                "the connection to the broker was re-established: sweeping the \
                 consumer for messages the client cannot decode"
            );
        }
    }

    /// The pull ended (`None` from the batch). Returns whether the consumer
    /// was found idle with nothing taken (then a worker told to exit when
    /// idle stops).
    fn ended(&mut self, fetch_wait: Duration, stopping: bool, inflight: usize) -> bool {
        self.batch = None;
        // A pull ends early with messages still to come only on a status
        // line: the server's own come at its expiry, so an early one is a
        // message's header.
        let early = self.asked_at.elapsed() < fetch_wait * 3 / 4;
        if early && self.taken_in_batch < self.asked && !stopping {
            self.want = (true, true);
        }
        self.taken_in_batch == 0 && inflight == 0
    }
}

/// A tended site: the fresh site, and the undecodable messages it settled
/// counted; a failure is logged (tried again after the next reconnect).
fn tended(
    result: Result<(Site, Vec<Outcome>), NatsError>,
    site: &mut Arc<Site>,
    summary: &mut Summary,
) {
    match result {
        Ok((fresh, outcomes)) => {
            *site = Arc::new(fresh);
            for outcome in outcomes {
                summary.undecodable += 1;
                summary.record(Ok(outcome));
            }
        }
        Err(e) => tracing::warn!(
            target: "herdless",
            error = %e,
            "sweep failed: tried again after the next reconnect"
        ),
    }
}

impl<C, N: Notify> Worker<C, N> {
    /// Takes tasks from `consumer` and runs `op` on each, up to
    /// `concurrency` at once, until `stop` resolves (no new task is started:
    /// one that still arrives on an outstanding pull is handed back; running
    /// attempts finish and are settled) or `abort` does (running attempts are
    /// dropped and handed back to the broker at once). Returns what it did.
    ///
    /// # Errors
    ///
    /// [`NatsError::Config`] for a consumer or dead-letter subject it refuses
    /// (before taking anything); [`NatsError::Broker`] when the consumer
    /// cannot be read. A failed pull is retried with a jittered backoff; a
    /// failure to settle one task leaves it to the broker's ack wait.
    pub async fn run<F, Fut, E, S, A>(
        &self,
        js: &jetstream::Context,
        consumer: &PullConsumer,
        op: F,
        stop: S,
        abort: A,
    ) -> Result<Summary, NatsError>
    where
        C: Classify<E>,
        F: Fn(Task) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: Display,
        S: Future,
        A: Future,
    {
        let info = consumer
            .get_info()
            .await
            .map_err(|e| NatsError::broker("reading the consumer", e))?;
        check_consumer(&info, &self.policy)?;
        let mut site = Arc::new(
            Site::read(
                js,
                &info,
                self.dead_letter.as_deref(),
                self.completion_record,
                None,
            )
            .await?,
        );
        let progress = self
            .progress
            .unwrap_or(info.config.ack_wait / 3)
            .max(Duration::from_millis(10));
        let client = js.client();
        let stats = client.statistics();
        let mut connects = stats.connects.load(Ordering::Relaxed);
        let fetch_wait = if self.exit_when_idle {
            IDLE_FETCH_WAIT
        } else {
            FETCH_WAIT
        };
        let mut watch = tokio::time::interval(WATCH_EVERY);
        watch.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut tending: Option<Tending<'_>> = None;
        let (raise, lowered) = tokio::sync::watch::channel(false);
        let aborting = Abort(lowered);
        let mut inflight = FuturesUnordered::new();
        let mut pull = Pull::new();
        let (mut stopping, mut aborted) = (false, false);
        let mut summary = Summary::default();
        let pause = tokio::time::sleep(Duration::ZERO);
        // Leaves a server that stops answering (see `liveness.rs`).
        let liveness = super::liveness::watch(client.clone());
        tokio::pin!(stop, abort, pause, liveness);
        loop {
            let free = self.concurrency - inflight.len();
            if pull.batch.is_none() && !stopping && !pull.paused && free > 0 {
                pull.ask(consumer, &client, fetch_wait, free, pause.as_mut())
                    .await?;
            }
            if stopping && inflight.is_empty() && client.connection_state() != State::Connected {
                // Nothing can arrive on a connection that is down: do not
                // wait out the pull (up to its expiry and 5 s).
                pull.batch = None;
            }
            if stopping && pull.batch.is_none() && inflight.is_empty() {
                return Ok(summary);
            }
            if tending.is_none() && !stopping && (pull.want.0 || pull.want.1) {
                let sweep = std::mem::take(&mut pull.want).1;
                let open = site.completions.clone();
                tending = Some(Box::pin(self.tend(js, consumer, sweep, open)));
            }
            tokio::select! {
                biased;
                _ = &mut abort, if !aborted => {
                    aborted = true;
                    stopping = true;
                    let _ = raise.send(true);
                }
                _ = &mut stop, if !stopping => stopping = true,
                () = &mut pause, if pull.paused => pull.paused = false,
                () = &mut liveness => {}
                _ = watch.tick() => {
                    pull.on_reconnect(stats.connects.load(Ordering::Relaxed), &mut connects);
                }
                result = tend_next(&mut tending), if tending.is_some() => {
                    tending = None;
                    tended(result, &mut site, &mut summary);
                }
                Some(done) = inflight.next(), if !inflight.is_empty() => {
                    summary.record(done);
                    // Drained: stop taking tasks. The outstanding pull is
                    // read to its end (a short one in this mode): a task
                    // published meanwhile is handed back, not stranded in a
                    // dropped request until the ack wait.
                    let drained = pull.left == 0 && inflight.is_empty();
                    if self.exit_when_idle && drained && idle(consumer).await {
                        stopping = true;
                    }
                }
                taken = next(&mut pull.batch) => match taken {
                    Some(Ok(message)) => {
                        summary.deliveries += 1;
                        pull.taken_in_batch += 1;
                        match self.resume(&site, message) {
                            Ok(d) => {
                                pull.left = d.pending;
                                // Stopping: a task that still arrives goes straight back.
                                inflight.push(self.handle(js, d, &op, Some(progress), &aborting, !stopping));
                            }
                            Err(e) => summary.record(Err(e)),
                        }
                    }
                    Some(Err(e)) => {
                        tracing::warn!(target: "herdless", error = %e, "pull ended early");
                        pull.batch = None;
                        // The stream may be gone, or new: read it again; and
                        // the end may be a message's status line: sweep.
                        pull.want = (true, true);
                    }
                    None => {
                        let quiet = pull.ended(fetch_wait, stopping, inflight.len());
                        if quiet && self.exit_when_idle && idle(consumer).await {
                            stopping = true;
                        }
                    }
                },
            }
        }
    }
}

impl<C, N> Worker<C, N> {
    /// Reads the site again (keeping the completion bucket `open`, if one
    /// is) and, if `sweep`, settles the messages the client cannot decode
    /// (see `poison.rs`).
    async fn tend(
        &self,
        js: &jetstream::Context,
        consumer: &PullConsumer,
        sweep: bool,
        open: Option<super::completion::Completions>,
    ) -> Result<(Site, Vec<Outcome>), NatsError> {
        let info = consumer
            .get_info()
            .await
            .map_err(|e| NatsError::broker("reading the consumer", e))?;
        let site = Site::read(
            js,
            &info,
            self.dead_letter.as_deref(),
            self.completion_record,
            open,
        )
        .await?;
        let outcomes = if sweep {
            self.sweep(js, consumer, &site).await?
        } else {
            Vec::new()
        };
        Ok((site, outcomes))
    }
}

/// Whether the client is gone for good: its connection task no longer
/// takes commands (a flush fails at once, client side).
async fn gone(client: &async_nats::Client) -> bool {
    let flush = tokio::time::timeout(Duration::from_millis(50), client.flush()).await;
    matches!(flush, Ok(Err(e)) if e.kind() == async_nats::client::FlushErrorKind::SendError)
}

/// Whether the consumer has nothing to deliver and nothing awaiting an
/// acknowledgement or a redelivery (not idle when it cannot be read: the
/// next pull finds out more).
async fn idle(consumer: &PullConsumer) -> bool {
    match consumer.get_info().await {
        Ok(info) => info.num_pending == 0 && info.num_ack_pending == 0,
        Err(e) => {
            tracing::warn!(target: "herdless", error = %e, "cannot read the consumer");
            false
        }
    }
}
