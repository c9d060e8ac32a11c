//! Policy files: `herdless.toml` holds named retry policies.
//!
//! ```toml
//! [policy.nightly-mount]          # a lone cron job retrying a mount point
//! jitter = "equal"
//! base = "2s"
//! cap = "2m"
//! max_attempts = 8
//! max_elapsed = "10m"
//! max_retry_after = "1m"
//! recovery_time = "90s"            # declared fact: the NAS reboots in 90 s
//! retry_on = "32"                  # exec: mount(8)'s "mount failure"
//! timeout = "1m"                   # exec: per attempt
//!
//! [policy.ingest]
//! base = "500ms"
//! cap = "1m"
//! max_elapsed = "4m"
//! visibility_timeout = "5m"        # declared fact: the broker's
//! ```
//!
//! # Where the file is found
//!
//! `--config PATH` (or `HERDLESS_CONFIG`) names it, and then it must exist.
//! Otherwise herdless looks for `./herdless.toml`, then
//! `<config dir>/herdless/herdless.toml` (`$XDG_CONFIG_HOME` or `~/.config` on
//! Linux), and uses the first that exists. `--policy NAME` (or
//! `HERDLESS_POLICY`) selects a table; without it the `[policy.default]` table is
//! used when the file has one.
//!
//! # Validation
//!
//! The whole file is validated when it is read, every policy in it, so a typo in
//! any table fails the first run (and `herdless check`) instead of the night it is
//! needed. Every error names the file, the line and the key:
//! `herdless.toml:7: policy.ingest: unknown key "capp" (expected one of …)`.
//! The policy keys (`jitter`, `base`, … `retry_after_spread`) are read by the
//! library's own serde support ([`PolicyConfig::set`]), the same syntax and
//! checks as a `Policy` deserialized anywhere else: human durations, jitter
//! names, each value refused on its own when invalid. The table is walked
//! here key by key from spanned TOML values, because serde's errors carry the
//! line but not the key's full path, and policy-level errors (a cap below the
//! base) must point at the line of the key that caused them.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use herdless::policy::serde::{duration as human, PolicyConfig};
use herdless::{Jitter, PolicyField};
use serde::Deserialize;
use toml::{Spanned, Value};

use crate::codes::CodeSet;

/// The file name looked for in the working directory and the config dir.
pub const FILE_NAME: &str = "herdless.toml";

/// The policy used when `--policy` is not given.
pub const DEFAULT_POLICY: &str = "default";

/// Every key a policy table may hold, in documentation order.
pub const KEYS: &[&str] = &[
    "jitter",
    "base",
    "multiplier",
    "cap",
    "max_attempts",
    "max_elapsed",
    "max_retry_after",
    "retry_after_spread",
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

/// A policy file problem: which file, which line, which key, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file (absent for errors not tied to a file, e.g. an unknown policy
    /// name with no file found).
    pub file: Option<PathBuf>,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// Dotted key path (`policy.ingest.cap`), when the error is about a key.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl ConfigError {
    fn plain(message: impl Into<String>) -> Self {
        ConfigError {
            file: None,
            line: None,
            key: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}", file.display())?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
            }
            f.write_str(": ")?;
        }
        if let Some(key) = &self.key {
            write!(f, "{key}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

/// A value with the 1-based line it was written on.
#[derive(Debug, Clone, PartialEq)]
pub struct At<T> {
    /// The value.
    pub value: T,
    /// Its line in the file.
    pub line: usize,
}

/// One `[policy.NAME]` table, validated key by key (the combination is
/// validated by [`herdless::PolicyBuilder::build`] once layered).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FilePolicy {
    /// The table's name.
    pub name: String,
    /// The line of the table header.
    pub line: usize,
    /// `jitter`
    pub jitter: Option<At<Jitter>>,
    /// `base`
    pub base: Option<At<Duration>>,
    /// `multiplier`
    pub multiplier: Option<At<f64>>,
    /// `cap`
    pub cap: Option<At<Duration>>,
    /// `max_attempts`
    pub max_attempts: Option<At<u32>>,
    /// `max_elapsed`
    pub max_elapsed: Option<At<Duration>>,
    /// `max_retry_after`
    pub max_retry_after: Option<At<Duration>>,
    /// `retry_after_spread`
    pub retry_after_spread: Option<At<f64>>,
    /// `seed`
    pub seed: Option<At<u64>>,
    /// `task_id`
    pub task_id: Option<At<String>>,
    /// Declared fact: the slowest shared resource's worst-case recovery time.
    pub recovery_time: Option<At<Duration>>,
    /// Declared fact: the task broker's visibility timeout.
    pub visibility_timeout: Option<At<Duration>>,
    /// Declared fact: how many retriers share the resource (1 = a lone job).
    pub workers: Option<At<u64>>,
    /// `exec`: statuses to retry (everything else terminal).
    pub retry_on: Option<At<CodeSet>>,
    /// `exec`: statuses never to retry.
    pub terminal_on: Option<At<CodeSet>>,
    /// `exec`: per-attempt timeout.
    pub timeout: Option<At<Duration>>,
    /// `exec`: grace between TERM and KILL.
    pub kill_after: Option<At<Duration>>,
}

impl FilePolicy {
    /// The line of `key` in this table, if the table sets it.
    pub fn line_of(&self, key: &str) -> Option<usize> {
        match key {
            "jitter" => self.jitter.as_ref().map(|a| a.line),
            "base" => self.base.as_ref().map(|a| a.line),
            "multiplier" => self.multiplier.as_ref().map(|a| a.line),
            "cap" => self.cap.as_ref().map(|a| a.line),
            "max_attempts" => self.max_attempts.as_ref().map(|a| a.line),
            "max_elapsed" => self.max_elapsed.as_ref().map(|a| a.line),
            "max_retry_after" => self.max_retry_after.as_ref().map(|a| a.line),
            "retry_after_spread" => self.retry_after_spread.as_ref().map(|a| a.line),
            _ => None,
        }
    }
}

/// A parsed, validated policy file.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its policies by name.
    pub policies: BTreeMap<String, FilePolicy>,
}

