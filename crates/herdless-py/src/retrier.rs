//! `_Retrier`: what `herdless.retry(...)` and `herdless.retry_context(...)`
//! are configured with, checked once when they are made, and the blocking
//! driver of a decorated function.
//!
//! The blocking driver is a loop in Rust (a decorated call makes one call
//! into the extension, whatever its attempts): call the function; on
//! success tell the engine and return; on an exception classify it with
//! `on=`, ask the engine, and either re-raise it unchanged or sleep what is
//! left of the engine's delay once its events are sent (the delay counts
//! from the decision) with `time.sleep` (which releases the GIL; looked up
//! at each sleep, so a test that patches `time.sleep` patches herdless too)
//! and ask the engine whether the retry may start (every retry: one whose
//! wait overran the elapsed limit does not). Coroutines and
//! `retry_context` blocks are driven step by step through
//! [`Attempts`].

use herdless::Policy;
use herdless::engine::Context;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use pyo3::{PyTraverseError, PyVisit};

use crate::attempts::Attempts;
use crate::call::{Call, Ready, Step, task_string};
use crate::classify::On;
use crate::guards::{PyBreaker, PyBudget, PyThrottle};
use crate::policy::PyPolicy;
use crate::seconds::type_name;

/// How a call's task id is made.
#[derive(Debug)]
pub(crate) enum TaskId {
    /// A fresh random id per call (16 hex digits), made at its first failure.
    Fresh,
    /// The same id for every call.
    Fixed(String),
    /// The user's callable, called with the call's arguments at its first
    /// failure.
    PerCall(Py<PyAny>),
}

/// A retrier's configuration.
#[derive(Debug)]
pub(crate) struct Setup {
    pub(crate) policy: Policy,
    pub(crate) on: On,
    pub(crate) budget: Option<Py<PyBudget>>,
    pub(crate) breaker: Option<Py<PyBreaker>>,
    pub(crate) throttle: Option<Py<PyThrottle>>,
    pub(crate) task: TaskId,
    pub(crate) hook: Option<Py<PyAny>>,
    /// `logging.getLogger("herdless")`, its name, and whether its class
    /// makes records as `logging.Logger` does (no `makeRecord` of its own).
    pub(crate) logger: Py<PyAny>,
    pub(crate) logger_name: Py<PyAny>,
    pub(crate) plain_logger: bool,
    /// `logging.getLogRecordFactory`.
    pub(crate) record_factory: Py<PyAny>,
    /// The decorated function's code (the events' caller), once bound.
    pub(crate) site: Option<Site>,
}

/// Where a decorated function is: its file, first line and name, the
/// caller its events' records name (a block's records find theirs on the
/// stack).
#[derive(Debug)]
pub(crate) struct Site {
    pub(crate) file: Py<PyAny>,
    pub(crate) line: Py<PyAny>,
    pub(crate) func: Py<PyAny>,
}

impl Site {
    /// `f`'s site, if it has Python code (`__code__`).
    fn of(f: &Bound<'_, PyAny>) -> Option<Site> {
        let code = f.getattr("__code__").ok()?;
        Some(Site {
            file: code.getattr("co_filename").ok()?.unbind(),
            line: code.getattr("co_firstlineno").ok()?.unbind(),
            func: code.getattr("co_name").ok()?.unbind(),
        })
    }
}

impl Setup {
    /// The engine's context for `policy` and the shared guards (events
    /// are not traced: they go to `logging` through the hook).
    #[inline]
    pub(crate) fn context<'a>(&'a self, policy: &'a Policy) -> Context<'a> {
        let mut cx = Context::new(policy).trace(false).metrics(false);
        if let Some(b) = &self.budget {
            cx = cx.budget(&b.get().inner);
        }
        if let Some(b) = &self.breaker {
            cx = cx.breaker(&b.get().inner);
        }
        if let Some(t) = &self.throttle {
            cx = cx.throttle(&t.get().inner);
        }
        cx
    }

    /// Whether any shared guard is configured.
    #[inline]
    pub(crate) fn guarded(&self) -> bool {
        self.budget.is_some() || self.breaker.is_some() || self.throttle.is_some()
    }

    /// Whether an attempt asks a gate before it starts (a breaker or a
    /// throttle); without one the engine's answer is always "go".
    #[inline]
    pub(crate) fn gated(&self) -> bool {
        self.breaker.is_some() || self.throttle.is_some()
    }
}

