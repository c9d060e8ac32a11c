//! `herdless.simulate(**flags)`: the fleet simulator (`herdless-sim`, its
//! library API) with the flags of `herdless simulate` as keyword arguments
//! (`--clients-per-process` is `clients_per_process=`; durations as seconds,
//! timedeltas or strings; `jitter=` a list of strategy names or one
//! comma-separated string). Returns the report the CLI prints with
//! `--json`, as a dict. As the CLI, a flag that does not apply to the
//! chosen scenario is refused rather than ignored. The run releases the GIL.

use herdless::Policy;
use herdless_sim::guard::GuardParams;
use herdless_sim::{
    Config, ContentionParams, OutageParams, RobustnessParams, Scenario, Simulation, SpreadParams,
    StrategyKind, TailParams,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
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
        "outage" | "capacity" | "burst" | "clients_per_process" => (
            matches!(s, S::Outage | S::Robustness),
            "outage or robustness",
        ),
        "honor" | "capacity_estimate" | "outage_end" => (s == S::Outage, "outage"),
        "workers" | "failures" => (s == S::Spread, "spread"),
        "trials" => (s == S::Contention, "contention"),
        "calls" => (s == S::LatencyTail, "latency-tail"),
        "clients" => (
            matches!(s, S::Outage | S::Robustness | S::Contention),
            "outage, robustness or contention",
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

/// Runs the simulator; the report as a dict.
#[pyfunction]
#[pyo3(signature = (**flags))]
pub(crate) fn simulate(py: Python<'_>, flags: Option<&Bound<'_, PyDict>>) -> PyResult<Py<PyAny>> {
    let empty = PyDict::new(py);
    let flags = flags.unwrap_or(&empty);
    for key in flags.keys() {
        let key: String = key.extract()?;
        if !FLAGS.contains(&key.as_str()) {
            return Err(PyTypeError::new_err(format!(
                "simulate() got an unexpected keyword argument '{key}' (expected: {})",
                FLAGS.join(", ")
            )));
        }
    }
    let get = |k: &str| flags.get_item(k).map(|v| v.filter(|v| !v.is_none()));
    let named = |k: &str, v: &Bound<'_, PyAny>| -> PyResult<String> {
        v.cast::<PyString>()
            .map(|s| s.to_string_lossy().into_owned())
            .map_err(|_| PyTypeError::new_err(format!("{k}: expected a str, got {}", type_name(v))))
    };
    let scenario: Scenario = match get("scenario")? {
        None => Scenario::Outage,
        Some(v) => named("scenario", &v)?
            .parse()
            .map_err(|e: String| PyValueError::new_err(format!("scenario: {e}")))?,
    };
    for key in flags.keys() {
        let key: String = key.extract()?;
        if get(&key)?.is_some() {
            applies(&key, scenario).map_err(PyValueError::new_err)?;
        }
    }
    let u32_flag = |k: &str, min: u64| -> PyResult<Option<u32>> {
        get(k)?
            .map(|v| whole(k, &v, min, u64::from(u32::MAX)).map(|n| n as u32))
            .transpose()
    };
    let dur_flag = |k: &str| get(k)?.map(|v| duration(k, &v)).transpose();
    let f64_flag = |k: &str| get(k)?.map(|v| number(k, &v)).transpose();

    // The scenario's policy with the policy flags applied.
    let (base, multiplier, cap) = (dur_flag("base")?, f64_flag("multiplier")?, dur_flag("cap")?);
    let (max_attempts, max_elapsed) = (u32_flag("max_attempts", 1)?, dur_flag("max_elapsed")?);
    let policy = |default: &Policy| -> PyResult<Policy> {
        let mut b = default.to_builder();
        if let Some(v) = base {
            b = b.base(v);
        }
        if let Some(v) = multiplier {
            b = b.multiplier(v);
        }
        if let Some(v) = cap {
            b = b.cap(v);
        }
        if let Some(v) = max_attempts {
            b = b.max_attempts(v);
        }
        if let Some(v) = max_elapsed {
            b = b.max_elapsed(v);
        }
        b.build().map_err(crate::policy::policy_error)
    };
    let outage_params = || -> PyResult<OutageParams> {
        let d = OutageParams::default();
        let capacity = u32_flag("capacity", 1)?.unwrap_or(d.capacity);
        Ok(OutageParams {
            clients: u32_flag("clients", 1)?.unwrap_or(d.clients),
            outage: dur_flag("outage")?.unwrap_or(d.outage),
            capacity,
            burst: u32_flag("burst", 1)?.unwrap_or((capacity / 10).max(1)),
            first_call_window: d.first_call_window,
            policy: policy(&d.policy)?,
            guards: GuardParams {
                clients_per_process: u32_flag("clients_per_process", 1)?
                    .unwrap_or(d.guards.clients_per_process),
                ..d.guards
            },
            honor: f64_flag("honor")?.unwrap_or(d.honor),
            capacity_estimate: f64_flag("capacity_estimate")?.unwrap_or(d.capacity_estimate),
            outage_end: match get("outage_end")? {
                None => d.outage_end,
                Some(v) => named("outage_end", &v)?
                    .parse()
                    .map_err(|e: String| PyValueError::new_err(format!("outage_end: {e}")))?,
            },
        })
    };
    let config = match scenario {
        Scenario::Spread => {
            let d = SpreadParams::default();
            Config::Spread(SpreadParams {
                workers: u32_flag("workers", 1)?.unwrap_or(d.workers),
                failures: u32_flag("failures", 0)?.unwrap_or(d.failures),
                policy: policy(&d.policy)?,
            })
        }
        Scenario::Outage => Config::Outage(outage_params()?),
        Scenario::Robustness => Config::Robustness(RobustnessParams {
            base: outage_params()?,
            ..RobustnessParams::default()
        }),
        Scenario::LatencyTail => {
            let d = TailParams::default();
            Config::LatencyTail(TailParams {
                calls: u32_flag("calls", 1)?.unwrap_or(d.calls),
                policy: policy(&d.policy)?,
                ..d
            })
        }
        Scenario::Contention => {
            let d = ContentionParams::default();
            Config::Contention(ContentionParams {
                clients: u32_flag("clients", 1)?.map_or(d.clients.clone(), ContentionParams::sweep),
                trials: u32_flag("trials", 1)?.unwrap_or(d.trials),
                policy: policy(&d.policy)?,
                ..d
            })
        }
    };
    let mut sim = Simulation::new(config);
    if let Some(v) = get("seed")? {
        sim = sim.seed(whole("seed", &v, 0, u64::MAX)?);
    }
    if let Some(v) = get("jitter")? {
        sim = sim.strategies(strategies(&v)?);
    }
    if let Some(v) = get("threads")? {
        sim = sim.threads(whole("threads", &v, 1, 1024)? as usize);
    }
    let report = py
        .detach(|| sim.run())
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    py.import("json")?
        .call_method1("loads", (report.to_json(),))
        .map(Bound::unbind)
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