/// One `[policy.NAME]` table as written: keys and values with their spans.
type RawTable = BTreeMap<Spanned<String>, Spanned<Value>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    policy: BTreeMap<Spanned<String>, Spanned<RawTable>>,
}

/// Byte offset → 1-based line.
impl<T> At<T> {
    fn new(line: usize, value: T) -> Self {
        At { value, line }
    }
}

/// Byte offset → 1-based line.
fn line_at(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

impl ConfigFile {
    /// Reads and validates the file at `path`.
    ///
    /// # Errors
    ///
    /// Unreadable file, TOML syntax, unknown keys, values of the wrong kind.
    pub fn read(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: Some(path.to_owned()),
            line: None,
            key: None,
            message: format!("cannot read the policy file: {e}"),
        })?;
        Self::parse(path, &text)
    }

    /// Parses and validates `text` as the file `path`.
    ///
    /// # Errors
    ///
    /// TOML syntax, unknown keys, values of the wrong kind, each naming the line
    /// and the key.
    ///
    /// ```
    /// use herdless_cli::config::ConfigFile;
    /// let err = ConfigFile::parse("h.toml".as_ref(), "[policy.a]\ncapp = \"1s\"\n").unwrap_err();
    /// assert_eq!(err.to_string().lines().next().unwrap(),
    ///     "h.toml:2: policy.a.capp: unknown key (expected one of: jitter, base, multiplier, cap, \
    ///      max_attempts, max_elapsed, max_retry_after, retry_after_spread, seed, task_id, \
    ///      recovery_time, visibility_timeout, workers, retry_on, terminal_on, timeout, kill_after)");
    /// ```
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let err_at = |line: Option<usize>, key: Option<String>, message: String| ConfigError {
            file: Some(path.to_owned()),
            line,
            key,
            message,
        };
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_at(text, s.start));
            let message = e.message().trim().to_string();
            // serde names an unknown top-level key in its message; make it a key.
            err_at(
                line,
                None,
                if message.starts_with("unknown field") {
                    format!("{message} (a policy file holds [policy.NAME] tables only)")
                } else {
                    message
                },
            )
        })?;
        let mut policies = BTreeMap::new();
        for (name, table) in raw.policy {
            let header_line = line_at(text, name.span().start);
            let name = name.into_inner();
            let mut p = FilePolicy {
                name: name.clone(),
                line: header_line,
                ..FilePolicy::default()
            };
            for (key, value) in table.into_inner() {
                let line = line_at(text, key.span().start);
                let key = key.into_inner();
                let path_key = format!("policy.{name}.{key}");
                let value = value.into_inner();
                let bad = |msg: String| err_at(Some(line), Some(path_key.clone()), msg);
                if let Ok(field) = key.parse::<PolicyField>() {
                    set_policy_key(&mut p, field, line, value).map_err(bad)?;
                    continue;
                }
                match key.as_str() {
                    "seed" => {
                        p.seed = Some(At::new(
                            line,
                            integer(&value, 0, i64::MAX as u64).map_err(bad)?,
                        ))
                    }
                    "task_id" => {
                        p.task_id = Some(At::new(line, string(&value).map_err(bad)?.to_owned()))
                    }
                    "recovery_time" => {
                        p.recovery_time = Some(At::new(line, duration(&value).map_err(bad)?))
                    }
                    "visibility_timeout" => {
                        p.visibility_timeout = Some(At::new(line, duration(&value).map_err(bad)?))
                    }
                    "workers" => {
                        p.workers = Some(At::new(line, integer(&value, 1, u64::MAX).map_err(bad)?))
                    }
                    "retry_on" => p.retry_on = Some(At::new(line, codes(&value).map_err(bad)?)),
                    "terminal_on" => {
                        p.terminal_on = Some(At::new(line, codes(&value).map_err(bad)?))
                    }
                    "timeout" => p.timeout = Some(At::new(line, duration(&value).map_err(bad)?)),
                    "kill_after" => {
                        p.kill_after = Some(At::new(line, duration(&value).map_err(bad)?))
                    }
                    _ => {
                        return Err(bad(format!(
                            "unknown key (expected one of: {})",
                            KEYS.join(", ")
                        )))
                    }
                }
            }
            validate_exec_keys(&p).map_err(|(line, key, message)| {
                err_at(Some(line), Some(format!("policy.{name}.{key}")), message)
            })?;
            policies.insert(name, p);
        }
        Ok(ConfigFile {
            path: path.to_owned(),
            policies,
        })
    }

    /// The policy named `name`.
    ///
    /// # Errors
    ///
    /// No such table; the message lists the names the file has.
    pub fn policy(&self, name: &str) -> Result<&FilePolicy, ConfigError> {
        self.policies.get(name).ok_or_else(|| {
            let have: Vec<&str> = self.policies.keys().map(String::as_str).collect();
            ConfigError {
                file: Some(self.path.clone()),
                line: None,
                key: Some(format!("policy.{name}")),
                message: if have.is_empty() {
                    "no such policy (the file defines none)".into()
                } else {
                    format!("no such policy (the file defines: {})", have.join(", "))
                },
            }
        })
    }
}

