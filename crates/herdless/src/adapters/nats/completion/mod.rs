//! The completion bucket: a JetStream key-value bucket holding each task's
//! claims and completion under its idempotency key (the bytes of
//! [`redelivery::claim`](crate::redelivery::claim); `claim.rs` drives it).
//!
//! # The bucket
//!
//! One per task stream, `herdless_done_STREAM` (the stream's name when it
//! holds only letters, digits, `_` and `-` and is at most 200 bytes; else a
//! hash of it), stored as a key-value bucket stores (stream
//! `KV_herdless_done_STREAM`, subjects `$KV.herdless_done_STREAM.>`, one
//! value per key). A task's records are its turns, `KEY.TURN` (`nats kv get
//! herdless_done_TASKS KEY.1` reads the first). Created by the first worker
//! that needs it, with the task stream's replicas and a TTL (`max_age`) of
//! the larger of the stream's duplicate window and [`TTL_ACK_WAITS`] ack
//! waits: a completed task comes back only when its ack was lost, within an
//! ack wait of the broker's last news of it plus the seconds a cluster
//! takes to elect a leader; the duplicate window covers a publisher's
//! retried publish. A running claim is renewed every third of an ack wait,
//! so the TTL never takes a live one. A bucket that exists is used as it
//! is once checked (`check.rs`: an unusable one is refused at start); one
//! deleted while the worker runs is created again with the same settings
//! and the request asked again. "Deleted" is what the stream's info says
//! ("stream not found"), not what a request met: a write answered by no one
//! (a new bucket's stream not yet placed on an R3 cluster, a leader being
//! elected) is asked again after a pause, quietly. The warning that a
//! bucket was created again is said once per creation (its creation time
//! tells one from the next), however many requests met it gone. Reads go to the bucket's leader (`allow_direct` off): a follower
//! that missed a write must not answer "nothing here".
//!
//! The values are one line of text (`redelivery/claim/record.rs`), e.g.
//! `done;by=…;task=TASKS:7;a=2;t=UNIX_MS`.

mod check;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_nats::header::NATS_EXPECTED_LAST_SUBJECT_SEQUENCE;
use async_nats::jetstream::context::CreateStreamError;
use async_nats::jetstream::{self, stream};

use super::NatsError;
use super::confirm::{RECORD_ACK_WAITS, pauses};
use crate::redelivery::claim::{Record, Seen};
use crate::rng::IdempotencyKey;

/// The bucket's TTL is at least this many of the consumer's ack waits.
pub const TTL_ACK_WAITS: u32 = 10;

/// Whether a failure to open the bucket is one the cluster gets over.
fn passing(e: &CreateStreamError) -> bool {
    use async_nats::jetstream::context::CreateStreamErrorKind as Kind;
    match e.kind() {
        Kind::TimedOut | Kind::JetStreamUnavailable | Kind::Response => true,
        Kind::JetStream(e) => e.code() == 503,
        _ => false,
    }
}

/// The longest stream name used as it is in the bucket's name.
const MAX_NAME_IN_BUCKET: usize = 200;

/// A task stream's completion bucket.
#[derive(Debug, Clone)]
pub(super) struct Completions {
    stream: stream::Stream,
    /// `$KV.BUCKET.`
    prefix: String,
    /// What the bucket is created with, again if it disappears.
    config: Arc<stream::Config>,
    js: jetstream::Context,
    /// The creation time (ns) of the bucket's stream last seen created:
    /// a creation is warned about once.
    created: Arc<std::sync::Mutex<i128>>,
}

/// How many times a request is asked while the bucket does not answer.
const UNANSWERED_TRIES: u32 = 8;

/// Whether the bucket's stream created at `now` (ns) is news after the one
/// last seen, `known` (then remembered): a recreation is warned about once,
/// however many requests of the worker met the bucket gone.
fn news(known: &std::sync::Mutex<i128>, now: i128) -> bool {
    let mut known = known
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let new = *known != now;
    *known = now;
    new
}

/// Whether a stream info lookup says the stream does not exist.
fn not_found(e: &async_nats::jetstream::context::GetStreamError) -> bool {
    use async_nats::jetstream::ErrorCode;
    use async_nats::jetstream::context::GetStreamErrorKind as Kind;
    matches!(e.kind(), Kind::JetStream(j) if j.error_code() == ErrorCode::STREAM_NOT_FOUND)
}

/// Why one request to the bucket failed.
enum Failed {
    /// The bucket's stream does not exist (deleted while the worker runs).
    Missing,
    Other(NatsError),
}

/// The bucket's name for the task stream `stream`.
pub(super) fn bucket_name(stream: &str) -> String {
    let plain = stream
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain && stream.len() <= MAX_NAME_IN_BUCKET {
        format!("herdless_done_{stream}")
    } else {
        let hash = crate::redelivery::Delivery::identity_of(&[stream.as_bytes()]);
        format!("herdless_done_{hash:032x}")
    }
}

