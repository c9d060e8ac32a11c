//! [`Allotment`]: what an allocator decided for one request, and the
//! header values it answers with.

use std::time::Duration;

use crate::pushback::Ticket;

/// What the allocator decided for one request.
///
/// ```
/// use std::time::Duration;
/// let d = herdless::pushback::Allotment::Reject { retry_after: Duration::from_millis(1200) };
/// assert_eq!(d.retry_after_secs(), Some(2));
/// assert_eq!(d.retry_after_ms(), Some(1200));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Allotment {
    /// Serve the request.
    Admit,
    /// Reject it (503) and tell the caller to come back after `retry_after`.
    Reject {
        /// The delay until the caller's slot (positive, at most the horizon).
        retry_after: Duration,
    },
    /// Keep the request open, unanswered: the allocator holds it in its
    /// queue and says later, through
    /// [`AdaptiveAllocator::release`](crate::pushback::AdaptiveAllocator::release),
    /// whether to serve it or answer it with a slot. Only an allocator with
    /// a [hold](crate::pushback::adaptive#the-hold-a-capacity-aware-reconnect-queue)
    /// answers this.
    Hold {
        /// What names the held request until its release.
        ticket: Ticket,
    },
    /// Answer it unprocessed (503 with `Herdless-Requeue`): it was queued
    /// (held until its time ran out, or turned away while requests are held
    /// or the service is down) and comes back after `retry_after` to be
    /// queued again. A herdless client does not count it as an attempt
    /// ([`Classification::Requeued`](crate::Classification::Requeued)); any
    /// other client sees a `503` with a `Retry-After`.
    Requeue {
        /// The delay until the caller's slot (positive, at most the horizon).
        retry_after: Duration,
    },
}

impl Allotment {
    /// Whether the request is admitted.
    ///
    /// ```
    /// assert!(herdless::pushback::Allotment::Admit.is_admit());
    /// ```
    pub fn is_admit(&self) -> bool {
        matches!(self, Allotment::Admit)
    }

    /// Whether the request is held (answered later).
    ///
    /// ```
    /// assert!(!herdless::pushback::Allotment::Admit.is_hold());
    /// ```
    pub fn is_hold(&self) -> bool {
        matches!(self, Allotment::Hold { .. })
    }

    /// The ticket of a held request.
    ///
    /// ```
    /// assert_eq!(herdless::pushback::Allotment::Admit.ticket(), None);
    /// ```
    pub fn ticket(&self) -> Option<Ticket> {
        match *self {
            Allotment::Hold { ticket } => Some(ticket),
            _ => None,
        }
    }

    /// Whether the request is answered unprocessed, to be queued again.
    ///
    /// ```
    /// use std::time::Duration;
    /// assert!(herdless::pushback::Allotment::Requeue { retry_after: Duration::from_secs(1) }.is_requeue());
    /// ```
    pub fn is_requeue(&self) -> bool {
        matches!(self, Allotment::Requeue { .. })
    }

    /// The delay of a rejection or a requeue.
    ///
    /// ```
    /// assert_eq!(herdless::pushback::Allotment::Admit.retry_after(), None);
    /// ```
    pub fn retry_after(&self) -> Option<Duration> {
        match *self {
            Allotment::Reject { retry_after } | Allotment::Requeue { retry_after } => {
                Some(retry_after)
            }
            Allotment::Admit | Allotment::Hold { .. } => None,
        }
    }

    /// This rejection as a requeue answer (anything else as it is).
    pub(crate) fn requeued(self) -> Allotment {
        match self {
            Allotment::Reject { retry_after } => Allotment::Requeue { retry_after },
            other => other,
        }
    }

    /// The `Retry-After` value: whole seconds, rounded up, at least 1.
    ///
    /// ```
    /// use std::time::Duration;
    /// let d = herdless::pushback::Allotment::Reject { retry_after: Duration::from_millis(1) };
    /// assert_eq!(d.retry_after_secs(), Some(1));
    /// ```
    pub fn retry_after_secs(&self) -> Option<u64> {
        self.retry_after().map(|d| {
            let ceil = d.as_secs() + u64::from(d.subsec_nanos() > 0);
            ceil.max(1)
        })
    }

    /// The `Retry-After-Ms` value: whole milliseconds, rounded up, at least 1.
    ///
    /// ```
    /// use std::time::Duration;
    /// let d = herdless::pushback::Allotment::Reject { retry_after: Duration::from_micros(2_001) };
    /// assert_eq!(d.retry_after_ms(), Some(3));
    /// ```
    pub fn retry_after_ms(&self) -> Option<u64> {
        self.retry_after().map(|d| {
            let ns = d.as_nanos();
            let ms = ns.div_ceil(1_000_000);
            u64::try_from(ms).unwrap_or(u64::MAX).max(1)
        })
    }
}
