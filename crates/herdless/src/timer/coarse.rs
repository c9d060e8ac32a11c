//! [`CoarseClock`]: the monotonic clock at the kernel's tick, read without a
//! system call and without the time-stamp counter.
//!
//! # Why a coarse clock
//!
//! The elapsed limit (`max_elapsed`, an urgent call's deadline) includes the
//! operations' own time, so a call reads the clock before its first attempt,
//! even when that attempt succeeds. `Instant::now()` (`CLOCK_MONOTONIC`) reads
//! the time-stamp counter and scales it: on a virtual machine that costs
//! more than backon's whole first-try success. `CLOCK_MONOTONIC_COARSE`,
//! read through the vDSO, costs a fraction of that at the resolution of one
//! kernel tick; the sources compared, their costs per read and the program
//! that measures them are in `docs/performance.md`, section "The clock".
//!
//! A cached instant needs a thread that refreshes it, which a library must not
//! start behind its users' backs; the counter is no cheaper than the vDSO
//! here. `CLOCK_MONOTONIC_COARSE` is the same clock as `Instant` (monotonic,
//! not stepped by NTP or the wall clock), read from the vDSO's last tick
//! without touching the counter, for much less (and a thread that
//! reads it again within the same tick gets its last `Instant` back without
//! converting). `coarsetime` reads it
//! through glibc (its `now_without_cache_update` writes no shared cache line,
//! so threads do not contend), and depends on `libc` only. `rustix` is as fast
//! but parses the vDSO itself, which crashes programs run under valgrind (an
//! open rustix issue), so it is not used. On macOS the source is
//! `CLOCK_MONOTONIC_RAW_APPROX`, on FreeBSD `CLOCK_MONOTONIC_FAST`; on other
//! systems `CoarseClock` is `Instant::now()` (coarsetime falls back to the wall
//! clock there, which is not monotonic).
//!
//! # Why a tick is enough
//!
//! The resolution is one kernel tick: 1 to 10 ms (`CONFIG_HZ` 1000 to 100;
//! 4 ms on the machine above: `python3 -c 'import time;
//! print(time.clock_getres(6))'`, 6 being `CLOCK_MONOTONIC_COARSE`). Every limit the clock
//! serves is a difference of two readings compared against delays of
//! milliseconds to seconds, so each elapsed time is off by less than one tick:
//! a call may give up up to one tick early or late against `max_elapsed`, and
//! [`Attempt::elapsed`](crate::Attempt::elapsed) is off by as much. The delays
//! themselves never depend on the clock (the sleeps are as long as the engine
//! says). A policy whose `max_elapsed` is a few milliseconds wants
//! [`Instant::now`] itself: implement [`Clock`] with it and pass it with
//! [`RetryBuilder::timer`](crate::RetryBuilder::timer).

use std::time::Instant;

use crate::timer::Clock;

/// The monotonic clock at the kernel's tick (`CLOCK_MONOTONIC_COARSE` on
/// Linux and Android, `CLOCK_MONOTONIC_RAW_APPROX` on macOS,
/// `CLOCK_MONOTONIC_FAST` on FreeBSD; `Instant::now()` elsewhere): about a
/// quarter of `Instant::now()`'s cost, one tick (1 to 10 ms) of resolution
/// (see the [module documentation](self) for the measurements and why a tick
/// suffices). The default [`SystemTimer`](crate::SystemTimer) reads it (for
/// async calls with the `tokio` feature, tokio's clock instead, which follows
/// `tokio::time::pause`).
///
/// Its instants are `std::time::Instant`s, comparable with each other; against
/// `Instant::now()` they may be up to one tick ahead or behind.
///
/// ```
/// use std::time::Duration;
/// use herdless::Clock;
/// use herdless::timer::CoarseClock;
/// let t0 = CoarseClock.now();
/// std::thread::sleep(Duration::from_millis(30));
/// let waited = CoarseClock.now() - t0;
/// assert!(waited + Duration::from_millis(10) >= Duration::from_millis(30)); // ≤ one tick short
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct CoarseClock;

