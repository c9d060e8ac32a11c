//! The shared guards: `Budget`, `Breaker`, `Throttle`, each the library's
//! own type behind a frozen Python object. One object passed to many
//! decorated functions is one guard: the library's types are lock-free
//! atomics (the budget, the breaker) or a mutex held for a few arithmetic
//! operations (the throttle), so they are safe across threads and event
//! loops, and no Python lock is taken to consult them.

use herdless::guard::{RetryBudgetBuilder, Throttle};
use herdless::{Breaker, RetryBudget};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBool;

use crate::seconds::{duration, number, whole};

/// A shared retry budget (token bucket): gRPC's retry throttling and the AWS
/// SDKs' retry quota in one set of knobs.
#[derive(Debug)]
#[pyclass(name = "Budget", module = "herdless", frozen)]
pub struct PyBudget {
    pub(crate) inner: RetryBudget,
}

fn budget_error(e: herdless::guard::RetryBudgetError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

#[pymethods]
impl PyBudget {
    /// The library's default budget (gRPC's preset: 10 tokens, ratio 0.1),
    /// each knob adjustable.
    #[new]
    #[pyo3(signature = (*, max_tokens=None, initial_tokens=None, failure_cost=None,
        retry_cost=None, timeout_cost=None, success_refund=None, refund_retry_cost=None,
        threshold=None, spread=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        max_tokens: Option<&Bound<'_, PyAny>>,
        initial_tokens: Option<&Bound<'_, PyAny>>,
        failure_cost: Option<&Bound<'_, PyAny>>,
        retry_cost: Option<&Bound<'_, PyAny>>,
        timeout_cost: Option<&Bound<'_, PyAny>>,
        success_refund: Option<&Bound<'_, PyAny>>,
        refund_retry_cost: Option<&Bound<'_, PyAny>>,
        threshold: Option<&Bound<'_, PyAny>>,
        spread: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut b = RetryBudgetBuilder::new();
        type Knob = fn(RetryBudgetBuilder, f64) -> RetryBudgetBuilder;
        let knobs: [(&str, Option<&Bound<'_, PyAny>>, Knob); 8] = [
            ("max_tokens", max_tokens, RetryBudgetBuilder::max_tokens),
            (
                "initial_tokens",
                initial_tokens,
                RetryBudgetBuilder::initial_tokens,
            ),
            (
                "failure_cost",
                failure_cost,
                RetryBudgetBuilder::failure_cost,
            ),
            ("retry_cost", retry_cost, RetryBudgetBuilder::retry_cost),
            (
                "timeout_cost",
                timeout_cost,
                RetryBudgetBuilder::timeout_cost,
            ),
            (
                "success_refund",
                success_refund,
                RetryBudgetBuilder::success_refund,
            ),
            ("threshold", threshold, RetryBudgetBuilder::threshold),
            ("spread", spread, RetryBudgetBuilder::spread),
        ];
        for (field, value, set) in knobs {
            if let Some(v) = value {
                b = set(b, number(field, v)?);
            }
        }
        if let Some(v) = refund_retry_cost {
            let yes = v.cast::<PyBool>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "refund_retry_cost: expected a bool, got {}",
                    crate::seconds::type_name(v)
                ))
            })?;
            b = b.refund_retry_cost(yes.is_true());
        }
        b.build()
            .map(|inner| PyBudget { inner })
            .map_err(budget_error)
    }

    /// gRPC retry throttling: `max_tokens` (at most 1000 in gRPC), each
    /// failure costs 1, each success refunds `token_ratio`, retries only
    /// while more than half the tokens remain.
    #[staticmethod]
    fn grpc(max_tokens: &Bound<'_, PyAny>, token_ratio: &Bound<'_, PyAny>) -> PyResult<Self> {
        let (m, r) = (
            number("max_tokens", max_tokens)?,
            number("token_ratio", token_ratio)?,
        );
        RetryBudget::grpc(m, r)
            .map(|inner| PyBudget { inner })
            .map_err(budget_error)
    }

    /// The AWS SDKs' retry quota: 500 tokens, 5 per retry, 10 per retry
    /// after a timeout, 1 back per first-try success.
    #[staticmethod]
    fn aws() -> Self {
        PyBudget {
            inner: RetryBudget::aws(),
        }
    }

    /// Tokens left now.
    #[getter]
    fn tokens(&self) -> f64 {
        self.inner.tokens()
    }

    /// The capacity.
    #[getter]
    fn max_tokens(&self) -> f64 {
        self.inner.max_tokens()
    }

    fn __repr__(&self) -> String {
        format!(
            "Budget(tokens={}, max_tokens={})",
            self.inner.tokens(),
            self.inner.max_tokens()
        )
    }
}

