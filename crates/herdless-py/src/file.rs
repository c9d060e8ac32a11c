//! `Policy.from_file(path, name)`: a `[policy.NAME]` table of a
//! `herdless.toml` file, the file the CLI reads.
//!
//! The policy keys (`jitter`, `base`, `multiplier`, `cap`, `max_attempts`,
//! `max_elapsed`, `max_retry_after`, `retry_after_spread`,
//! `attempt_timeout`) are read by the library's own serde support
//! ([`PolicyConfig::set`]): the same syntax, checks and messages as the
//! CLI's. The file's other documented keys are the CLI's (declared facts
//! for `check` and `tune`, `exec`'s settings) and do not change the policy:
//! their kind is checked here (a string, a duration, a whole number, exit
//! statuses as a string or a list of 0 to 255), but the rules the CLI
//! applies to their values (the syntax of a seed or of an exit-status
//! string, `timeout` above zero, `retry_on` beside `terminal_on`) are its
//! own, in its policy-file reader, not repeated here: `herdless check
//! --config FILE` applies them. Any other key is refused. As the CLI does,
//! every table of the file is checked, so a typo in any of them fails the
//! first load. Every error is a `ValueError` written as the CLI writes it:
//! `FILE:LINE: policy.NAME.KEY: what is wrong`.
//!
//! The file is read on a thread of its own, the GIL released: a FIFO or a
//! hung network file system blocks neither the other Python threads nor
//! Ctrl-C (the caller's thread checks for signals every 50 ms; an
//! interrupted read leaves its thread blocked in the operating system until
//! the file answers, holding nothing but the file).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use herdless::Policy;
use herdless::policy::serde::PolicyConfig;
use herdless::policy::{MAX_DURATION, PolicyField};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use serde::Deserialize;
use toml::{Spanned, Value};

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

/// One `[policy.NAME]` table as written: keys and values with their spans.
type RawTable = BTreeMap<Spanned<String>, Spanned<Value>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    policy: BTreeMap<Spanned<String>, Spanned<RawTable>>,
}

/// A policy-file error: `FILE[:LINE]: [KEY: ]message`, as the CLI writes it.
struct Refusal {
    line: Option<usize>,
    key: Option<String>,
    message: String,
}

impl Refusal {
    fn at(line: usize, key: String, message: String) -> Self {
        Refusal {
            line: Some(line),
            key: Some(key),
            message,
        }
    }

    fn into_err(self, path: &Path) -> PyErr {
        let mut text = path.display().to_string();
        if let Some(line) = self.line {
            text.push_str(&format!(":{line}"));
        }
        text.push_str(": ");
        if let Some(key) = self.key {
            text.push_str(&key);
            text.push_str(": ");
        }
        text.push_str(&self.message);
        PyValueError::new_err(text)
    }
}

/// The policy `name` of the file at `path`.
pub(crate) fn read_policy(py: Python<'_>, path: &Path, name: &str) -> PyResult<Policy> {
    let bytes = read(py, path)?;
    parse(&bytes, name).map_err(|r| r.into_err(path))
}

/// The file's bytes (one past the limit at most), read on a thread of its
/// own while this one waits without the GIL, checking for signals.
fn read(py: Python<'_>, path: &Path) -> PyResult<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    let owned: PathBuf = path.to_owned();
    std::thread::Builder::new()
        .name("herdless-policy-file".into())
        .spawn(move || {
            let mut bytes = Vec::new();
            let read = std::fs::File::open(&owned)
                .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
                .map(|_| bytes);
            // The receiver is gone when the caller was interrupted.
            let _ = tx.send(read);
        })
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start reading the file: {e}")))?;
    let mut rx = rx;
    loop {
        // (`Receiver` is not `Sync`: it goes to the GIL-free closure and back.)
        let (got, back) = py.detach(move || (rx.recv_timeout(Duration::from_millis(50)), rx));
        rx = back;
        match got {
            Ok(Ok(bytes)) => return Ok(bytes),
            Ok(Err(e)) => return Err(os_error(path, &e)),
            Err(mpsc::RecvTimeoutError::Timeout) => py.check_signals()?,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err(format!(
                    "{}: the policy file's reader ended without an answer",
                    path.display()
                )));
            }
        }
    }
}

/// An `OSError` of the subclass Python gives the error's `errno`
/// (`FileNotFoundError`, `IsADirectoryError`, `PermissionError`, ...),
/// naming the file (`filename`, and in the message).
fn os_error(path: &Path, e: &std::io::Error) -> PyErr {
    let shown = path.display();
    let what = if e.kind() == std::io::ErrorKind::IsADirectory {
        "is a directory, not a policy file".to_owned()
    } else {
        let text = e.to_string();
        let text = text.split(" (os error").next().unwrap_or(&text);
        format!("cannot read the policy file: {text}")
    };
    match e.raw_os_error() {
        // OSError(errno, strerror, filename) is an instance of errno's
        // subclass, and prints as `[Errno N] strerror: 'filename'`.
        Some(errno) => PyOSError::new_err((errno, what, path.to_path_buf())),
        None => PyOSError::new_err(format!("{shown}: {what}")),
    }
}

/// Byte offset to 1-based line (the newlines' offsets, binary-searched).
struct Lines(Vec<usize>);

impl Lines {
    fn new(text: &str) -> Self {
        Lines(
            text.bytes()
                .enumerate()
                .filter_map(|(i, b)| (b == b'\n').then_some(i))
                .collect(),
        )
    }

