//! One call driven step by step: `for attempt in retry_context(...)`, its
//! `async for` twin and decorated coroutines.
//!
//! [`Attempts::advance`] says what comes next: a wait (seconds, a float: the
//! driver sleeps it, `time.sleep` or `asyncio.sleep`, then asks again), an
//! [`Attempt`] to run, or `None` when the call is over. The attempt's end is
//! reported with [`Attempts::exit`] (what `with attempt:` does): `True` when
//! the exception is swallowed because the engine retries, `False` when it
//! must propagate unchanged. The drivers in `herdless/__init__.py` only
//! sleep and call; in testing mode no wait is ever returned.
//!
//! An abandoned call (a `break`, an exception between the loop and `with
//! attempt:`, a cancelled coroutine) is settled as soon as its iterator is
//! dropped: a retry the budget admitted but that never began is refunded, a
//! breaker's probe released. Two rules make "as soon as" true without the
//! garbage collector:
//!
//! - an [`Attempt`] holds its call by a weak reference. The call keeps the
//!   last exception (re-raised if a gate gives up), whose traceback holds
//!   the block's frame, whose locals hold the attempt: a strong reference
//!   would close a cycle, and the call (with the probe it holds, the tokens
//!   it took, the frames and arguments) would live until a collection;
//! - the last exception, the arguments and the keyword arguments are let go
//!   the moment the call is over.
//!
//! What cycles remain possible (arguments that refer back to the call) are
//! visible to the collector: `__traverse__` names every reference, and
//! `__clear__` settles the call before letting them go.

use std::time::Duration;

use pyo3::exceptions::{PyRuntimeError, PyStopIteration};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyWeakrefMethods, PyWeakrefReference};
use pyo3::{PyTraverseError, PyVisit};

use crate::call::{Call, Ready, Step};
use crate::retrier::{Retrier, sleep};

/// Where the call is.
#[derive(Debug)]
enum State {
    /// Before the first attempt (a throttle may make it wait).
    Start,
    /// Attempt `n` is running.
    Running,
    /// The attempt failed and the engine retries when it comes due.
    Retry,
    /// The wait has passed: the gate (the elapsed limit, a breaker, a
    /// throttle) is asked.
    Gate,
    /// Over.
    Done,
}

/// A call's step-by-step driver.
#[derive(Debug)]
#[pyclass(name = "_Attempts", module = "herdless._herdless", weakref)]
pub struct Attempts {
    retrier: Py<Retrier>,
    call: Call,
    state: State,
    args: Option<Py<PyTuple>>,
    kwargs: Option<Py<PyDict>>,
    /// The last attempt's exception, re-raised if the gate gives up.
    last: Option<Py<PyAny>>,
}

impl Attempts {
    pub(crate) fn new(
        retrier: Py<Retrier>,
        args: Option<Py<PyTuple>>,
        kwargs: Option<Py<PyDict>>,
    ) -> Self {
        let call = Call::start(&retrier.get().setup);
        Attempts {
            retrier,
            call,
            state: State::Start,
            args,
            kwargs,
            last: None,
        }
    }

    /// The call is over: what it held for later is let go (see the module).
    fn finish(&mut self) {
        self.state = State::Done;
        self.last = None;
        self.args = None;
        self.kwargs = None;
    }

    /// One step (see the module): `Ok(Ok(wait))` to wait, `Ok(Err(n))` to
    /// run attempt `n`, an error to re-raise, or `None` when over.
    fn step(&mut self, py: Python<'_>) -> PyResult<Option<Result<Duration, u32>>> {
        let retrier = self.retrier.clone_ref(py);
        let setup = &retrier.get().setup;
        loop {
            match self.state {
                State::Done => return Ok(None),
                State::Running => {
                    self.call.cancel(setup);
                    self.finish();
                    return Err(PyRuntimeError::new_err(
                        "herdless: each attempt must run inside `with attempt:` (the attempt \
                         before this one never reported how it ended)",
                    ));
                }
                State::Retry => {
                    self.state = State::Gate;
                    let wait = self.call.retry_wait();
                    if !wait.is_zero() {
                        if self.call.is_testing() {
                            self.call.skip(wait);
                        } else {
                            return Ok(Some(Ok(wait)));
                        }
                    }
                }
                State::Start | State::Gate => {
                    let last = self.last.as_ref().map(|e| e.bind(py).clone());
                    let ready = match self.call.ready(py, setup, last.as_ref()) {
                        Ok(r) => r,
                        Err(e) => {
                            self.finish();
                            return Err(e);
                        }
                    };
                    match ready {
                        Ready::Go => {
                            let n = self.call.begin();
                            self.state = State::Running;
                            return Ok(Some(Err(n)));
                        }
                        Ready::Wait(wait) if self.call.is_testing() => self.call.skip(wait),
                        Ready::Wait(wait) => return Ok(Some(Ok(wait))),
                        Ready::Stop => {
                            let last = self.last.take();
                            self.finish();
                            return Err(match last {
                                Some(e) => PyErr::from_value(e.into_bound(py)),
                                None => self.call.unstarted(py),
                            });
                        }
                    }
                }
            }
        }
    }

