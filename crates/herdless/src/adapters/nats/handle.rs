//! One delivery: the chain resumed, the gate, the attempt (with in-progress
//! acks), and the engine's decision turned into the broker's verb.

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::{self, AckKind};
use bytes::Bytes;

use super::claim::{Fence, before_running, release, run_attempt};
use super::confirm::RECORD_ACK_WAITS;
use super::dead_letter::{self, Sent};
use super::{NatsError, Site, Worker};
use crate::classify::Classify;
use crate::engine::{Decision, Gate};
use crate::events::{GiveUp, Notify};
use crate::redelivery::{Delivery, Resumed, STATE_HEADER, TaskState, unix_now};
use crate::rng::{IdempotencyKey, Rng};

/// The longest `Herdless-Error` header, in bytes.
const MAX_ERROR_LEN: usize = 512;

/// One attempt's input: the message and where it stands in its chain (see
/// [`Worker::run`]).
///
/// ```
/// fn describe(task: &herdless::adapters::nats::Task) -> String {
///     format!("{} attempt {} key {}", task.task_id, task.attempt, task.key)
/// }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Task {
    /// The message's payload.
    pub payload: Bytes,
    /// The message's headers.
    pub headers: Option<HeaderMap>,
    /// The subject the message was published to.
    pub subject: String,
    /// This attempt's number (1-based; continues across workers and crashes).
    pub attempt: u32,
    /// The task's idempotency key: the same on every attempt, on every worker.
    pub key: IdempotencyKey,
    /// The task id of its events: `STREAM:SEQUENCE`.
    pub task_id: String,
    /// The time this attempt may take: the policy's
    /// [`attempt_timeout`](crate::Policy::attempt_timeout), or what is left
    /// of the chain's `max_elapsed` (counted from its first delivery, on the
    /// wall clock), whichever is smaller
    /// ([`Engine::remaining`](crate::engine::Engine::remaining)). The worker
    /// does not cut an attempt (it cannot end what the attempt started):
    /// give this to the attempt's own timeout.
    pub remaining: Duration,
    /// When the attempt must have stopped unless its claim is renewed
    /// (none without a claim): hand [`Fence::left`] to whatever the
    /// attempt starts that could outlive this worker, so that it stops by
    /// itself if the worker freezes or dies.
    pub fence: Fence,
}

/// What became of one delivery (counted in a
/// [`Summary`](super::Summary)).
///
/// ```
/// use herdless::adapters::nats::Outcome;
/// let o = Outcome::Acked { attempt: 2 };
/// assert!(matches!(o, Outcome::Acked { attempt: 2 }));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// The attempt succeeded; the message is acked.
    Acked {
        /// The attempt that succeeded.
        attempt: u32,
    },
    /// The attempt failed; the broker redelivers after `delay`.
    Retrying {
        /// The attempt that failed.
        attempt: u32,
        /// The engine's delay.
        delay: Duration,
    },
    /// The breaker held the retry back; the broker redelivers after `delay`.
    Deferred {
        /// The probe wait.
        delay: Duration,
    },
    /// The task's key is recorded as completed (see
    /// [`Worker::completion_record`](super::Worker::completion_record)): a
    /// success whose acknowledgement was lost came back; it is acked without
    /// running.
    AlreadyCompleted,
    /// Another delivery of the same task holds its claim (a copy the
    /// broker handed out while the first still ran), or held it and handed
    /// the task back: this copy is left to it, neither run nor
    /// acknowledged.
    HeldElsewhere,
    /// The attempt's claim could not be renewed within its lease (the
    /// completion bucket out of reach): the attempt was stopped at the
    /// lease's fence, or not started, before another delivery could take
    /// the task over, and the task is left to the broker's ack wait.
    LeaseLost,
    /// The chain gave up; the task is in the dead-letter subject (or
    /// terminated, without one).
    DeadLettered {
        /// Why.
        reason: GiveUp,
        /// Attempts made.
        attempts: u32,
    },
    /// The worker stopped mid-attempt; the task went back to the broker
    /// at once.
    HandedBack,
    /// The dead letter could not be stored: the task is left to the
    /// consumer's ack wait.
    Unsettled,
    /// A message the NATS client could not decode (see
    /// [`decode_message`](super::decode_message)), found by the worker's
    /// sweep and settled without a delivery: dead-lettered with reason
    /// `undecodable` (or terminated, without a dead-letter subject).
    Undecodable {
        /// Its stream sequence.
        sequence: u64,
        /// What the client could not decode.
        why: super::Undecodable,
    },
}

