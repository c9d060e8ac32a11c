//! The user's `on=`, turned into the library's [`Classification`].
//!
//! `on=` is required (as in stamina): an exception type or a tuple of them
//! (an instance is retryable, anything else terminal), or a callable that
//! receives the exception and answers with
//!
//! | answer | classification |
//! |---|---|
//! | `True` | retryable after the computed jitter |
//! | `False`, `None` | terminal (a callable that forgot to answer fails closed) |
//! | seconds (`int`, `float`), a `timedelta` | retryable after the server's delay (clamped to `max_retry_after` and spread by the engine; zero, negative or NaN: the computed jitter) |
//! | `str` or `bytes` | a `Retry-After` header value, parsed by the library (both forms; unusable: the computed jitter) |
//! | a `herdless.Classification` | itself (what `herdless.http.classify_status` returns) |
//!
//! Anything else is a `TypeError` naming what came back. Only instances of
//! `Exception` are classified: `KeyboardInterrupt`, `SystemExit` and
//! `asyncio.CancelledError` end the call at once (the engine is settled, a
//! pending retry refunded). A `TimeoutError` (socket and asyncio timeouts
//! included) is a [`RetryCause::Timeout`]: the budget charges its timeout
//! cost and the events say `timed_out`.

use std::time::SystemTime;

use herdless::http::{
    StatusClassifier, classify_response_ms, parse_retry_after, parse_retry_after_ms,
};
use herdless::{Classification, RetryCause};
use pyo3::exceptions::{PyTimeoutError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyBytes, PyDelta, PyFloat, PyFrozenSet, PyInt, PyString, PyTuple, PyType,
};

use crate::seconds::type_name;

/// What `on=` was given.
#[derive(Debug)]
pub(crate) enum On {
    /// An exception type or a tuple of them (kept as given: `isinstance`
    /// takes both).
    Types(Py<PyAny>),
    /// A callable answering per exception.
    Callable(Py<PyAny>),
}

impl On {
    /// Checks `on` as given to `retry` or `retry_context`.
    pub(crate) fn new(on: &Bound<'_, PyAny>) -> PyResult<On> {
        let is_exception_type = |t: &Bound<'_, PyAny>| {
            t.cast::<PyType>().is_ok_and(|t| {
                t.is_subclass_of::<pyo3::exceptions::PyBaseException>()
                    .unwrap_or(false)
            })
        };
        if is_exception_type(on) {
            return Ok(On::Types(on.clone().unbind()));
        }
        if let Ok(tuple) = on.cast::<PyTuple>() {
            if tuple.is_empty() {
                return Err(PyValueError::new_err(
                    "on: an empty tuple retries nothing; name the exceptions to retry",
                ));
            }
            for t in tuple.iter() {
                if !is_exception_type(&t) {
                    return Err(PyTypeError::new_err(format!(
                        "on: a tuple of exception types, but it holds {}",
                        type_name(&t)
                    )));
                }
            }
            return Ok(On::Types(on.clone().unbind()));
        }
        if on.is_callable() && !on.is_instance_of::<PyType>() {
            return Ok(On::Callable(on.clone().unbind()));
        }
        Err(PyTypeError::new_err(format!(
            "on: expected an exception type, a tuple of them or a callable, got {}",
            type_name(on)
        )))
    }

    /// The classification of `error` and its cause. A callable that raises:
    /// its exception, with the classified one as its `__cause__`.
    pub(crate) fn classify(
        &self,
        py: Python<'_>,
        error: &PyErr,
    ) -> PyResult<(Classification, RetryCause)> {
        let cause = if error.is_instance_of::<PyTimeoutError>(py) {
            RetryCause::Timeout
        } else {
            RetryCause::Error
        };
        let class = match self {
            On::Types(types) => {
                if error.is_instance(py, types.bind(py)) {
                    Classification::retryable()
                } else {
                    Classification::terminal()
                }
            }
            On::Callable(f) => {
                // Its exception, or the refusal of an answer it cannot be
                // (a `re.Match`, a list): the classified one as its cause.
                let answer = f
                    .bind(py)
                    .call1((error.value(py),))
                    .inspect_err(|e| caused_by(py, e, error))?;
                verdict(&answer).inspect_err(|e| caused_by(py, e, error))?
            }
        };
        Ok((class, cause))
    }
}

