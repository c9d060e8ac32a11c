//! Server-guided pushback: the library's slot allocator as an [`Rule`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode};
use herdless::fleet::pushback::{Allotment, SlotAllocator};
use herdless_sim::endpoint::TokenBucket;

use super::admission::{Arrival, Rule, Verdict};

/// Server-guided pushback: the library's [`SlotAllocator`] on the stub's clock
/// (time since start). See the [`herdless stub` docs](super#server-guided-pushback-the-default-with---capacity).
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
}

impl Pushback {
    /// Pushback at `capacity` requests per second, slots no further than
    /// `horizon`, and an outage of `outage` after start (its rejections
    /// answered `outage_status`).
    ///
    /// # Errors
    ///
    /// A message when the capacity or horizon is invalid.
    pub fn new(
        capacity: u32,
        horizon: Duration,
        outage: Option<Duration>,
        outage_status: StatusCode,
    ) -> Result<Self, String> {
        let mut alloc = SlotAllocator::new(f64::from(capacity), horizon)
            .map_err(|e| format!("--capacity {capacity} --horizon {horizon:?}: {e}"))?
            .burst(TokenBucket::default_burst(capacity));
        if let Some(d) = outage {
            alloc = alloc.outage_until(d);
        }
        Ok(Pushback {
            alloc: Arc::new(Mutex::new(alloc)),
            outage_status,
            outage_only: false,
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
        let in_outage = alloc.in_outage(a.since_start);
        if self.outage_only && !in_outage {
            return Verdict::Admit;
        }
        let decision = alloc.decide(a.since_start);
        drop(alloc);
        match decision {
            Allotment::Admit => Verdict::Admit,
            rejected => Verdict::Reject {
                status: if in_outage {
                    self.outage_status
                } else {
                    StatusCode::SERVICE_UNAVAILABLE
                },
                retry_after: rejected.retry_after_secs().map(HeaderValue::from),
                retry_after_ms: rejected.retry_after_ms(),
            },
        }
    }
}
