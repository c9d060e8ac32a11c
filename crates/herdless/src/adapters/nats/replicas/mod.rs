//! [`KvShared`]: the replicas of a pushback front end share their reports
//! through a NATS JetStream key-value bucket. The design and its bounds are
//! on [`KvShared`] (this module is private): `heard.rs` keeps the peers'
//! reports and their arrival times, `task.rs` moves them.

mod heard;
mod task;

use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::NatsError;
use crate::pushback::replicas::{PERIOD, STALE};
use crate::pushback::{PeerReport, ReplicaReport, SharedState};
use heard::Heard;

/// The longest replica id (a key of the bucket), in bytes.
pub const MAX_REPLICA_ID: usize = 128;

/// The most peers a replica keeps reports of; a bucket with more keys
/// (a misconfiguration) has the extra ones ignored.
pub const MAX_PEERS: usize = 1_000;

/// The longest bucket suffix used as it is (longer ones are hashed).
const MAX_NAME_IN_BUCKET: usize = 200;

/// The bucket the replicas named `name` share (see [`KvShared`]).
///
/// ```
/// use herdless::adapters::nats::replicas_bucket;
/// assert_eq!(replicas_bucket("scanner-db"), "herdless_replicas_scanner-db");
/// assert_eq!(replicas_bucket("127.0.0.1:9000").len(), "herdless_replicas_".len() + 32);
/// ```
pub fn replicas_bucket(name: &str) -> String {
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain && name.len() <= MAX_NAME_IN_BUCKET {
        format!("herdless_replicas_{name}")
    } else {
        let hash = crate::redelivery::Delivery::identity_of(&[name.as_bytes()]);
        format!("herdless_replicas_{hash:032x}")
    }
}

/// Checks a replica id: 1 to [`MAX_REPLICA_ID`] bytes of ASCII letters,
/// digits, `-`, `_`, `=` and `.` (a key of the bucket), not starting or
/// ending with `.`, no `..`.
///
/// ```
/// use herdless::adapters::nats::check_replica_id;
/// assert!(check_replica_id("gw-1.example.com-8080").is_ok());
/// assert!(check_replica_id("gw:8080").is_err());
/// ```
///
/// # Errors
///
/// [`NatsError::Config`] naming what is wrong.
pub fn check_replica_id(id: &str) -> Result<(), NatsError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '=' | '.');
    let why = if id.is_empty() || id.len() > MAX_REPLICA_ID {
        Some(format!("must be 1 to {MAX_REPLICA_ID} bytes"))
    } else if let Some(c) = id.chars().find(|&c| !allowed(c)) {
        Some(format!(
            "{c:?} is not allowed (letters, digits, '-', '_', '=' and '.')"
        ))
    } else if id.starts_with('.') || id.ends_with('.') || id.contains("..") {
        Some("must not start or end with '.', nor hold \"..\"".to_owned())
    } else {
        None
    };
    match why {
        Some(why) => Err(NatsError::Config(format!("replica id {id:?}: {why}"))),
        None => Ok(()),
    }
}

/// The reports heard, shared by the handle and its task.
#[derive(Debug)]
struct Inner {
    heard: Mutex<Heard>,
}

