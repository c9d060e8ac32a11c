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
use herdless::pushback::allocator::caller_key;
use herdless::pushback::AdaptiveAllocator;
use herdless::pushback::{Allotment, SlotAllocator};
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
        let mut alloc = AdaptiveAllocator::new(estimate, horizon)
            .map_err(|e| format!("--capacity-estimate {estimate}/s --horizon {horizon:?}: {e}"))?;
        if let Some(end) = known_end {
            alloc = alloc.outage_until(end);
        }
        Ok(AdaptivePushback {
            alloc: Mutex::new(alloc),
            inner,
            outage_status,
        })
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
            (Allotment::Admit, _) => match self.inner.admit(a) {
                Verdict::Admit => {
                    self.lock().served(now);
                    Verdict::Admit
                }
                Verdict::Reject { status, .. }
                    if status == StatusCode::SERVICE_UNAVAILABLE
                        || status == StatusCode::TOO_MANY_REQUESTS =>
                {
                    let slot = self.lock().refused(now, caller);
                    slot_verdict(status, slot)
                }
                other => {
                    // Answered, not refused (a failure that is no news about
                    // capacity): served, and passed on as it is.
                    self.lock().served(now);
                    other
                }
            },
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