/// Sleeps `wait` with Python's `time.sleep` (the GIL released, signals
/// delivered), or skips it in testing mode.
pub(crate) fn sleep(py: Python<'_>, call: &mut Call, wait: std::time::Duration) -> PyResult<()> {
    if call.is_testing() {
        call.skip(wait);
        return Ok(());
    }
    py.import(pyo3::intern!(py, "time"))?
        .getattr(pyo3::intern!(py, "sleep"))?
        .call1((wait.as_secs_f64(),))
        .map(drop)
}

/// A configured retrier (the object behind `herdless.retry` and
/// `herdless.retry_context`).
#[derive(Debug)]
#[pyclass(name = "_Retrier", module = "herdless._herdless", frozen)]
pub struct Retrier {
    pub(crate) setup: Setup,
}

#[pymethods]
impl Retrier {
    #[new]
    #[pyo3(signature = (*, on, policy=None, budget=None, breaker=None, throttle=None,
        task_id=None, hook=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        on: &Bound<'_, PyAny>,
        policy: Option<&Bound<'_, PyAny>>,
        budget: Option<&Bound<'_, PyAny>>,
        breaker: Option<&Bound<'_, PyAny>>,
        throttle: Option<&Bound<'_, PyAny>>,
        task_id: Option<&Bound<'_, PyAny>>,
        hook: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let policy = match policy.filter(|p| !p.is_none()) {
            None => Policy::default(),
            Some(p) => {
                p.cast::<PyPolicy>()
                    .map_err(|_| wrong("policy", "a herdless.Policy", p))?
                    .get()
                    .inner
            }
        };
        let budget = guard::<PyBudget>("budget", "a herdless.Budget", budget)?;
        let breaker = guard::<PyBreaker>("breaker", "a herdless.Breaker", breaker)?;
        let throttle = guard::<PyThrottle>("throttle", "a herdless.Throttle", throttle)?;
        let task = match task_id.filter(|t| !t.is_none()) {
            None => TaskId::Fresh,
            Some(t)
                if t.is_instance_of::<PyString>() || t.is_instance_of::<pyo3::types::PyInt>() =>
            {
                TaskId::Fixed(task_string("task_id", t)?)
            }
            Some(t) if t.is_callable() => TaskId::PerCall(t.clone().unbind()),
            Some(t) => return Err(wrong("task_id", "a str, an int or a callable", t)),
        };
        let hook = match hook.filter(|h| !h.is_none()) {
            None => None,
            Some(h) if h.is_callable() => Some(h.clone().unbind()),
            Some(h) => return Err(wrong("hook", "a callable (name, fields)", h)),
        };
        let logging = py.import("logging")?;
        let logger = logging.call_method1("getLogger", ("herdless",))?;
        let plain_logger = logger
            .get_type()
            .getattr("makeRecord")?
            .is(&logging.getattr("Logger")?.getattr("makeRecord")?);
        let logger_name = logger.getattr("name")?.unbind();
        let record_factory = logging.getattr("getLogRecordFactory")?.unbind();
        let logger = logger.unbind();
        Ok(Retrier {
            setup: Setup {
                policy,
                on: On::new(on)?,
                budget,
                breaker,
                throttle,
                task,
                hook,
                logger,
                logger_name,
                plain_logger,
                record_factory,
                site: None,
            },
        })
    }

    /// This retrier for the decorated function `f`: the same settings and
    /// shared guards, with `f` as its events' caller.
    fn bind(&self, py: Python<'_>, f: &Bound<'_, PyAny>) -> Self {
        let s = &self.setup;
        let on = match &s.on {
            On::Types(t) => On::Types(t.clone_ref(py)),
            On::Callable(c) => On::Callable(c.clone_ref(py)),
        };
        let task = match &s.task {
            TaskId::Fresh => TaskId::Fresh,
            TaskId::Fixed(id) => TaskId::Fixed(id.clone()),
            TaskId::PerCall(c) => TaskId::PerCall(c.clone_ref(py)),
        };
        let copy = |o: &Option<Py<PyAny>>| o.as_ref().map(|o| o.clone_ref(py));
        Retrier {
            setup: Setup {
                policy: s.policy,
                on,
                budget: s.budget.as_ref().map(|b| b.clone_ref(py)),
                breaker: s.breaker.as_ref().map(|b| b.clone_ref(py)),
                throttle: s.throttle.as_ref().map(|t| t.clone_ref(py)),
                task,
                hook: copy(&s.hook),
                logger: s.logger.clone_ref(py),
                logger_name: s.logger_name.clone_ref(py),
                plain_logger: s.plain_logger,
                record_factory: s.record_factory.clone_ref(py),
                site: Site::of(f),
            },
        }
    }

    /// Calls `f(*args, **kwargs)` until it succeeds or the engine gives up;
    /// the last exception is re-raised unchanged.
    #[pyo3(signature = (f, args, kwargs=None))]
    fn call(
        &self,
        py: Python<'_>,
        f: &Bound<'_, PyAny>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let setup = &self.setup;
        let mut call = Call::start(setup);
        let result = drive(py, setup, &mut call, f, args, kwargs);
        // Settles a call that ended early (an exception from a sleep or a
        // classifier); does nothing to one that ended with the engine.
        call.cancel(setup);
        result
    }

    /// A step-by-step driver of one call (coroutines, `retry_context`).
    #[pyo3(signature = (args=None, kwargs=None))]
    fn attempts(slf: Py<Self>, args: Option<Py<PyTuple>>, kwargs: Option<Py<PyDict>>) -> Attempts {
        Attempts::new(slf, args, kwargs)
    }

    /// Every Python object the configuration holds, for the collector: a
    /// hook or an `on=` that refers back to the decorated function (a bound
    /// method of the object that owns it) closes a cycle through here.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        let s = &self.setup;
        match &s.on {
            On::Types(o) | On::Callable(o) => visit.call(o)?,
        }
        if let TaskId::PerCall(f) = &s.task {
            visit.call(f)?;
        }
        visit.call(&s.hook)?;
        visit.call(&s.budget)?;
        visit.call(&s.breaker)?;
        visit.call(&s.throttle)?;
        visit.call(&s.logger)?;
        visit.call(&s.logger_name)?;
        visit.call(&s.record_factory)?;
        if let Some(site) = &s.site {
            visit.call(&site.file)?;
            visit.call(&site.line)?;
            visit.call(&site.func)?;
        }
        Ok(())
    }
}