/// Chains `original` (the attempt's exception) to `e`, an error that ends
/// the call in its place, as its `__cause__` (unless `e` has one of its own:
/// then as its `__context__`, which Python would have set).
pub(crate) fn caused_by(py: Python<'_>, e: &PyErr, original: &PyErr) {
    if e.cause(py).is_none() {
        e.set_cause(py, Some(original.clone_ref(py)));
    } else {
        e.set_context(py, Some(original.clone_ref(py)));
    }
}

/// Seconds as `on=` answers them: an `int` too large for a float saturates
/// (the engine clamps it to `max_retry_after`; a huge negative one is the
/// jitter's, as any negative answer).
fn answer_seconds(answer: &Bound<'_, PyAny>) -> PyResult<f64> {
    match answer.extract::<f64>() {
        Ok(x) => Ok(x),
        Err(_) if answer.is_instance_of::<PyInt>() => {
            let negative = answer.lt(0)?;
            Ok(if negative { -f64::MAX } else { f64::MAX })
        }
        Err(e) => Err(e),
    }
}

/// A callable's answer as a classification (see the module's table).
fn verdict(answer: &Bound<'_, PyAny>) -> PyResult<Classification> {
    if let Ok(b) = answer.cast::<PyBool>() {
        return Ok(if b.is_true() {
            Classification::retryable()
        } else {
            Classification::terminal()
        });
    }
    if answer.is_none() {
        return Ok(Classification::terminal());
    }
    if let Ok(c) = answer.cast::<PyClassification>() {
        return Ok(c.get().inner);
    }
    if answer.is_instance_of::<PyInt>() || answer.is_instance_of::<PyFloat>() {
        return Ok(Classification::retry_after_secs(answer_seconds(answer)?));
    }
    if answer.is_instance_of::<PyDelta>() {
        let secs: f64 = answer.call_method0("total_seconds")?.extract()?;
        return Ok(Classification::retry_after_secs(secs));
    }
    if let Some(value) = header_bytes(answer)? {
        return Ok(retry_after_header(&value));
    }
    Err(PyTypeError::new_err(format!(
        "on= returned {}; expected True/False, None, seconds, a timedelta, a Retry-After \
         value (str) or a herdless.Classification",
        type_name(answer)
    )))
}

/// A header value given as `str` or `bytes` (`None` for anything else).
fn header_bytes(value: &Bound<'_, PyAny>) -> PyResult<Option<Vec<u8>>> {
    if let Ok(s) = value.cast::<PyString>() {
        // A str that is not valid UTF-8 (lone surrogates) is not a header value.
        return Ok(Some(
            s.to_cow()
                .map(|c| c.into_owned().into_bytes())
                .unwrap_or_else(|_| vec![0xFF]),
        ));
    }
    if let Ok(b) = value.cast::<PyBytes>() {
        return Ok(Some(b.as_bytes().to_vec()));
    }
    Ok(None)
}

/// A `Retry-After` value: retryable after what it asks, or after the
/// computed jitter when it cannot be used.
fn retry_after_header(value: &[u8]) -> Classification {
    match parse_retry_after(value, SystemTime::now()) {
        Ok(d) => Classification::retry_after(d),
        Err(_) => Classification::retryable(),
    }
}

/// What to do with a failed attempt, as `on=` callables may answer it.
#[pyclass(name = "Classification", module = "herdless", frozen, eq)]
#[derive(Debug, PartialEq)]
pub struct PyClassification {
    pub(crate) inner: Classification,
}

#[pymethods]
impl PyClassification {
    /// Retry after the computed jitter.
    #[staticmethod]
    fn retryable() -> Self {
        PyClassification {
            inner: Classification::retryable(),
        }
    }

    /// Never retry.
    #[staticmethod]
    fn terminal() -> Self {
        PyClassification {
            inner: Classification::terminal(),
        }
    }