    /// An [`Attempt`] of this call (a weak reference to it: see the module).
    fn attempt(slf: &Bound<'_, Self>, number: u32) -> PyResult<Attempt> {
        Ok(Attempt {
            attempts: PyWeakrefReference::new(slf.as_any())?.unbind(),
            number,
        })
    }
}

impl Drop for Attempts {
    fn drop(&mut self) {
        if !matches!(self.state, State::Done) {
            self.call.cancel(&self.retrier.get().setup);
        }
    }
}

#[pymethods]
impl Attempts {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next attempt, after sleeping (`time.sleep`) what the engine asks.
    fn __next__(slf: Bound<'_, Self>) -> PyResult<Attempt> {
        let py = slf.py();
        loop {
            let mut this = slf.borrow_mut();
            match this.step(py)? {
                None => return Err(PyStopIteration::new_err(())),
                Some(Err(number)) => {
                    drop(this);
                    return Attempts::attempt(&slf, number);
                }
                Some(Ok(wait)) => {
                    if let Err(e) = sleep(py, &mut this.call, wait) {
                        this.cancel();
                        return Err(e);
                    }
                }
            }
        }
    }

    /// The next step for an async driver: seconds to wait, an `Attempt`,
    /// or `None` when the call is over.
    fn advance(slf: Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let step = slf.borrow_mut().step(py)?;
        Ok(match step {
            None => py.None(),
            Some(Ok(wait)) => wait.as_secs_f64().into_pyobject(py)?.into_any().unbind(),
            Some(Err(number)) => Py::new(py, Attempts::attempt(&slf, number)?)?.into_any(),
        })
    }

    /// The running attempt ended: `None` for a success, else its exception.
    /// `True`: the engine retries (swallow it); `False`: let it propagate.
    fn exit(&mut self, py: Python<'_>, error: Option<Bound<'_, PyAny>>) -> PyResult<bool> {
        if !matches!(self.state, State::Running) {
            return Err(PyRuntimeError::new_err(
                "herdless: this attempt has already ended",
            ));
        }
        let retrier = self.retrier.clone_ref(py);
        let setup = &retrier.get().setup;
        let Some(error) = error.filter(|e| !e.is_none()) else {
            self.finish();
            return self.call.succeeded(py, setup).map(|()| false);
        };
        let err = PyErr::from_value(error.clone());
        let args = self.args.as_ref().map(|a| {
            (
                a.bind(py).clone(),
                self.kwargs.as_ref().map(|k| k.bind(py).clone()),
            )
        });
        let step = self
            .call
            .failed(py, setup, &err, args.as_ref().map(|(a, k)| (a, k.as_ref())));
        match step {
            Ok(Step::Retry) => {
                self.state = State::Retry;
                self.last = Some(error.unbind());
                Ok(true)
            }
            Ok(Step::Stop) => {
                self.finish();
                Ok(false)
            }
            Err(e) => {
                self.finish();
                Err(e)
            }
        }
    }

    /// Ends the call early (settles the engine); harmless once it is over.
    fn cancel(&mut self) {
        if !matches!(self.state, State::Done) {
            self.call.cancel(&self.retrier.get().setup);
        }
        self.finish();
    }

    /// Attempts begun so far.
    #[getter]
    fn attempts(&self) -> u32 {
        self.call.attempts()
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.retrier)?;
        visit.call(&self.args)?;
        visit.call(&self.kwargs)?;
        visit.call(&self.last)
    }

    fn __clear__(&mut self) {
        self.cancel();
    }
}

/// One attempt of a `retry_context` block: use it as `with attempt:`.
#[derive(Debug)]
#[pyclass(name = "Attempt", module = "herdless", frozen)]
pub struct Attempt {
    /// Its call, weakly (see the module).
    attempts: Py<PyWeakrefReference>,
    number: u32,
}

#[pymethods]
impl Attempt {
    /// The attempt's number (1 for the first call).
    #[getter]
    fn number(&self) -> u32 {
        self.number
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Reports the attempt's end to its call. A call already dropped (its
    /// loop was left, so it was settled) has nothing left to decide.
    #[pyo3(signature = (_exc_type=None, exc=None, _tb=None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<Bound<'_, PyAny>>,
        exc: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let Some(call) = self.attempts.bind(py).upgrade_as::<Attempts>()? else {
            return Err(PyRuntimeError::new_err(
                "herdless: this attempt has already ended (its retry_context loop is over)",
            ));
        };
        call.borrow_mut().exit(py, exc)
    }

    fn __repr__(&self) -> String {
        format!("<Attempt {}>", self.number)
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.attempts)
    }
}