impl Completions {
    /// The bucket of the task stream `tasks`, created if missing. A failure
    /// the cluster gets over (no answer in time, JetStream unavailable or
    /// answering 503 while it elects a leader or is loaded) is asked again
    /// for up to [`RECORD_ACK_WAITS`] ack waits: a worker that started
    /// without its bucket would run every task without a claim. Any other
    /// (permissions, limits, a stream of that name that is not a bucket) is
    /// returned at once.
    pub(super) async fn open(
        js: &jetstream::Context,
        tasks: &stream::Config,
        ack_wait: Duration,
    ) -> Result<Completions, NatsError> {
        let deadline = tokio::time::Instant::now() + ack_wait * RECORD_ACK_WAITS;
        let mut pauses = pauses();
        loop {
            match Self::open_once(js, tasks, ack_wait).await {
                Ok(Ok(c)) => return Ok(c),
                Ok(Err(wrong)) => return Err(NatsError::Config(wrong)),
                Err(e) if passing(&e) && tokio::time::Instant::now() < deadline => {
                    tracing::debug!(target: "herdless", error = %e, "the completion bucket: asking again");
                    tokio::time::sleep(pauses.next_delay()).await;
                }
                Err(e) => return Err(NatsError::broker("creating the completion bucket", e)),
            }
        }
    }

    async fn open_once(
        js: &jetstream::Context,
        tasks: &stream::Config,
        ack_wait: Duration,
    ) -> Result<Result<Completions, String>, CreateStreamError> {
        let bucket = bucket_name(&tasks.name);
        let name = format!("KV_{bucket}");
        let prefix = format!("$KV.{bucket}.");
        let ttl = tasks.duplicate_window.max(ack_wait * TTL_ACK_WAITS);
        let config = Arc::new(stream::Config {
            name: name.clone(),
            subjects: vec![format!("{prefix}>")],
            max_messages_per_subject: 1,
            max_age: ttl,
            // The duplicate window may not pass max_age.
            duplicate_window: ttl.min(Duration::from_secs(120)),
            discard: stream::DiscardPolicy::New,
            num_replicas: tasks.num_replicas.max(1),
            allow_rollup: true,
            deny_delete: true,
            allow_direct: false,
            ..Default::default()
        });
        let js = js.clone();
        if let Ok(stream) = js.get_stream(&name).await {
            let wanted = check::Wanted {
                bucket: &bucket,
                ttl,
                replicas: tasks.num_replicas.max(1),
            };
            if let Some(wrong) = check::unusable(&stream.cached_info().config, &wanted) {
                return Ok(Err(wrong));
            }
            let created = stream.cached_info().created.unix_timestamp_nanos();
            return Ok(Ok(Completions {
                stream,
                prefix,
                config,
                js,
                created: Arc::new(std::sync::Mutex::new(created)),
            }));
        }
        let stream = js.get_or_create_stream((*config).clone()).await?;
        let created = stream.cached_info().created.unix_timestamp_nanos();
        Ok(Ok(Completions {
            stream,
            prefix,
            config,
            js,
            created: Arc::new(std::sync::Mutex::new(created)),
        }))
    }

    /// Runs `request`; when it finds no bucket, asks the stream's info:
    /// a bucket confirmed deleted is created again (and said so, once per
    /// creation), one that exists is only slow to answer (being created or
    /// electing a leader); either way the request is asked again, up to
    /// [`UNANSWERED_TRIES`] times.
    async fn again_if_missing<T, Fut>(
        &self,
        what: &'static str,
        request: impl Fn() -> Fut,
    ) -> Result<T, NatsError>
    where
        Fut: Future<Output = Result<T, Failed>>,
    {
        let mut pauses = pauses();
        for _ in 0..UNANSWERED_TRIES {
            match request().await {
                Ok(v) => return Ok(v),
                Err(Failed::Other(e)) => return Err(e),
                Err(Failed::Missing) => {}
            }
            match self.js.get_stream(&self.config.name).await {
                Ok(_) => {
                    tracing::debug!(target: "herdless", stream = %self.config.name,
                        "the completion bucket did not answer: asking again");
                    tokio::time::sleep(pauses.next_delay()).await;
                }
                Err(e) if not_found(&e) => {
                    let stream = self
                        .js
                        .get_or_create_stream((*self.config).clone())
                        .await
                        .map_err(|e| {
                            NatsError::broker("creating the completion bucket again", e)
                        })?;
                    let created = stream.cached_info().created.unix_timestamp_nanos();
                    if news(&self.created, created) {
                        tracing::warn!(
                            target: "herdless",
                            stream = %self.config.name,
                            "the completion bucket is gone: creating it again (claims and records it held are lost)"
                        );
                    }
                }
                Err(e) => return Err(NatsError::broker(what, e)),
            }
        }
        Err(NatsError::broker(
            what,
            "the completion bucket does not answer",
        ))
    }

    /// The subject of `key`'s turn `turn`, or of all its turns (`*`).
    fn subject(&self, key: IdempotencyKey, turn: &dyn std::fmt::Display) -> String {
        format!("{}{key}.{turn}", self.prefix)
    }

