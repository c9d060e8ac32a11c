//! What an [`AdaptiveAllocator`](super::AdaptiveAllocator) has done so far:
//! its counters, one per kind of answer.

/// What the allocator has done so far.
///
/// ```
/// let a = herdless::pushback::AdaptiveAllocator::builder().build()?;
/// assert_eq!(a.counts(), herdless::pushback::adaptive::AdaptiveCounts::default());
/// # Ok::<(), herdless::pushback::PushbackError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AdaptiveCounts {
    /// Requests decided: every arrival once (not the releases of held ones).
    pub arrivals: u64,
    /// Requests let through to the service (probes included).
    pub admitted: u64,
    /// Requests rejected with a slot (refusals not included).
    pub rejected: u64,
    /// Admitted requests the service served.
    pub served: u64,
    /// Admitted requests the service refused (each got a slot).
    pub refused: u64,
    /// Requests let through as probes while the service was down.
    pub probes: u64,
    /// Rejections of callers that came back before their slot (told their
    /// slot again, no new booking).
    pub early: u64,
    /// Requests held (arrivals, and admitted requests the service refused).
    pub held: u64,
    /// Held requests let through to the service.
    pub released: u64,
    /// Released requests the service refused, put back at the front of the
    /// queue (their callers saw nothing).
    pub put_back: u64,
    /// Held requests answered with a slot when their `hold_for` ran out.
    pub expired: u64,
    /// Held requests whose caller went away.
    pub cancelled: u64,
    /// Held requests answered unprocessed because the front end was going
    /// away ([`evict`](crate::pushback::AdaptiveAllocator::evict)).
    pub evicted: u64,
}
