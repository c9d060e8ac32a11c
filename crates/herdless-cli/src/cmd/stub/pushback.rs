//! Server-guided pushback: the library's allocators as [`Rule`]s.
//!
//! * [`AdaptivePushback`] (`--pushback on`, the default with `--capacity`):
//!   the library's `AdaptiveAllocator` in front of the stub's whole handler
//!   chain (outage, fail-first, fail-every, capacity), as the tower layer
//!   sits in front of a service. What it admits meets the chain; the chain's
//!   answer is reported back (a 503 or 429 is a refusal and gets its slot),
//!   each caller is named by its `X-Worker-Id`.
//! * [`Pushback`] (`--pushback static`): the static `SlotAllocator`, told the
//!   capacity (times `--capacity-estimate`), placed at two points of the
//!   chain as it always was.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode};
use herdless::pushback::AdaptiveAllocator;
use herdless::pushback::allocator::caller_key;
use herdless::pushback::{Allotment, SlotAllocator, Ticket};
use herdless_sim::endpoint::TokenBucket;

use super::admission::{Arrival, Rule, Verdict};
use super::chain::Chain;

fn slot_verdict(status: StatusCode, slot: Allotment) -> Verdict {
    Verdict::Reject {
        status,
        retry_after: slot.retry_after_secs().map(HeaderValue::from),
        retry_after_ms: slot.retry_after_ms(),
    }
}

/// The adaptive allocator in front of the stub's handler chain (how it is
/// told the capacity and what it learns: the module documentation).
pub struct AdaptivePushback {
    holds: bool,
    alloc: Mutex<AdaptiveAllocator>,
    inner: Chain,
    outage_status: StatusCode,
}

