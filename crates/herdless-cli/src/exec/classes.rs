//! Exit-status classification for `exec`: which statuses are retried
//! (`--retry-on`), which are terminal (`--terminal-on`), and the ones no retry
//! can fix (126 not executable, 127 not found, 141 death by `SIGPIPE` unless
//! listed), the verdict on a failed attempt ([`classify`]), and the lists in
//! force from the flags and the policy file. `exec` and `worker` share them.

use herdless::Classification;
use nix::sys::signal::Signal;

use super::Failure;
use crate::codes::CodeSet;
use crate::exit;

/// Which exit statuses are retried.
///
/// ```
/// use herdless_cli::exec::Classes;
/// let default = Classes::new(None, None)?;
/// assert!(default.classify(1).is_retryable());
/// assert!(!default.classify(127).is_retryable()); // never retried
/// let allow = Classes::new(Some("75,111".parse()?), None)?;
/// assert!(allow.classify(75).is_retryable() && !allow.classify(1).is_retryable());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Classes {
    retry_on: Option<CodeSet>,
    terminal_on: CodeSet,
}

/// The status of a child killed by `SIGPIPE` (128 + 13), as a shell reports it:
/// terminal unless `--retry-on` lists it.
pub const SIGPIPE_STATUS: i32 = exit::SIGNAL_BASE + Signal::SIGPIPE as i32;

/// Statuses no retry can fix: 126 (not executable) and 127 (not found).
fn never_retried() -> CodeSet {
    let mut s = CodeSet::empty();
    s.insert(126);
    s.insert(127);
    s
}

/// Why a pair of `retry_on` / `terminal_on` lists was refused; each caller
/// names where the lists came from (flags, a policy file's line and key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassesError {
    /// `retry_on` lists 0, which is success.
    RetryOnZero,
    /// `retry_on` lists nothing but statuses that are never retried (126, 127).
    NeverRetried(CodeSet),
    /// Both lists hold these statuses.
    Both(CodeSet),
}

impl ClassesError {
    /// The message, naming `retry_on` as `retry` and `terminal_on` as `terminal`
    /// (e.g. `--retry-on`, `herdless.toml:3 (policy.a.terminal_on)`).
    pub fn message(&self, retry: &str, terminal: &str) -> String {
        match self {
            ClassesError::RetryOnZero => format!("{retry}: 0 is success, not a failure to retry"),
            ClassesError::NeverRetried(never) => format!(
                "{retry}: {never} can never be retried (126: not executable, 127: not found)"
            ),
            ClassesError::Both(both) => format!("{retry} and {terminal} both list {both}"),
        }
    }
}

impl Classes {
    /// Validates the lists: `retry_on` may not hold 0, nor list 126 or 127
    /// (never retried) as items of their own (a range that spans them, such as
    /// `1-255`, is kept without them, as [`left_out`](Self::left_out)
    /// reports), and the lists may not overlap.
    ///
    /// # Errors
    ///
    /// A message naming the offending statuses.
    pub fn new(retry_on: Option<CodeSet>, terminal_on: Option<CodeSet>) -> Result<Self, String> {
        Self::validate(retry_on, terminal_on).map_err(|e| e.message("--retry-on", "--terminal-on"))
    }

    /// [`new`](Self::new) with the reason as a value, for callers that name
    /// the lists' sources themselves.
    ///
    /// # Errors
    ///
    /// The lists are refused.
    pub fn validate(
        retry_on: Option<CodeSet>,
        terminal_on: Option<CodeSet>,
    ) -> Result<Self, ClassesError> {
        let terminal_on = terminal_on.unwrap_or_default();
        if let Some(r) = retry_on {
            if r.contains(0) {
                return Err(ClassesError::RetryOnZero);
            }
            let never = r.intersection(&never_retried());
            // Listed alone (`126`, `1,127`) or nothing else: refused; within a
            // range that holds others (`1-255`): left out.
            let alone = never.listed_alone();
            if !alone.is_empty() {
                return Err(ClassesError::NeverRetried(alone));
            }
            if !never.is_empty() && r == never {
                return Err(ClassesError::NeverRetried(never));
            }
            let both = r.intersection(&terminal_on);
            if !both.is_empty() {
                return Err(ClassesError::Both(both));
            }
        }
        Ok(Classes {
            retry_on,
            terminal_on,
        })
    }

