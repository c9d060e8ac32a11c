//! The engine's events into Python's `logging` (logger `herdless`) and the
//! user's hook.
//!
//! The engine calls [`PyNotify`] synchronously with each event (the GIL is
//! held: the binding is inside a call). The record's message is the event's
//! name (`retry_scheduled`, `retry_succeeded`, `retry_abandoned_terminal`,
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
//! field dict only for the logger or a hook. An exception raised by a hook
//! or a handler is reported through `sys.unraisablehook` and the call goes
//! on: observing a retry never changes it.

use herdless::engine::{EventLevels, EventValue};
use herdless::{Notify, RetryEvent};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tracing::Level;

/// Forwards the engine's events to a logger and an optional hook.
pub(crate) struct PyNotify<'a, 'py> {
    pub(crate) py: Python<'py>,
    pub(crate) logger: &'a Bound<'py, PyAny>,
    pub(crate) hook: Option<&'a Bound<'py, PyAny>>,
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
        d.set_item("event", event.name())?;
        let mut result = Ok(());
        event.visit(|name, value| {
            if result.is_err() {
                return;
            }
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
            .call_method1(pyo3::intern!(self.py, "isEnabledFor"), (level,))?
            .is_truthy()?;
        if !logged && self.hook.is_none() {
            return Ok(());
        }
        let fields = self.fields(event)?;
        if let Some(hook) = self.hook {
            if let Err(e) = hook.call1((event.name(), fields.copy()?)) {
                e.write_unraisable(self.py, Some(hook));
            }
        }
        if logged {
            let kwargs = PyDict::new(self.py);
            kwargs.set_item(pyo3::intern!(self.py, "extra"), fields)?;
            self.logger.call_method(
                pyo3::intern!(self.py, "log"),
                (level, event.name()),
                Some(&kwargs),
            )?;
        }
        Ok(())
    }
}

impl Notify for PyNotify<'_, '_> {
    fn notify(&self, event: &RetryEvent<'_>) {
        if let Err(e) = self.emit(event) {
            e.write_unraisable(self.py, Some(self.logger));
        }
    }
}
