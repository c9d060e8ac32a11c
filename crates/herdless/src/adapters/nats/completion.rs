//! The completion record: a JetStream key-value bucket in which the worker
//! records each task's success under its idempotency key, before it acks.
//!
//! # Why
//!
//! A success is acknowledged once it is confirmed, but the confirmation can
//! be lost: the ack reached a stream leader that died or froze before it
//! replicated it, or the worker's server was cut off. The broker then
//! redelivers the task after its ack wait, and without more knowledge a
//! worker would run it again. The record is that knowledge, stored in the
//! cluster with the stream's own replication: a delivery whose key is
//! recorded is acknowledged without running
//! ([`Outcome::AlreadyCompleted`](super::Outcome::AlreadyCompleted)).
//!
//! # The bucket
//!
//! One per task stream, `herdless_done_STREAM` (the stream's name when it
//! holds only letters, digits, `_` and `-` and is at most 200 bytes; else a
//! hash of it), stored as a key-value bucket stores (stream
//! `KV_herdless_done_STREAM`, subjects `$KV.herdless_done_STREAM.>`, one
//! value per key): `nats kv get herdless_done_TASKS KEY` reads it. Created
//! by the first worker that needs it, with the task stream's replicas and a
//! TTL (`max_age`) of the larger of the stream's duplicate window and
//! [`TTL_ACK_WAITS`] ack waits: a completed task comes back only when its
//! ack was lost, within an ack wait of the broker's last news of it plus
//! the seconds a cluster takes to elect a leader; the duplicate window
//! covers a publisher's retried publish. A bucket that exists is used as it
//! is. Reads go to the bucket's leader (`allow_direct` off): a follower
//! that missed the write must not answer "not completed".
//!
//! The value is `STREAM:SEQUENCE;a=ATTEMPT;t=UNIX_MS`, for people reading
//! the bucket; only the key's presence counts.

use std::time::Duration;

use async_nats::jetstream::{self, stream};

use async_nats::jetstream::AckKind;

use super::confirm::{RECORD_ACK_WAITS, again};
use super::handle::{Delivered, Outcome, settle, with_progress};
use super::{NatsError, Worker};
use crate::redelivery::unix_now;
use crate::rng::IdempotencyKey;

/// The bucket's TTL is at least this many of the consumer's ack waits.
pub const TTL_ACK_WAITS: u32 = 10;

/// The longest stream name used as it is in the bucket's name.
const MAX_NAME_IN_BUCKET: usize = 200;

/// A task stream's completion bucket.
#[derive(Debug, Clone)]
pub(super) struct Completions {
    stream: stream::Stream,
    /// `$KV.BUCKET.`
    prefix: String,
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
    /// The bucket of the task stream `tasks`, created if missing.
    pub(super) async fn open(
        js: &jetstream::Context,
        tasks: &stream::Config,
        ack_wait: Duration,
    ) -> Result<Completions, NatsError> {
        let bucket = bucket_name(&tasks.name);
        let name = format!("KV_{bucket}");
        let prefix = format!("$KV.{bucket}.");
        if let Ok(stream) = js.get_stream(&name).await {
            return Ok(Completions { stream, prefix });
        }
        let ttl = tasks.duplicate_window.max(ack_wait * TTL_ACK_WAITS);
        let config = stream::Config {
            name,
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
        };
        let stream = js
            .get_or_create_stream(config)
            .await
            .map_err(|e| NatsError::broker("creating the completion bucket", e))?;
        Ok(Completions { stream, prefix })
    }

    /// Whether `key` is recorded as completed (read from the bucket's leader).
    pub(super) async fn completed(&self, key: IdempotencyKey) -> Result<bool, NatsError> {
        use async_nats::jetstream::stream::LastRawMessageErrorKind as Kind;
        let subject = format!("{}{key}", self.prefix);
        match self.stream.get_last_raw_message_by_subject(&subject).await {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == Kind::NoMessageFound => Ok(false),
            Err(e) => Err(NatsError::broker("reading the completion record", e)),
        }
    }

    /// Records `key` as completed, once the bucket's stream confirms it.
    pub(super) async fn record(
        &self,
        js: &jetstream::Context,
        key: IdempotencyKey,
        value: String,
    ) -> Result<(), NatsError> {
        let subject = format!("{}{key}", self.prefix);
        js.publish(subject, value.into())
            .await
            .map_err(|e| NatsError::broker("writing the completion record", e))?
            .await
            .map_err(|e| NatsError::broker("writing the completion record", e))?;
        Ok(())
    }
}

impl<C, N> Worker<C, N> {
    /// Before running a delivery: `Some(AlreadyCompleted)` (acked without
    /// running) when its key is recorded as completed. A record that cannot
    /// be read (the bucket's leader is changing) is asked again, the
    /// delivery kept with in-progress acks every `progress`, for up to
    /// [`RECORD_ACK_WAITS`] ack waits: a NAK would spend one of the task's
    /// deliveries, which count as attempts. Past that the task runs, with a
    /// warning.
    pub(super) async fn completed_before(
        &self,
        d: &Delivered,
        progress: Option<Duration>,
    ) -> Result<Option<Outcome>, NatsError> {
        let Some(record) = &d.site.completions else {
            return Ok(None);
        };
        let found = std::sync::atomic::AtomicBool::new(false);
        let within = d.site.ack_wait * RECORD_ACK_WAITS;
        let read = again(within, || async {
            let yes = record.completed(d.resumed.key).await?;
            found.store(yes, std::sync::atomic::Ordering::Relaxed);
            Ok(())
        });
        match with_progress(read, &d.message, progress).await {
            Ok(()) if found.into_inner() => {
                settle(d, AckKind::Ack).await?;
                Ok(Some(Outcome::AlreadyCompleted))
            }
            Ok(()) => Ok(None),
            Err(e) => {
                tracing::warn!(
                    target: "herdless",
                    task_id = %d.task_id,
                    error = %e,
                    "completion record unreadable: the task runs without knowing whether it \
                     completed before"
                );
                Ok(None)
            }
        }
    }

    /// After a success, before its ack: records the task's key as completed,
    /// asking again for up to [`RECORD_ACK_WAITS`] ack waits (see
    /// `confirm.rs`). A record that cannot be stored is a warning: the ack
    /// follows all the same.
    pub(super) async fn record_completion(
        &self,
        js: &jetstream::Context,
        d: &Delivered,
        attempt: u32,
    ) {
        let Some(record) = &d.site.completions else {
            return;
        };
        let value = format!("{};a={attempt};t={}", d.task_id, unix_now().as_millis());
        let within = d.site.ack_wait * RECORD_ACK_WAITS;
        let stored = again(within, || record.record(js, d.resumed.key, value.clone())).await;
        if let Err(e) = stored {
            tracing::warn!(
                target: "herdless",
                task_id = %d.task_id,
                error = %e,
                "completion not recorded: if its ack is lost too, the task runs again"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::bucket_name;

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