    /// Retry after the server's delay in seconds (clamped to the policy's
    /// `max_retry_after` and spread); zero, negative or NaN: the jitter.
    #[staticmethod]
    fn retry_after(seconds: &Bound<'_, PyAny>) -> PyResult<Self> {
        let secs = crate::seconds::number("seconds", seconds).or_else(|e| {
            // NaN and infinities fall back to the jitter, as from a header;
            // an int beyond a float saturates (then clamped), as from `on=`.
            if seconds.is_instance_of::<PyInt>() {
                return answer_seconds(seconds);
            }
            match seconds.extract::<f64>() {
                Ok(x) if !x.is_finite() => Ok(x),
                _ => Err(e),
            }
        })?;
        Ok(PyClassification {
            inner: Classification::retry_after_secs(secs),
        })
    }

    /// The server held the request and put it back unprocessed (its
    /// `Herdless-Requeue` answer): try again after `seconds`, not counted as
    /// an attempt (the policy's `max_requeues` bounds them; `max_elapsed`
    /// counts them). Zero, negative or NaN: a plain retryable answer.
    #[staticmethod]
    fn requeued(seconds: &Bound<'_, PyAny>) -> PyResult<Self> {
        let after = Self::retry_after(seconds)?;
        Ok(PyClassification {
            inner: match after.inner.server_delay() {
                Some(d) => Classification::requeued(d),
                None => after.inner,
            },
        })
    }

    /// `retryable`, `terminal`, `unknown` (a status in neither set: terminal),
    /// `server_pushback` or `requeued`.
    #[getter]
    fn name(&self) -> &'static str {
        self.inner.as_str()
    }

    /// Whether the engine may retry.
    #[getter]
    fn is_retryable(&self) -> bool {
        self.inner.is_retryable()
    }

    /// Whether the server put the request back unprocessed (not an attempt).
    #[getter]
    fn is_requeue(&self) -> bool {
        self.inner.is_requeue()
    }

    /// The server's delay, seconds (before the clamp), if any.
    #[getter]
    fn server_delay(&self) -> Option<f64> {
        self.inner.server_delay().map(|d| d.as_secs_f64())
    }

    fn __repr__(&self) -> String {
        match self.inner.server_delay() {
            Some(d) if self.inner.is_requeue() => {
                format!("Classification.requeued({:?})", d.as_secs_f64())
            }
            Some(d) => format!("Classification.retry_after({:?})", d.as_secs_f64()),
            None => format!("<Classification {}>", self.inner.as_str()),
        }
    }
}

/// The classification of an HTTP response: `None` for a success (below
/// 400); 408, 425, 429, 500, 502, 503, 504 retryable (with the server's
/// delay from `Retry-After-Ms` or `Retry-After` when usable); 400, 401, 403,
/// 404, 405, 501, 507 terminal; any other status from 400 terminal
/// (`unknown`: fails closed).
#[pyfunction]
#[pyo3(signature = (status, retry_after=None, *, retry_after_ms=None))]
pub(crate) fn classify_status(
    status: &Bound<'_, PyAny>,
    retry_after: Option<&Bound<'_, PyAny>>,
    retry_after_ms: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<PyClassification>> {
    let status = crate::seconds::whole("status", status, 0, u64::from(u16::MAX))? as u16;
    let header = |v: Option<&Bound<'_, PyAny>>, name: &str| -> PyResult<Option<Vec<u8>>> {
        match v {
            None => Ok(None),
            Some(v) if v.is_none() => Ok(None),
            Some(v) => header_bytes(v)?.map(Some).ok_or_else(|| {
                PyTypeError::new_err(format!(
                    "{name}: expected str or bytes, got {}",
                    type_name(v)
                ))
            }),
        }
    };
    let after = header(retry_after, "retry_after")?;
    let after_ms = header(retry_after_ms, "retry_after_ms")?;
    Ok(classify_response_ms(
        &StatusClassifier::new(),
        status,
        after.as_deref(),
        after_ms.as_deref(),
        SystemTime::now(),
    )
    .map(|inner| PyClassification { inner }))
}

/// The delay a `Retry-After` value asks for, seconds (both forms: delay
/// seconds and an HTTP-date), or `None` when it cannot be used (empty,
/// malformed, a date in the past, non-ASCII, too long). Huge values
/// saturate; the retrier clamps them to its policy's `max_retry_after`.
#[pyfunction]
#[pyo3(name = "parse_retry_after")]
pub(crate) fn parse_retry_after_value(value: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
    let bytes = header_bytes(value)?.ok_or_else(|| {
        PyTypeError::new_err(format!("expected str or bytes, got {}", type_name(value)))
    })?;
    Ok(parse_retry_after(&bytes, SystemTime::now())
        .ok()
        .map(|d| d.as_secs_f64()))
}

