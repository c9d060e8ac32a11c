//! What bounds and classifies one attempt of a command, for `exec` and
//! `worker` alike: the flags (`--retry-on`, `--terminal-on`, `--timeout`,
//! `--kill-after`), their resolution over the policy file's keys, and the
//! wait that enforces them.

use std::future::Future;
use std::io;
use std::process::ExitStatus;
use std::time::Duration;

use clap::Args;
use nix::unistd::Pid;
use tokio::process::Child;

use super::child;
use crate::shared::classes::Classes;
use crate::shared::policy_args::Resolved;
use crate::shared::statuses::{ExitStatuses, parse_statuses};
use crate::shared::values::parse_duration;

/// The grace between `SIGTERM` and `SIGKILL` when ending an attempt (as
/// `docker stop`).
pub(crate) const DEFAULT_KILL_AFTER: Duration = Duration::from_secs(10);

/// The attempt flags `exec` and `worker` share.
#[derive(Debug, Clone, Args)]
pub(crate) struct AttemptArgs {
    /// Retry only these exit statuses (e.g. 75,111,200-210); every other failure is terminal.
    #[arg(long, value_parser = parse_statuses, value_name = "CODES")]
    pub(crate) retry_on: Option<ExitStatuses>,
    /// Never retry these exit statuses (126 and 127 never are).
    #[arg(long, value_parser = parse_statuses, value_name = "CODES")]
    pub(crate) terminal_on: Option<ExitStatuses>,
    /// Per-attempt time limit; the attempt's process group is then ended and the attempt counts as a retryable timeout [default: the policy file's `timeout`, else its `attempt_timeout`].
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub(crate) timeout: Option<Duration>,
    /// Grace between SIGTERM and SIGKILL when ending an attempt's process group [default: 10s].
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub(crate) kill_after: Option<Duration>,
}

/// The attempt flags resolved: each flag over its policy-file key.
#[derive(Debug)]
pub(crate) struct Limits {
    pub(crate) classes: Classes,
    /// Notes to print (statuses a range listed that are never retried).
    pub(crate) notes: Vec<String>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) kill_after: Duration,
}

impl AttemptArgs {
    /// The flags over the policy file's `retry_on`, `terminal_on`, `timeout`
    /// and `kill_after`; errors name where a bad value came from.
    pub(crate) fn resolve(&self, resolved: &Resolved) -> Result<Limits, String> {
        let t = &resolved.table;
        let (classes, notes) = resolve_classes(self.retry_on, self.terminal_on, resolved)?;
        let timeout = self.timeout.or(t.timeout.as_ref().map(|a| a.value));
        if timeout.is_some_and(|d| d.is_zero()) {
            return Err("--timeout must be greater than zero".into());
        }
        let kill_after = self
            .kill_after
            .or(t.kill_after.as_ref().map(|a| a.value))
            .unwrap_or(DEFAULT_KILL_AFTER);
        Ok(Limits {
            classes,
            notes,
            timeout,
            kill_after,
        })
    }
}

/// The limit of one attempt: `exec`'s own `timeout` (`--timeout`, then the
/// policy file's `timeout` key) when set; otherwise, when the policy has an
/// `attempt_timeout`, the attempt's `remaining` time (that timeout, or what
/// is left of `max_elapsed`, whichever is smaller: the library's rule);
/// otherwise none.
pub(crate) fn attempt_limit(
    timeout: Option<Duration>,
    policy: &herdless::Policy,
    remaining: Duration,
) -> Option<Duration> {
    timeout.or_else(|| policy.attempt_timeout().map(|_| remaining))
}

/// Waits for an attempt's `wait` within `timeout`: `None` when it ran out.
pub(crate) async fn within(
    timeout: Option<Duration>,
    wait: impl Future<Output = io::Result<ExitStatus>>,
) -> Option<io::Result<ExitStatus>> {
    match timeout {
        Some(limit) => tokio::time::timeout(limit, wait).await.ok(),
        None => Some(wait.await),
    }
}

/// Leaves none of an attempt's process group behind once [`within`] is
/// done: the group is ended when the wait failed or ran out, and when
/// `ended` says so of the status (a failed attempt: its retry must not race
/// it). Returns the status and whether the attempt timed out.
pub(crate) async fn settle(
    waited: Option<io::Result<ExitStatus>>,
    child: &mut Child,
    pgid: Pid,
    kill_after: Duration,
    ended: impl FnOnce(&ExitStatus) -> bool,
) -> (io::Result<ExitStatus>, bool) {
    match waited {
        Some(Ok(status)) => {
            if ended(&status) && child::group_remains(pgid) {
                let _ = child::end_group(pgid, child, kill_after).await;
            }
            (Ok(status), false)
        }
        Some(Err(e)) => {
            let _ = child::end_group(pgid, child, kill_after).await;
            (Err(e), false)
        }
        None => (child::end_group(pgid, child, kill_after).await, true),
    }
}

/// The exit-status lists in force: the flags over the policy file's, with
/// the notes to print (statuses a range listed that are never retried).
/// Errors name where each list came from.
pub(crate) fn resolve_classes(
    retry_on: Option<ExitStatuses>,
    terminal_on: Option<ExitStatuses>,
    resolved: &Resolved,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_s_own_timeout_wins_then_the_policy_s_attempt_timeout() {
        let s = Duration::from_secs;
        let plain = herdless::Policy::default();
        let timed = herdless::Policy::builder()
            .attempt_timeout(s(30))
            .build()
            .unwrap();
        assert_eq!(attempt_limit(Some(s(5)), &timed, s(20)), Some(s(5)));
        assert_eq!(attempt_limit(None, &timed, s(20)), Some(s(20)));
        assert_eq!(attempt_limit(None, &plain, s(20)), None);
        assert_eq!(attempt_limit(Some(s(5)), &plain, s(20)), Some(s(5)));
    }
}
