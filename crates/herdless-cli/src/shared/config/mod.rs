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
//! attempt_timeout = "45s"          # one attempt at most (exec: unless `timeout` is set)
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
//! library's own serde support
//! ([`PolicyConfig::set`](herdless::policy::serde::PolicyConfig::set)), the
//! same syntax and checks as a `Policy` deserialized anywhere else: human
//! durations, jitter names, each value refused on its own when invalid. The
//! table is walked key by key (`parse.rs`) from spanned TOML values, because
//! serde's errors carry the line but not the key's full path, and policy-level
//! errors (a cap below the base) must point at the line of the key that
//! caused them.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use herdless::Jitter;
use herdless::policy::PolicyField;

use crate::shared::statuses::ExitStatuses;

mod lines;
mod locate;
mod parse;
#[cfg(test)]
mod tests;
mod values;

pub(crate) use locate::{locate, no_file_for};

/// The file name looked for in the working directory and the config dir.
pub(crate) const FILE_NAME: &str = "herdless.toml";

/// The largest policy file herdless reads: 1 MiB. A file of named
/// policies is a few hundred bytes per policy, so this holds thousands;
/// a larger file is refused naming the file, before it is parsed (it is read
/// by every run of every subcommand in its directory).
pub(crate) const MAX_FILE_BYTES: usize = 1 << 20;

/// The policy used when `--policy` is not given.
pub(crate) const DEFAULT_POLICY: &str = "default";

/// The keys a policy table may hold besides the library's policy fields
/// ([`PolicyField::ALL`]): other settings, declared facts, `exec`'s own.
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

/// Every key a policy table may hold, in documentation order: the library's
/// policy fields (`jitter` … `retry_after_spread`, `attempt_timeout`), then
/// the file's own.
pub(crate) fn keys() -> impl Iterator<Item = &'static str> + Clone {
    PolicyField::ALL
        .into_iter()
        .map(PolicyField::as_str)
        .chain(FILE_KEYS.iter().copied())
}

/// A policy file problem: which file, which line, which key, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConfigError {
    /// The file (absent for errors not tied to a file, e.g. an unknown policy
    /// name with no file found).
    pub(crate) file: Option<PathBuf>,
    /// 1-based line, when known.
    pub(crate) line: Option<usize>,
    /// Dotted key path (`policy.ingest.cap`), when the error is about a key.
    pub(crate) key: Option<String>,
    /// What is wrong.
    pub(crate) message: String,
}

impl ConfigError {
    pub(super) fn plain(message: impl Into<String>) -> Self {
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
pub(crate) struct At<T> {
    /// The value.
    pub(crate) value: T,
    /// Its line in the file.
    pub(crate) line: usize,
}

/// One `[policy.NAME]` table, validated key by key (the combination is
/// validated by [`herdless::PolicyBuilder::build`] once layered).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct FilePolicy {
    /// The table's name.
    pub(crate) name: String,
    /// The line of the table header.
    pub(crate) line: usize,
    /// `jitter`
    pub(crate) jitter: Option<At<Jitter>>,
    /// `base`
    pub(crate) base: Option<At<Duration>>,
    /// `multiplier`
    pub(crate) multiplier: Option<At<f64>>,
    /// `cap`
    pub(crate) cap: Option<At<Duration>>,
    /// `max_attempts`
    pub(crate) max_attempts: Option<At<u32>>,
    /// `max_elapsed`
    pub(crate) max_elapsed: Option<At<Duration>>,
    /// `max_retry_after`
    pub(crate) max_retry_after: Option<At<Duration>>,
    /// `retry_after_spread`
    pub(crate) retry_after_spread: Option<At<f64>>,
    /// `attempt_timeout`: the longest one attempt may take (the library's
    /// policy field; `exec` and `worker` use it when `timeout` is not set).
    pub(crate) attempt_timeout: Option<At<Duration>>,
    /// `max_requeues`: requeue answers taken before each counts as an
    /// attempt (the library's policy field).
    pub(crate) max_requeues: Option<At<u32>>,
    /// `seed`
    pub(crate) seed: Option<At<u64>>,
    /// `task_id`
    pub(crate) task_id: Option<At<String>>,
    /// Declared fact: the slowest shared resource's worst-case recovery time.
    pub(crate) recovery_time: Option<At<Duration>>,
    /// Declared fact: the task broker's visibility timeout.
    pub(crate) visibility_timeout: Option<At<Duration>>,
    /// Declared fact: how many retriers share the resource (1 = a lone job).
    pub(crate) workers: Option<At<u64>>,
    /// `exec`: statuses to retry (everything else terminal).
    pub(crate) retry_on: Option<At<ExitStatuses>>,
    /// `exec`: statuses never to retry.
    pub(crate) terminal_on: Option<At<ExitStatuses>>,
    /// `exec`: per-attempt timeout.
    pub(crate) timeout: Option<At<Duration>>,
    /// `exec`: grace between TERM and KILL.
    pub(crate) kill_after: Option<At<Duration>>,
}

impl FilePolicy {
    /// The line of `key` in this table, if the table sets it.
    pub(crate) fn line_of(&self, key: &str) -> Option<usize> {
        match key {
            "jitter" => self.jitter.as_ref().map(|a| a.line),
            "base" => self.base.as_ref().map(|a| a.line),
            "multiplier" => self.multiplier.as_ref().map(|a| a.line),
            "cap" => self.cap.as_ref().map(|a| a.line),
            "max_attempts" => self.max_attempts.as_ref().map(|a| a.line),
            "max_elapsed" => self.max_elapsed.as_ref().map(|a| a.line),
            "max_retry_after" => self.max_retry_after.as_ref().map(|a| a.line),
            "retry_after_spread" => self.retry_after_spread.as_ref().map(|a| a.line),
            "attempt_timeout" => self.attempt_timeout.as_ref().map(|a| a.line),
            "max_requeues" => self.max_requeues.as_ref().map(|a| a.line),
            _ => None,
        }
    }
}

/// A parsed, validated policy file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ConfigFile {
    /// Where it was read from.
    pub(crate) path: PathBuf,
    /// Its policies by name.
    pub(crate) policies: BTreeMap<String, FilePolicy>,
}

/// The examples that were this file's doc tests (its items are private to
/// the crate, where doc tests cannot reach).
#[cfg(test)]
mod examples {
    #[allow(unused_imports)]
    use super::*;

    #[test]
    fn keys_example() -> Result<(), Box<dyn std::error::Error>> {
        let keys: Vec<_> = crate::shared::config::keys().collect();
        assert_eq!(keys.first(), Some(&"jitter"));
        assert!(keys.contains(&"visibility_timeout"));
        Ok(())
    }
}
