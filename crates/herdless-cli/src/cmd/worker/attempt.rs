//! One attempt of one task: CMD in its own process group, the payload on its
//! stdin, `HERDLESS_ATTEMPT` and `HERDLESS_IDEMPOTENCY_KEY` in its
//! environment, `--timeout` and `--kill-after` as in `exec` (the same
//! process-group handling: [`crate::shared::process::child`]; without a `timeout`, the
//! policy's `attempt_timeout` bounds the attempt, as the task's remaining
//! time).

use std::ffi::OsString;
use std::process::Stdio;
use std::time::Duration;

use herdless::adapters::nats::Task;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use tokio::io::AsyncWriteExt;

use crate::shared::exit;
use crate::shared::process::{Failure, child, group_of, limits, start_failure};

/// What every attempt runs.
#[derive(Debug)]
pub(crate) struct Command {
    pub(crate) program: OsString,
    pub(crate) args: Vec<OsString>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) kill_after: Duration,
    /// The policy (its `attempt_timeout` bounds an attempt without `timeout`).
    pub(crate) policy: herdless::Policy,
}

/// Ends the attempt's process group if the attempt is dropped before it
/// settled (the worker aborts: a second signal), and reaps its leader, so
/// nothing outlives the worker.
struct GroupGuard(Option<Pid>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.0 {
            child::signal_group(pgid, Signal::SIGKILL);
            // SIGKILL cannot be ignored: this returns at once. The leader's
            // pid is the group's.
            let _ = nix::sys::wait::waitpid(pgid, None);
        }
    }
}

/// Runs one attempt to its end: success, a failure `exec` would classify
/// the same way, or a timeout.
pub(crate) async fn run(cmd: &Command, task: Task) -> Result<(), Failure> {
    let mut child = tokio::process::Command::new(&cmd.program)
        .args(&cmd.args)
        .env("HERDLESS_ATTEMPT", task.attempt.to_string())
        .env("HERDLESS_IDEMPOTENCY_KEY", task.key.to_string())
        .stdin(Stdio::piped())
        .process_group(0)
        // The guard kills and reaps; tokio must not signal a reaped pid.
        .kill_on_drop(false)
        .spawn()
        .map_err(|e| start_failure("worker", &cmd.program, e))?;
    let pgid = group_of(&child)?;
    let mut guard = GroupGuard(Some(pgid));
    let stdin = child.stdin.take();
    let payload = task.payload;
    // The payload is written while the command runs (it may be larger than a
    // pipe holds); a command that does not read it all closes the pipe,
    // which is its business.
    let feed = async move {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(&payload).await;
        }
    };
    let wait = async {
        let ((), status) = tokio::join!(feed, child.wait());
        status
    };
    let limit = limits::attempt_limit(cmd.timeout, &cmd.policy, task.remaining);
    let waited = limits::within(limit, wait).await;
    // Leave no member of a failed attempt behind: the retry, on any worker,
    // must not race it.
    let (status, timed_out) =
        limits::settle(waited, &mut child, pgid, cmd.kill_after, |s| !s.success()).await;
    guard.0 = None;
    let status = status.map_err(|error| Failure::Start {
        status: exit::EXEC_USAGE,
        error,
    })?;
    let shell = child::shell_status(status);
    if timed_out {
        Err(Failure::TimedOut(shell))
    } else if status.success() {
        Ok(())
    } else {
        Err(Failure::Exit(shell))
    }
}