    /// The statuses of `retry_on` that are never retried all the same (126,
    /// 127 within a range such as `1-255`), if any.
    pub fn left_out(&self) -> Option<CodeSet> {
        let never = self.retry_on?.intersection(&never_retried());
        (!never.is_empty()).then_some(never)
    }

    /// The verdict on a non-zero shell status.
    pub fn classify(&self, status: i32) -> Classification {
        if never_retried().contains(status) || self.terminal_on.contains(status) {
            return Classification::terminal();
        }
        match &self.retry_on {
            Some(allow) if allow.contains(status) => Classification::retryable(),
            Some(_) => Classification::terminal(),
            // Killed by SIGPIPE: the reader went away (`herdless exec -- yes |
            // head -1`); a retry would write to the same closed pipe.
            None if status == SIGPIPE_STATUS => Classification::terminal(),
            None => Classification::retryable(),
        }
    }
}

/// The exit-status lists in force: the flags over the policy file's, with
/// the notes to print (statuses a range listed that are never retried).
/// Errors name where each list came from.
pub(crate) fn resolve_classes(
    retry_on: Option<CodeSet>,
    terminal_on: Option<CodeSet>,
    resolved: &crate::policy_args::Resolved,
) -> Result<(Classes, Vec<String>), String> {
    let t = &resolved.table;
    // Where each list came from: the flag, or the policy file's line and key
    // (the file's own lists were validated when it was read).
    let from = |flag: &str, key: &str, line: Option<usize>| match (line, &resolved.file) {
        (Some(line), Some(file)) => {
            format!("{}:{line} (policy.{}.{key})", file.display(), t.name)
        }
        _ => flag.to_owned(),
    };
    let retry_from = if retry_on.is_some() {
        "--retry-on".to_owned()
    } else {
        from(
            "--retry-on",
            "retry_on",
            t.retry_on.as_ref().map(|a| a.line),
        )
    };
    let terminal_from = if terminal_on.is_some() {
        "--terminal-on".to_owned()
    } else {
        from(
            "--terminal-on",
            "terminal_on",
            t.terminal_on.as_ref().map(|a| a.line),
        )
    };
    let classes = Classes::validate(
        retry_on.or(t.retry_on.as_ref().map(|a| a.value)),
        terminal_on.or(t.terminal_on.as_ref().map(|a| a.value)),
    )
    .map_err(|e| e.message(&retry_from, &terminal_from))?;
    let notes = classes
        .left_out()
        .map(|never| {
            format!(
                "note: {retry_from}: {never} left out (never retried: 126 not executable, \
                 127 not found)"
            )
        })
        .into_iter()
        .collect();
    Ok((classes, notes))
}

/// The verdict on a failed attempt: its exit status by `classes`; a timeout
/// is retryable; a command that cannot be started is terminal, unless the
/// process ran out of file descriptors (a local, transient shortage).
///
/// ```
/// use herdless_cli::exec::{classify, Classes, Failure};
/// let classes = Classes::new(None, None)?;
/// assert!(classify(&classes, &Failure::Exit(1)).is_retryable());
/// assert!(!classify(&classes, &Failure::Exit(127)).is_retryable());
/// assert!(classify(&classes, &Failure::TimedOut(143)).is_retryable());
/// # Ok::<(), String>(())
/// ```
pub fn classify(classes: &Classes, failure: &Failure) -> Classification {
    match failure {
        Failure::Exit(status) => classes.classify(*status),
        Failure::TimedOut(_) => Classification::retryable(),
        // Out of file descriptors: a local, transient shortage.
        Failure::Start { error, .. } if crate::limits::is_out_of_descriptors(error) => {
            Classification::retryable()
        }
        Failure::Start { .. } => Classification::terminal(),
    }
}