/// The blocking loop (see the module).
fn drive(
    py: Python<'_>,
    setup: &Setup,
    call: &mut Call,
    f: &Bound<'_, PyAny>,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyAny>> {
    if setup.throttle.is_some() {
        // The throttle paces first attempts too; one whose turn comes at or
        // past the elapsed limit is not made (0 attempts).
        loop {
            match call.ready(py, setup, None)? {
                Ready::Go => break,
                Ready::Wait(wait) => sleep(py, call, wait)?,
                Ready::Stop => return Err(call.unstarted(py)),
            }
        }
    }
    loop {
        call.begin();
        let error = match f.call(args, kwargs) {
            Ok(value) => {
                call.succeeded(py, setup)?;
                return Ok(value.unbind());
            }
            Err(e) => e,
        };
        match call.failed(py, setup, &error, Some((args, kwargs)))? {
            Step::Stop => return Err(error),
            // Counted from the decision: the events' observers took part of it.
            Step::Retry => sleep(py, call, call.retry_wait())?,
        }
        loop {
            match call.ready(py, setup, Some(error.value(py).as_any()))? {
                Ready::Go => break,
                Ready::Wait(wait) => sleep(py, call, wait)?,
                Ready::Stop => return Err(error),
            }
        }
    }
}

/// A shared guard argument: `None` or the named class.
fn guard<T: pyo3::PyClass + pyo3::type_object::PyTypeCheck>(
    field: &str,
    expected: &str,
    value: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<Py<T>>> {
    match value.filter(|v| !v.is_none()) {
        None => Ok(None),
        Some(v) => v
            .cast::<T>()
            .map(|b| Some(b.clone().unbind()))
            .map_err(|_| wrong(field, expected, v)),
    }
}

/// A `TypeError` naming the argument, what it takes and what it got.
fn wrong(field: &str, expected: &str, got: &Bound<'_, PyAny>) -> PyErr {
    PyTypeError::new_err(format!(
        "{field}: expected {expected}, got {}",
        type_name(got)
    ))
}