impl Clock for CoarseClock {
    #[inline]
    fn now(&self) -> Instant {
        imp::now()
    }

    /// The kernel's coarse monotonic clock in nanoseconds since boot (no
    /// `Instant` arithmetic: one vDSO call and a multiply).
    #[inline]
    fn now_ns(&self) -> u64 {
        imp::now_ns()
    }
}

#[cfg(any(
    target_os = "linux",
    target_os = "android",
    target_os = "macos",
    target_os = "freebsd"
))]
mod imp {
    use std::cell::Cell;
    use std::sync::OnceLock;
    use std::time::{Duration, Instant};

    /// An `Instant` paired with the coarse reading taken just before it:
    /// later coarse readings map onto `Instant`s by their distance from it.
    struct Anchor {
        instant: Instant,
        coarse: u64,
    }

    static ANCHOR: OnceLock<Anchor> = OnceLock::new();

    /// The coarse clock, in units of 2⁻³² s.
    #[inline]
    fn read() -> u64 {
        coarsetime::Instant::now_without_cache_update().as_ticks()
    }

    /// 2⁻³² s units to a `Duration`.
    #[inline]
    pub(super) fn duration(ticks: u64) -> Duration {
        let d = coarsetime::Duration::from_ticks(ticks);
        Duration::new(d.as_secs(), d.subsec_nanos())
    }

    thread_local! {
        /// This thread's last reading and its `Instant`: the clock moves once
        /// a tick, so most readings map to the same `Instant` as the last one.
        static LAST: Cell<Option<(u64, Instant)>> = const { Cell::new(None) };
    }

    /// `read()` in nanoseconds: ticks are 2⁻³² s.
    #[inline]
    pub(super) fn now_ns() -> u64 {
        ((u128::from(read()) * 1_000_000_000) >> 32) as u64
    }

    #[inline]
    pub(super) fn now() -> Instant {
        let ticks = read();
        LAST.with(|last| match last.get() {
            Some((seen, instant)) if seen == ticks => instant,
            _ => {
                let instant = map(ticks);
                last.set(Some((ticks, instant)));
                instant
            }
        })
    }

    /// A reading as an `Instant`, by its distance from the anchor.
    fn map(ticks: u64) -> Instant {
        let anchor = ANCHOR.get_or_init(|| Anchor {
            coarse: read(),
            instant: Instant::now(),
        });
        // Monotonic: the coarse clock never goes back, so neither does this.
        anchor.instant + duration(ticks.saturating_sub(anchor.coarse))
    }
}

/// Elsewhere the coarse source is not known to be monotonic.
#[cfg(not(any(
    target_os = "linux",
    target_os = "android",
    target_os = "macos",
    target_os = "freebsd"
)))]
mod imp {
    #[inline]
    pub(super) fn now() -> std::time::Instant {
        std::time::Instant::now()
    }

    #[inline]
    pub(super) fn now_ns() -> u64 {
        crate::timer::anchored_ns(now())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// `CONFIG_HZ` is at least 100.
    const TICK: Duration = Duration::from_millis(10);

    #[test]
    fn never_goes_back_and_follows_the_fine_clock_within_a_tick() {
        let (fine0, coarse0) = (Instant::now(), CoarseClock.now());
        let mut last = coarse0;
        for _ in 0..200_000 {
            let t = CoarseClock.now();
            assert!(t >= last);
            last = t;
        }
        std::thread::sleep(Duration::from_millis(25));
        let fine = Instant::now() - fine0;
        let coarse = CoarseClock.now() - coarse0;
        assert!(
            coarse + 2 * TICK >= fine && coarse <= fine + 2 * TICK,
            "{coarse:?} vs {fine:?}"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn ticks_convert_exactly_enough() {
        use super::imp::duration;
        let ticks = 3 * (1u64 << 32) + (1u64 << 31); // 3.5 s
        assert_eq!(duration(ticks), Duration::from_millis(3500));
    }
}
