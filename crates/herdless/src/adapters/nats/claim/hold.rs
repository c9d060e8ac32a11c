//! The holder of a task's turn: its lease renewed while the attempt runs,
//! the attempt stopped at the fence when no renewal is confirmed in time,
//! and the turn's last record (`done`, `free`) written before the ack or
//! the NAK.

use std::future::Future;
use std::time::Duration;

use async_nats::jetstream::{self, AckKind};
use tokio::time::Instant;

use super::super::NatsError;
use super::super::completion::Completions;
use super::super::confirm::{TRY, again, pauses};
use super::super::handle::{Abort, Delivered, Outcome, settle, with_progress};
use super::within_try;
use crate::redelivery::claim::{Closing, LateSuccess, Lease, Record, State, late_success};
use crate::redelivery::unix_now;
use crate::rng::IdempotencyKey;

/// The holder of a task's turn.
pub(in crate::adapters::nats) struct Holder {
    pub(super) bucket: Completions,
    pub(super) key: IdempotencyKey,
    pub(super) token: u64,
    pub(super) lease: Lease,
    /// The lease's length.
    pub(super) length: Duration,
    /// The origin of the lease's times (this worker's monotonic clock).
    pub(super) origin: Instant,
    pub(super) task_id: String,
    /// The fence as the attempt sees it ([`Fence`](super::Fence)).
    pub(super) fence: super::FenceSender,
}

/// Releases the turn `holder` holds (if any), for up to `within`, the
/// delivery kept with in-progress acks every `progress`.
pub(in crate::adapters::nats) async fn release(
    js: &jetstream::Context,
    holder: Option<&Holder>,
    d: &Delivered,
    within: Duration,
    progress: Option<Duration>,
) {
    if let Some(h) = holder {
        h.finish(js, State::Free, None, within, (&d.message, progress))
            .await;
    }
}

/// Runs the attempt `run` of delivery `d` to its end: under the claim
/// `holder` (renewed, fenced: [`Holder::hold`]) or without one, with
/// in-progress acks every `progress`. `Err(outcome)` when it was stopped
/// (its future dropped): by `abort`, the turn released and the task handed
/// back now; at the lease's fence, the task left to the broker.
pub(in crate::adapters::nats) async fn run_attempt<T>(
    js: &jetstream::Context,
    d: &Delivered,
    holder: &mut Option<Box<Holder>>,
    run: impl Future<Output = T>,
    progress: Option<Duration>,
    abort: &Abort,
) -> Result<Result<T, Outcome>, NatsError> {
    let running = async {
        match holder.as_mut() {
            Some(h) => h.hold(js, run, &d.message, progress).await,
            None => Some(with_progress(run, &d.message, progress).await),
        }
    };
    let result = tokio::select! {
        biased;
        result = running => result,
        () = abort.wait() => None,
    };
    if let Some(result) = result {
        return Ok(Ok(result));
    }
    if abort.raised() {
        // Stopping now: the release gets as long as the NAK.
        release(js, holder.as_deref(), d, d.site.ack_wait / 3, progress).await;
        settle(d, AckKind::Nak(None)).await?;
        return Ok(Err(Outcome::HandedBack));
    }
    tracing::warn!(
        target: "herdless",
        task_id = %d.task_id,
        "claim lost mid-attempt (no renewal confirmed within its lease): the attempt was \
         stopped and the task left to the broker"
    );
    Ok(Err(Outcome::LeaseLost))
}

/// How many turns of the runtime (no time) an attempt gets at the fence to
/// say it has ended: one woken past its fence (its worker was stopped) may
/// have ended meanwhile, its process's exit only waiting for the runtime
/// to notice.
const SETTLING_TURNS: u32 = 32;

/// A renewal in flight: the send time of the write, once confirmed.
type Renewal = std::pin::Pin<Box<dyn Future<Output = Option<Duration>> + Send>>;

async fn next_renewal(renewing: &mut Option<Renewal>) -> Option<Duration> {
    match renewing {
        Some(r) => r.await,
        None => std::future::pending().await,
    }
}

