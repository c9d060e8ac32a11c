//! NATS JetStream: retries by redelivery from a pull consumer (feature `nats`).
//!
//! A [`Worker`] takes messages from a durable pull consumer and runs an
//! operation on each. Every decision is the [engine](crate::engine)'s; this
//! module only turns them into JetStream's verbs:
//!
//! | the engine says | the worker does |
//! |---|---|
//! | (before running) | claim the task under its key in the completion bucket (`claim.rs`): a copy whose task is done is acked without running, one whose task another delivery holds is left to it |
//! | success | record the completion on the claim, then `+ACK` (confirmed by the server) |
//! | `Decision::Retry { delay }` | `-NAK {"delay": delay}`: the broker redelivers the task after `delay`, to any worker |
//! | `Decision::GiveUp(reason)` (terminal, attempts, elapsed, shared budget, server pushback) | publish the message, its headers and the reason, attempts and elapsed time to the dead-letter subject (confirmed by the stream that stores it), then `+ACK`; without a dead-letter subject, `+TERM` |
//! | a redelivered retry the gate refuses ([`Engine::redelivered`]) | dead letter, as above, without running it |
//! | the breaker's `Gate::Wait(d)` | `-NAK {"delay": d}` without running the attempt |
//!
//! The task's state comes from [`Resumed`]: the broker's delivery count
//! (so a worker killed mid-attempt leaves a count the next worker continues),
//! the broker's timestamp, and the optional `Herdless-State` header (see
//! [`redelivery`](crate::redelivery)).
//!
//! # No path loses a task
//!
//! (On a cluster, see also `confirm.rs` and `connect.rs`: a confirmation
//! that does not come is asked again on the new leader.)
//!
//! * Each acknowledgement that ends a task's life (`+ACK`, `+TERM`) is a
//!   request the server confirms; until then the task is the broker's.
//! * A dead letter is published first, with the stream's confirmation
//!   awaited, and only then acked. A worker that dies in between leaves the
//!   task to be redelivered and dead-lettered again; the dead letter's
//!   `Nats-Msg-Id` (`herdless-dl-` and the stored message's identity as a
//!   UUID) lets the dead-letter stream drop the duplicate inside its
//!   duplicate window. A dead letter that cannot be stored is not acked: the
//!   task comes back after the consumer's ack wait. One that would pass the
//!   server's `max_payload` or the dead-letter stream's `max_msg_size` is
//!   cut to fit and says so (`Herdless-Truncated`), never published to be
//!   refused again at every redelivery.
//! * A message the client cannot decode never reaches the worker (the
//!   client drops its connection instead, at every redelivery): after a
//!   reconnect the worker sweeps the consumer's unacknowledged messages
//!   through the JetStream API, judges their raw bytes with
//!   [`decode_message`], and dead-letters the undecodable ones with reason
//!   `undecodable` (see `poison.rs` for the design and its permissions).
//! * A worker killed mid-attempt acks nothing: the broker redelivers after
//!   its ack wait, which therefore has to cover one attempt, not the chain.
//!   Long attempts send in-progress acks (`+WPI`) every third of the ack
//!   wait, so a live attempt is never redelivered under it.
//! * [`Worker::run`] refuses consumers that could drop a task on their own
//!   (see [`NatsError::Config`]): non-explicit acks, a `max_deliver` below
//!   `max_attempts`, a `BackOff` list; and a dead-letter subject no stream
//!   stores.
//!
//! # Dead letters
//!
//! The original payload and headers, with `Herdless-State` replaced by the
//! chain's final state, and:
//!
//! | header | value |
//! |---|---|
//! | `Herdless-Reason` | `terminal`, `max_attempts`, `max_elapsed`, `retry_budget`, `server_pushback`, `undecodable` |
//! | `Herdless-Attempts` | attempts made |
//! | `Herdless-Elapsed-Ms` | milliseconds from the first attempt's time (see [`redelivery`](crate::redelivery)) to the give-up |
//! | `Herdless-Stream`, `Herdless-Sequence`, `Herdless-Subject` | where the task was |
//! | `Herdless-Error` | the last error (its `Display`, one line, at most 512 bytes), when an attempt failed |
//! | [`TRUNCATED_HEADER`], [`HEADERS_DROPPED_HEADER`] | on a letter cut to the size limit: the payload's original length; how many of the task's headers were left out |
//! | [`UNDECODABLE_HEADER`], [`HEADERS_BASE64_HEADER`] | on `undecodable`: what the client could not read ([`Undecodable::reason`]); the original header block, standard base64 |
//! | `Nats-Msg-Id` | `herdless-dl-` and the stored message's identity as a UUID |
//!
//! To run a dead letter again with a fresh budget and the same key, publish
//! it with `Herdless-State: 1;k=KEY` (its `a=` would count the spent
//! attempts against the new chain).
//!
//! ```no_run
//! use std::time::Duration;
//! use herdless::adapters::nats::Worker;
//! use herdless::{Classification, Policy};
//!
//! # async fn demo() -> Result<(), async_nats::Error> {
//! let client = async_nats::connect("127.0.0.1:4222").await?;
//! let js = async_nats::jetstream::new(client);
//! let consumer: async_nats::jetstream::consumer::PullConsumer =
//!     js.get_stream("TASKS").await?.get_consumer("ingest").await?;
//! let policy = Policy::builder().base(Duration::from_secs(1)).max_attempts(5).build()?;
//! let worker = Worker::new(policy, |e: &std::io::Error| match e.kind() {
//!     std::io::ErrorKind::TimedOut => Classification::retryable(),
//!     _ => Classification::terminal(),
//! })
//! .dead_letter("dead.tasks")
//! .concurrency(8)?;
//! let summary = worker
//!     .run(&js, &consumer, |task| async move {
//!         println!("attempt {} of {} (key {})", task.attempt, task.task_id, task.key);
//!         Ok::<(), std::io::Error>(())
//!     }, std::future::pending::<()>(), std::future::pending::<()>())
//!     .await?;
//! println!("{} acked", summary.acked);
//! # Ok(()) }
//! ```
//!
//! # Pushback replicas' reports
//!
//! Unrelated to the worker, the same server can carry what the replicas of
//! a pushback front end tell each other: [`KvShared`], a
//! [`SharedState`](crate::pushback::SharedState) over a key-value bucket,
//! for [`PushbackLayer::share`](crate::adapters::tower::PushbackLayer::share)
//! (feature `tower`).
//!
//! [`Engine::redelivered`]: crate::engine::Engine::redelivered
//! [`Resumed`]: crate::redelivery::Resumed