/// Reads policy key `field` with the library's serde support (syntax and the
/// field's own checks) into `p`. The message drops the library's
/// `invalid FIELD: ` prefix: the error names the key already.
fn set_policy_key(
    p: &mut FilePolicy,
    field: PolicyField,
    line: usize,
    value: Value,
) -> Result<(), String> {
    let mut c = PolicyConfig::default();
    c.set(field, value).map_err(|e| {
        let message = e.message().trim();
        let prefix = format!("invalid {field}: ");
        message.strip_prefix(&prefix).unwrap_or(message).to_owned()
    })?;
    match field {
        PolicyField::Jitter => p.jitter = c.jitter.map(|v| At::new(line, v)),
        PolicyField::Base => p.base = c.base.map(|v| At::new(line, v)),
        PolicyField::Multiplier => p.multiplier = c.multiplier.map(|v| At::new(line, v)),
        PolicyField::Cap => p.cap = c.cap.map(|v| At::new(line, v)),
        PolicyField::MaxAttempts => p.max_attempts = c.max_attempts.map(|v| At::new(line, v)),
        PolicyField::MaxElapsed => p.max_elapsed = c.max_elapsed.map(|v| At::new(line, v)),
        PolicyField::MaxRetryAfter => {
            p.max_retry_after = c.max_retry_after.map(|v| At::new(line, v))
        }
        PolicyField::RetryAfterSpread => {
            p.retry_after_spread = c.retry_after_spread.map(|v| At::new(line, v))
        }
        _ => {}
    }
    Ok(())
}

