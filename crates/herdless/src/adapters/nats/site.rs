//! [`Site`]: what a run knows about where it works: the stream (its name
//! and creation time, for task identities), the consumer, and the largest
//! dead letter the server and the dead-letter stream take.

use async_nats::jetstream::{self, consumer};

use super::NatsError;
use super::completion::Completions;
use super::confirm::{RECORD_ACK_WAITS, pauses};
use crate::redelivery::Delivery;

/// The stream, the consumer and the dead-letter limit of one run.
#[derive(Debug, Clone)]
pub(super) struct Site {
    pub(super) stream: String,
    pub(super) consumer: String,
    /// The stream's creation time, nanoseconds since the Unix epoch.
    pub(super) created_ns: i128,
    /// The dead-letter stream's `max_msg_size`, when it sets one.
    pub(super) letter_max: Option<usize>,
    /// The consumer's subject filter, `>` when it has none.
    pub(super) filter: String,
    /// The consumer's ack wait.
    pub(super) ack_wait: std::time::Duration,
    /// The stream's completion bucket, when the worker records completions
    /// and the bucket could be opened or created.
    pub(super) completions: Option<Completions>,
}

/// The `max_msg_size` of the stream that stores `subject`, if it sets one.
/// A cluster that cannot answer (no answer in time, JetStream unavailable
/// while it elects a leader) is asked again for up to `within`: only its
/// answer that no stream stores the subject is a configuration error (a
/// worker started just after a leader change took the one for the other,
/// and exited).
async fn letter_limit(
    js: &jetstream::Context,
    subject: &str,
    within: std::time::Duration,
) -> Result<Option<usize>, NatsError> {
    use async_nats::jetstream::context::GetStreamByNameErrorKind as Kind;
    let deadline = tokio::time::Instant::now() + within;
    let mut pauses = pauses();
    loop {
        let found = match js.stream_by_subject(subject).await {
            Ok(name) => js
                .get_stream(name.as_str())
                .await
                .map(|s| s.cached_info().config.max_message_size)
                .map_err(|e| NatsError::broker("reading the dead-letter stream", e)),
            Err(e) if matches!(e.kind(), Kind::NotFound | Kind::InvalidSubject) => {
                return Err(NatsError::Config(format!(
                    "no stream stores the dead-letter subject {subject:?}: a dead letter \
                     published there would be lost (add it to a stream's subjects)"
                )));
            }
            Err(e) => Err(NatsError::broker("finding the dead-letter stream", e)),
        };
        match found {
            Ok(max) => return Ok(usize::try_from(max).ok().filter(|n| *n > 0)),
            Err(e) if tokio::time::Instant::now() >= deadline => return Err(e),
            Err(e) => {
                tracing::debug!(target: "herdless", error = %e, "the dead-letter stream: asking again");
                tokio::time::sleep(pauses.next_delay()).await;
            }
        }
    }
}

/// The task stream's own handle. Asked again for up to `within` when the
/// cluster does not answer (a leader being elected, a server just thawed
/// or restarted): a worker that started while the cluster had no quorum
/// and found its consumer must not exit on the next lookup's timeout.
async fn task_stream(
    js: &jetstream::Context,
    name: &str,
    within: std::time::Duration,
) -> Result<jetstream::stream::Stream, NatsError> {
    use async_nats::jetstream::context::GetStreamErrorKind as Kind;
    let deadline = tokio::time::Instant::now() + within;
    let mut pauses = pauses();
    loop {
        match js.get_stream(name).await {
            Ok(stream) => return Ok(stream),
            Err(e) if matches!(e.kind(), Kind::InvalidStreamName) => {
                return Err(NatsError::broker("reading the stream", e));
            }
            Err(e) if tokio::time::Instant::now() >= deadline => {
                return Err(NatsError::broker("reading the stream", e));
            }
            Err(e) => {
                tracing::debug!(target: "herdless", error = %e, "the task stream: asking again");
                tokio::time::sleep(pauses.next_delay()).await;
            }
        }
    }
}

impl Site {
    /// Reads the stream behind `info` and the stream storing `dead_letter`;
    /// with `record`, the stream's completion bucket: `open`, the one a
    /// previous read opened, else opened (or created) now. An open bucket is
    /// kept across reads: a read during a leader change (after a reconnect,
    /// a failed pull) that could not reach it must not leave the worker
    /// running without its claims.
    pub(super) async fn read(
        js: &jetstream::Context,
        info: &consumer::Info,
        dead_letter: Option<&str>,
        record: bool,
        open: Option<Completions>,
    ) -> Result<Site, NatsError> {
        let c = &info.config;
        let stream = task_stream(js, &info.stream_name, c.ack_wait * RECORD_ACK_WAITS).await?;
        let letter_max = match dead_letter {
            Some(subject) => letter_limit(js, subject, c.ack_wait * RECORD_ACK_WAITS).await?,
            None => None,
        };
        let filter = if c.filter_subject.is_empty() {
            ">".to_owned()
        } else {
            c.filter_subject.clone()
        };
        let completions = if record && open.is_some() {
            open
        } else if record {
            let tasks = &stream.cached_info().config;
            match Completions::open(js, tasks, c.ack_wait).await {
                Ok(c) => Some(c),
                // A bucket that exists and cannot be used: said at once,
                // never run around.
                Err(e @ NatsError::Config(_)) => return Err(e),
                Err(e) => {
                    tracing::warn!(
                        target: "herdless",
                        error = %e,
                        "no completion bucket: tasks run without a claim or a completion \
                         record (a copy the broker delivers twice may run twice) until a later \
                         read of the stream opens it"
                    );
                    None
                }
            }
        } else {
            None
        };
        Ok(Site {
            ack_wait: c.ack_wait,
            completions,
            stream: info.stream_name.clone(),
            consumer: info.name.clone(),
            created_ns: stream.cached_info().created.unix_timestamp_nanos(),
            letter_max,
            filter,
        })
    }

    /// The identity of the stream's message `sequence`: the same on every
    /// delivery, different in another stream, in a stream of the same name
    /// created at another time (on another server, or after a delete), and
    /// for another sequence. See [`Delivery::identity_of`].
    pub(super) fn identity(&self, sequence: u64) -> u128 {
        Delivery::identity_of(&[
            self.stream.as_bytes(),
            self.created_ns.to_string().as_bytes(),
            sequence.to_string().as_bytes(),
        ])
    }

    /// The largest dead letter, headers and payload together: the server's
    /// `max_payload` (read from its latest INFO: a reconnect may reach
    /// another server) and the dead-letter stream's `max_msg_size`.
    pub(super) fn letter_limit(&self, js: &jetstream::Context) -> usize {
        let server = js.client().server_info().max_payload;
        // A server that announces none (0) gets the protocol's default.
        let server = if server == 0 { 1 << 20 } else { server };
        self.letter_max.map_or(server, |m| m.min(server))
    }

    /// The subject that settles the stream's message `sequence` for this
    /// consumer, as the server reads it: `$JS.ACK.STREAM.CONSUMER.` then the
    /// delivery count, the stream sequence, the consumer sequence, the
    /// timestamp and the pending count. For an explicit-ack consumer the
    /// server settles by the stream sequence alone (it takes the rest from
    /// its own record of the delivery), so the others are written as 1, 0,
    /// 0, 0.
    pub(super) fn ack_subject(&self, sequence: u64) -> String {
        format!(
            "$JS.ACK.{}.{}.1.{sequence}.0.0.0",
            self.stream, self.consumer
        )
    }
}
