//! The engine's events into Python's `logging` (logger `herdless`) and the
//! user's hook.
//!
//! The engine calls [`PyNotify`] synchronously with each event (the GIL is
//! held: the binding is inside a call). The record's message is the event's
//! name (`retry_scheduled`, `retry_requeued`, `retry_succeeded`, `retry_abandoned_terminal`,
//! `retry_budget_exhausted`), its level the library's default for that event
//! (WARNING, INFO, WARNING on a first attempt and ERROR after a retry,
//! ERROR), and its `extra` the library's fields under their names:
//! `task_id`, `attempt`, `computed_jitter_s`, `sleep_s`,
//! `honored_retry_after`, `timed_out`, `classification`, `elapsed_s`,
//! `reason` (each event carries its own subset), plus `event` (the name
//! again, so a JSON formatter that writes `extra` writes what `herdless
//! analyze` reads). The record's `created` is the timestamp.
//!
//! Nothing is built when nobody listens: the record only if the logger is
//! enabled for the level (`Logger.isEnabledFor`, cached by `logging`), the
//! field dict only for the logger or a hook. An `Exception` raised by a hook
//! or a handler is reported through `sys.unraisablehook` and the call goes
//! on: observing a retry never changes it. What is not an `Exception`
//! (`KeyboardInterrupt`, `SystemExit`) is the user stopping the program, as
//! it is when plain `logging` lets it out: no further event is sent, and
//! the call ends with it as soon as the engine's decision returns
//! ([`PyNotify::interrupt`]; the caller settles the engine).

use std::cell::Cell;

use herdless::events::{EventLevels, EventValue};
use herdless::{Notify, RetryEvent};
use pyo3::exceptions::PyException;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use tracing::Level;

use crate::retrier::Setup;

/// Forwards the engine's events to a logger and an optional hook.
pub(crate) struct PyNotify<'a, 'py> {
    py: Python<'py>,
    setup: &'a Setup,
    logger: Bound<'py, PyAny>,
    /// A `BaseException` that is not an `Exception`, raised by the hook or
    /// a handler: it ends the call.
    interrupt: Cell<Option<PyErr>>,
}

impl<'a, 'py> PyNotify<'a, 'py> {
    /// The events of a call configured by `setup`.
    pub(crate) fn new(py: Python<'py>, setup: &'a Setup) -> Self {
        PyNotify {
            py,
            setup,
            logger: setup.logger.bind(py).clone(),
            interrupt: Cell::new(None),
        }
    }

    /// The `KeyboardInterrupt`, `SystemExit` (any `BaseException` not an
    /// `Exception`) an observer raised, if one did: the call ends with it.
    pub(crate) fn interrupt(&self) -> Option<PyErr> {
        self.interrupt.take()
    }
}

/// Whether `e` is the user stopping the program rather than a failure.
fn stops(py: Python<'_>, e: &PyErr) -> bool {
    !e.is_instance_of::<PyException>(py)
}

/// A field's name as an interned Python string (made once per process).
fn key<'py>(py: Python<'py>, name: &str) -> Bound<'py, PyString> {
    match name {
        "event" => intern!(py, "event").clone(),
        "task_id" => intern!(py, "task_id").clone(),
        "attempt" => intern!(py, "attempt").clone(),
        "computed_jitter_s" => intern!(py, "computed_jitter_s").clone(),
        "sleep_s" => intern!(py, "sleep_s").clone(),
        "honored_retry_after" => intern!(py, "honored_retry_after").clone(),
        "timed_out" => intern!(py, "timed_out").clone(),
        "classification" => intern!(py, "classification").clone(),
        "elapsed_s" => intern!(py, "elapsed_s").clone(),
        "reason" => intern!(py, "reason").clone(),
        "retry_scheduled" => intern!(py, "retry_scheduled").clone(),
        "retry_succeeded" => intern!(py, "retry_succeeded").clone(),
        "retry_abandoned_terminal" => intern!(py, "retry_abandoned_terminal").clone(),
        "retry_budget_exhausted" => intern!(py, "retry_budget_exhausted").clone(),
        other => PyString::new(py, other),
    }
}

