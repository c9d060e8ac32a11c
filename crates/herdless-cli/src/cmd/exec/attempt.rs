//! One attempt of `exec`: start the command in its own process group, hand it
//! the terminal when it should have it, wait within the time limit, leave no
//! member of the group behind, and say how it ended.

use std::cell::RefCell;
use std::io;

use herdless::Attempt;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use tokio::signal::unix::{SignalKind, signal};

use super::stdin::StdinSource;
use super::{Plan, State};
use crate::shared::exit;
use crate::shared::process::{Failure, child, group_of, limits, start_failure};

/// Runs one attempt to its end (exit, timeout or interrupt).
pub(super) async fn attempt_once(
    plan: &Plan,
    attempt: Attempt,
    state: &State,
    stdin: &RefCell<StdinSource>,
) -> Result<(), Failure> {
    let result = run_child(plan, attempt, state, stdin).await;
    if let Err(f) = &result {
        state
            .last
            .set(Some((f.exit_status(), matches!(f, Failure::TimedOut(_)))));
    }
    if state.interrupted.get().is_some() && result.is_err() {
        // Interrupted while the child ran: no further attempt. The signal loop
        // exits with 128 + signal.
        state.stop.notify_one();
        std::future::pending::<()>().await;
    }
    result
}

/// Waits for the child; while it holds the terminal, follows job control
/// (Ctrl-Z stops herdless with it, see [`child::Foreground::suspend`]).
async fn wait_child(
    child: &mut tokio::process::Child,
    pgid: Pid,
    foreground: Option<&child::Foreground>,
) -> io::Result<std::process::ExitStatus> {
    let Some(fg) = foreground else {
        return child.wait().await;
    };
    let Ok(mut sigchld) = signal(SignalKind::child()) else {
        return child.wait().await;
    };
    loop {
        tokio::select! {
            status = child.wait() => return status,
            _ = sigchld.recv() => {
                if child::Foreground::child_stopped(pgid) {
                    fg.suspend(pgid);
                }
            }
        }
    }
}

async fn run_child(
    plan: &Plan,
    attempt: Attempt,
    state: &State,
    stdin: &RefCell<StdinSource>,
) -> Result<(), Failure> {
    let n = attempt.number();
    let (input, terminal) = stdin.borrow_mut().for_attempt(n).map_err(|error| {
        eprintln!("herdless exec: cannot prepare stdin: {error}");
        Failure::Start {
            status: exit::EXEC_USAGE,
            error,
        }
    })?;
    let mut cmd = tokio::process::Command::new(&plan.program);
    cmd.args(&plan.args)
        .env("HERDLESS_ATTEMPT", n.to_string())
        .env(
            "HERDLESS_IDEMPOTENCY_KEY",
            attempt.idempotency_key().to_string(),
        )
        .stdin(input)
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .map_err(|e| start_failure("exec", &plan.program, e))?;
    let pgid = group_of(&child)?;
    state.running.set(Some(pgid));
    let foreground = if terminal {
        child::Foreground::hand_to(pgid)
    } else {
        None
    };
    let limit = limits::attempt_limit(plan.timeout, &plan.policy, attempt.remaining());
    let waited = limits::within(limit, wait_child(&mut child, pgid, foreground.as_ref())).await;
    // Leave no member of a failed or interrupted attempt behind: the retry
    // must not race it, and herdless must not orphan it.
    let (status, timed_out) = limits::settle(waited, &mut child, pgid, plan.kill_after, |s| {
        !s.success() || state.interrupted.get().is_some()
    })
    .await;
    let had_terminal = foreground.is_some();
    if let Some(fg) = foreground {
        fg.restore();
    }
    state.running.set(None);
    let status = status.map_err(|error| {
        eprintln!("herdless exec: waiting for the command failed: {error}");
        Failure::Start {
            status: exit::EXEC_USAGE,
            error,
        }
    })?;
    let shell = child::shell_status(status);
    if had_terminal && !timed_out && state.interrupted.get().is_none() {
        // Ctrl-C / Ctrl-\ went to the child's group, which held the terminal.
        use std::os::unix::process::ExitStatusExt;
        match status.signal() {
            Some(s) if s == Signal::SIGINT as i32 => state.interrupted.set(Some(Signal::SIGINT)),
            Some(s) if s == Signal::SIGQUIT as i32 => state.interrupted.set(Some(Signal::SIGQUIT)),
            _ => {}
        }
    }
    if timed_out {
        Err(Failure::TimedOut(shell))
    } else if status.success() {
        Ok(())
    } else {
        Err(Failure::Exit(shell))
    }
}
