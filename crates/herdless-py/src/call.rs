//! One retried call: the library's sans-IO [`Engine`] and what the binding
//! owns beside it (the generator, the task id, the testing clock). Every
//! decision is the engine's; this module builds the [`Context`] it reads
//! (policy, guards, task id, the event hook) and reports what happened.

use std::time::Duration;

use herdless::engine::{Context, Decision, Engine, Gate};
use herdless::{GiveUp, Policy, Rng};
use pyo3::exceptions::{PyException, PyTimeoutError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyString, PyTuple};

use crate::events::PyNotify;
use crate::retrier::{Setup, TaskId};
use crate::seconds::type_name;
use crate::testing;

/// What follows a failed attempt.
pub(crate) enum Step {
    /// Sleep until it comes due ([`Call::retry_wait`]), then ask
    /// [`Call::ready`].
    Retry,
    /// The call is over: re-raise the error (noted when a budget ended it).
    Stop,
}

/// Whether the next attempt may start.
pub(crate) enum Ready {
    /// Start it.
    Go,
    /// Wait this long (a breaker's probe is out, or the throttle's turn has
    /// not come), then ask again.
    Wait(Duration),
    /// The call is over (waiting would pass the elapsed limit): re-raise the
    /// last error, noted.
    Stop,
}

/// One call's state.
#[derive(Debug)]
pub(crate) struct Call {
    engine: Engine,
    rng: Option<Rng>,
    /// The task id when it is made per call (generated, or the user's
    /// callable's answer); resolved at the first failure, the first event.
    task: Option<String>,
    /// Testing mode: the policy with its attempts capped.
    testing: Option<Policy>,
    /// Testing mode: the waits skipped, added to the clock.
    skipped: Duration,
    /// When the retry the engine scheduled comes due (the call's clock): the
    /// wait is counted from the decision, so the time its events' observers
    /// take is part of it.
    due: Duration,
}

impl Call {
    /// A call whose first attempt starts now.
    #[inline]
    pub(crate) fn start(setup: &Setup) -> Call {
        let testing = testing::cap().map(|cap| {
            let p = &setup.policy;
            p.to_builder()
                .max_attempts(p.max_attempts().min(cap))
                .build()
                .unwrap_or(*p)
        });
        Call {
            engine: Engine::new(testing::now()),
            rng: None,
            task: None,
            testing,
            skipped: Duration::ZERO,
            due: Duration::ZERO,
        }
    }

    /// Whether the waits are skipped (testing mode).
    #[inline]
    pub(crate) fn is_testing(&self) -> bool {
        self.testing.is_some()
    }

    #[inline]
    fn now(&self) -> Duration {
        testing::now() + self.skipped
    }

    /// Starts the next attempt; its number.
    #[inline]
    pub(crate) fn begin(&mut self) -> u32 {
        self.engine.begin()
    }

    /// Attempts begun so far.
    pub(crate) fn attempts(&self) -> u32 {
        self.engine.attempts()
    }

    /// Testing mode: a wait passes at once, the clock moves on.
    pub(crate) fn skip(&mut self, wait: Duration) {
        self.skipped = self.skipped.saturating_add(wait);
    }

    /// What is left of the wait before the scheduled retry comes due (zero
    /// when the events' observers took longer than the delay: the engine's
    /// gate then decides whether the retry may still start).
    pub(crate) fn retry_wait(&self) -> Duration {
        self.due.saturating_sub(self.now())
    }

