//! What the driver reports after each request the allocator admitted: the
//! service [`served`](AdaptiveAllocator::served) it or
//! [`refused`](AdaptiveAllocator::refused) it, and what a refusal teaches
//! (the estimate's window, a refusal run, an outage).

use std::time::Duration;

use super::*;
use crate::pushback::Caller;

impl AdaptiveAllocator {
    /// The service served a request this allocator admitted (at `now`). A
    /// served probe ends an outage of unknown end.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut a = herdless::pushback::AdaptiveAllocator::new(10.0, Duration::from_secs(60))?;
    /// a.served(Duration::ZERO);
    /// assert_eq!(a.counts().served, 1);
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn served(&mut self, now: Duration) {
        self.served_many(ns(now), 1);
    }

    /// `n` requests served at `now` (ns): [`served`](Self::served) `n` times.
    pub(super) fn served_many(&mut self, now: u64, n: u32) {
        if n == 0 {
            return;
        }
        self.tick(now);
        self.counts.served += u64::from(n);
        self.estimate.served = self.estimate.served.saturating_add(n);
        self.estimate.refusal_run = 0;
        if let Mode::Down { until: None, .. } = self.mode {
            self.recover_at(now);
        }
    }

    /// The service refused a request this allocator admitted (a 503 or 429 of
    /// its own, at `now`): returns the caller's slot (always a rejection).
    /// Enough consecutive refusals with no success in the window mean the
    /// service is down.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut a = herdless::pushback::AdaptiveAllocator::new(10.0, Duration::from_secs(60))?;
    /// for _ in 0..5 {
    ///     assert!(!a.refused(Duration::ZERO, None).is_admit());
    /// }
    /// assert!(a.in_outage(Duration::ZERO));
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn refused(&mut self, now: Duration, key: Option<u64>) -> Allotment {
        self.refusal(ns(now), Caller::named(key), true)
    }

    /// [`refused`](Self::refused) for a request from `caller`: held again,
    /// it is kept as long as its patience allows (see
    /// [`decide_caller`](Self::decide_caller)).
    ///
    /// ```
    /// use std::time::Duration;
    /// use herdless::pushback::{AdaptiveAllocator, Caller};
    /// let mut a = AdaptiveAllocator::builder().estimate(10.0).hold().build()?;
    /// let hurried = Caller::new().wait(Duration::from_secs(3));
    /// assert!(a.refused_caller(Duration::ZERO, hurried).retry_after().is_some(), "not held: it would time out");
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn refused_caller(&mut self, now: Duration, caller: Caller) -> Allotment {
        self.refusal(ns(now), caller, true)
    }

    /// [`refused`](Self::refused) for a front end that cannot keep the
    /// refused request (it handed the request to the service, which consumed
    /// it: a tower layer): the refusal counts the same, and the answer is a
    /// slot, never a hold.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut a = herdless::pushback::AdaptiveAllocator::builder().estimate(10.0).hold().build()?;
    /// assert!(a.refused(Duration::ZERO, None).is_hold());
    /// assert!(a.refused_unheld(Duration::ZERO, None).retry_after().is_some());
    /// assert_eq!(a.counts().refused, 2);
    /// # Ok::<(), herdless::pushback::PushbackError>(())
    /// ```
    pub fn refused_unheld(&mut self, now: Duration, key: Option<u64>) -> Allotment {
        self.refusal(ns(now), Caller::named(key), false)
    }

    pub(super) fn refusal(&mut self, now: u64, caller: Caller, may_hold: bool) -> Allotment {
        self.tick(now);
        self.counts.refused += 1;
        let (starts, held_since) = self.note_refusal(now);
        let key = caller.key;
        // With a hold, the refused request waits at the front of the queue
        // (if its caller waits long enough to be held).
        if let Some(h) = self.hold.as_mut().filter(|h| may_hold && h.has_room()) {
            if let Some(patient) = h.class_of(caller.wait_ns()) {
                self.counts.held += 1;
                let ticket = h.push_new_front(now, key, patient);
                return Allotment::Hold { ticket };
            }
        }
        let slot = self.reject(now, key, None, false, held_since);
        if starts {
            let at = slot
                .retry_after()
                .map_or(now, |d| now.saturating_add(ns(d)));
            self.estimate.run_slot = at;
        }
        slot
    }

    /// Counts a refusal at `now` (admitted or released): the estimate's
    /// window, the refusal run and whether it means the service is down.
    /// Returns whether it starts a run, and the start of a run that outlasted
    /// its first slot.
    pub(super) fn note_refusal(&mut self, now: u64) -> (bool, Option<u64>) {
        let starts = self.estimate.refusal(now);
        let e = &self.estimate;
        let mut held_since = None;
        if self.mode == Mode::Up {
            if e.refusal_run >= self.down_after && !e.served_lately() {
                self.mode = Mode::Down {
                    since: Some(e.run_since),
                    until: None,
                    next_probe: now.saturating_add(self.probe_ns),
                };
                self.generation += 1;
            } else {
                held_since = e.outlasting_run(now);
            }
        }
        (starts, held_since)
    }
}