/// Raised when running attempts are to be abandoned and handed back.
#[derive(Debug, Clone)]
pub(super) struct Abort(pub(super) tokio::sync::watch::Receiver<bool>);

impl Abort {
    pub(super) fn raised(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once raised (never, if the sender is gone unraised).
    pub(super) async fn wait(&self) {
        let mut rx = self.0.clone();
        if rx.wait_for(|raised| *raised).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// One delivery's parts, read once.
pub(super) struct Delivered {
    pub(super) message: jetstream::Message,
    pub(super) sequence: u64,
    /// The broker's delivery count of this copy (1: its first delivery).
    pub(super) delivered: u64,
    /// The stored message's identity ([`Site::identity`]).
    pub(super) identity: u128,
    /// Where it was delivered.
    pub(super) site: std::sync::Arc<Site>,
    pub(super) resumed: Resumed,
    pub(super) task_id: String,
    /// Messages the server still had to deliver to the consumer when it sent
    /// this one.
    pub(super) pending: u64,
}

impl<C, N: Notify> Worker<C, N> {
    /// Reads a message's chain: its broker facts and state header.
    pub(super) fn resume(
        &self,
        site: &std::sync::Arc<Site>,
        message: jetstream::Message,
    ) -> Result<Delivered, NatsError> {
        let info = message
            .info()
            .map_err(|e| NatsError::broker("reading a message's metadata", e))?;
        let stream = info.stream.to_owned();
        let sequence = info.stream_sequence;
        let pending = info.pending;
        let stored_ns = u64::try_from(info.published.unix_timestamp_nanos()).unwrap_or(0);
        let identity = site.identity(sequence);
        let delivery = Delivery {
            delivered: u32::try_from(info.delivered).unwrap_or(u32::MAX),
            stored_at: Duration::from_nanos(stored_ns),
            identity,
        };
        let header = message
            .headers
            .as_ref()
            .and_then(|h| h.get(STATE_HEADER))
            .map(|v| v.as_str());
        let resumed = Resumed::new(&self.policy, header, &delivery, self.seed);
        Ok(Delivered {
            task_id: format!("{stream}:{sequence}"),
            delivered: u64::try_from(info.delivered).unwrap_or(u64::MAX),
            message,
            sequence,
            identity,
            site: std::sync::Arc::clone(site),
            resumed,
            pending,
        })
    }

    /// Runs one delivery to its verb. `op` runs the attempt; `progress` is
    /// the in-progress ack interval; `take` false hands the task straight
    /// back (it arrived after the worker began to stop).
    pub(super) async fn handle<F, Fut, E>(
        &self,
        js: &jetstream::Context,
        mut d: Delivered,
        op: &F,
        progress: Option<Duration>,
        abort: &Abort,
        take: bool,
    ) -> Result<Outcome, NatsError>
    where
        C: Classify<E>,
        F: Fn(Task) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: Display,
    {
        let task_id = d.task_id.clone();
        let cx = self.context(&task_id);
        if abort.raised() || !take {
            settle(&d, AckKind::Nak(None)).await?;
            return Ok(Outcome::HandedBack);
        }
        let mut holder = match before_running(js, &d, progress, abort).await? {
            Ok(holder) => holder,
            Err(outcome) => return Ok(outcome),
        };
        // Handing the task back: its turn is released first, so that the
        // redelivery finds it free instead of waiting out the lease (asked
        // again as long as a success's record: the broker hands out no copy
        // meanwhile, see `Holder::finish`).
        let back = d.site.ack_wait * RECORD_ACK_WAITS;
        if let Some(e) = d.resumed.refused {
            d.resumed.engine.state_invalid(&cx, e.reason());
        }
        match d
            .resumed
            .engine
            .redelivered(&cx, unix_now(), &mut Rng::fresh())
        {
            Gate::Go => {}
            Gate::Wait(delay) => {
                release(js, holder.as_deref(), &d, back, progress).await;
                settle(&d, AckKind::Nak(Some(delay))).await?;
                return Ok(Outcome::Deferred { delay });
            }
            Gate::GiveUp(reason) => {
                release(js, holder.as_deref(), &d, back, progress).await;
                return self.give_up(js, &d, reason, None).await;
            }
        }
        if let Some(h) = holder.as_mut()
            && !h.fresh(js).await
        {
            return Ok(Outcome::LeaseLost);
        }
        let remaining = d.resumed.engine.remaining(&cx, unix_now());
        let attempt = d.resumed.engine.begin();
        let task = Task {
            payload: d.message.payload.clone(),
            headers: d.message.headers.clone(),
            subject: d.message.subject.to_string(),
            attempt,
            key: d.resumed.key,
            task_id: task_id.clone(),
            remaining,
            fence: holder.as_ref().map_or_else(Fence::none, |h| h.fence()),
        };
        let result = match run_attempt(js, &d, &mut holder, op(task), progress, abort).await? {
            Ok(result) => result,
            Err(stopped) => {
                // The attempt's future was dropped (its delivery counts).
                d.resumed.engine.cancel(&cx);
                return Ok(stopped);
            }
        };
        if result.is_err() && holder.as_ref().is_some_and(|h| h.lapsed()) {
            // A failure seen only past the fence (the worker was stopped
            // meanwhile; most often the supervisor's kill at the fence): a
            // takeover may hold the task, so no retry of this worker's own.
            d.resumed.engine.cancel(&cx);
            tracing::warn!(
                target: "herdless",
                task_id = %d.task_id,
                "claim lost mid-attempt (no renewal confirmed within its lease): the attempt \
                 ended without success after it, and the task is left to the broker"
            );
            return Ok(Outcome::LeaseLost);
        }
        let now = unix_now();
        let error = match result {
            Ok(()) => {
                d.resumed.engine.succeeded(&cx, now);
                let kept = (&d.message, progress);
                if let Some(h) = &holder
                    && !h.succeeded(js, attempt, back, kept).await
                {
                    return Ok(Outcome::LeaseLost);
                }
                settle(&d, AckKind::Ack).await?;
                return Ok(Outcome::Acked { attempt });
            }
            Err(e) => e,
        };
        release(js, holder.as_deref(), &d, back, progress).await;
        let (classification, cause) = self.classifier.classify_cause(&error);
        let mut rng = d.resumed.rng();
        match d
            .resumed
            .engine
            .failed(&cx, now, classification, cause, &mut rng)
        {
            Decision::Retry { delay, .. } => {
                settle(&d, AckKind::Nak(Some(delay))).await?;
                Ok(Outcome::Retrying { attempt, delay })
            }
            Decision::GiveUp(reason) => {
                let error = Some(error.to_string());
                self.give_up(js, &d, reason, error).await
            }
        }
    }

    /// Dead-letters (or terminates) a task the engine gave up on.
    async fn give_up(
        &self,
        js: &jetstream::Context,
        d: &Delivered,
        reason: GiveUp,
        error: Option<String>,
    ) -> Result<Outcome, NatsError> {
        let attempts = d.resumed.engine.attempts();
        let site = &*d.site;
        let Some(subject) = &self.dead_letter else {
            settle(d, AckKind::Term).await?;
            return Ok(Outcome::DeadLettered { reason, attempts });
        };
        let elapsed = d.resumed.engine.elapsed(unix_now());
        let mut own = vec![
            (STATE_HEADER, d.resumed.state().encode()),
            ("Herdless-Reason", reason.as_str().to_owned()),
            ("Herdless-Attempts", attempts.to_string()),
            ("Herdless-Elapsed-Ms", elapsed.as_millis().to_string()),
        ];
        own.extend(where_from(site, d.sequence, d.identity, &d.message.subject));
        if let Some(e) = error {
            own.push(("Herdless-Error", one_line(&e)));
        }
        let task = d.message.headers.clone().unwrap_or_default();
        let payload = d.message.payload.clone();
        let letter = (task, own.as_slice(), payload);
        let within = site.ack_wait * RECORD_ACK_WAITS;
        match dead_letter::publish_again(js, site, subject, letter, &d.message, within).await {
            Sent::Stored => {}
            Sent::TooLarge(limit) => {
                tracing::error!(
                    target: "herdless",
                    task_id = %d.task_id,
                    limit,
                    "no dead letter fits the server's limit: the task is terminated (+TERM) \
                     without one"
                );
                settle(d, AckKind::Term).await?;
                return Ok(Outcome::DeadLettered { reason, attempts });
            }
            Sent::Failed(e) => {
                tracing::error!(
                    target: "herdless",
                    task_id = %d.task_id,
                    subject = %subject,
                    error = %e,
                    "dead letter not stored: the task is left to the consumer's ack wait"
                );
                return Ok(Outcome::Unsettled);
            }
        }
        settle(d, AckKind::Ack).await?;
        Ok(Outcome::DeadLettered { reason, attempts })
    }
}

/// The headers saying where a dead letter's task was: its stream, sequence
/// and subject, and the dead letter's `Nats-Msg-Id` (`herdless-dl-` and the
/// stored message's identity as a UUID), by which the dead-letter stream
/// drops a second letter for the same task inside its duplicate window.
pub(super) fn where_from(
    site: &Site,
    sequence: u64,
    identity: u128,
    subject: &str,
) -> [(&'static str, String); 4] {
    [
        ("Herdless-Stream", site.stream.clone()),
        ("Herdless-Sequence", sequence.to_string()),
        ("Herdless-Subject", subject.to_owned()),
        (
            "Nats-Msg-Id",
            format!("herdless-dl-{}", IdempotencyKey::from_bits(identity)),
        ),
    ]
}

/// The state a dead letter of a task that never ran carries: its key only.
pub(super) fn key_only(identity: u128) -> String {
    TaskState {
        key: Some(IdempotencyKey::from_bits(identity)),
        ..TaskState::default()
    }
    .encode()
}

/// Sends `kind` and waits for the server's confirmation, asking again
/// across a leader change (see `confirm.rs`).
pub(super) async fn settle(d: &Delivered, kind: AckKind) -> Result<(), NatsError> {
    super::confirm::settle_confirmed(&d.message, kind, d.site.ack_wait).await
}

/// Runs `attempt`, sending an in-progress ack every `every` meanwhile.
pub(super) async fn with_progress<T>(
    attempt: impl Future<Output = T>,
    message: &jetstream::Message,
    every: Option<Duration>,
) -> T {
    let Some(every) = every else {
        return attempt.await;
    };
    tokio::pin!(attempt);
    let start = tokio::time::Instant::now() + every;
    let mut tick = tokio::time::interval_at(start, every);
    loop {
        tokio::select! {
            value = &mut attempt => return value,
            _ = tick.tick() => {
                // A lost one is covered by the next; a failed attempt at the
                // broker is the ack wait's to notice.
                let _ = message.ack_with(AckKind::Progress).await;
            }
        }
    }
}

/// An error as one header line: control characters as spaces, at most
/// [`MAX_ERROR_LEN`] bytes (cut at a character boundary).
fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_ERROR_LEN));
    for c in text.chars().map(|c| if c.is_control() { ' ' } else { c }) {
        if out.len() + c.len_utf8() > MAX_ERROR_LEN {
            break;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_error_header_is_one_bounded_line() {
        assert_eq!(super::one_line("a\r\nb"), "a  b");
        let long = "é".repeat(400);
        let cut = super::one_line(&long);
        assert!(cut.len() <= super::MAX_ERROR_LEN && cut.chars().all(|c| c == 'é'));
    }
}