    fn line_at(&self, offset: usize) -> usize {
        self.0.partition_point(|&nl| nl < offset) + 1
    }
}

/// Checks the whole file; the policy `name`.
fn parse(bytes: &[u8], name: &str) -> Result<Policy, Refusal> {
    let plain = |line: Option<usize>, message: String| Refusal {
        line,
        key: None,
        message,
    };
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(plain(
            None,
            "larger than 1024 KiB, the limit of a policy file (it holds named policies, a few \
             hundred bytes each)"
                .into(),
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        plain(
            Some(line),
            "not UTF-8 text (a policy file is TOML, which is UTF-8)".into(),
        )
    })?;
    let lines = Lines::new(text);
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let message = e.message().trim().to_owned();
        let message = if message.starts_with("unknown field") {
            format!("{message} (a policy file holds [policy.NAME] tables only)")
        } else {
            message
        };
        plain(e.span().map(|s| lines.line_at(s.start)), message)
    })?;
    let mut found = None;
    let mut names = Vec::new();
    for (table_name, table) in &raw.policy {
        names.push(table_name.get_ref().as_str());
        let checked = check_table(table_name.get_ref(), table.get_ref(), &lines)?;
        if table_name.get_ref() == name {
            found = Some((checked, lines.line_at(table_name.span().start)));
        }
    }
    let Some(((config, keys), header)) = found else {
        return Err(Refusal {
            line: None,
            key: Some(format!("policy.{name}")),
            message: if names.is_empty() {
                "no such policy (the file defines none)".into()
            } else {
                format!("no such policy (the file defines: {})", names.join(", "))
            },
        });
    };
    config.build().map_err(|e| {
        // The line of the key at fault: the refused one, or for a cap below
        // the base with the cap left to its default, the base.
        let field = e.field().as_str();
        let (key, line) = match (keys.get(field), keys.get("base")) {
            (Some(&line), _) => (field, line),
            (None, Some(&line)) if field == "cap" => ("base", line),
            _ => (field, header),
        };
        Refusal::at(line, format!("policy.{name}.{key}"), e.to_string())
    })
}

/// Checks one table key by key: its policy keys as a [`PolicyConfig`],
/// and the line of each.
fn check_table(
    name: &str,
    table: &RawTable,
    lines: &Lines,
) -> Result<(PolicyConfig, BTreeMap<String, usize>), Refusal> {
    let mut config = PolicyConfig::default();
    let mut at = BTreeMap::new();
    for (key, value) in table {
        let line = lines.line_at(key.span().start);
        let key = key.get_ref();
        let bad = |message: String| Refusal::at(line, format!("policy.{name}.{key}"), message);
        let value = value.get_ref();
        if let Ok(field) = key.parse::<PolicyField>() {
            config.set(field, value.clone()).map_err(|e| {
                let message = e.message().trim();
                let prefix = format!("invalid {field}: ");
                bad(message.strip_prefix(&prefix).unwrap_or(message).to_owned())
            })?;
            at.insert(key.clone(), line);
            continue;
        }
        if !FILE_KEYS.contains(&key.as_str()) {
            let expected: Vec<&str> = PolicyField::ALL
                .iter()
                .map(|f| f.as_str())
                .chain(FILE_KEYS.iter().copied())
                .collect();
            return Err(bad(format!(
                "unknown key (expected one of: {})",
                expected.join(", ")
            )));
        }
        check_kind(key, value).map_err(bad)?;
    }
    Ok((config, at))
}

/// The kind of a key the CLI reads (see the module: its rules are the
/// CLI's), with the CLI's words where a kind is wrong.
fn check_kind(key: &str, value: &Value) -> Result<(), String> {
    let found = value.type_str();
    let whole = |v: &Value, min: u64, max: u64| match v {
        Value::Integer(i) if u64::try_from(*i).is_ok_and(|n| (min..=max).contains(&n)) => Ok(()),
        Value::Integer(i) => Err(format!("{i} is out of range (expected {min} to {max})")),
        other => Err(format!(
            "expected a whole number, found {}",
            other.type_str()
        )),
    };
    match key {
        "task_id" => match value {
            Value::String(_) => Ok(()),
            _ => Err(format!("expected a string, found {found}")),
        },
        "seed" => match value {
            Value::Integer(i) if *i >= 0 => Ok(()),
            Value::Integer(i) => Err(format!(
                "{i} is out of range (a seed is a whole number 0 to 18446744073709551615)"
            )),
            Value::String(_) => Ok(()),
            _ => Err(format!(
                "expected a seed (a whole number, or a string of one), found {found}"
            )),
        },
        "workers" => whole(value, 1, u64::MAX),
        "retry_on" | "terminal_on" => match value {
            Value::String(_) => Ok(()),
            Value::Array(items) => items.iter().try_for_each(|i| whole(i, 0, 255)),
            _ => Err(format!(
                "expected exit statuses such as \"75,111,200-210\" or [75, 111], found {found}"
            )),
        },
        // recovery_time, visibility_timeout, timeout, kill_after: durations,
        // by the library's rules (the policy keys' own).
        _ => {
            let d = herdless::policy::serde::duration::deserialize(value.clone())
                .map_err(|e| e.message().trim().to_owned())?;
            if d > MAX_DURATION {
                return Err(format!(
                    "{value} is too large (at most {} s: u64 nanoseconds, about 584 years)",
                    MAX_DURATION.as_secs()
                ));
            }
            Ok(())
        }
    }
}
