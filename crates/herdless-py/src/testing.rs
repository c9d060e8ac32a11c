//! `herdless.set_testing`: no sleeping, attempts capped, for users' test
//! suites; and the clock every call reads.
//!
//! In testing mode a call still asks the engine every question (the events,
//! the budget, the breaker are all real); it only skips the waits, and its
//! clock moves on by what it skipped, so the elapsed limit, a breaker's probe
//! wait and a throttle's turn pass as they would have (a call never spins on
//! a wait that cannot pass). The policy's `max_attempts` is capped for calls
//! that start while testing is on.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyBool;

/// 0: off; otherwise the attempt cap.
static TESTING: AtomicU32 = AtomicU32::new(0);

/// The origin of every call's clock (one per process, so that calls sharing
/// a throttle or a breaker read times on one clock).
static EPOCH: OnceLock<Instant> = OnceLock::new();

/// Monotonic time since the process's first call.
#[inline]
pub(crate) fn now() -> Duration {
    EPOCH.get_or_init(Instant::now).elapsed()
}

/// The attempt cap while testing is on.
#[inline]
pub(crate) fn cap() -> Option<u32> {
    match TESTING.load(Ordering::Relaxed) {
        0 => None,
        n => Some(n),
    }
}

/// Turns testing mode on or off: no sleeping, and at most `attempts`
/// attempts per call (the policy's own limit when it is lower).
#[pyfunction]
#[pyo3(signature = (flag, *, attempts=None))]
pub(crate) fn set_testing(
    flag: &Bound<'_, PyAny>,
    attempts: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let flag = flag
        .cast::<PyBool>()
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "flag: expected a bool, got {}",
                crate::seconds::type_name(flag)
            ))
        })?
        .is_true();
    let n = match attempts {
        None => 1,
        Some(a) => crate::seconds::whole("attempts", a, 1, u64::from(u32::MAX))? as u32,
    };
    TESTING.store(if flag { n } else { 0 }, Ordering::Relaxed);
    Ok(())
}

/// Whether testing mode is on.
#[pyfunction]
pub(crate) fn is_testing() -> bool {
    cap().is_some()
}
