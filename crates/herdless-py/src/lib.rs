//! # herdless for Python
//!
//! The extension module `herdless._herdless` behind the Python package
//! `herdless` (`python/herdless/`): the library's decision engine driven
//! from Python, with no decision re-implemented here or in Python.
//!
//! The split of the work:
//!
//! | who | what |
//! |---|---|
//! | the library ([`herdless::engine::Engine`] and its [`Context`](herdless::engine::Context)) | every decision: limits, delays, the Retry-After clamp and spread, the shared budget, the breaker, the throttle, the events |
//! | this crate | turns the user's `on=` into a [`Classification`](herdless::Classification), reads the clock, builds the context, forwards events to `logging` (`events.rs`), sleeps with `time.sleep` (GIL released) |
//! | `herdless/__init__.py` | the decorator and `retry_context`, and the `asyncio` driver, which only awaits `asyncio.sleep` and the user's coroutine |
//!
//! Why a loop in Rust for blocking calls: a decorated call is one call into
//! the extension, its per-call cost a few hundred nanoseconds above calling
//! the function (docs/performance.md, "Python"). Coroutines step through
//! `attempts.rs` because only Python can await.
//!
//! The wheel is abi3 (CPython 3.9 and later), built by maturin
//! (`pyproject.toml`), which sets `PYO3_BUILD_EXTENSION_MODULE`; `cargo test`
//! builds the same module linked to libpython, and `tests/python.rs`
//! installs it into a throwaway virtual environment and runs pytest.

mod attempts;
mod call;
mod classify;
mod events;
mod file;
mod guards;
mod policy;
mod retrier;
mod seconds;
mod simulate;
mod testing;

use pyo3::prelude::*;

/// Called in a forked child (`os.register_at_fork`, `herdless/__init__.py`):
/// the library draws new seeds, so that no child repeats its parent's or its
/// siblings' jitter and task ids ([`herdless::rng::after_fork`]).
#[pyfunction]
#[pyo3(name = "_after_fork")]
fn after_fork() {
    herdless::rng::after_fork();
}

/// The extension module `herdless._herdless`.
#[pymodule]
fn _herdless(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<policy::PyPolicy>()?;
    m.add_class::<guards::PyBudget>()?;
    m.add_class::<guards::PyBreaker>()?;
    m.add_class::<guards::PyThrottle>()?;
    m.add_class::<classify::PyClassification>()?;
    m.add_class::<retrier::Retrier>()?;
    m.add_class::<attempts::Attempts>()?;
    m.add_class::<attempts::Attempt>()?;
    m.add_function(wrap_pyfunction!(testing::set_testing, m)?)?;
    m.add_function(wrap_pyfunction!(testing::is_testing, m)?)?;
    m.add_function(wrap_pyfunction!(simulate::simulate, m)?)?;
    m.add_function(wrap_pyfunction!(after_fork, m)?)?;
    m.add_function(wrap_pyfunction!(classify::classify_status, m)?)?;
    m.add_function(wrap_pyfunction!(classify::classify_headers, m)?)?;
    m.add_function(wrap_pyfunction!(classify::prefer_wait_value, m)?)?;
    m.add("REQUEUE", herdless::http::REQUEUE)?;
    m.add("PREFER", herdless::http::PREFER)?;
    m.add(
        "parse_retry_after",
        wrap_pyfunction!(classify::parse_retry_after_value, m)?,
    )?;
    m.add(
        "parse_retry_after_ms",
        wrap_pyfunction!(classify::parse_retry_after_ms_value, m)?,
    )?;
    let (retryable, terminal) = classify::status_sets(m.py())?;
    m.add("RETRYABLE_STATUSES", retryable)?;
    m.add("TERMINAL_STATUSES", terminal)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