/// The rules `exec` applies to its own keys, checked when the file is read so
/// that `check` refuses what `exec` would: a per-attempt `timeout` above zero,
/// and `retry_on` / `terminal_on` as [`Classes::validate`] accepts them.
/// Returns the line and key at fault and the message.
///
/// [`Classes::validate`]: crate::exec::Classes::validate
fn validate_exec_keys(p: &FilePolicy) -> Result<(), (usize, &'static str, String)> {
    use crate::exec::{Classes, ClassesError};
    if let Some(t) = p.timeout.as_ref().filter(|t| t.value.is_zero()) {
        return Err((t.line, "timeout", "must be greater than zero".into()));
    }
    let retry = p.retry_on.as_ref();
    let terminal = p.terminal_on.as_ref();
    match Classes::validate(retry.map(|a| a.value), terminal.map(|a| a.value)) {
        Ok(_) => Ok(()),
        Err(e @ ClassesError::Both(_)) => {
            // Blame the later of the two lines, naming the other.
            let (r, t) = (retry.map_or(0, |a| a.line), terminal.map_or(0, |a| a.line));
            let (line, key, other) = if t >= r {
                (t, "terminal_on", format!("retry_on (line {r})"))
            } else {
                (r, "retry_on", format!("terminal_on (line {t})"))
            };
            let message = match key {
                "terminal_on" => e.message(&other, "terminal_on"),
                _ => e.message("retry_on", &other),
            };
            Err((line, key, message))
        }
        Err(e) => {
            let line = retry.map_or(p.line, |a| a.line);
            // The key is already named before the message.
            let message = e.message("retry_on", "terminal_on");
            let message = message.strip_prefix("retry_on: ").unwrap_or(&message);
            Err((line, "retry_on", message.to_owned()))
        }
    }
}

/// Where the policy file is: `explicit` (which must exist), else
/// `./herdless.toml`, else `<config dir>/herdless/herdless.toml`, else none.
///
/// # Errors
///
/// `explicit` names no file.
pub fn locate(explicit: Option<&Path>) -> Result<Option<PathBuf>, ConfigError> {
    if let Some(p) = explicit {
        let given = "(given by --config or HERDLESS_CONFIG)";
        let message = match std::fs::metadata(p) {
            Ok(m) if m.is_file() => return Ok(Some(p.to_owned())),
            Ok(m) if m.is_dir() => format!("is a directory, not a policy file {given}"),
            Ok(_) => format!("is not a regular file, not a policy file {given}"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                format!("no such policy file {given}")
            }
            // A symlink loop, a directory that cannot be searched…
            Err(e) => format!("cannot read the policy file {given}: {e}"),
        };
        return Err(ConfigError {
            file: Some(p.to_owned()),
            line: None,
            key: None,
            message,
        });
    }
    let local = PathBuf::from(FILE_NAME);
    if local.is_file() {
        return Ok(Some(local));
    }
    Ok(user_config_path().filter(|p| p.is_file()))
}

/// `<config dir>/herdless/herdless.toml`, when the platform has a config dir.
pub fn user_config_path() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("herdless").join(FILE_NAME))
}

/// The error for `--policy NAME` when no file was found.
pub fn no_file_for(name: &str) -> ConfigError {
    let user = user_config_path()
        .map(|p| format!(" or {}", p.display()))
        .unwrap_or_default();
    ConfigError::plain(format!(
        "--policy {name}: no policy file found (looked for ./{FILE_NAME}{user}; pass --config PATH)"
    ))
}

fn kind(v: &Value) -> &'static str {
    v.type_str()
}

fn string(v: &Value) -> Result<&str, String> {
    v.as_str()
        .ok_or_else(|| format!("expected a string, found {}", kind(v)))
}

/// A duration: a string in human form (`"500ms"`, `"2m"`) or a number of
/// seconds, by the library's rules (the same as the policy keys').
fn duration(v: &Value) -> Result<Duration, String> {
    human::deserialize(v.clone()).map_err(|e| e.message().trim().to_owned())
}

fn integer(v: &Value, min: u64, max: u64) -> Result<u64, String> {
    match v {
        Value::Integer(i) => u64::try_from(*i)
            .ok()
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| format!("{i} is out of range (expected {min} to {max})")),
        other => Err(format!("expected a whole number, found {}", kind(other))),
    }
}

