//! One attempt of one task: CMD under its supervisor (`herdless fence`,
//! this binary again: `cmd/fence`), the two in a process group of their
//! own, the payload and the claim's extensions on the supervisor's stdin,
//! `HERDLESS_ATTEMPT` and `HERDLESS_IDEMPOTENCY_KEY` in their environment,
//! `--timeout` and `--kill-after` as in `exec` (the same process-group
//! handling: [`crate::shared::process::child`]; without a `timeout`, the
//! policy's `attempt_timeout` bounds the attempt, as the task's remaining
//! time).
//!
//! The supervisor ends the group when this worker dies (its stdin's end of
//! file) or stops sending extensions (frozen, or its claim not renewed):
//! the worker's own fence only holds while the worker runs.

use std::ffi::OsString;
use std::process::Stdio;
use std::time::Duration;

use herdless::adapters::nats::{Fence, Task};
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;

use crate::shared::exit;
use crate::shared::process::fence_wire::{extension_frame, payload_frame};
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
/// settled (the worker aborts: a second signal; or its fence), and reaps
/// its leader, so nothing outlives the worker.
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

/// Tells the supervisor the payload and the claim's first extension, then
/// each later one as the fence moves. Never returns: the supervisor's stdin
/// must stay open while the attempt lasts (its end of file means "the
/// worker is gone").
async fn feed(stdin: &mut Option<ChildStdin>, payload: &[u8], mut fence: Fence) {
    if let Some(stdin) = stdin.as_mut() {
        let mut first = payload_frame(payload);
        first.extend_from_slice(&extension_frame(|| fence.left()));
        if stdin.write_all(&first).await.is_ok() {
            loop {
                fence.moved().await;
                if stdin
                    .write_all(&extension_frame(|| fence.left()))
                    .await
                    .is_err()
                {
                    break;
                }
            }
        }
    }
    std::future::pending::<()>().await;
}

/// Runs one attempt to its end: success, a failure `exec` would classify
/// the same way, or a timeout.
pub(crate) async fn run(cmd: &Command, task: Task) -> Result<(), Failure> {
    let supervisor = std::env::current_exe().map_err(|error| Failure::Start {
        status: exit::EXEC_USAGE,
        error,
    })?;
    let mut child = tokio::process::Command::new(&supervisor)
        .arg("fence")
        .arg("--")
        .arg(&cmd.program)
        .args(&cmd.args)
        .env("HERDLESS_ATTEMPT", task.attempt.to_string())
        .env("HERDLESS_IDEMPOTENCY_KEY", task.key.to_string())
        .stdin(Stdio::piped())
        .process_group(0)
        // The guard kills and reaps; tokio must not signal a reaped pid.
        .kill_on_drop(false)
        .spawn()
        .map_err(|e| start_failure("worker", &OsString::from(&supervisor), e))?;
    let pgid = group_of(&child)?;
    let mut guard = GroupGuard(Some(pgid));
    // Kept here, not in the wait: a `--timeout` ends the group with its
    // grace, and the supervisor must not read that as the worker's death.
    let mut stdin = child.stdin.take();
    let wait = async {
        tokio::select! {
            status = child.wait() => status,
            () = feed(&mut stdin, &task.payload, task.fence.clone()) => unreachable!("feed never ends"),
        }
    };
    let limit = limits::attempt_limit(cmd.timeout, &cmd.policy, task.remaining);
    let waited = limits::within(limit, wait).await;
    // Leave no member of a failed attempt behind: the retry, on any worker,
    // must not race it.
    let (status, timed_out) =
        limits::settle(waited, &mut child, pgid, cmd.kill_after, |s| !s.success()).await;
    guard.0 = None;
    drop(stdin);
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
