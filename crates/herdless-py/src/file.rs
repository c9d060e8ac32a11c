//! `Policy.from_file(path, name)`: a `[policy.NAME]` table of a
//! `herdless.toml` file, the file the CLI reads.
//!
//! The policy keys (`jitter`, `base`, `multiplier`, `cap`, `max_attempts`,
//! `max_elapsed`, `max_retry_after`, `retry_after_spread`,
//! `attempt_timeout`) are read by the library's own serde support
//! ([`PolicyConfig::set`]): the same syntax and checks as everywhere else.
//! The file's other documented keys are the CLI's (declared facts for
//! `check` and `tune`, `exec`'s settings): they are accepted when their
//! value has the right kind, and do not change the policy. Any other key is
//! refused. As the CLI does, every table of the file is checked, so a typo
//! in any of them fails the first load; every error names the file, the
//! table and the key, as a `ValueError`.

use std::io::Read;
use std::path::Path;

use herdless::Policy;
use herdless::policy::PolicyField;
use herdless::policy::serde::PolicyConfig;
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyValueError};
use pyo3::prelude::*;
use toml::{Table, Value};

/// The largest policy file read (the CLI's limit): 1 MiB.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// The keys a policy table may hold besides the policy's own.
const FILE_KEYS: &[&str] = &[
    "seed",
    "task_id",
    "recovery_time",
    "visibility_timeout",
    "workers",
    "retry_on",
    "terminal_on",
    "timeout",
    "kill_after",
];

/// The policy `name` of the file at `path`.
pub(crate) fn read_policy(path: &Path, name: &str) -> PyResult<Policy> {
    let shown = path.display();
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| {
            let message = format!("{shown}: cannot read the policy file: {e}");
            if e.kind() == std::io::ErrorKind::NotFound {
                PyFileNotFoundError::new_err(message)
            } else {
                PyOSError::new_err(message)
            }
        })?;
    let bad = |message: String| PyValueError::new_err(format!("{shown}: {message}"));
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(bad(
            "larger than 1024 KiB, the limit of a policy file".into()
        ));
    }
    let text = String::from_utf8(bytes).map_err(|_| bad("not UTF-8 text".into()))?;
    let file: Table = text
        .parse()
        .map_err(|e: toml::de::Error| bad(e.message().trim().to_owned()))?;
    let mut policies = None;
    for (key, value) in &file {
        match (key.as_str(), value) {
            ("policy", Value::Table(t)) => policies = Some(t),
            ("policy", _) => return Err(bad("policy: expected [policy.NAME] tables".into())),
            (other, _) => {
                return Err(bad(format!(
                    "{other}: unknown key (a policy file holds [policy.NAME] tables only)"
                )));
            }
        }
    }
    let empty = Table::new();
    let policies = policies.unwrap_or(&empty);
    let mut found = None;
    for (table_name, table) in policies {
        let Value::Table(table) = table else {
            return Err(bad(format!(
                "policy.{table_name}: expected a table ([policy.{table_name}])"
            )));
        };
        let config = check_table(table_name, table).map_err(bad)?;
        if table_name == name {
            found = Some(config);
        }
    }
    let Some(config) = found else {
        let have: Vec<&str> = policies.keys().map(String::as_str).collect();
        return Err(bad(if have.is_empty() {
            format!("policy.{name}: no such policy (the file defines none)")
        } else {
            format!(
                "policy.{name}: no such policy (the file defines: {})",
                have.join(", ")
            )
        }));
    };
    config
        .build()
        .map_err(|e| bad(format!("policy.{name}: {e}")))
}

/// Checks one table key by key; its policy keys as a [`PolicyConfig`].
fn check_table(name: &str, table: &Table) -> Result<PolicyConfig, String> {
    let mut config = PolicyConfig::default();
    for (key, value) in table {
        let at = |message: String| format!("policy.{name}.{key}: {message}");
        if let Ok(field) = key.parse::<PolicyField>() {
            config.set(field, value.clone()).map_err(|e| {
                let message = e.to_string();
                let prefix = format!("invalid {field}: ");
                at(message
                    .strip_prefix(&prefix)
                    .unwrap_or(&message)
                    .trim()
                    .to_owned())
            })?;
            continue;
        }
        if !FILE_KEYS.contains(&key.as_str()) {
            let expected: Vec<&str> = PolicyField::ALL
                .iter()
                .map(|f| f.as_str())
                .chain(FILE_KEYS.iter().copied())
                .collect();
            return Err(at(format!(
                "unknown key (expected one of: {})",
                expected.join(", ")
            )));
        }
        check_fact(key, value).map_err(at)?;
    }
    Ok(config)
}

/// The kind of a key the CLI reads (its full rules are the CLI's; a value
/// of the wrong kind is refused here too).
fn check_fact(key: &str, value: &Value) -> Result<(), String> {
    let found = value.type_str();
    let ok = match key {
        "task_id" => value.is_str(),
        "seed" => matches!(value, Value::Integer(i) if *i >= 0) || value.is_str(),
        "workers" => matches!(value, Value::Integer(i) if *i >= 1),
        "retry_on" | "terminal_on" => {
            value.is_str()
                || matches!(value, Value::Array(items)
                    if items.iter().all(|i| matches!(i, Value::Integer(c) if (0..=255).contains(c))))
        }
        // recovery_time, visibility_timeout, timeout, kill_after: durations.
        _ => {
            return herdless::policy::serde::duration::deserialize(value.clone())
                .map(drop)
                .map_err(|e| e.to_string());
        }
    };
    if ok {
        Ok(())
    } else {
        let expected = match key {
            "task_id" => "a string",
            "seed" => "a whole number or a string",
            "workers" => "a whole number, at least 1",
            _ => "exit statuses such as \"75,111,200-210\" or [75, 111]",
        };
        Err(format!("expected {expected}, found {found} {value}"))
    }
}