/// Exit statuses: `"75,111,200-210"` or `[75, 111]`.
fn codes(v: &Value) -> Result<CodeSet, String> {
    match v {
        Value::String(s) => s.parse::<CodeSet>().map_err(|e| e.to_string()),
        Value::Array(items) => {
            let mut set = CodeSet::empty();
            for item in items {
                let c = integer(item, 0, 255)?;
                set.insert(c as u8);
            }
            Ok(set)
        }
        other => Err(format!(
            "expected exit statuses such as \"75,111,200-210\" or [75, 111], found {}",
            kind(other)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ConfigFile, ConfigError> {
        ConfigFile::parse(Path::new("herdless.toml"), text)
    }

    #[test]
    fn every_key_parses() {
        let f = parse(
            r#"
[policy.all]
jitter = "equal"
base = "250ms"
multiplier = 3
cap = 60
max_attempts = 9
max_elapsed = "5m"
max_retry_after = 1.5
retry_after_spread = 0.2
seed = 42
task_id = "mount"
recovery_time = "45s"
visibility_timeout = "10m"
workers = 1
retry_on = "75,111,200-210"
terminal_on = [1, 2]
timeout = "30s"
kill_after = "2s"

[policy.empty]
"#,
        )
        .unwrap();
        let p = f.policy("all").unwrap();
        assert_eq!(p.line, 2);
        assert_eq!(p.jitter.as_ref().unwrap().value, Jitter::Equal);
        assert_eq!(p.base.as_ref().unwrap().value, Duration::from_millis(250));
        assert_eq!(p.multiplier.as_ref().unwrap().value, 3.0);
        assert_eq!(p.cap.as_ref().unwrap().value, Duration::from_secs(60));
        assert_eq!(p.cap.as_ref().unwrap().line, 6);
        assert_eq!(
            p.max_retry_after.as_ref().unwrap().value,
            Duration::from_millis(1500)
        );
        assert_eq!(p.seed.as_ref().unwrap().value, 42);
        assert!(p.retry_on.as_ref().unwrap().value.contains(205));
        assert!(p.terminal_on.as_ref().unwrap().value.contains(2));
        assert_eq!(p.workers.as_ref().unwrap().value, 1);
        assert_eq!(
            f.policy("empty").unwrap(),
            &FilePolicy {
                name: "empty".into(),
                line: 21,
                ..Default::default()
            }
        );
        let missing = f.policy("nope").unwrap_err().to_string();
        assert!(
            missing.contains("policy.nope") && missing.contains("all, empty"),
            "{missing}"
        );
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let cases = [
            (
                "[policy.a]\nbase = \"1s\"\ncapp = \"1s\"\n",
                "herdless.toml:3: policy.a.capp: unknown key",
            ),
            (
                "[policy.a]\ncap = \"soon\"\n",
                "herdless.toml:2: policy.a.cap: \"soon\"",
            ),
            (
                "[policy.a]\n\nmax_attempts = 0\n",
                "herdless.toml:3: policy.a.max_attempts: must be at least 1",
            ),
            (
                "[policy.a]\nmax_attempts = \"6\"\n",
                "herdless.toml:2: policy.a.max_attempts: expected a whole number, found string",
            ),
            (
                "[policy.a]\nmultiplier = 0.5\n",
                "herdless.toml:2: policy.a.multiplier: 0.5 must be a finite number of at least 1.0",
            ),
            (
                "[policy.a]\nvisibility_timeout = true\n",
                "herdless.toml:2: policy.a.visibility_timeout: expected a duration",
            ),
            (
                "[policy.a]\njitter = \"fuzzy\"\n",
                "herdless.toml:2: policy.a.jitter: unknown jitter mode",
            ),
            (
                "[policy.a]\nretry_on = \"1,300\"\n",
                "herdless.toml:2: policy.a.retry_on: \"300\"",
            ),
            (
                "[policy.a]\nbase = -1\n",
                "herdless.toml:2: policy.a.base: -1 is negative",
            ),
            ("[polcy.a]\n", "herdless.toml:1: unknown field `polcy`"),
            ("[policy.a]\ncap = \n", "herdless.toml:2: "),
        ];
        for (text, want) in cases {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.starts_with(want), "{text:?}\n got: {err}\nwant: {want}");
        }
    }

    #[test]
    fn lines_are_counted_from_one() {
        assert_eq!(line_at("a\nb\nc", 0), 1);
        assert_eq!(line_at("a\nb\nc", 2), 2);
        assert_eq!(line_at("a\nb\nc", 99), 3);
    }
}
