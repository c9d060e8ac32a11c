//! Held requests: a request the allocator answers [`Allotment::Hold`] waits
//! in its response future, unanswered, until the allocator releases it.
//!
//! The allocator is sans-IO: it says when it next has something to do
//! ([`Allocator::next_release`]) and hands out what is due
//! ([`Allocator::release`]). One driver task per layer (spawned on the
//! current tokio runtime by the first hold) sleeps on the layer's timer until
//! then, or until a new request is held, asks, and sends each released
//! request its answer through a oneshot channel: let it through to the
//! service, or answer it with a slot (its hold ran out).
//!
//! The waiting map lives under the allocator's own lock, so a request is
//! parked in the same critical section the allocator decides it in: the
//! driver cannot release a ticket before its request waits for it. A future
//! dropped while held (its client hung up) takes its ticket out of the map
//! and the allocator's queue.
//!
//! The driver holds the layer weakly: it ends when the layer, its services
//! and every held future are gone. If it ends first (its runtime shut down),
//! the requests still held are answered `503` at once, never left waiting.

use std::collections::HashMap;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::task::Poll;
use std::time::Duration;

use tokio::sync::{Notify, oneshot};

use super::Shared;
use super::allowance::Book;
use super::share::Sharing;
use crate::pushback::{Allocator, Allotment, Ticket};
use crate::timer::AsyncSleep;

/// The allocator and the requests it holds, behind one lock.
pub(super) struct State<A> {
    pub(super) alloc: A,
    waiting: HashMap<u64, (Ticket, oneshot::Sender<Allotment>)>,
    /// The store shared with the other replicas, if any (`share.rs`).
    pub(super) sharing: Option<Sharing>,
    /// The threads' allowances (`allowance.rs`).
    pub(super) book: Book,
}

impl<A: Allocator> State<A> {
    pub(super) fn new(alloc: A) -> Self {
        State {
            alloc,
            waiting: HashMap::new(),
            sharing: None,
            book: Book::default(),
        }
    }

    /// Parks the request of `ticket`: its answer comes on the receiver.
    pub(super) fn park(&mut self, ticket: Ticket) -> oneshot::Receiver<Allotment> {
        let (answer, answered) = oneshot::channel();
        self.waiting.insert(ticket.id(), (ticket, answer));
        answered
    }

    /// The held request of `ticket` is gone: out of the map and, unless it
    /// was released already, out of the allocator's queue.
    pub(super) fn cancel(&mut self, ticket: Ticket) {
        if self.waiting.remove(&ticket.id()).is_some() {
            self.alloc.cancel(ticket);
        }
    }

    /// Answers every held request whose turn has come at `now`.
    fn release_due(&mut self, now: Duration) {
        while let Some(released) = self.alloc.release(now) {
            // Not waiting: its future is gone; a dropped future cancels its
            // ticket under this lock, so only a race with the drop itself
            // gets here, and then nobody is left to answer.
            if let Some((_, answer)) = self.waiting.remove(&released.ticket.id()) {
                let _ = answer.send(released.allotment);
            }
        }
    }

    /// Every held request answered at once (the driver is gone): out of
    /// the allocator's queue, and each receiver sees its sender dropped.
    /// Answers every held request unprocessed, each with its own slot (the
    /// allocator's [`evict`](Allocator::evict)); returns how many.
    pub(super) fn evict_all(&mut self, now: Duration) -> usize {
        let mut n = 0;
        while let Some(released) = self.alloc.evict(now) {
            if let Some((_, answer)) = self.waiting.remove(&released.ticket.id()) {
                let _ = answer.send(released.allotment);
                n += 1;
            }
        }
        n
    }

    fn abandon(&mut self) {
        for (ticket, _answer) in std::mem::take(&mut self.waiting).into_values() {
            self.alloc.cancel(ticket);
        }
    }
}

impl<K, A> Shared<K, A>
where
    K: AsyncSleep + Send + Sync + 'static,
    A: Allocator,
{
    /// Starts the driver if none runs; `false` when there is no tokio
    /// runtime to run it on.
    pub(super) fn ensure_driver(self: &Arc<Self>) -> bool {
        if self.driving.swap(true, Ordering::AcqRel) {
            return true;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let guard = Ended(Arc::downgrade(self));
                runtime.spawn(drive(guard, Arc::clone(&self.wake)));
                true
            }
            Err(_) => {
                self.driving.store(false, Ordering::Release);
                false
            }
        }
    }
}

/// The driver's hold on the layer; when the driver ends, for whatever
/// reason, what it still held is answered.
struct Ended<K, A: Allocator>(Weak<Shared<K, A>>);

impl<K, A: Allocator> Drop for Ended<K, A> {
    fn drop(&mut self) {
        if let Some(shared) = self.0.upgrade() {
            shared.driving.store(false, Ordering::Release);
            shared.lock().abandon();
        }
    }
}

/// The driver: releases what is due, then sleeps until the allocator's next
/// turn or a new hold.
async fn drive<K, A>(layer: Ended<K, A>, wake: Arc<Notify>)
where
    K: AsyncSleep + Send + Sync + 'static,
    A: Allocator,
{
    loop {
        let sleep = {
            let Some(shared) = layer.0.upgrade() else {
                return;
            };
            let now = shared.now();
            let mut state = shared.lock();
            state.release_due(now);
            state
                .alloc
                .next_release()
                .map(|at| shared.clock.sleep(at.saturating_sub(now)))
        };
        let woken = wake.notified();
        match sleep {
            None => woken.await,
            Some(sleep) => {
                let (mut sleep, mut woken) = (pin!(sleep), pin!(woken));
                poll_fn(|cx| {
                    if sleep.as_mut().poll(cx).is_ready() || woken.as_mut().poll(cx).is_ready() {
                        Poll::Ready(())
                    } else {
                        Poll::Pending
                    }
                })
                .await;
            }
        }
    }
}
