//! `herdless.simulate(**flags)`: the fleet simulator (`herdless-sim`, its
//! library API) with the flags of `herdless simulate` as keyword arguments
//! (`--clients-per-process` is `clients_per_process=`; durations as seconds,
//! timedeltas or strings; `jitter=` a list of strategy names or one
//! comma-separated string). Returns the report the CLI prints with
//! `--json`, as a dict. As the CLI, a flag that does not apply to the
//! chosen scenario is refused rather than ignored.
//!
//! The run releases the GIL and can be interrupted: it runs on a thread of
//! its own while the caller's thread waits in slices of 50 ms, checking for
//! signals between them (Python runs its signal handlers, Ctrl-C's
//! `KeyboardInterrupt` among them, only in a thread that holds the GIL). On
//! an exception from a handler the call returns it at once and tells the
//! run to stop ([`Progress::cancelled`]): the simulator starts no further
//! unit (one strategy's run, one contention trial), and the units already
//! started end in the background, their results dropped. A unit is not cut
//! short: what remains of an interrupted run is at most `threads` units.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use herdless::Policy;
use herdless_sim::guard::GuardParams;
use herdless_sim::{
    Config, ContentionParams, FieldParams, OutageParams, Progress, ReactivationParams, Report,
    RobustnessParams, Scenario, Simulation, SpreadParams, StrategyKind, TailParams,
};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::seconds::{duration, number, type_name, whole};

/// The flags `simulate` takes, in the CLI's order.
const FLAGS: &[&str] = &[
    "scenario",
    "jitter",
    "seed",
    "clients",
    "outage",
    "capacity",
    "burst",
    "clients_per_process",
    "honor",
    "capacity_estimate",
    "outage_end",
    "plan",
    "workers",
    "failures",
    "trials",
    "calls",
    "base",
    "multiplier",
    "cap",
    "max_attempts",
    "max_elapsed",
    "threads",
];

/// Scenarios each flag applies to (none listed: every scenario).
fn applies(flag: &str, s: Scenario) -> Result<(), String> {
    use Scenario as S;
    let (ok, wanted) = match flag {
        "outage" => (
            matches!(s, S::Outage | S::Robustness),
            "outage or robustness",
        ),
        "capacity" | "burst" | "clients_per_process" => (
            matches!(s, S::Outage | S::Robustness | S::Reactivation | S::Field),
            "outage, robustness, reactivation or field",
        ),
        // The field scenario runs its own strategies.
        "jitter" => (s != S::Field, "any but field"),
        "honor" => (
            matches!(s, S::Outage | S::Reactivation),
            "outage or reactivation",
        ),
        "capacity_estimate" | "outage_end" => (s == S::Outage, "outage"),
        "plan" => (s == S::Reactivation, "reactivation"),
        "workers" | "failures" => (s == S::Spread, "spread"),
        "trials" => (s == S::Contention, "contention"),
        "calls" => (s == S::LatencyTail, "latency-tail"),
        "clients" => (
            matches!(
                s,
                S::Outage | S::Robustness | S::Contention | S::Reactivation | S::Field
            ),
            "outage, robustness, contention, reactivation or field",
        ),
        _ => (true, ""),
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{flag} applies to scenario {wanted}, not {}",
            s.name()
        ))
    }
}

/// The keyword arguments, read flag by flag (`None` counts as absent).
struct Flags<'a, 'py>(&'a Bound<'py, PyDict>);

