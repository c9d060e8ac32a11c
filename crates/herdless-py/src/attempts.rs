//! One call driven step by step: `for attempt in retry_context(...)`, its
//! `async for` twin and decorated coroutines.
//!
//! [`Attempts::advance`] says what comes next: a wait (seconds, a float: the
//! driver sleeps it, `time.sleep` or `asyncio.sleep`, then asks again), an
//! [`Attempt`] to run, or `None` when the call is over. The attempt's end is
//! reported with [`Attempts::exit`] (what `with attempt:` does): `True` when
//! the exception is swallowed because the engine retries, `False` when it
//! must propagate unchanged. The drivers in `herdless/__init__.py` only
//! sleep and call; in testing mode no wait is ever returned. An abandoned
//! call (a `break`, a cancelled coroutine, a garbage-collected iterator) is
//! settled: a retry the budget admitted but that never began is refunded.

use std::time::Duration;

use pyo3::exceptions::{PyRuntimeError, PyStopIteration};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::call::{Call, Ready, Step};
use crate::retrier::{Retrier, sleep};

/// Where the call is.
#[derive(Debug)]
enum State {
    /// Before the first attempt (a throttle may make it wait).
    Start,
    /// Attempt `n` is running.
    Running,
    /// The attempt failed and the engine retries after this delay.
    Retry(Duration),
    /// The delay has passed: the gate (breaker, throttle) is asked.
    Gate,
    /// Over.
    Done,
}

/// A call's step-by-step driver.
#[derive(Debug)]
#[pyclass(name = "_Attempts", module = "herdless._herdless")]
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

    /// One step (see the module): `Ok(Ok(wait))` to wait, `Ok(Err(n))` to
    /// run attempt `n`, an error to re-raise, or `None` when over.
    fn step(&mut self, py: Python<'_>) -> PyResult<Option<Result<Duration, u32>>> {
        let retrier = self.retrier.clone_ref(py);
        let setup = &retrier.get().setup;
        loop {
            match self.state {
                State::Done => return Ok(None),
                State::Running => {
                    self.state = State::Done;
                    self.call.cancel(setup);
                    return Err(PyRuntimeError::new_err(
                        "herdless: each attempt must run inside `with attempt:` (the attempt \
                         before this one never reported how it ended)",
                    ));
                }
                State::Retry(delay) => {
                    self.state = State::Gate;
                    if !delay.is_zero() {
                        if self.call.is_testing() {
                            self.call.skip(delay);
                        } else {
                            return Ok(Some(Ok(delay)));
                        }
                    }
                }
                State::Start | State::Gate => {
                    let last = self.last.as_ref().map(|e| e.bind(py).clone());
                    match self.call.ready(py, setup, last.as_ref()) {
                        Ready::Go => {
                            let n = self.call.begin();
                            self.state = State::Running;
                            return Ok(Some(Err(n)));
                        }
                        Ready::Wait(wait) if self.call.is_testing() => self.call.skip(wait),
                        Ready::Wait(wait) => return Ok(Some(Ok(wait))),
                        Ready::Stop => {
                            self.state = State::Done;
                            return Err(match self.last.take() {
                                Some(e) => PyErr::from_value(e.into_bound(py)),
                                None => PyRuntimeError::new_err("herdless: the call gave up"),
                            });
                        }
                    }
                }
            }
        }
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
                    return Ok(Attempt {
                        attempts: slf.clone().unbind(),
                        number,
                    });
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
            Some(Err(number)) => Py::new(
                py,
                Attempt {
                    attempts: slf.clone().unbind(),
                    number,
                },
            )?
            .into_any(),
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
            self.state = State::Done;
            self.call.succeeded(py, setup);
            return Ok(false);
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
            Ok(Step::Retry(delay)) => {
                self.state = State::Retry(delay);
                self.last = Some(error.unbind());
                Ok(true)
            }
            Ok(Step::Stop) => {
                self.state = State::Done;
                Ok(false)
            }
            Err(e) => {
                self.state = State::Done;
                Err(e)
            }
        }
    }

    /// Ends the call early (settles the engine); harmless once it is over.
    fn cancel(&mut self) {
        if !matches!(self.state, State::Done) {
            self.state = State::Done;
            self.call.cancel(&self.retrier.get().setup);
        }
    }

    /// Attempts begun so far.
    #[getter]
    fn attempts(&self) -> u32 {
        self.call.attempts()
    }
}

/// One attempt of a `retry_context` block: use it as `with attempt:`.
#[derive(Debug)]
#[pyclass(name = "Attempt", module = "herdless", frozen)]
pub struct Attempt {
    attempts: Py<Attempts>,
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

    #[pyo3(signature = (_exc_type=None, exc=None, _tb=None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<Bound<'_, PyAny>>,
        exc: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.attempts.bind(py).borrow_mut().exit(py, exc)
    }

    fn __repr__(&self) -> String {
        format!("<Attempt {}>", self.number)
    }
}