mod claim;
mod completion;
mod confirm;
mod connect;
mod dead_letter;
mod decode;
mod error;
mod handle;
mod liveness;
mod poison;
mod replicas;
mod run;
mod site;

use std::time::Duration;

use crate::engine::Context;

use crate::events::{EventLevels, NoNotify};
use crate::guard::{Breaker, RetryBudget};
use crate::policy::Policy;

pub use claim::Fence;
pub use completion::TTL_ACK_WAITS;
pub use connect::{CONNECT_TIMEOUT, PING_INTERVAL, connect_options};
pub use dead_letter::{HEADERS_DROPPED_HEADER, TRUNCATED_HEADER};
pub use decode::{Decoded, Undecodable, decode_header_block, decode_message};
pub use error::{MAX_NAME_LEN, MAX_SUBJECT_LEN, NatsError, check_name, check_subject};
pub use handle::{Outcome, Task};
pub use liveness::{PROBE_EVERY, PROBE_WAIT};
pub use poison::{HEADERS_BASE64_HEADER, MAX_SWEEP, UNDECODABLE_HEADER};
pub use replicas::{KvShared, MAX_PEERS, MAX_REPLICA_ID, check_replica_id, replicas_bucket};
pub use run::Summary;
use site::Site;

/// The largest `concurrency`.
///
/// ```
/// assert_eq!(herdless::adapters::nats::MAX_CONCURRENCY, 4096);
/// ```
pub const MAX_CONCURRENCY: usize = 4096;

/// How long one pull request waits for messages before the worker asks again.
const FETCH_WAIT: Duration = Duration::from_secs(1);

/// The same under `exit_when_idle`, which reads its last request to the end
/// before it exits.
const IDLE_FETCH_WAIT: Duration = Duration::from_millis(200);

