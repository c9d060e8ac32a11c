//! Reading a policy file: TOML with spans, walked key by key so that every
//! error names the file, the line and the key.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use herdless::policy::PolicyField;
use herdless::policy::serde::PolicyConfig;
use serde::Deserialize;
use toml::{Spanned, Value};

use super::lines::Lines;
use super::values::{SEED_FORMS, codes, duration, integer, seed, string};
use super::{At, ConfigError, ConfigFile, FilePolicy, MAX_FILE_BYTES, keys};

/// One `[policy.NAME]` table as written: keys and values with their spans.
type RawTable = BTreeMap<Spanned<String>, Spanned<Value>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    policy: BTreeMap<Spanned<String>, Spanned<RawTable>>,
}

impl<T> At<T> {
    /// `value`, found on `line`.
    fn new(line: usize, value: T) -> Self {
        At { value, line }
    }
}

impl ConfigFile {
    /// Reads and validates the file at `path`.
    ///
    /// # Errors
    ///
    /// Unreadable file, TOML syntax, unknown keys, values of the wrong kind.
    pub(crate) fn read(path: &Path) -> Result<Self, ConfigError> {
        let err = |message: String| ConfigError {
            file: Some(path.to_owned()),
            line: None,
            key: None,
            message,
        };
        // Never more than one byte past the limit, whatever the file is.
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_FILE_BYTES as u64 + 1).read_to_end(&mut bytes))
            .map_err(|e| err(format!("cannot read the policy file: {e}")))?;
        if bytes.len() > MAX_FILE_BYTES {
            return Err(err(too_large()));
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
            ConfigError {
                line: Some(line),
                ..err("not UTF-8 text (a policy file is TOML, which is UTF-8)".into())
            }
        })?;
        Self::parse(path, &text)
    }

    /// Parses and validates `text` as the file `path`.
    ///
    /// # Errors
    ///
    /// TOML syntax, unknown keys, values of the wrong kind, each naming the line
    /// and the key.
    pub(crate) fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let err_at = |line: Option<usize>, key: Option<String>, message: String| ConfigError {
            file: Some(path.to_owned()),
            line,
            key,
            message,
        };
        if text.len() > MAX_FILE_BYTES {
            return Err(err_at(None, None, too_large()));
        }
        let lines = Lines::new(text);
        let line_at = |offset: usize| lines.line_at(offset);
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            let start = e.span().map(|s| s.start);
            let message = e.message().trim().to_string();
            // serde names an unknown top-level key in its message; make it a key.
            let message = if message.starts_with("unknown field") {
                format!("{message} (a policy file holds [policy.NAME] tables only)")
            } else {
                message
            };
            let key = start.and_then(|at| key_at(text, at));
            let message = match &key {
                Some(k) if k.ends_with(".seed") => format!("{message} ({SEED_FORMS})"),
                _ => message,
            };
            err_at(start.map(line_at), key, message)
        })?;
        let mut policies = BTreeMap::new();
        for (name, table) in raw.policy {
            let header_line = line_at(name.span().start);
            let name = name.into_inner();
            let mut p = FilePolicy {
                name: name.clone(),
                line: header_line,
                ..FilePolicy::default()
            };
            for (key, value) in table.into_inner() {
                let line = line_at(key.span().start);
                let key = key.into_inner();
                let path_key = format!("policy.{name}.{key}");
                let value = value.into_inner();
                let bad = |msg: String| err_at(Some(line), Some(path_key.clone()), msg);
                if let Ok(field) = key.parse::<PolicyField>() {
                    set_policy_key(&mut p, field, line, value).map_err(bad)?;
                    continue;
                }
                match key.as_str() {
                    "seed" => p.seed = Some(At::new(line, seed(&value).map_err(bad)?)),
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
                            keys().collect::<Vec<_>>().join(", ")
                        )));
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
    /// No such table; the message lists the names the file has, or, past
    /// ten of them, how many and the five closest (by edit distance).
    pub(crate) fn policy(&self, name: &str) -> Result<&FilePolicy, ConfigError> {
        self.policies.get(name).ok_or_else(|| {
            let have: Vec<&str> = self.policies.keys().map(String::as_str).collect();
            ConfigError {
                file: Some(self.path.clone()),
                line: None,
                key: Some(format!("policy.{name}")),
                message: if have.is_empty() {
                    "no such policy (the file defines none)".into()
                } else if have.len() <= NAMES_LISTED {
                    format!("no such policy (the file defines: {})", have.join(", "))
                } else {
                    format!(
                        "no such policy (the file defines {}; the closest: {})",
                        have.len(),
                        closest(name, &have, CLOSEST).join(", ")
                    )
                },
            }
        })
    }
}