    /// The latest record written for `key`, of any turn (read from the
    /// bucket's leader), or `None`.
    pub(super) async fn latest(&self, key: IdempotencyKey) -> Result<Option<Seen>, NatsError> {
        self.read(&self.subject(key, &"*")).await
    }

    /// The record of `key`'s turn `turn`, or `None`.
    pub(super) async fn turn(
        &self,
        key: IdempotencyKey,
        turn: u32,
    ) -> Result<Option<Seen>, NatsError> {
        self.read(&self.subject(key, &turn)).await
    }

    async fn read(&self, subject: &str) -> Result<Option<Seen>, NatsError> {
        use async_nats::jetstream::ErrorCode;
        use async_nats::jetstream::stream::LastRawMessageErrorKind as Kind;
        let what = "reading the task's claim";
        self.again_if_missing(what, || async {
            match self.stream.get_last_raw_message_by_subject(subject).await {
                Ok(m) => Ok(m
                    .subject
                    .rsplit('.')
                    .next()
                    .and_then(|t| t.parse().ok())
                    .map(|turn| Seen {
                        turn,
                        revision: m.sequence,
                        record: Record::parse(&m.payload),
                    })),
                Err(e) if e.kind() == Kind::NoMessageFound => Ok(None),
                Err(e) => match e.kind() {
                    Kind::JetStream(j) if j.error_code() == ErrorCode::STREAM_NOT_FOUND => {
                        Err(Failed::Missing)
                    }
                    _ => Err(Failed::Other(NatsError::broker(what, e))),
                },
            }
        })
        .await
    }

    /// Creates `key`'s turn `turn` with `value`: `Ok(true)` once the
    /// bucket's stream confirms it, `Ok(false)` when the turn exists. The
    /// condition (`Nats-Expected-Last-Subject-Sequence: 0`) is checked as
    /// the cluster applies the write, so of two creates of one turn exactly
    /// one is stored, whichever server each reached.
    pub(super) async fn create(
        &self,
        js: &jetstream::Context,
        key: IdempotencyKey,
        turn: u32,
        value: String,
    ) -> Result<bool, NatsError> {
        use async_nats::jetstream::context::PublishErrorKind as Kind;
        let what = "taking the task's claim";
        let subject = self.subject(key, &turn);
        self.again_if_missing(what, || async {
            let mut headers = async_nats::HeaderMap::new();
            headers.insert(NATS_EXPECTED_LAST_SUBJECT_SEQUENCE, "0");
            let sent = js
                .publish_with_headers(subject.clone(), headers, value.clone().into())
                .await
                .map_err(|e| Failed::Other(NatsError::broker(what, e)))?;
            match sent.await {
                Ok(_) => Ok(true),
                Err(e) if e.kind() == Kind::WrongLastSequence => Ok(false),
                Err(e) if e.kind() == Kind::StreamNotFound => Err(Failed::Missing),
                Err(e) => Err(Failed::Other(NatsError::broker(what, e))),
            }
        })
        .await
    }

    /// Writes `value` over `key`'s turn `turn` (its holder's renewal, its
    /// success, its release), once the bucket's stream confirms it. Only the
    /// turn's holder writes it after its create: no condition is needed
    /// (and an update at a revision does not hold on a 2.9 cluster, see
    /// `redelivery/claim/mod.rs`).
    pub(super) async fn write(
        &self,
        js: &jetstream::Context,
        key: IdempotencyKey,
        turn: u32,
        value: String,
    ) -> Result<(), NatsError> {
        use async_nats::jetstream::context::PublishErrorKind as Kind;
        let what = "writing the task's claim";
        let subject = self.subject(key, &turn);
        self.again_if_missing(what, || async {
            let sent = js
                .publish(subject.clone(), value.clone().into())
                .await
                .map_err(|e| Failed::Other(NatsError::broker(what, e)))?;
            match sent.await {
                Ok(_) => Ok(()),
                Err(e) if e.kind() == Kind::StreamNotFound => Err(Failed::Missing),
                Err(e) => Err(Failed::Other(NatsError::broker(what, e))),
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::{bucket_name, news};

    #[test]
    fn a_recreation_is_news_once() {
        let known = std::sync::Mutex::new(10);
        // Requests that met the bucket gone while another worker (or an
        // earlier request) had already created it again: the same stream.
        assert!(!news(&known, 10));
        assert!(news(&known, 20));
        assert!(!news(&known, 20));
        assert!(!news(&known, 20));
        assert!(news(&known, 30));
    }

    #[test]
    fn a_bucket_name_is_the_streams_or_a_hash() {
        assert_eq!(bucket_name("TASKS"), "herdless_done_TASKS");
        assert_eq!(bucket_name("scans-2_b"), "herdless_done_scans-2_b");
        for odd in ["caf\u{e9}", "a:b", &"x".repeat(201)] {
            let name = bucket_name(odd);
            assert_eq!(name.len(), "herdless_done_".len() + 32, "{name}");
            assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        }
        assert_ne!(bucket_name("a:b"), bucket_name("a;b"));
    }
}
