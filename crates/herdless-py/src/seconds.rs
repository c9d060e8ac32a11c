//! Durations from Python: seconds as `int` or `float`, a `datetime.timedelta`,
//! or a human string (`"500ms"`, `"1m 30s"`, the syntax of a policy file).
//!
//! Every refusal is a `ValueError` (a `TypeError` for a value of the wrong
//! kind) that names the setting: NaN, infinities, negative values and values
//! beyond the largest duration (`u64` nanoseconds, about 584 years) are
//! refused here, never clamped, so a typo cannot turn into a silent default.

use std::time::Duration;

use herdless::policy::MAX_DURATION;
use herdless::policy::serde::parse_duration;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDelta, PyFloat, PyInt, PyString};

/// `value` as a duration for the setting `field`.
pub(crate) fn duration(field: &str, value: &Bound<'_, PyAny>) -> PyResult<Duration> {
    if value.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{field}: expected seconds (int or float), a timedelta or a duration string, got bool"
        )));
    }
    if let Ok(s) = value.cast::<PyString>() {
        let text = s.to_cow()?;
        return parse_duration(&text).map_err(|e| PyValueError::new_err(format!("{field}: {e}")));
    }
    let secs: f64 = if value.is_instance_of::<PyDelta>() {
        value.call_method0("total_seconds")?.extract()?
    } else if value.is_instance_of::<PyInt>() || value.is_instance_of::<PyFloat>() {
        float(value)
    } else {
        return Err(PyTypeError::new_err(format!(
            "{field}: expected seconds (int or float), a timedelta or a duration string, got {}",
            type_name(value)
        )));
    };
    from_secs(field, secs)
}

/// `secs` as a duration for the setting `field`: finite, not negative, at
/// most [`MAX_DURATION`].
pub(crate) fn from_secs(field: &str, secs: f64) -> PyResult<Duration> {
    if secs.is_nan() {
        return Err(PyValueError::new_err(format!(
            "{field}: NaN is not a duration"
        )));
    }
    if secs < 0.0 {
        return Err(PyValueError::new_err(format!(
            "{field}: {secs} s is negative"
        )));
    }
    if secs.is_infinite() {
        return Err(PyValueError::new_err(format!(
            "{field}: infinite (or an int too large for a float) is beyond the largest \
             duration (2^64 ns, about 584 years)"
        )));
    }
    match Duration::try_from_secs_f64(secs) {
        Ok(d) if d <= MAX_DURATION => Ok(d),
        _ => Err(PyValueError::new_err(format!(
            "{field}: {secs:e} s is beyond the largest duration (2^64 ns, about 584 years)"
        ))),
    }
}

/// An integer setting within `min..=max`, refused with a `ValueError` naming
/// it (a `TypeError` for a non-integer, bools included).
pub(crate) fn whole(field: &str, value: &Bound<'_, PyAny>, min: u64, max: u64) -> PyResult<u64> {
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "{field}: expected an int, got {}",
            type_name(value)
        )));
    }
    let range = || PyValueError::new_err(format!("{field}: must be within {min}..={max}"));
    let n: i128 = value.extract().map_err(|_| range())?;
    u64::try_from(n)
        .ok()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(range)
}

/// A real-number setting: an `int` or a `float` (not a bool), finite.
pub(crate) fn number(field: &str, value: &Bound<'_, PyAny>) -> PyResult<f64> {
    if value.is_instance_of::<PyBool>()
        || !(value.is_instance_of::<PyInt>() || value.is_instance_of::<PyFloat>())
    {
        return Err(PyTypeError::new_err(format!(
            "{field}: expected a number, got {}",
            type_name(value)
        )));
    }
    let x = float(value);
    if x.is_finite() {
        Ok(x)
    } else if x.is_infinite() {
        Err(PyValueError::new_err(format!(
            "{field}: infinite (or an int too large for a float) is not a finite number"
        )))
    } else {
        Err(PyValueError::new_err(format!(
            "{field}: {x} is not a finite number"
        )))
    }
}

/// An `int` or a `float` as a float: an `int` beyond the largest float is an
/// infinity (of its sign), refused by the callers with the setting's name,
/// where `float(10**400)` would raise an `OverflowError` naming nothing.
fn float(value: &Bound<'_, PyAny>) -> f64 {
    value.extract::<f64>().unwrap_or_else(|_| {
        if value.lt(0).unwrap_or(false) {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        }
    })
}

/// The name of `value`'s type, for error messages.
pub(crate) fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map_or_else(|_| "an object".to_owned(), |n| n.to_string())
}