impl<'py> Flags<'_, 'py> {
    fn get(&self, k: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        Ok(self.0.get_item(k)?.filter(|v| !v.is_none()))
    }

    fn name(&self, k: &str) -> PyResult<Option<String>> {
        self.get(k)?
            .map(|v| {
                v.cast::<PyString>()
                    .map(|s| s.to_string_lossy().into_owned())
                    .map_err(|_| {
                        PyTypeError::new_err(format!("{k}: expected a str, got {}", type_name(&v)))
                    })
            })
            .transpose()
    }

    fn count(&self, k: &str, min: u64) -> PyResult<Option<u32>> {
        self.get(k)?
            .map(|v| whole(k, &v, min, u64::from(u32::MAX)).map(|n| n as u32))
            .transpose()
    }

    fn duration(&self, k: &str) -> PyResult<Option<std::time::Duration>> {
        self.get(k)?.map(|v| duration(k, &v)).transpose()
    }

    fn number(&self, k: &str) -> PyResult<Option<f64>> {
        self.get(k)?.map(|v| number(k, &v)).transpose()
    }

    /// `max_attempts=`: as the CLI's `--max-attempts`, 1 to 4294967294, or
    /// `"unlimited"` (the simulator's no-limit, counted as 4294967295).
    fn max_attempts(&self) -> PyResult<Option<u32>> {
        let Some(v) = self.get("max_attempts")? else {
            return Ok(None);
        };
        if let Ok(s) = v.cast::<PyString>() {
            return match &*s.to_cow()? {
                "unlimited" => Ok(Some(u32::MAX)),
                other => Err(PyValueError::new_err(format!(
                    "max_attempts: {other:?} is not a number of attempts (1 to 4294967294, \
                     or \"unlimited\")"
                ))),
            };
        }
        let n = whole("max_attempts", &v, 1, u64::from(u32::MAX) - 1).map_err(|e| {
            if e.is_instance_of::<PyValueError>(v.py()) {
                PyValueError::new_err(
                    "max_attempts: must be 1 to 4294967294, or \"unlimited\" (the \
                     simulator's no-limit, which it counts as 4294967295 attempts)",
                )
            } else {
                e
            }
        })?;
        Ok(Some(n as u32))
    }

    /// The scenario's default policy with the policy flags applied.
    fn policy(&self, default: &Policy) -> PyResult<Policy> {
        let mut b = default.to_builder();
        if let Some(v) = self.duration("base")? {
            b = b.base(v);
        }
        if let Some(v) = self.number("multiplier")? {
            b = b.multiplier(v);
        }
        if let Some(v) = self.duration("cap")? {
            b = b.cap(v);
        }
        if let Some(v) = self.max_attempts()? {
            b = b.max_attempts(v);
        }
        if let Some(v) = self.duration("max_elapsed")? {
            b = b.max_elapsed(v);
        }
        b.build().map_err(crate::policy::policy_error)
    }

    /// The outage parameters (outage and robustness), as the CLI builds them.
    fn outage(&self) -> PyResult<OutageParams> {
        let d = OutageParams::default();
        let capacity = self.count("capacity", 1)?.unwrap_or(d.capacity);
        Ok(OutageParams {
            clients: self.count("clients", 1)?.unwrap_or(d.clients),
            outage: self.duration("outage")?.unwrap_or(d.outage),
            capacity,
            burst: self.count("burst", 1)?.unwrap_or((capacity / 10).max(1)),
            first_call_window: d.first_call_window,
            policy: self.policy(&d.policy)?,
            guards: GuardParams {
                clients_per_process: self
                    .count("clients_per_process", 1)?
                    .unwrap_or(d.guards.clients_per_process),
                ..d.guards
            },
            honor: self.number("honor")?.unwrap_or(d.honor),
            capacity_estimate: self
                .number("capacity_estimate")?
                .unwrap_or(d.capacity_estimate),
            server: d.server,
            plain_clients: d.plain_clients,
            outage_end: match self.name("outage_end")? {
                None => d.outage_end,
                Some(v) => v
                    .parse()
                    .map_err(|e: String| PyValueError::new_err(format!("outage_end: {e}")))?,
            },
        })
    }

    /// The reactivation parameters, as the CLI builds them.
    fn reactivation(&self) -> PyResult<ReactivationParams> {
        let d = ReactivationParams::default();
        let capacity = self.count("capacity", 1)?.unwrap_or(d.capacity);
        Ok(ReactivationParams {
            clients: self.count("clients", 1)?.unwrap_or(d.clients),
            capacity,
            burst: self.count("burst", 1)?.unwrap_or((capacity / 10).max(1)),
            policy: self.policy(&d.policy)?,
            guards: GuardParams {
                clients_per_process: self
                    .count("clients_per_process", 1)?
                    .unwrap_or(d.guards.clients_per_process),
                ..d.guards
            },
            plan: match self.name("plan")? {
                None => d.plan,
                Some(v) => v
                    .parse()
                    .map_err(|e: String| PyValueError::new_err(format!("plan: {e}")))?,
            },
            mixed_honor: self.number("honor")?.unwrap_or(d.mixed_honor),
            ..d
        })
    }

    /// The scenario's configuration.
    fn config(&self, scenario: Scenario) -> PyResult<Config> {
        Ok(match scenario {
            Scenario::Spread => {
                let d = SpreadParams::default();
                Config::Spread(SpreadParams {
                    workers: self.count("workers", 1)?.unwrap_or(d.workers),
                    failures: self.count("failures", 0)?.unwrap_or(d.failures),
                    policy: self.policy(&d.policy)?,
                })
            }
            Scenario::Outage => Config::Outage(self.outage()?),
            Scenario::Field => Config::Field(FieldParams {
                base: self.outage()?,
                ..FieldParams::default()
            }),
            Scenario::Robustness => Config::Robustness(RobustnessParams {
                base: self.outage()?,
                ..RobustnessParams::default()
            }),
            Scenario::Reactivation => Config::Reactivation(self.reactivation()?),
            Scenario::LatencyTail => {
                let d = TailParams::default();
                Config::LatencyTail(TailParams {
                    calls: self.count("calls", 1)?.unwrap_or(d.calls),
                    policy: self.policy(&d.policy)?,
                    ..d
                })
            }
            Scenario::Contention => {
                let d = ContentionParams::default();
                Config::Contention(ContentionParams {
                    clients: self
                        .count("clients", 1)?
                        .map_or(d.clients.clone(), ContentionParams::sweep),
                    trials: self.count("trials", 1)?.unwrap_or(d.trials),
                    policy: self.policy(&d.policy)?,
                    ..d
                })
            }
        })
    }
}