impl std::fmt::Debug for AdaptivePushback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdaptivePushback")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl AdaptivePushback {
    /// The allocator, starting from `estimate` requests per second (told the
    /// outage's end when `known_end` is given), in front of `inner`. Its own
    /// rejections while it takes the service to be down use `outage_status`.
    ///
    /// # Errors
    ///
    /// A message when the estimate or horizon is invalid.
    pub fn new(
        estimate: f64,
        horizon: Duration,
        known_end: Option<Duration>,
        outage_status: StatusCode,
        inner: Chain,
    ) -> Result<Self, String> {
        Self::with_hold(estimate, horizon, known_end, outage_status, None, inner)
    }

    /// [`new`](Self::new), holding requests open with `hold`: `(most held,
    /// longest hold)`, each `None` for the library's default (2.4 s of the
    /// estimate, and 10 s).
    ///
    /// # Errors
    ///
    /// A message when a setting is out of range.
    pub fn with_hold(
        estimate: f64,
        horizon: Duration,
        known_end: Option<Duration>,
        outage_status: StatusCode,
        hold: Option<(Option<usize>, Option<Duration>)>,
        inner: Chain,
    ) -> Result<Self, String> {
        let mut b = AdaptiveAllocator::builder()
            .estimate(estimate)
            .horizon(horizon);
        if let Some((max, for_)) = hold {
            b = b.hold();
            if let Some(n) = max {
                b = b.hold_max(n);
            }
            if let Some(d) = for_ {
                b = b.hold_for(d);
            }
        }
        let mut alloc = b.build().map_err(|e| {
            format!("--capacity-estimate {estimate}/s --horizon {horizon:?} and the hold: {e}")
        })?;
        if let Some(end) = known_end {
            alloc = alloc.outage_until(end);
        }
        Ok(AdaptivePushback {
            holds: hold.is_some(),
            alloc: Mutex::new(alloc),
            inner,
            outage_status,
        })
    }

    /// The verdict on an admitted request's answer from the chain; `held`:
    /// it was released from the hold (a refusal parks it again).
    fn answered(&self, a: &Arrival<'_>, caller: Option<u64>, held: Option<Ticket>) -> Verdict {
        let now = a.since_start;
        match self.inner.admit(a) {
            Verdict::Reject { status, .. }
                if status == StatusCode::SERVICE_UNAVAILABLE
                    || status == StatusCode::TOO_MANY_REQUESTS =>
            {
                let slot = match held {
                    Some(ticket) => self.lock().refused_held(now, ticket),
                    None => self.lock().refused(now, caller),
                };
                match slot {
                    Allotment::Hold { ticket } => Verdict::Hold { ticket },
                    slot => slot_verdict(status, slot),
                }
            }
            other => {
                // Served, or answered with a failure that is no news about
                // capacity: served, and passed on as it is.
                self.lock().served(now);
                other
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, AdaptiveAllocator> {
        self.alloc.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Rule for AdaptivePushback {
    fn admit(&self, a: &Arrival<'_>) -> Verdict {
        let now = a.since_start;
        let caller = a.worker.map(|w| caller_key(w.as_bytes()));
        let decision = {
            let mut alloc = self.lock();
            let d = herdless::pushback::Allocator::decide(&mut *alloc, now, caller);
            (d, alloc.in_outage(now))
        };
        match decision {
            (Allotment::Admit, _) => self.answered(a, caller, None),
            (Allotment::Hold { ticket }, _) => Verdict::Hold { ticket },
            (slot, down) => {
                let status = if down {
                    self.outage_status
                } else {
                    StatusCode::SERVICE_UNAVAILABLE
                };
                slot_verdict(status, slot)
            }
        }
    }

    fn holds(&self) -> bool {
        self.holds
    }

    fn next_release(&self) -> Option<Duration> {
        self.lock().next_release()
    }

    fn release(&self, now: Duration) -> Option<(Ticket, Option<Verdict>)> {
        let mut alloc = self.lock();
        let r = alloc.release(now)?;
        let verdict = match r.allotment {
            Allotment::Admit => None,
            slot => {
                let status = if alloc.in_outage(now) {
                    self.outage_status
                } else {
                    StatusCode::SERVICE_UNAVAILABLE
                };
                Some(slot_verdict(status, slot))
            }
        };
        Some((r.ticket, verdict))
    }

    fn admit_released(&self, a: &Arrival<'_>, ticket: Ticket) -> Verdict {
        self.answered(a, ticket.caller(), Some(ticket))
    }

    fn cancel(&self, ticket: Ticket) {
        self.lock().cancel(ticket);
    }
}

/// The static slot allocator on the stub's clock (time since start). See the
/// [`herdless stub` docs](super#server-guided-pushback-the-default-with---capacity).
///
/// One allocator serves two places in the chain, so the order "outage, then
/// fail-first, then capacity" holds: [`Pushback::outage_gate`] rejects (with a
/// slot past the outage's end) only while the outage lasts, and
/// [`Pushback::capacity`] decides every request that reaches it.
#[derive(Debug, Clone)]
pub struct Pushback {
    alloc: Arc<Mutex<SlotAllocator>>,
    outage_status: StatusCode,
    outage_only: bool,
    /// With an unknown end: when the operator's `recover()` arrives.
    recover_at: Option<Duration>,
}

impl Pushback {
    /// Pushback at `told` requests per second (`capacity` times the
    /// estimate factor; the burst is 100 ms of it), slots no further than
    /// `horizon`, and an outage of `outage` after start (its rejections
    /// answered `outage_status`), its end told (`known_end`) or not (the
    /// allocator starts in outage mode and is recovered at the end).
    ///
    /// # Errors
    ///
    /// A message when the capacity or horizon is invalid.
    pub fn new(
        told: f64,
        horizon: Duration,
        outage: Option<Duration>,
        known_end: bool,
        outage_status: StatusCode,
    ) -> Result<Self, String> {
        let burst = TokenBucket::default_burst(told.round().clamp(1.0, f64::from(u32::MAX)) as u32);
        let mut alloc = SlotAllocator::new(told, horizon)
            .map_err(|e| format!("--capacity {told}/s --horizon {horizon:?}: {e}"))?
            .burst(burst);
        let mut recover_at = None;
        match outage {
            Some(d) if known_end => alloc = alloc.outage_until(d),
            Some(d) => {
                alloc = alloc.outage();
                recover_at = Some(d);
            }
            None => {}
        }
        Ok(Pushback {
            alloc: Arc::new(Mutex::new(alloc)),
            outage_status,
            outage_only: false,
            recover_at,
        })
    }

    /// The admission for the outage's place in the chain: rejects with a slot
    /// while the outage lasts, admits (passes on) otherwise.
    pub fn outage_gate(&self) -> Pushback {
        Pushback {
            outage_only: true,
            ..self.clone()
        }
    }

    /// The admission for the capacity's place in the chain.
    pub fn capacity(&self) -> Pushback {
        Pushback {
            outage_only: false,
            ..self.clone()
        }
    }

    /// Admitted and rejected counts so far.
    pub fn counts(&self) -> (u64, u64) {
        self.alloc
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .counts()
    }
}

impl Rule for Pushback {
    fn admit(&self, a: &Arrival<'_>) -> Verdict {
        let mut alloc = self.alloc.lock().unwrap_or_else(|p| p.into_inner());
        if self.recover_at.is_some_and(|t| a.since_start >= t) && alloc.in_outage(a.since_start) {
            alloc.recover();
        }
        let in_outage = alloc.in_outage(a.since_start);
        if self.outage_only && !in_outage {
            return Verdict::Admit;
        }
        let decision = alloc.decide(a.since_start);
        drop(alloc);
        match decision {
            Allotment::Admit => Verdict::Admit,
            rejected => slot_verdict(
                if in_outage {
                    self.outage_status
                } else {
                    StatusCode::SERVICE_UNAVAILABLE
                },
                rejected,
            ),
        }
    }
}
