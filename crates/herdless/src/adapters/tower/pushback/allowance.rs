//! One [`Allowance`] per thread: requests admitted without the allocator's lock
//! while the service passes them through with room to spare (the bounds
//! are in [`crate::pushback::allowance`]).
//!
//! The layer keeps a small table of allowances, one slot per thread (a thread
//! picks its slot by a number it is given the first time it asks; a
//! table twice the machine's cores keeps two threads from sharing one,
//! and when they do they share a lock no other thread takes). A request
//! first tries its thread's allowance: a lock nobody else takes, a time and
//! a count compared. When the allowance is spent or has run out, the request
//! is decided by the allocator under its lock like any other, and an
//! admission renews the thread's allowance: the old one settled (its spent
//! admissions and the served requests counted on it), a new one asked
//! for, as large as the thread used of the last one (doubling while it
//! uses all of it, up to the allocator's cap).
//!
//! The allowances are settled all at once (revoked) before anything that
//! changes the allocator's view: a request turned away or held, the
//! service's own refusal, an outage started or ended by hand, and before
//! the counts or the allocator are read. Otherwise they are swept once an
//! allowance's life, by whichever request takes the lock then: the allowances
//! that ran out settled, the others' spent admissions and served requests
//! counted (their rest stays to spend), so that what the allocator learns
//! from served requests is about that late at most.
//!
//! Lock order: the allocator's lock, then an allowance's; the fast path takes
//! only its allowance's.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use super::Shared;
use super::hold::State;
use crate::pushback::allowance::ALLOWANCE_LIFE;
use crate::pushback::{Allocator, Allowance};

/// A thread's allowance and what was counted on it.
#[derive(Debug, Default)]
struct Spend {
    allowance: Allowance,
    used: u32,
    served: u32,
    /// How many to ask for next.
    want: u32,
}

/// A value on cache lines of its own (two 64-byte lines: a neighbour's
/// prefetch does not pull it in), so that writing it does not take the
/// line from under another core reading its neighbours.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(super) struct Alone<T>(pub(super) T);

/// One thread's allowance, alone on its lines.
#[derive(Debug, Default)]
struct Slot {
    /// Whether it holds an allowance or a tally to settle (counted in
    /// [`Book::active`]). Written under both locks, so exact under either;
    /// read without them first, so that a request with nothing to spend (a
    /// server turning requests away) takes no lock at all.
    live: AtomicBool,
    spend: Mutex<Spend>,
}

/// The allowances of one layer.
#[derive(Debug)]
pub(super) struct Allowances {
    slots: Box<[Alone<Slot>]>,
}

/// What the allocator's lock guards of the allowances: how many are active,
/// and when they are next swept.
#[derive(Debug, Default)]
pub(super) struct Book {
    active: usize,
    next_sweep: Duration,
}

thread_local! {
    /// This thread's number (`usize::MAX` until it first asks).
    static THREAD: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// This thread's number, given the first time it asks.
fn thread_number() -> usize {
    THREAD.with(|t| {
        let n = t.get();
        if n != usize::MAX {
            return n;
        }
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed) % (usize::MAX / 2);
        t.set(n);
        n
    })
}

fn lock(slot: &Slot) -> MutexGuard<'_, Spend> {
    slot.spend.lock().unwrap_or_else(|e| e.into_inner())
}

impl Allowances {
    /// A table for this machine (none when the allocator grants none).
    pub(super) fn new(granting: bool) -> Self {
        let n = if granting {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            cores.saturating_mul(2).clamp(2, 256).next_power_of_two()
        } else {
            0
        };
        Allowances {
            slots: (0..n).map(|_| Alone::default()).collect(),
        }
    }

    fn mine(&self) -> Option<&Slot> {
        let n = self.slots.len();
        if n == 0 {
            return None;
        }
        let i = thread_number() & (n - 1);
        self.slots.get(i).map(|s| &s.0)
    }

    /// Spends one admission of this thread's allowance at `now`: whether the
    /// request is admitted (`keyed`: it names its caller).
    #[inline]
    pub(super) fn spend(&self, now: Duration, keyed: bool) -> bool {
        let Some(slot) = self.mine().filter(|s| s.live.load(Ordering::Relaxed)) else {
            return false;
        };
        let mut s = lock(slot);
        let ok = s.used < s.allowance.count()
            && now < s.allowance.until()
            && (!keyed || s.allowance.keyed());
        if ok {
            s.used += 1;
        }
        ok
    }

