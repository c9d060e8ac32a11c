//! Exit-status classification for `exec`: which statuses are retried
//! (`--retry-on`), which are terminal (`--terminal-on`), and the ones no retry
//! can fix (126 not executable, 127 not found, 141 death by `SIGPIPE` unless
//! listed), the verdict on a failed attempt ([`classify`]), and the lists in
//! force from the flags and the policy file. `exec` and `worker` share them.

use herdless::Classification;
use nix::sys::signal::Signal;

use crate::shared::exit;
use crate::shared::statuses::ExitStatuses;

/// Which exit statuses are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Classes {
    retry_on: Option<ExitStatuses>,
    terminal_on: ExitStatuses,
}

/// The status of a child killed by `SIGPIPE` (128 + 13), as a shell reports it:
/// terminal unless `--retry-on` lists it.
pub(crate) const SIGPIPE_STATUS: i32 = exit::SIGNAL_BASE + Signal::SIGPIPE as i32;

/// Statuses no retry can fix: 126 (not executable) and 127 (not found).
fn never_retried() -> ExitStatuses {
    let mut s = ExitStatuses::empty();
    s.insert(126);
    s.insert(127);
    s
}

/// Why a pair of `retry_on` / `terminal_on` lists was refused; each caller
/// names where the lists came from (flags, a policy file's line and key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClassesError {
    /// `retry_on` lists 0, which is success.
    RetryOnZero,
    /// `retry_on` lists nothing but statuses that are never retried (126, 127).
    NeverRetried(ExitStatuses),
    /// Both lists hold these statuses.
    Both(ExitStatuses),
}

impl ClassesError {
    /// The message, naming `retry_on` as `retry` and `terminal_on` as `terminal`
    /// (e.g. `--retry-on`, `herdless.toml:3 (policy.a.terminal_on)`).
    pub(crate) fn message(&self, retry: &str, terminal: &str) -> String {
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
    /// [`validate`](Self::validate), the lists named by their flags.
    #[cfg(test)]
    pub(crate) fn new(
        retry_on: Option<ExitStatuses>,
        terminal_on: Option<ExitStatuses>,
    ) -> Result<Self, String> {
        Self::validate(retry_on, terminal_on).map_err(|e| e.message("--retry-on", "--terminal-on"))
    }

    /// Validates the lists: `retry_on` may not hold 0, nor list 126 or 127
    /// (never retried) as items of their own (a range that spans them, such as
    /// `1-255`, is kept without them, as [`left_out`](Self::left_out)
    /// reports), and the lists may not overlap. Each caller names the lists'
    /// sources itself ([`ClassesError::message`]).
    ///
    /// # Errors
    ///
    /// The lists are refused: why.
    pub(crate) fn validate(
        retry_on: Option<ExitStatuses>,
        terminal_on: Option<ExitStatuses>,
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
    pub(crate) fn left_out(&self) -> Option<ExitStatuses> {
        let never = self.retry_on?.intersection(&never_retried());
        (!never.is_empty()).then_some(never)
    }

    /// The verdict on a non-zero shell status.
    pub(crate) fn classify(&self, status: i32) -> Classification {
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

/// The examples that were this file's doc tests (its items are private to
/// the crate, where doc tests cannot reach).
#[cfg(test)]
mod examples {
    #[allow(unused_imports)]
    use super::*;

    #[test]
    fn classes_example() -> Result<(), Box<dyn std::error::Error>> {
        use crate::shared::classes::Classes;
        let default = Classes::new(None, None)?;
        assert!(default.classify(1).is_retryable());
        assert!(!default.classify(127).is_retryable()); // never retried
        let allow = Classes::new(Some("75,111".parse()?), None)?;
        assert!(allow.classify(75).is_retryable() && !allow.classify(1).is_retryable());
        Ok(())
    }
}