/// A missing policy's error lists every name up to this many.
const NAMES_LISTED: usize = 10;

/// Past [`NAMES_LISTED`], the names closest to the one asked for that it lists.
const CLOSEST: usize = 5;

/// The `n` names nearest `to` by edit distance (ties by name).
fn closest<'a>(to: &str, names: &[&'a str], n: usize) -> Vec<&'a str> {
    let mut by: Vec<(usize, &str)> = names.iter().map(|h| (edit_distance(to, h), *h)).collect();
    by.sort_unstable();
    by.into_iter().take(n).map(|(_, h)| h).collect()
}

/// Levenshtein distance over chars (names are short: a table header).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = (diag + usize::from(ca != *cb)).min(up + 1).min(row[j] + 1);
            diag = up;
        }
    }
    row[b.len()]
}

/// The refusal of a file past [`MAX_FILE_BYTES`].
fn too_large() -> String {
    format!(
        "larger than {} KiB, the limit of a policy file (it holds named policies, a few \
         hundred bytes each)",
        MAX_FILE_BYTES / 1024
    )
}

/// The dotted key at byte `at` of a file TOML refused, read from the text
/// (TOML's errors give a span, not the key): the key written before `=` on
/// that line, in the nearest table header above it. `None` when the line
/// holds no `key =`.
fn key_at(text: &str, at: usize) -> Option<String> {
    let at = at.min(text.len());
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let (key, _) = text[start..end].split_once('=')?;
    let key = key.trim().trim_matches('"');
    let plain = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
    };
    if !plain(key) {
        return None;
    }
    let table = text[..start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|h| h.trim_matches(|c| c == '[' || c == ']').trim())
        .filter(|t| plain(t));
    Some(match table {
        Some(t) => format!("{t}.{key}"),
        None => key.to_owned(),
    })
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
        PolicyField::AttemptTimeout => {
            p.attempt_timeout = c.attempt_timeout.map(|v| At::new(line, v))
        }
        PolicyField::MaxRequeues => p.max_requeues = c.max_requeues.map(|v| At::new(line, v)),
        _ => {}
    }
    Ok(())
}

/// The rules `exec` applies to its own keys, checked when the file is read so
/// that `check` refuses what `exec` would: a per-attempt `timeout` above zero,
/// and `retry_on` / `terminal_on` as [`Classes::validate`] accepts them.
/// Returns the line and key at fault and the message.
///
/// [`Classes::validate`]: crate::shared::classes::Classes::validate
fn validate_exec_keys(p: &FilePolicy) -> Result<(), (usize, &'static str, String)> {
    use crate::shared::classes::{Classes, ClassesError};
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

/// The examples that were this file's doc tests (its items are private to
/// the crate, where doc tests cannot reach).
#[cfg(test)]
mod examples {
    #[allow(unused_imports)]
    use super::*;

    #[test]
    fn parse_example() -> Result<(), Box<dyn std::error::Error>> {
        use crate::shared::config::ConfigFile;
        let err = ConfigFile::parse("h.toml".as_ref(), "[policy.a]\ncapp = \"1s\"\n").unwrap_err();
        assert_eq!(
            err.to_string().lines().next().unwrap(),
            "h.toml:2: policy.a.capp: unknown key (expected one of: jitter, base, multiplier, cap, \
             max_attempts, max_elapsed, max_retry_after, retry_after_spread, attempt_timeout, \
             max_requeues, seed, \
             task_id, recovery_time, visibility_timeout, workers, retry_on, terminal_on, timeout, \
             kill_after)"
        );
        Ok(())
    }
}

/// More examples that were doc tests (see `examples`).
#[cfg(test)]
mod policy_examples {
    #[allow(unused_imports)]
    use super::*;

    #[test]
    fn policy_example() -> Result<(), Box<dyn std::error::Error>> {
        use crate::shared::config::ConfigFile;
        let text: String = (0..20_000).map(|i| format!("[policy.p{i}]\n")).collect();
        let file = ConfigFile::parse("h.toml".as_ref(), &text).unwrap();
        let e = file.policy("p1234x").unwrap_err().to_string();
        assert!(
            e.contains("the file defines 20000; the closest: p1234, "),
            "{e}"
        );
        assert!(e.len() < 200, "{e}");
        Ok(())
    }
}