/// Runs the simulator; the report as a dict.
#[pyfunction]
#[pyo3(signature = (**flags))]
pub(crate) fn simulate(py: Python<'_>, flags: Option<&Bound<'_, PyDict>>) -> PyResult<Py<PyAny>> {
    let empty = PyDict::new(py);
    let flags = Flags(flags.unwrap_or(&empty));
    for key in flags.0.keys() {
        let key: String = key.extract()?;
        if !FLAGS.contains(&key.as_str()) {
            return Err(PyTypeError::new_err(format!(
                "simulate() got an unexpected keyword argument '{key}' (expected: {})",
                FLAGS.join(", ")
            )));
        }
    }
    let scenario: Scenario = match flags.name("scenario")? {
        None => Scenario::Outage,
        Some(v) => v
            .parse()
            .map_err(|e: String| PyValueError::new_err(format!("scenario: {e}")))?,
    };
    for key in flags.0.keys() {
        let key: String = key.extract()?;
        if flags.get(&key)?.is_some() {
            applies(&key, scenario).map_err(PyValueError::new_err)?;
        }
    }
    let mut sim = Simulation::new(flags.config(scenario)?);
    if let Some(v) = flags.get("seed")? {
        sim = sim.seed(whole("seed", &v, 0, u64::MAX)?);
    }
    if let Some(v) = flags.get("jitter")? {
        sim = sim.strategies(strategies(&v)?);
    }
    if let Some(v) = flags.get("threads")? {
        sim = sim.threads(whole("threads", &v, 1, 1024)? as usize);
    }
    let report = run_interruptibly(py, sim)?;
    py.import("json")?
        .call_method1("loads", (report.to_json(),))
        .map(Bound::unbind)
}

/// The run's stop flag, set when the caller is interrupted.
struct Stop(Arc<AtomicBool>);

impl Progress for Stop {
    fn start(&self, _total: u64) {}
    fn advance(&self, _n: u64) {}
    fn cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Runs `sim` on a thread of its own; waits for it without the GIL, checking
/// for signals every 50 ms (see the module).
fn run_interruptibly(py: Python<'_>, sim: Simulation) -> PyResult<Report> {
    let stop = Arc::new(AtomicBool::new(false));
    let progress = Stop(Arc::clone(&stop));
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("herdless-simulate".into())
        .spawn(move || {
            // The receiver is gone when the caller was interrupted.
            let _ = tx.send(sim.run_with_progress(&progress));
        })
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the simulation: {e}")))?;
    let mut rx = rx;
    loop {
        // (`Receiver` is not `Sync`: it goes to the GIL-free closure and back.)
        let (got, back) = py.detach(move || (rx.recv_timeout(Duration::from_millis(50)), rx));
        rx = back;
        match got {
            Ok(Ok(report)) => return Ok(report),
            Ok(Err(e)) => return Err(PyValueError::new_err(e.to_string())),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    stop.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err(
                    "the simulation ended without a report (it panicked)",
                ));
            }
        }
    }
}

/// `jitter=`: strategy names, as a list or one comma-separated string.
fn strategies(v: &Bound<'_, PyAny>) -> PyResult<Vec<StrategyKind>> {
    let names: Vec<String> = match v.cast::<PyString>() {
        Ok(s) => s
            .to_string_lossy()
            .split(',')
            .map(|n| n.trim().to_owned())
            .collect(),
        Err(_) => v.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "jitter: expected strategy names (a list of str or \"full,none\"), got {}",
                type_name(v)
            ))
        })?,
    };
    if names.is_empty() {
        return Err(PyValueError::new_err("jitter: no strategy named"));
    }
    names
        .iter()
        .map(|n| {
            n.parse::<StrategyKind>()
                .map_err(|e| PyValueError::new_err(format!("jitter: {e}")))
        })
        .collect()
}
