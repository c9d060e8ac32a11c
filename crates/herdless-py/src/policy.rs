//! `herdless.Policy`: the library's validated [`Policy`], built through its
//! own builder. Every setting is keyword-only and optional (the library's
//! defaults); an invalid one is a `ValueError` naming the field, with the
//! library's reason (`invalid cap: 1s is below base 5s`).

use std::time::Duration;

use herdless::policy::PolicyBuilder;
use herdless::{Jitter, Policy};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::seconds::{duration, number, type_name, whole};

/// A retry policy: base, cap, multiplier, attempt and elapsed limits, the
/// clamp on server delays, the jitter mode. Immutable; share it freely.
#[pyclass(name = "Policy", module = "herdless", frozen, eq, from_py_object)]
#[derive(Debug, Clone, PartialEq)]
pub struct PyPolicy {
    pub(crate) inner: Policy,
}

/// A policy's settings as `__reduce__` gives them: base, cap, multiplier,
/// max_attempts, max_elapsed, max_retry_after (nanoseconds), the jitter's
/// name, the spread, the attempt timeout (nanoseconds), max_requeues.
type State = (u64, u64, f64, u32, u64, u64, String, f64, Option<u64>, u32);

/// A `ValueError` from the library's refusal.
pub(crate) fn policy_error(e: herdless::PolicyError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A jitter mode by name (`"full"`, `"equal"`, `"none"`, `"decorrelated"`,
/// `"decorrelated-window"`; `_` may stand for `-`).
fn jitter(value: &Bound<'_, PyAny>) -> PyResult<Jitter> {
    let s = value.cast::<PyString>().map_err(|_| {
        PyTypeError::new_err(format!(
            "jitter: expected a mode name (str), got {}",
            type_name(value)
        ))
    })?;
    let name = s.to_cow()?.replace('_', "-");
    name.parse::<Jitter>()
        .map_err(|e| PyValueError::new_err(format!("invalid jitter: {e}")))
}

#[pymethods]
impl PyPolicy {
    #[new]
    #[pyo3(signature = (*, base=None, cap=None, multiplier=None, max_attempts=None,
        max_elapsed=None, max_retry_after=None, jitter=None, retry_after_spread=None,
        max_requeues=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        base: Option<&Bound<'_, PyAny>>,
        cap: Option<&Bound<'_, PyAny>>,
        multiplier: Option<&Bound<'_, PyAny>>,
        max_attempts: Option<&Bound<'_, PyAny>>,
        max_elapsed: Option<&Bound<'_, PyAny>>,
        max_retry_after: Option<&Bound<'_, PyAny>>,
        jitter: Option<&Bound<'_, PyAny>>,
        retry_after_spread: Option<&Bound<'_, PyAny>>,
        max_requeues: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut b = PolicyBuilder::new();
        if let Some(v) = base {
            b = b.base(duration("base", v)?);
        }
        if let Some(v) = cap {
            b = b.cap(duration("cap", v)?);
        }
        if let Some(v) = multiplier {
            b = b.multiplier(number("multiplier", v)?);
        }
        if let Some(v) = max_attempts {
            let n = whole("max_attempts", v, 1, u64::from(u32::MAX))?;
            b = b.max_attempts(n as u32);
        }
        if let Some(v) = max_requeues {
            // Past the library's range, its builder names the bound.
            let n = whole("max_requeues", v, 0, u64::from(u32::MAX))?;
            b = b.max_requeues(n as u32);
        }
        if let Some(v) = max_elapsed {
            b = b.max_elapsed(duration("max_elapsed", v)?);
        }
        if let Some(v) = max_retry_after {
            b = b.max_retry_after(duration("max_retry_after", v)?);
        }
        if let Some(v) = jitter {
            b = b.jitter(self::jitter(v)?);
        }
        if let Some(v) = retry_after_spread {
            b = b.retry_after_spread(number("retry_after_spread", v)?);
        }
        b.build()
            .map(|inner| PyPolicy { inner })
            .map_err(policy_error)
    }

    /// Reads the `[policy.NAME]` table of a `herdless.toml` file (the GIL
    /// released while the file is read).
    #[staticmethod]
    fn from_file(py: Python<'_>, path: std::path::PathBuf, name: &str) -> PyResult<Self> {
        crate::file::read_policy(py, &path, name).map(|inner| PyPolicy { inner })
    }

    /// The first retry's ceiling, seconds.
    #[getter]
    fn base(&self) -> f64 {
        self.inner.base().as_secs_f64()
    }

    /// The largest single delay, seconds.
    #[getter]
    fn cap(&self) -> f64 {
        self.inner.cap().as_secs_f64()
    }

    /// The growth of the ceiling per retry.
    #[getter]
    fn multiplier(&self) -> f64 {
        self.inner.multiplier()
    }

    /// Attempts at most, the first call included.
    #[getter]
    fn max_attempts(&self) -> u32 {
        self.inner.max_attempts()
    }

    /// Requeue answers (the server held the request and put it back
    /// unprocessed) that are not counted as attempts; past them, each is.
    #[getter]
    fn max_requeues(&self) -> u32 {
        self.inner.max_requeues()
    }

    /// The elapsed-time limit, seconds: no retry starts after it.
    #[getter]
    fn max_elapsed(&self) -> f64 {
        self.inner.max_elapsed().as_secs_f64()
    }

    /// The clamp on a server's delay (Retry-After), seconds.
    #[getter]
    fn max_retry_after(&self) -> f64 {
        self.inner.max_retry_after().as_secs_f64()
    }

    /// The upward spread of a server's delay (0.1: +0 to 10 %).
    #[getter]
    fn retry_after_spread(&self) -> f64 {
        self.inner.retry_after_spread()
    }

    /// The jitter mode's name.
    #[getter]
    fn jitter(&self) -> &'static str {
        self.inner.jitter().name()
    }

    /// The longest one attempt may take, seconds, when a policy file sets
    /// `attempt_timeout` (Python does not cut attempts; see docs/python.md).
    #[getter]
    fn attempt_timeout(&self) -> Option<f64> {
        self.inner.attempt_timeout().map(|d| d.as_secs_f64())
    }

    /// The largest delay the policy's jitter mode can draw for retry `n` (0
    /// for the first retry), seconds: `min(cap, base * multiplier ** n)`
    /// for the exponential modes, `min(cap, base * 3 ** (n + 1))` for the
    /// decorrelated ones (the library's `Jitter::ceiling`). Every drawn
    /// delay is at most this (a server's delay is bounded by
    /// `max_retry_after` instead).
    fn ceiling(&self, n: &Bound<'_, PyAny>) -> PyResult<f64> {
        let n = whole("n", n, 0, u64::from(u32::MAX))? as u32;
        Ok(self.inner.jitter().ceiling(&self.inner, n).as_secs_f64())
    }

    /// A policy is immutable: a copy is itself.
    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// A policy is immutable: a deep copy is itself.
    fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
        slf
    }

    /// Pickles as its settings (durations in whole nanoseconds: exact).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (State,))> {
        let p = &slf.get().inner;
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let state = (
            ns(p.base()),
            ns(p.cap()),
            p.multiplier(),
            p.max_attempts(),
            ns(p.max_elapsed()),
            ns(p.max_retry_after()),
            p.jitter().name().to_owned(),
            p.retry_after_spread(),
            p.attempt_timeout().map(ns),
            p.max_requeues(),
        );
        Ok((slf.get_type().getattr("_restore")?, (state,)))
    }

    /// A policy from the settings `__reduce__` gave (what `pickle` calls).
    #[staticmethod]
    fn _restore(state: State) -> PyResult<Self> {
        let (
            base,
            cap,
            multiplier,
            attempts,
            elapsed,
            retry_after,
            jitter,
            spread,
            timeout,
            requeues,
        ) = state;
        let jitter = jitter
            .parse::<Jitter>()
            .map_err(|e| PyValueError::new_err(format!("invalid jitter: {e}")))?;
        PolicyBuilder::new()
            .base(Duration::from_nanos(base))
            .cap(Duration::from_nanos(cap))
            .multiplier(multiplier)
            .max_attempts(attempts)
            .max_elapsed(Duration::from_nanos(elapsed))
            .max_retry_after(Duration::from_nanos(retry_after))
            .jitter(jitter)
            .retry_after_spread(spread)
            .attempt_timeout(timeout.map(Duration::from_nanos))
            .max_requeues(requeues)
            .build()
            .map(|inner| PyPolicy { inner })
            .map_err(policy_error)
    }

    fn __repr__(&self) -> String {
        let p = &self.inner;
        format!(
            "Policy(base={}, cap={}, multiplier={:?}, max_attempts={}, max_elapsed={}, \
             max_retry_after={}, jitter={:?}, retry_after_spread={:?}, max_requeues={})",
            secs(p.base()),
            secs(p.cap()),
            p.multiplier(),
            p.max_attempts(),
            secs(p.max_elapsed()),
            secs(p.max_retry_after()),
            p.jitter().name(),
            p.retry_after_spread(),
            p.max_requeues(),
        )
    }
}

/// Seconds as Python would print a float.
fn secs(d: Duration) -> String {
    format!("{:?}", d.as_secs_f64())
}