impl Inner {
    fn heard(&self) -> std::sync::MutexGuard<'_, Heard> {
        self.heard.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A [`SharedState`] over a NATS JetStream key-value bucket: the replicas of
/// a pushback front end share their reports through it (a
/// [`SharedState`](crate::pushback::SharedState); see
/// [`replicas`](crate::pushback::replicas) for what is shared and why).
/// Dropping it ends its background task.
///
/// # The bucket
///
/// `herdless_replicas_NAME` ([`replicas_bucket`]: `NAME` as given when it
/// holds only letters, digits, `_` and `-` and is at most 200 bytes, else a
/// hash of it), one key per replica (its id), history 1, a TTL (`max_age`)
/// of [`STALE`], in memory: a report is worth nothing after a few seconds,
/// so there is nothing to keep on disk, and a replica that stops reporting
/// leaves the bucket on its own. Each replica's id must be its own: two
/// replicas with one id overwrite each other's reports and do not hear
/// each other. Created by the first replica that needs it
/// (again after a server restart lost it); a bucket that exists is used as
/// it is, so an operator who wants it replicated on a cluster creates it
/// first (`nats kv add herdless_replicas_NAME --history 1 --ttl 3s
/// --replicas 3 --storage memory`). `nats kv watch herdless_replicas_NAME`
/// shows the reports as they come.
///
/// Each value is the [`ReplicaReport`] as JSON:
/// `{"served_per_s":480.5,"refused":12,"arrivals_per_s":700.0,"estimate":490.0,"held":950,"down":false}`
/// (unknown fields are ignored; a value that does not parse is ignored and
/// the replica is not heard).
///
/// # What runs where
///
/// [`publish`](SharedState::publish) and [`peers`](SharedState::peers) are
/// in-memory (the tower layer calls them under its lock): `publish` leaves
/// the report for a background task, `peers` copies the reports heard. The
/// task, spawned by [`KvShared::start`] on the current tokio runtime, puts
/// each new report under this replica's key (about once a [`PERIOD`], as
/// the layer publishes) and watches every key of the bucket, keeping each
/// other replica's latest report and **when it arrived**, on this
/// process's monotonic clock. A peer's age is measured from that arrival,
/// never from a clock of another machine (a peer's wall clock, or the
/// server's). The bound this costs: a report already in the bucket when
/// the watch starts (at start, or after a reconnect) is taken as new,
/// though it may be up to [`STALE`] old; the next one replaces it a period
/// later.
///
/// # When NATS is out of reach
///
/// `peers` returns what was heard until it is [`STALE`] (three periods),
/// then nothing: the allocator runs on its own view (the share it last
/// had, which its own learning then moves). The task keeps trying to reach
/// the bucket, once a period, and the replicas find each other again once
/// it is back (the client reconnects on its own; a watch that stopped
/// delivering is noticed when this replica's own report does not come back
/// through it within two periods, and is opened again).
///
/// ```no_run
/// use std::sync::Arc;
/// use herdless::adapters::nats::{KvShared, connect_options};
/// use herdless::adapters::tower::PushbackLayer;
/// use herdless::pushback::AdaptiveAllocator;
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// // Connects in the background: the service starts even when NATS is down.
/// let client = connect_options().retry_on_initial_connect().connect("nats://10.0.0.5:4222").await?;
/// let shared = KvShared::start(client, "scanner-db", "gateway-1")?;
/// let layer = PushbackLayer::new(AdaptiveAllocator::builder().estimate(500.0 / 3.0).hold().build()?)
///     .share(Arc::new(shared));
/// # let _ = layer;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct KvShared {
    inner: Arc<Inner>,
    outgoing: watch::Sender<Option<ReplicaReport>>,
    bucket: String,
    replica: String,
    task: tokio::task::JoinHandle<()>,
}

impl KvShared {
    /// Shares reports as replica `replica` (its key; see
    /// [`check_replica_id`]) of the replicas named `name` (the bucket
    /// [`replicas_bucket`]`(name)`), over `client`. Spawns the background task
    /// on the current tokio runtime and returns at once: the bucket is
    /// opened (created if missing) by the task, which keeps trying while
    /// NATS is out of reach.
    ///
    /// # Errors
    ///
    /// [`NatsError::Config`] for an invalid replica id, or outside a tokio
    /// runtime.
    pub fn start(client: async_nats::Client, name: &str, replica: &str) -> Result<Self, NatsError> {
        check_replica_id(replica)?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            NatsError::Config("KvShared::start needs a tokio runtime to run its task on".into())
        })?;
        let bucket = replicas_bucket(name);
        let inner = Arc::new(Inner {
            heard: Mutex::new(Heard::new(replica.to_owned())),
        });
        let (outgoing, reports) = watch::channel(None);
        let task = runtime.spawn(task::run(task::Task {
            inner: Arc::clone(&inner),
            js: async_nats::jetstream::new(client),
            bucket: bucket.clone(),
            key: replica.to_owned(),
            reports,
        }));
        Ok(KvShared {
            inner,
            outgoing,
            bucket,
            replica: replica.to_owned(),
            task,
        })
    }

    /// The bucket's name.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// This replica's id (its key in the bucket).
    pub fn replica(&self) -> &str {
        &self.replica
    }
}

impl SharedState for KvShared {
    /// Leaves `report` for the background task to put (a report not yet
    /// put is replaced by a newer one).
    fn publish(&self, report: &ReplicaReport) {
        self.outgoing.send_replace(Some(*report));
    }

    /// The other replicas' latest reports heard no more than [`STALE`] ago,
    /// each with its age since it arrived here.
    fn peers(&self) -> Vec<PeerReport> {
        self.inner.heard().peers(tokio::time::Instant::now())
    }
}

impl Drop for KvShared {
    fn drop(&mut self) {
        self.task.abort();
    }
}

// The task's pace: one period between attempts to reach the bucket, two
// for this replica's own report to come back through the watch.
const _: () = assert!(STALE.as_millis() >= 2 * PERIOD.as_millis());
