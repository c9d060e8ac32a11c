//! Which of the timer's clocks a call reads.

use crate::timer::{Clock, Sleep};

/// Which of the timer's clocks a call reads (the one its sleep runs on), in
/// nanoseconds: a call's times are `u64` nanoseconds since its origin, so
/// measuring one is a subtraction, never `Instant` arithmetic.
pub(crate) trait Reading<T> {
    fn now_ns(timer: &T) -> u64;
}

/// The async executors' clock: [`Clock::now_ns`].
pub(crate) struct AsyncClock;

impl<T: Clock> Reading<T> for AsyncClock {
    #[inline]
    fn now_ns(timer: &T) -> u64 {
        timer.now_ns()
    }
}

/// The blocking executor's clock: [`Sleep::now_blocking_ns`].
pub(crate) struct BlockingClock;

impl<T: Sleep> Reading<T> for BlockingClock {
    #[inline]
    fn now_ns(timer: &T) -> u64 {
        timer.now_blocking_ns()
    }
}