/// A JetStream worker driving the engine: the policy, the classifier of the
/// operation's errors, and the worker's settings. See the [module
/// documentation](self).
///
/// ```
/// use herdless::adapters::nats::Worker;
/// use herdless::{AlwaysRetry, Policy};
/// let worker = Worker::new(Policy::default(), AlwaysRetry).dead_letter("dead.tasks").concurrency(4)?;
/// assert_eq!(worker.dead_letter_subject(), Some("dead.tasks"));
/// # Ok::<(), herdless::adapters::nats::NatsError>(())
/// ```
#[derive(Debug)]
pub struct Worker<C, N = NoNotify> {
    policy: Policy,
    classifier: C,
    notify: N,
    dead_letter: Option<String>,
    budget: Option<RetryBudget>,
    breaker: Option<Breaker>,
    seed: Option<u64>,
    progress: Option<Duration>,
    concurrency: usize,
    exit_when_idle: bool,
    completion_record: bool,
    levels: EventLevels,
}

impl<C> Worker<C> {
    /// A worker with `policy` and `classifier` (which sees the operation's
    /// errors): one task at a time, no dead-letter subject (a give-up is a
    /// `+TERM`), in-progress acks every third of the consumer's ack wait.
    ///
    /// ```
    /// let _w = herdless::adapters::nats::Worker::new(herdless::Policy::default(), herdless::AlwaysRetry);
    /// ```
    pub fn new(policy: Policy, classifier: C) -> Self {
        Worker {
            policy,
            classifier,
            notify: NoNotify,
            dead_letter: None,
            budget: None,
            breaker: None,
            seed: None,
            progress: None,
            concurrency: 1,
            exit_when_idle: false,
            completion_record: true,
            levels: EventLevels::DEFAULT,
        }
    }
}

impl<C, N> Worker<C, N> {
    /// Where a task that gives up goes: a subject a stream stores (checked
    /// when [`run`](Self::run) starts).
    ///
    /// ```
    /// let w = herdless::adapters::nats::Worker::new(herdless::Policy::default(), herdless::AlwaysRetry)
    ///     .dead_letter("dead.scans");
    /// assert_eq!(w.dead_letter_subject(), Some("dead.scans"));
    /// ```
    pub fn dead_letter(mut self, subject: impl Into<String>) -> Self {
        self.dead_letter = Some(subject.into());
        self
    }

    /// The dead-letter subject, if any.
    ///
    /// ```
    /// let w = herdless::adapters::nats::Worker::new(herdless::Policy::default(), herdless::AlwaysRetry);
    /// assert_eq!(w.dead_letter_subject(), None); // a give-up is a +TERM
    /// ```
    pub fn dead_letter_subject(&self) -> Option<&str> {
        self.dead_letter.as_deref()
    }

    /// A hook receiving every retry event (beside `tracing`).
    ///
    /// ```
    /// let hook = |e: &herdless::RetryEvent<'_>| eprintln!("{}", e.name());
    /// let _w = herdless::adapters::nats::Worker::new(herdless::Policy::default(), herdless::AlwaysRetry)
    ///     .notify(hook);
    /// ```
    pub fn notify<N2>(self, notify: N2) -> Worker<C, N2> {
        Worker {
            policy: self.policy,
            classifier: self.classifier,
            notify,
            dead_letter: self.dead_letter,
            budget: self.budget,
            breaker: self.breaker,
            seed: self.seed,
            progress: self.progress,
            concurrency: self.concurrency,
            exit_when_idle: self.exit_when_idle,
            completion_record: self.completion_record,
            levels: self.levels,
        }
    }