/// `Retry-After-Ms` (whole milliseconds), seconds; `None` when unusable.
#[pyfunction]
#[pyo3(name = "parse_retry_after_ms")]
pub(crate) fn parse_retry_after_ms_value(value: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
    let bytes = header_bytes(value)?.ok_or_else(|| {
        PyTypeError::new_err(format!("expected str or bytes, got {}", type_name(value)))
    })?;
    Ok(std::str::from_utf8(&bytes)
        .ok()
        .and_then(parse_retry_after_ms)
        .map(|d| d.as_secs_f64()))
}

/// The library's retryable and terminal status sets, as frozensets.
pub(crate) fn status_sets(
    py: Python<'_>,
) -> PyResult<(Bound<'_, PyFrozenSet>, Bound<'_, PyFrozenSet>)> {
    let c = StatusClassifier::new();
    let set = |s: herdless::http::StatusSet| PyFrozenSet::new(py, s.iter());
    Ok((set(c.retryable())?, set(c.terminal())?))
}

/// The classification of an HTTP response from its status and headers (a
/// mapping with `items()`, such as `requests`' or `httpx`' headers, or
/// `(name, value)` pairs): `classify_status` with `Retry-After-Ms`,
/// `Retry-After`, and a retryable status carrying `Herdless-Requeue` with a
/// usable delay is `requeued` (not an attempt). Header names are compared
/// without case; a name or value that is not a header is ignored.
#[pyfunction]
pub(crate) fn classify_headers(
    status: &Bound<'_, PyAny>,
    headers: &Bound<'_, PyAny>,
) -> PyResult<Option<PyClassification>> {
    use http::{HeaderMap, HeaderName, HeaderValue};
    let status = crate::seconds::whole("status", status, 0, u64::from(u16::MAX))? as u16;
    let pairs = if headers.hasattr("items")? {
        headers.call_method0("items")?
    } else {
        headers.clone()
    };
    let mut map = HeaderMap::new();
    for pair in pairs.try_iter().map_err(|_| {
        PyTypeError::new_err(format!(
            "headers: expected a mapping or (name, value) pairs, got {}",
            type_name(headers)
        ))
    })? {
        let pair = pair?;
        let (name, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = pair.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "headers: expected (name, value) pairs, got {}",
                type_name(&pair)
            ))
        })?;
        let (Some(name), Some(value)) = (header_bytes(&name)?, header_bytes(&value)?) else {
            continue;
        };
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(&name),
            HeaderValue::from_bytes(&value),
        ) {
            // Only the headers the answer reads, a few values each: a
            // header map holds 32,768 entries and panics past them, and
            // `headers` may be as large as the caller likes.
            let read = [
                http::header::RETRY_AFTER.as_str(),
                herdless::http::RETRY_AFTER_MS,
                herdless::http::REQUEUE,
            ];
            if read.contains(&n.as_str()) && map.get_all(&n).iter().count() < VALUES_READ {
                map.append(n, v);
            }
        }
    }
    Ok(
        herdless::http::classify_headers(&StatusClassifier::new(), status, &map, SystemTime::now())
            .map(|inner| PyClassification { inner }),
    )
}

/// How many values of each header [`classify_headers`] keeps (the first).
const VALUES_READ: usize = 16;

/// The `Prefer` value to send for `seconds` of patience left: `wait=N`
/// (whole seconds, rounded down, at most a day). A server running herdless's
/// hold keeps a patient request up to that long instead of answering it
/// early.
#[pyfunction]
pub(crate) fn prefer_wait_value(seconds: &Bound<'_, PyAny>) -> PyResult<String> {
    let secs = crate::seconds::number("seconds", seconds)?;
    let d = std::time::Duration::try_from_secs_f64(secs.max(0.0))
        .unwrap_or(herdless::http::queue::MAX_PREFER_WAIT);
    Ok(herdless::http::prefer_wait_value(d)
        .to_str()
        .map(str::to_owned)
        .unwrap_or_default())
}