impl Holder {
    /// The attempt's view of this holder's fence.
    pub(in crate::adapters::nats) fn fence(&self) -> super::Fence {
        self.fence.fence()
    }

    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    /// Whether the lease has run out (no renewal confirmed in time).
    pub(in crate::adapters::nats) fn lapsed(&self) -> bool {
        self.lease.lapsed(self.now())
    }

    /// The turn's record in `state`, as stored.
    fn value(&self, state: State, attempt: Option<u32>) -> String {
        Record {
            state,
            by: self.token,
        }
        .value(&self.task_id, attempt, unix_now().as_millis())
    }

    /// Before the attempt starts: whether at least half the lease is left,
    /// renewing the turn first when it is not (a create confirmed late, or
    /// a slow gate, leaves little of it). `false`: the lease ran out first,
    /// and the attempt must not start (a contender may take the next turn a
    /// margin later).
    pub(in crate::adapters::nats) async fn fresh(&mut self, js: &jetstream::Context) -> bool {
        let mut pauses = pauses();
        loop {
            let now = self.now();
            if self.lease.lapsed(now) {
                tracing::warn!(
                    target: "herdless",
                    task_id = %self.task_id,
                    "claim lost before the attempt (no renewal confirmed within its lease): \
                     the task is left to the broker"
                );
                return false;
            }
            let left = self.lease.fence() - now;
            if left >= self.length / 2 {
                return true;
            }
            let value = self.value(
                State::Running {
                    lease: Some(self.length),
                },
                None,
            );
            let write = self.bucket.write(js, self.key, self.lease.turn, value);
            match tokio::time::timeout(left.min(TRY), write).await {
                Ok(Ok(())) => {
                    if !self.lease.renewed(now, self.now()) {
                        return false;
                    }
                    self.fence.move_to(self.origin + self.lease.fence());
                }
                _ => tokio::time::sleep(pauses.next_delay().min(left)).await,
            }
        }
    }

    /// Runs `attempt` while holding the turn: an in-progress ack every
    /// `progress`, a renewal of the turn every third of the lease (or every
    /// `progress`, if sooner). `None` when the lease ran out first (no
    /// renewal confirmed in time): the attempt is dropped at the fence,
    /// since a contender may take the next turn a margin later. An attempt
    /// that has ended by then (a worker woken past its fence, whose
    /// command finished meanwhile) gets [`SETTLING_TURNS`] turns of the
    /// runtime, no time, to say so, and its result is returned: the caller
    /// then records it as past the lease ([`Holder::succeeded`]).
    pub(in crate::adapters::nats) async fn hold<T>(
        &mut self,
        js: &jetstream::Context,
        attempt: impl Future<Output = T>,
        message: &jetstream::Message,
        progress: Option<Duration>,
    ) -> Option<T> {
        let every = progress
            .unwrap_or(self.length)
            .max(Duration::from_millis(10));
        let renew_every = every.min(self.length / 3).max(Duration::from_millis(10));
        tokio::pin!(attempt);
        let mut tick = tokio::time::interval_at(Instant::now() + every, every);
        let mut renew = tokio::time::interval_at(Instant::now() + renew_every, renew_every);
        let fence = tokio::time::sleep_until(self.origin + self.lease.fence());
        tokio::pin!(fence);
        let mut renewing: Option<Renewal> = None;
        let running = State::Running {
            lease: Some(self.length),
        };
        loop {
            tokio::select! {
                biased;
                () = &mut fence => {
                    for _ in 0..SETTLING_TURNS {
                        tokio::select! {
                            biased;
                            value = &mut attempt => return Some(value),
                            () = tokio::task::yield_now() => {}
                        }
                    }
                    return None;
                }
                value = &mut attempt => return Some(value),
                confirmed = next_renewal(&mut renewing) => {
                    renewing = None;
                    if let Some(sent) = confirmed {
                        if !self.lease.renewed(sent, self.now()) {
                            return None;
                        }
                        fence.as_mut().reset(self.origin + self.lease.fence());
                        self.fence.move_to(self.origin + self.lease.fence());
                    }
                }
                _ = tick.tick() => {
                    // A lost one is covered by the next; a failed attempt at
                    // the broker is the ack wait's to notice.
                    let _ = message.ack_with(AckKind::Progress).await;
                }
                _ = renew.tick(), if renewing.is_none() => {
                    let sent = self.now();
                    let value = self.value(running, None);
                    let (bucket, js) = (self.bucket.clone(), js.clone());
                    let (key, turn) = (self.key, self.lease.turn);
                    renewing = Some(Box::pin(async move {
                        within_try(bucket.write(&js, key, turn, value)).await.ok().map(|()| sent)
                    }));
                }
            }
        }
    }