/// The `logging` level of a `tracing` level.
fn py_level(level: Level) -> u8 {
    match level {
        Level::ERROR => 40,
        Level::WARN => 30,
        Level::INFO => 20,
        Level::DEBUG => 10,
        _ => 5,
    }
}

impl PyNotify<'_, '_> {
    /// The event's fields as a dict (the `extra` of the record).
    fn fields(&self, event: &RetryEvent<'_>) -> PyResult<Bound<'_, PyDict>> {
        let py = self.py;
        let d = PyDict::new(py);
        d.set_item(key(py, "event"), key(py, event.name()))?;
        let mut result = Ok(());
        event.visit(|name, value| {
            if result.is_err() {
                return;
            }
            let name = key(py, name);
            result = match value {
                EventValue::Str(s) => d.set_item(name, s),
                EventValue::U32(n) => d.set_item(name, n),
                EventValue::Seconds(s) => d.set_item(name, s.as_secs_f64()),
                EventValue::Bool(b) => d.set_item(name, b),
                _ => d.set_item(name, value.to_string()),
            };
        });
        result.map(|()| d)
    }

    fn emit(&self, event: &RetryEvent<'_>) -> PyResult<()> {
        let level = py_level(EventLevels::DEFAULT.level(event));
        let logged = self
            .logger
            .call_method1(intern!(self.py, "isEnabledFor"), (level,))?
            .is_truthy()?;
        if !logged && self.setup.hook.is_none() {
            return Ok(());
        }
        let fields = self.fields(event)?;
        if let Some(hook) = self.setup.hook.as_ref().map(|h| h.bind(self.py)) {
            match hook.call1((event.name(), fields.copy()?)) {
                Ok(_) => {}
                Err(e) if stops(self.py, &e) => return Err(e),
                Err(e) => e.write_unraisable(self.py, Some(hook)),
            }
        }
        if !logged {
            return Ok(());
        }
        let py = self.py;
        let message = key(py, event.name());
        let none = py.None();
        match &self.setup.site {
            // What `Logger._log` does once it has found the caller, with the
            // decorated function as the caller instead of a walk of the
            // stack: the record from the current record factory, the fields
            // set on it (as `Logger.makeRecord` does, unless the logger's
            // class has a `makeRecord` of its own), `Logger.handle`.
            Some(site) if self.setup.plain_logger => {
                let factory = self.setup.record_factory.bind(py).call0()?;
                let record = factory.call1((
                    self.setup.logger_name.bind(py),
                    level,
                    site.file.bind(py),
                    site.line.bind(py),
                    message,
                    PyTuple::empty(py),
                    &none,
                    site.func.bind(py),
                    &none,
                ))?;
                record
                    .getattr(intern!(py, "__dict__"))?
                    .call_method1(intern!(py, "update"), (fields,))?;
                self.logger.call_method1(intern!(py, "handle"), (record,))?;
            }
            Some(site) => {
                let args = (
                    self.setup.logger_name.bind(py),
                    level,
                    site.file.bind(py),
                    site.line.bind(py),
                    message,
                    PyTuple::empty(py),
                    &none,
                    site.func.bind(py),
                    fields,
                    &none,
                );
                let record = self.logger.call_method1(intern!(py, "makeRecord"), args)?;
                self.logger.call_method1(intern!(py, "handle"), (record,))?;
            }
            None => {
                let kwargs = PyDict::new(py);
                kwargs.set_item(intern!(py, "extra"), fields)?;
                self.logger
                    .call_method(intern!(py, "log"), (level, message), Some(&kwargs))?;
            }
        }
        Ok(())
    }
}

impl Notify for PyNotify<'_, '_> {
    fn notify(&self, event: &RetryEvent<'_>) {
        let interrupted = self.interrupt.take();
        if interrupted.is_some() {
            // Stopped: nothing more is observed.
            self.interrupt.set(interrupted);
            return;
        }
        match self.emit(event) {
            Ok(()) => {}
            Err(e) if stops(self.py, &e) => self.interrupt.set(Some(e)),
            Err(e) => e.write_unraisable(self.py, Some(&self.logger)),
        }
    }
}