    /// Runs `f` with the engine, its context (events to `logging` and the
    /// hook), the generator and the time `now`; with what an observer
    /// raised that stops the program (see [`PyNotify::interrupt`]).
    fn decide<R>(
        &mut self,
        py: Python<'_>,
        setup: &Setup,
        now: Duration,
        f: impl FnOnce(&mut Engine, &Context<'_, PyNotify<'_, '_>>, &mut Rng, Duration) -> R,
    ) -> (R, Option<PyErr>) {
        let Call {
            engine,
            rng,
            task,
            testing,
            ..
        } = self;
        let policy = testing.as_ref().unwrap_or(&setup.policy);
        let task_id = match &setup.task {
            TaskId::Fixed(s) => s.as_str(),
            _ => task.as_deref().unwrap_or(""),
        };
        let notify = PyNotify::new(py, setup);
        let cx = setup.context(policy).task_id(task_id).notify(&notify);
        let rng = rng.get_or_insert_with(Rng::fresh);
        let r = f(engine, &cx, rng, now);
        (r, notify.interrupt())
    }

    /// The attempt succeeded. An error: an observer of `retry_succeeded`
    /// raised `KeyboardInterrupt` or `SystemExit`, which the call ends with.
    #[inline]
    pub(crate) fn succeeded(&mut self, py: Python<'_>, setup: &Setup) -> PyResult<()> {
        let now = self.now();
        if self.engine.attempts() <= 1 && !setup.guarded() {
            // A first-try success without guards: the engine's answer is
            // "nothing to do" (no event, no budget, no breaker); it is still
            // told, without building a context for events.
            self.engine.succeeded(&setup.context(&setup.policy), now);
            return Ok(());
        }
        let ((), stop) = self.decide(py, setup, now, |engine, cx, _, now| {
            engine.succeeded(cx, now)
        });
        stop.map_or(Ok(()), Err)
    }

    /// The attempt failed with `error`: classified by `on=`, decided by the
    /// engine. `args`: the call's arguments, for a per-call task id.
    pub(crate) fn failed(
        &mut self,
        py: Python<'_>,
        setup: &Setup,
        error: &PyErr,
        args: Option<(&Bound<'_, PyTuple>, Option<&Bound<'_, PyDict>>)>,
    ) -> PyResult<Step> {
        if !error.is_instance_of::<PyException>(py) {
            // KeyboardInterrupt, SystemExit, CancelledError: not a failure
            // of the attempt but the end of the call.
            self.cancel(setup);
            return Ok(Step::Stop);
        }
        let classified = setup.on.classify(py, error);
        let (classification, cause) = match classified {
            Ok(c) => c,
            Err(e) => {
                self.cancel(setup);
                return Err(e);
            }
        };
        if self.task.is_none() && !matches!(setup.task, TaskId::Fixed(_)) {
            if let Err(e) = self.resolve_task(py, setup, args) {
                // The attempt's exception stays in the traceback.
                crate::classify::caused_by(py, &e, error);
                self.cancel(setup);
                return Err(e);
            }
        }
        let now = self.now();
        let (decision, stop) = self.decide(py, setup, now, |engine, cx, rng, now| {
            engine.failed(cx, now, classification, cause, rng)
        });
        if let Some(stop) = stop {
            // Interrupted while the decision's event was observed: the call
            // ends with the interrupt (its context the attempt's exception),
            // an admitted retry refunded.
            self.cancel(setup);
            stop.set_context(py, Some(error.clone_ref(py)));
            return Err(stop);
        }
        Ok(match decision {
            Decision::Retry { delay, .. } => {
                self.due = now.saturating_add(delay);
                Step::Retry
            }
            Decision::GiveUp(reason) => {
                self.note(py, error.value(py).as_any(), reason);
                Step::Stop
            }
        })
    }

    /// After a retry's delay (or, with a throttle, before the first
    /// attempt): may the attempt start? `last`: the error to note if not.
    /// The engine is asked before every retry, gated or not: a retry whose
    /// wait overran the elapsed limit (slow observers) does not start. An
    /// error: an observer raised `KeyboardInterrupt` or `SystemExit`.
    pub(crate) fn ready(
        &mut self,
        py: Python<'_>,
        setup: &Setup,
        last: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Ready> {
        if !setup.gated() && self.engine.attempts() == 0 {
            return Ok(Ready::Go);
        }
        let now = self.now();
        let (gate, stop) = self.decide(py, setup, now, |engine, cx, rng, now| {
            engine.ready(cx, now, rng)
        });
        if let Some(stop) = stop {
            self.cancel(setup);
            stop.set_context(py, last.map(|e| PyErr::from_value(e.clone())));
            return Err(stop);
        }
        Ok(match gate {
            Gate::Go => Ready::Go,
            Gate::Wait(d) => Ready::Wait(d),
            Gate::GiveUp(reason) => {
                if let Some(e) = last {
                    self.note(py, e, reason);
                }
                Ready::Stop
            }
        })
    }

    /// The call ends early (an exception from a sleep, a cancelled
    /// coroutine, an abandoned iterator): a retry admitted by the budget but
    /// never begun is refunded, a held probe released. Harmless on a call
    /// that has ended.
    pub(crate) fn cancel(&mut self, setup: &Setup) {
        let policy = self.testing.as_ref().unwrap_or(&setup.policy);
        self.engine.cancel(&setup.context(policy));
    }

    /// The error of a call whose time ran out before its first attempt (a
    /// throttle's turn at or past the elapsed limit: the engine gave up after
    /// 0 attempts, and told it): a `TimeoutError`, noted as any give-up.
    pub(crate) fn unstarted(&self, py: Python<'_>) -> PyErr {
        let err = PyTimeoutError::new_err(
            "herdless: the call's time ran out before its first attempt (the throttle's turn \
             came at or past max_elapsed); the function was not called",
        );
        self.note(py, err.value(py).as_any(), GiveUp::MaxElapsed);
        err
    }

    /// The task id of a call whose id is made per call.
    fn resolve_task(
        &mut self,
        py: Python<'_>,
        setup: &Setup,
        args: Option<(&Bound<'_, PyTuple>, Option<&Bound<'_, PyDict>>)>,
    ) -> PyResult<()> {
        let id = match (&setup.task, args) {
            (TaskId::PerCall(f), Some((args, kwargs))) => {
                let answer = f.bind(py).call(args, kwargs)?;
                task_string("task_id()", &answer)?
            }
            (TaskId::PerCall(f), None) => {
                let answer = f.bind(py).call0()?;
                task_string("task_id()", &answer)?
            }
            _ => {
                let rng = self.rng.get_or_insert_with(Rng::fresh);
                format!("{:016x}", rng.next_u64())
            }
        };
        self.task = Some(id);
        Ok(())
    }

    /// Adds the give-up's note to `error` when a budget ended the call
    /// (`add_note` on Python 3.11+, `__notes__` before).
    fn note(&self, py: Python<'_>, error: &Bound<'_, PyAny>, reason: GiveUp) {
        if !reason.is_exhausted() {
            return;
        }
        let attempts = self.engine.attempts();
        let elapsed = self.engine.elapsed(self.now()).as_secs_f64();
        let note = format!(
            "herdless: gave up after {attempts} attempt{} in {elapsed:.3} s: {} \
             (retry_budget_exhausted)",
            if attempts == 1 { "" } else { "s" },
            reason.as_str(),
        );
        let added = if error.hasattr("add_note").unwrap_or(false) {
            error.call_method1("add_note", (note,)).map(drop)
        } else {
            append_note(py, error, note)
        };
        // An exception that refuses attributes keeps its message; the
        // event still says why.
        drop(added);
    }
}

/// `__notes__` on Python 3.9 and 3.10 (PEP 678's attribute, shown by the
/// `exceptiongroup` backport's traceback and readable by code).
fn append_note(py: Python<'_>, error: &Bound<'_, PyAny>, note: String) -> PyResult<()> {
    let notes = match error.getattr("__notes__") {
        Ok(n) => n,
        Err(_) => {
            let list = pyo3::types::PyList::empty(py);
            error.setattr("__notes__", &list)?;
            list.into_any()
        }
    };
    notes.call_method1("append", (note,)).map(drop)
}

/// A task id as given: a `str`, or an `int` (its digits).
pub(crate) fn task_string(what: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(s.to_string_lossy().into_owned());
    }
    if value.is_instance_of::<PyInt>() && !value.is_instance_of::<pyo3::types::PyBool>() {
        return Ok(value.str()?.to_string_lossy().into_owned());
    }
    Err(PyTypeError::new_err(format!(
        "{what}: expected str or int, got {}",
        type_name(value)
    )))
}
