//! Claim before run over the completion bucket: the bytes of
//! [`redelivery::claim`](crate::redelivery::claim)'s decisions (its module
//! documentation has the design, what it guarantees and what it cannot).
//!
//! A delivery asks [`claim`] whether it may run its task. The lease is the
//! consumer's ack wait: a holder renews its turn every third of it (or at
//! each in-progress ack, when those come more often), so a holder that
//! sends in-progress acks keeps its claim the same way it keeps its
//! delivery, and one that cannot reach the bucket for two thirds of an ack
//! wait stops its attempt at the fence ([`Holder::hold`], `hold.rs`). A
//! waiting copy keeps its delivery with in-progress acks (a NAK would spend
//! a delivery, and deliveries count as attempts) and reads the bucket again
//! every half second to second. The holder writes its turn's last record
//! (`done` before the ack, `free` before a NAK) with in-progress acks too,
//! for up to 4 ack waits: while the bucket elects a leader the broker hands
//! out no copy, and the redelivery finds the turn free instead of waiting
//! out the lease.

mod fence;
mod hold;

use std::future::Future;
use std::time::Duration;

use async_nats::jetstream::{self, AckKind};
use tokio::time::Instant;

use super::NatsError;
use super::confirm::{RECORD_ACK_WAITS, TRY, pauses};
use super::handle::{Abort, Delivered, Outcome, settle, with_progress};
use crate::redelivery::claim::{Contender, Lease, Record, State, Step};
use crate::redelivery::unix_now;
use crate::rng::Rng;
use fence::FenceSender;

pub use fence::Fence;
pub(super) use hold::{Holder, release, run_attempt};

/// The shortest and longest pause between two reads of a claim being waited
/// out (drawn at random between them: the waiting copies of a fleet do not
/// read together).
const POLL: (Duration, Duration) = (Duration::from_millis(500), Duration::from_millis(1000));

/// What a delivery may do with its task.
enum Claimed {
    /// It holds the task: run it.
    Hold(Box<Holder>),
    /// The task succeeded before: acknowledge it without running.
    Completed,
    /// Another delivery holds the task, or handed it back to the broker:
    /// leave this copy to it (no acknowledgement of any kind).
    HeldElsewhere,
    /// No claim is kept (no bucket), or the bucket did not answer for
    /// [`RECORD_ACK_WAITS`] ack waits: run without one.
    Unclaimed,
}

/// Asks the bucket whether delivery `d` may run its task (see the module
/// documentation). The caller keeps the delivery with in-progress acks
/// meanwhile.
async fn claim(js: &jetstream::Context, d: &Delivered) -> Claimed {
    let Some(bucket) = &d.site.completions else {
        return Claimed::Unclaimed;
    };
    let key = d.resumed.key;
    let length = d.site.ack_wait.max(Duration::from_millis(1));
    let token = Rng::fresh().next_u64() | 1;
    let origin = Instant::now();
    let now = || origin.elapsed();
    let running = Record {
        state: State::Running {
            lease: Some(length),
        },
        by: token,
    };
    let (mut contender, mut step) = Contender::new(token, length, d.delivered <= 1);
    // The first send of each create: a turn found to be this delivery's own
    // (its confirmation lost) holds its lease from then, the earliest it
    // can have been stored.
    let mut created: Vec<(u32, Duration)> = Vec::new();
    let mut failing: Option<(Instant, crate::backoff::Backoff)> = None;
    loop {
        let result = match step {
            Step::Create(n) => {
                let sent = now();
                if !created.iter().any(|(t, _)| *t == n) {
                    created.push((n, sent));
                }
                let value = running.value(&d.task_id, None, unix_now().as_millis());
                match within_try(bucket.create(js, key, n, value)).await {
                    Ok(true) => {
                        return Claimed::Hold(Box::new(Holder {
                            bucket: bucket.clone(),
                            key,
                            token,
                            lease: Lease::new(n, length, sent),
                            length,
                            origin,
                            task_id: d.task_id.clone(),
                            fence: FenceSender::new(origin + sent + length),
                        }));
                    }
                    Ok(false) => Ok(contender.exists(n)),
                    Err(e) => Err(e),
                }
            }
            Step::ReadLatest => within_try(bucket.latest(key))
                .await
                .map(|seen| contender.read(now(), seen, false)),
            Step::ReadTurn(n) => within_try(bucket.turn(key, n))
                .await
                .map(|seen| contender.read(now(), seen, true)),
            Step::Hold(n) => {
                let sent = created
                    .iter()
                    .find(|(t, _)| *t == n)
                    .map_or(Duration::ZERO, |(_, s)| *s);
                return Claimed::Hold(Box::new(Holder {
                    bucket: bucket.clone(),
                    key,
                    token,
                    lease: Lease::new(n, length, sent),
                    length,
                    origin,
                    task_id: d.task_id.clone(),
                    fence: FenceSender::new(origin + sent + length),
                }));
            }
            Step::Wait { lapses_at } => {
                let pause = Duration::from_millis(
                    Rng::fresh().between(POLL.0.as_millis() as u64, POLL.1.as_millis() as u64),
                );
                let until = lapses_at.min(now() + pause);
                tokio::time::sleep_until(origin + until).await;
                Ok(Step::ReadLatest)
            }
            Step::Completed => return Claimed::Completed,
            Step::Leave => return Claimed::HeldElsewhere,
        };
        match result {
            Ok(next) => {
                failing = None;
                step = next;
            }
            Err(e) => {
                contender.unanswered();
                let (since, backoff) = failing.get_or_insert_with(|| (Instant::now(), pauses()));
                if since.elapsed() >= d.site.ack_wait * RECORD_ACK_WAITS {
                    tracing::warn!(
                        target: "herdless",
                        task_id = %d.task_id,
                        error = %e,
                        "the completion bucket does not answer: the task runs without a claim \
                         (another copy of it may run at the same time)"
                    );
                    return Claimed::Unclaimed;
                }
                tokio::time::sleep(backoff.next_delay()).await;
            }
        }
    }
}

/// Before running delivery `d`: its claim (`None` when it runs without one),
/// or the outcome that ends the delivery here (a task already completed is
/// acked; a copy another delivery holds is left to it; an abort hands the
/// task back). The delivery is kept with in-progress acks every `progress`
/// meanwhile.
pub(super) async fn before_running(
    js: &jetstream::Context,
    d: &Delivered,
    progress: Option<Duration>,
    abort: &Abort,
) -> Result<Result<Option<Box<Holder>>, Outcome>, NatsError> {
    let claimed = tokio::select! {
        biased;
        claimed = with_progress(claim(js, d), &d.message, progress) => claimed,
        () = abort.wait() => {
            settle(d, AckKind::Nak(None)).await?;
            return Ok(Err(Outcome::HandedBack));
        }
    };
    Ok(match claimed {
        Claimed::Hold(holder) => Ok(Some(holder)),
        Claimed::Unclaimed => Ok(None),
        Claimed::Completed => {
            settle(d, AckKind::Ack).await?;
            Err(Outcome::AlreadyCompleted)
        }
        Claimed::HeldElsewhere => Err(Outcome::HeldElsewhere),
    })
}

/// One request to the bucket, bounded by [`TRY`].
async fn within_try<T>(
    request: impl Future<Output = Result<T, NatsError>>,
) -> Result<T, NatsError> {
    tokio::time::timeout(TRY, request)
        .await
        .unwrap_or_else(|_| {
            Err(NatsError::broker(
                "asking the completion bucket",
                "no answer in time",
            ))
        })
}