    /// A retry budget shared by this worker's tasks.
    ///
    /// ```
    /// let _w = herdless::adapters::nats::Worker::new(herdless::Policy::default(), herdless::AlwaysRetry)
    ///     .budget(herdless::RetryBudget::aws());
    /// ```
    pub fn budget(mut self, budget: RetryBudget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// A breaker shared by this worker's tasks.
    ///
    /// ```
    /// let _w = herdless::adapters::nats::Worker::new(herdless::Policy::default(), herdless::AlwaysRetry)
    ///     .breaker(herdless::Breaker::new(5));
    /// ```
    pub fn breaker(mut self, breaker: Breaker) -> Self {
        self.breaker = Some(breaker);
        self
    }

    /// Mixes `seed` into every task's derived seed (tasks whose state carries
    /// a seed keep theirs): reproducible delays for a given stream.
    ///
    /// ```
    /// let _w = herdless::adapters::nats::Worker::new(herdless::Policy::default(), herdless::AlwaysRetry)
    ///     .seed(7);
    /// ```
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The interval of in-progress acks during an attempt (default: a third
    /// of the consumer's ack wait).
    ///
    /// ```
    /// let _w = herdless::adapters::nats::Worker::new(herdless::Policy::default(), herdless::AlwaysRetry)
    ///     .progress_every(std::time::Duration::from_secs(10));
    /// ```
    pub fn progress_every(mut self, every: Duration) -> Self {
        self.progress = Some(every);
        self
    }

    /// The `tracing` level of each event.
    ///
    /// ```
    /// use herdless::events::EventLevels;
    /// let _w = herdless::adapters::nats::Worker::new(herdless::Policy::default(), herdless::AlwaysRetry)
    ///     .event_levels(EventLevels::default().retry_scheduled(tracing::Level::DEBUG));
    /// ```
    pub fn event_levels(mut self, levels: EventLevels) -> Self {
        self.levels = levels;
        self
    }

    /// Makes [`run`](Self::run) return once the consumer is idle: nothing
    /// left to deliver and nothing awaiting an acknowledgement or a
    /// redelivery (a batch job draining its backlog, a test).
    ///
    /// ```
    /// let _w = herdless::adapters::nats::Worker::new(herdless::Policy::default(), herdless::AlwaysRetry)
    ///     .exit_when_idle(true);
    /// ```
    pub fn exit_when_idle(mut self, yes: bool) -> Self {
        self.exit_when_idle = yes;
        self
    }

    /// Whether to claim each task in the stream's completion bucket before
    /// running it and record its success there before acking it (default:
    /// on, where the bucket can be created; see `completion.rs` for the
    /// bucket, its name and TTL, and `redelivery/claim/mod.rs` for the
    /// claim's design). On, a
    /// delivery whose task is recorded as done is acked without running and
    /// one whose task another delivery holds is left to it; each first
    /// delivery costs one more confirmed publish (the claim), each
    /// redelivery a read more, each attempt one more confirmed publish (its
    /// end), and a long attempt a renewal every third of the ack wait. Off,
    /// a success whose acknowledgement is lost in a leader change, or a copy
    /// the broker hands out while the first runs, runs again.
    ///
    /// ```
    /// let w = herdless::adapters::nats::Worker::new(herdless::Policy::default(), herdless::AlwaysRetry)
    ///     .completion_record(false);
    /// assert!(!w.records_completions());
    /// ```
    pub fn completion_record(mut self, on: bool) -> Self {
        self.completion_record = on;
        self
    }

    /// Whether successes are recorded (see [`completion_record`](Self::completion_record)).
    ///
    /// ```
    /// let w = herdless::adapters::nats::Worker::new(herdless::Policy::default(), herdless::AlwaysRetry);
    /// assert!(w.records_completions());
    /// ```
    pub fn records_completions(&self) -> bool {
        self.completion_record
    }

    /// How many tasks run at once: 1 to [`MAX_CONCURRENCY`].
    ///
    /// ```
    /// use herdless::adapters::nats::Worker;
    /// let w = || Worker::new(herdless::Policy::default(), herdless::AlwaysRetry);
    /// assert!(w().concurrency(16).is_ok());
    /// assert!(w().concurrency(0).is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// [`NatsError::Config`] outside that range.
    pub fn concurrency(mut self, n: usize) -> Result<Self, NatsError> {
        if !(1..=MAX_CONCURRENCY).contains(&n) {
            return Err(NatsError::Config(format!(
                "concurrency must be 1 to {MAX_CONCURRENCY}, not {n}"
            )));
        }
        self.concurrency = n;
        Ok(self)
    }

    /// The policy.
    ///
    /// ```
    /// let w = herdless::adapters::nats::Worker::new(herdless::Policy::default(), herdless::AlwaysRetry);
    /// assert_eq!(w.policy().max_attempts(), 6);
    /// ```
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The engine context for one task.
    fn context<'a>(&'a self, task_id: &'a str) -> Context<'a, N> {
        let mut cx = Context::new(&self.policy)
            .task_id(task_id)
            .event_levels(self.levels)
            .notify(&self.notify);
        if let Some(b) = &self.budget {
            cx = cx.budget(b);
        }
        if let Some(b) = &self.breaker {
            cx = cx.breaker(b);
        }
        cx
    }
}