/// A shared half-open breaker: after `threshold` consecutive failures one
/// caller probes, the others wait.
#[derive(Debug)]
#[pyclass(name = "Breaker", module = "herdless", frozen)]
pub struct PyBreaker {
    pub(crate) inner: Breaker,
}

#[pymethods]
impl PyBreaker {
    #[new]
    #[pyo3(signature = (*, threshold=None, probe_wait=None, release_window=None))]
    fn new(
        threshold: Option<&Bound<'_, PyAny>>,
        probe_wait: Option<&Bound<'_, PyAny>>,
        release_window: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut b = Breaker::builder();
        if let Some(v) = threshold {
            b = b.threshold(whole("threshold", v, 1, u64::from(u32::MAX))? as u32);
        }
        if let Some(v) = probe_wait {
            b = b.probe_wait(duration("probe_wait", v)?);
        }
        let mut inner = b
            .build()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        if let Some(v) = release_window {
            inner = inner.release_window(duration("release_window", v)?);
        }
        Ok(PyBreaker { inner })
    }

    /// Whether the breaker is open (retries wait behind one probe).
    #[getter]
    fn is_open(&self) -> bool {
        self.inner.is_open()
    }

    /// Consecutive failures seen.
    #[getter]
    fn consecutive_failures(&self) -> u32 {
        self.inner.consecutive_failures()
    }

    fn __repr__(&self) -> String {
        format!(
            "Breaker(threshold={}, consecutive_failures={}, is_open={})",
            self.inner.threshold(),
            self.inner.consecutive_failures(),
            if self.inner.is_open() {
                "True"
            } else {
                "False"
            },
        )
    }
}

/// A shared client-side adaptive throttle: paces every attempt of the
/// process by what the endpoint answers.
#[derive(Debug)]
#[pyclass(name = "Throttle", module = "herdless", frozen)]
pub struct PyThrottle {
    pub(crate) inner: Throttle,
}

#[pymethods]
impl PyThrottle {
    #[new]
    #[pyo3(signature = (*, initial=None, window=None, probe_min=None, probe_max=None,
        threshold=None, max_wait=None))]
    fn new(
        initial: Option<&Bound<'_, PyAny>>,
        window: Option<&Bound<'_, PyAny>>,
        probe_min: Option<&Bound<'_, PyAny>>,
        probe_max: Option<&Bound<'_, PyAny>>,
        threshold: Option<&Bound<'_, PyAny>>,
        max_wait: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut b = Throttle::builder();
        if let Some(v) = initial {
            b = b.initial(whole("initial", v, 1, 1_000_000)? as u32);
        }
        if let Some(v) = window {
            b = b.window(duration("window", v)?);
        }
        if let Some(v) = probe_min {
            b = b.probe_min(duration("probe_min", v)?);
        }
        if let Some(v) = probe_max {
            b = b.probe_max(duration("probe_max", v)?);
        }
        if let Some(v) = threshold {
            b = b.threshold(whole("threshold", v, 1, u64::from(u32::MAX))? as u32);
        }
        if let Some(v) = max_wait {
            b = b.max_wait(duration("max_wait", v)?);
        }
        b.build()
            .map(|inner| PyThrottle { inner })
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// The current rate, calls per second.
    #[getter]
    fn rate(&self) -> f64 {
        self.inner.rate()
    }

    /// Whether the endpoint looks down (one call per probe interval).
    #[getter]
    fn is_probing(&self) -> bool {
        self.inner.is_probing()
    }

    fn __repr__(&self) -> String {
        format!(
            "Throttle(rate={}, is_probing={})",
            self.inner.rate(),
            if self.inner.is_probing() {
                "True"
            } else {
                "False"
            },
        )
    }
}