    /// Counts a served request on this thread's allowance: `false` when it has
    /// none to count it on (tell the allocator now).
    pub(super) fn served(&self) -> bool {
        let Some(slot) = self.mine().filter(|s| s.live.load(Ordering::Relaxed)) else {
            return false;
        };
        let mut s = lock(slot);
        let live = slot.live.load(Ordering::Relaxed);
        if live {
            s.served = s.served.saturating_add(1);
        }
        live
    }
}

impl<A: Allocator> State<A> {
    /// Settles an allowance and its tally, and says how many to ask for next.
    fn settle_slot(&mut self, slot: &Slot, s: &mut Spend, now: Duration) {
        if !slot.live.load(Ordering::Relaxed) {
            return;
        }
        let allowance = std::mem::take(&mut s.allowance);
        let (count, used, served) = (allowance.count(), s.used, s.served);
        self.alloc.settle(now, allowance, used, served);
        s.want = if count > 0 && used >= count {
            count.saturating_mul(2)
        } else {
            used.max(1)
        };
        s.used = 0;
        s.served = 0;
        slot.live.store(false, Ordering::Relaxed);
        self.book.active -= 1;
    }

    /// Settles every allowance: before anything that changes the allocator's
    /// view, or reads it. Inline: with none active (a server turning
    /// requests away) it is one comparison.
    #[inline]
    fn settle_all(&mut self, allowances: &Allowances, now: Duration) {
        if self.book.active > 0 {
            self.settle_each(allowances, now);
        }
    }

    fn settle_each(&mut self, allowances: &Allowances, now: Duration) {
        for Alone(slot) in &allowances.slots {
            self.settle_slot(slot, &mut lock(slot), now);
        }
        self.book.next_sweep = now.saturating_add(ALLOWANCE_LIFE);
    }

    /// Brings the allocator up to date: allowances that ran out settled, the
    /// others' spent admissions and served requests counted (what is left
    /// of them stays to spend).
    fn sweep(&mut self, allowances: &Allowances, now: Duration) {
        for Alone(slot) in &allowances.slots {
            let mut s = lock(slot);
            if !slot.live.load(Ordering::Relaxed) {
                continue;
            }
            if now >= s.allowance.until() || s.used >= s.allowance.count() {
                self.settle_slot(slot, &mut s, now);
                continue;
            }
            let (spent, rest) = std::mem::take(&mut s.allowance).split(s.used);
            self.alloc.settle(now, spent, s.used, s.served);
            s.allowance = rest;
            s.used = 0;
            s.served = 0;
        }
        self.book.next_sweep = now.saturating_add(ALLOWANCE_LIFE);
    }
}

impl<K, A: Allocator> Shared<K, A> {
    /// The allocator's lock, the allowances swept if an allowance's life has passed
    /// since they last were: for a decision, or a served request.
    #[inline]
    pub(super) fn lock_at(&self, now: Duration) -> MutexGuard<'_, State<A>> {
        let mut state = self.lock();
        if A::ALLOWANCES && state.book.active > 0 && now >= state.book.next_sweep {
            state.sweep(&self.allowances, now);
        }
        state
    }

    /// The allocator's lock, every allowance settled first: for whatever
    /// changes the allocator's view (a refusal, an outage) or reads it.
    pub(super) fn lock_settled(&self, now: Duration) -> MutexGuard<'_, State<A>> {
        let mut state = self.lock();
        if A::ALLOWANCES {
            state.settle_all(&self.allowances, now);
        }
        state
    }

    /// After the allocator decided a request of this thread at `now` (under
    /// its lock): an admission renews the thread's allowance (the old one
    /// settled, a new one asked for); anything else (turned away, held)
    /// settles every allowance, none to spend until it admits again.
    #[inline]
    pub(super) fn decided(&self, state: &mut State<A>, now: Duration, admitted: bool) {
        if !A::ALLOWANCES {
            return;
        }
        if !admitted {
            state.settle_all(&self.allowances, now);
            return;
        }
        self.renew(state, now);
    }

    /// Settles this thread's allowance and asks for a new one.
    fn renew(&self, state: &mut State<A>, now: Duration) {
        let Some(slot) = self.allowances.mine() else {
            return;
        };
        let mut s = lock(slot);
        state.settle_slot(slot, &mut s, now);
        let allowance = state.alloc.allowance(now, s.want.max(1));
        if !allowance.is_empty() {
            s.allowance = allowance;
            slot.live.store(true, Ordering::Relaxed);
            state.book.active += 1;
        }
    }
}