    /// Records the attempt's success, asked again for up to `within` (the
    /// delivery kept meanwhile, as by [`Holder::finish`]): over the own
    /// turn while the lease holds, else by creating the next turn as `done`
    /// ([`Closing`]). `false`: the success is not on record because another
    /// delivery took the task over first, or because the record past the
    /// lease could not be stored (said which); the task is then left to the
    /// broker, not acknowledged.
    pub(in crate::adapters::nats) async fn succeeded(
        &self,
        js: &jetstream::Context,
        attempt: u32,
        within: Duration,
        kept: (&jetstream::Message, Option<Duration>),
    ) -> bool {
        let next = match self.lease.closing(self.now()) {
            Closing::Own(_) => {
                self.finish(js, State::Done, Some(attempt), within, kept)
                    .await;
                return true;
            }
            Closing::Next(next) => next,
        };
        let value = self.value(State::Done, Some(attempt));
        let deadline = Instant::now() + within;
        let mut pauses = pauses();
        let create = async {
            loop {
                let created =
                    match within_try(self.bucket.create(js, self.key, next, value.clone())).await {
                        Ok(true) => return Ok(late_success(self.token, true, None)),
                        Ok(false) => within_try(self.bucket.turn(self.key, next))
                            .await
                            .map(|found| late_success(self.token, false, found.as_ref())),
                        Err(e) => Err(e),
                    };
                let wait = pauses.next_delay();
                match created {
                    Ok(verdict) => return Ok(verdict),
                    Err(e) if Instant::now() + wait >= deadline => return Err(e),
                    Err(_) => tokio::time::sleep(wait).await,
                }
            }
        };
        match with_progress(create, kept.0, kept.1).await {
            Ok(LateSuccess::Recorded) => true,
            Ok(LateSuccess::TakenOver) => {
                tracing::warn!(
                    target: "herdless",
                    task_id = %self.task_id,
                    "the claim was taken over while this worker was stopped or cut off: the \
                     attempt had succeeded, after its lease, and the task is left to the delivery \
                     that holds it"
                );
                false
            }
            Err(e) => {
                tracing::warn!(
                    target: "herdless",
                    task_id = %self.task_id,
                    error = %e,
                    "the attempt succeeded after its lease, and the success could not be \
                     recorded: the task is left to the broker (it may run again)"
                );
                false
            }
        }
    }

    /// Writes the turn's last record, asked again for up to `within`: `done`
    /// after a success (it is what keeps a copy from running again), `free`
    /// before handing the task back (without it the redelivery waits out
    /// the lease). The delivery is kept with in-progress acks every
    /// `progress` meanwhile, so that the broker hands out no copy while the
    /// bucket elects a leader. A record that cannot be stored is a warning.
    pub(in crate::adapters::nats) async fn finish(
        &self,
        js: &jetstream::Context,
        state: State,
        attempt: Option<u32>,
        within: Duration,
        kept: (&jetstream::Message, Option<Duration>),
    ) {
        let value = self.value(state, attempt);
        let turn = self.lease.turn;
        let write = again(within, || {
            self.bucket.write(js, self.key, turn, value.clone())
        });
        let stored = with_progress(write, kept.0, kept.1).await;
        if let Err(e) = stored {
            let what = match state {
                State::Done => "success not recorded: if its ack is lost too, the task runs again",
                _ => "claim not released: the task's next delivery waits out its lease",
            };
            tracing::warn!(target: "herdless", task_id = %self.task_id, error = %e, "{what}");
        }
    }
}
