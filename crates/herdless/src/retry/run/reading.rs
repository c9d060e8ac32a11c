//! Which of the timer's clocks a call reads.

use crate::timer::{Clock, Sleep};

/// Which of the timer's clocks a call reads (the one its sleep runs on), in
/// nanoseconds: a call's times are `u64` nanoseconds since its origin, so
/// measuring one is a subtraction, never `Instant` arithmetic.
pub(crate) trait Reading<T> {
    fn now_ns(timer: &T) -> u64;

    /// A throttled call that starts at `origin` (on this clock): where its
    /// times sit on the throttle's clock, [`Clock::now_ns`], the one every
    /// executor sharing a throttle reads (its times are the call's elapsed
    /// time plus this).
    fn throttle_origin(timer: &T, origin: u64) -> u64;
}

/// The async executors' clock: [`Clock::now_ns`].
pub(crate) struct AsyncClock;

impl<T: Clock> Reading<T> for AsyncClock {
    #[inline]
    fn now_ns(timer: &T) -> u64 {
        timer.now_ns()
    }

    #[inline]
    fn throttle_origin(_: &T, origin: u64) -> u64 {
        origin
    }
}

/// The blocking executor's clock: [`Sleep::now_blocking_ns`].
pub(crate) struct BlockingClock;

impl<T: Sleep> Reading<T> for BlockingClock {
    #[inline]
    fn now_ns(timer: &T) -> u64 {
        timer.now_blocking_ns()
    }

    /// The blocking clock may have another epoch (`SystemTimer`'s is the
    /// coarse clock's, its async clock tokio's): a throttle shared with
    /// async callers must see one clock, so the call's start is read on the
    /// async one too.
    #[inline]
    fn throttle_origin(timer: &T, _: u64) -> u64 {
        timer.now_ns()
    }
}
