//! `herdless fence -- CMD [ARGS]...` (internal, hidden from `--help`): the
//! supervisor of one `herdless worker` attempt. The worker starts it as the
//! leader of the attempt's process group; it starts CMD as its child in the
//! same group, feeds it the task's payload, and ends the whole group
//! (`SIGKILL`) when the worker can no longer be trusted to:
//!
//! * **its stdin reaches end of file** before CMD ended: the worker died
//!   (`kill -9`, a crash). Without this, CMD would run on, orphaned, while
//!   the broker hands the task to another worker.
//! * **the last extension runs out**: the worker is frozen (`SIGSTOP`, a
//!   stalled machine) or cannot renew its claim. The worker sends "you may
//!   run until T" when it takes the claim and at each confirmed renewal,
//!   T being its own fence (the library's
//!   [`herdless::adapters::nats::Fence`]) on the machine's monotonic clock
//!   (`shared/process/fence_wire.rs`); it stops a running attempt at that
//!   fence itself, but only while it runs.
//!
//! # Why this is in time
//!
//! The fence is the send time of the claim's last confirmed write plus the
//! lease (the consumer's ack wait). A contender takes the next turn no
//! sooner than a lease **and a margin** (a quarter of the lease, at least
//! one second) after it first saw that write, which is after the holder
//! sent it: the takeover is at least a margin after the fence. The
//! supervisor's deadline T is at or before the fence (the worker reads the
//! clock, then the time left to the fence, and rounds down), whenever the
//! frame arrives: a frame delayed in the pipe, or written late by a worker
//! frozen just after computing it, cannot push it past the fence. What is
//! left to fit in the margin: the supervisor's timer waking late (a busy
//! machine: milliseconds) and `SIGKILL` taking effect, and the two
//! processes' clocks are one (`CLOCK_MONOTONIC`, which a `SIGSTOP` does not
//! stop). So the frozen worker's command is gone before a takeover can
//! start the task again. No `SIGTERM` grace here: a grace as long as
//! `--kill-after` (10 s by default) would outlast the margin.
//!
//! A supervisor stopped itself (`SIGSTOP`) wakes with its timer lapsed, and
//! a `select!` favouring the timer would kill a command that ended within
//! its fence while newer extensions waited in the pipe. So a lapsed timer
//! first reads what waits in the pipe (without waiting, straight from the
//! descriptor: the runtime may not know of it yet) and the command's
//! status: a command that ended is reported as it ended, and the group is
//! killed only when the latest deadline has really passed.
//!
//! # The exit status
//!
//! CMD's: its code, or 128 + N when signal N ended it (the shell's
//! mapping, which is how `exec` and `worker` classify a signalled command
//! anyway), so a worker classifies the supervisor's status exactly as it
//! would CMD's. `SIGTERM` does not end the supervisor (the worker's
//! `--timeout` sends it to the whole group): it waits for CMD and reports
//! CMD's status. A CMD that cannot be started is reported as `exec` does
//! (`command not found`, 127; not executable, 126).

use std::ffi::OsString;
use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;

use clap::Args;
use nix::sys::signal::{Signal, killpg};
use tokio::io::AsyncWriteExt;
use tokio::net::unix::pipe;
use tokio::signal::unix::{SignalKind, signal};
use tokio::time::Instant;

use crate::shared::error::{CliError, CliResult};
use crate::shared::exit;
use crate::shared::process::fence_wire::{left_until, read_payload, read_u64};
use crate::shared::process::{Failure, start_failure};

/// `herdless fence` arguments (internal: started by `herdless worker`).
#[derive(Debug, Clone, Args)]
pub(crate) struct FenceArgs {
    /// The attempt's command and its arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    pub(crate) command: Vec<OsString>,
}

/// Runs the supervisor: CMD's exit status (see the module documentation).
///
/// # Errors
///
/// Exit 125 when its stdin is not the worker's pipe or the runtime cannot
/// start.
pub(crate) fn run(args: &FenceArgs) -> CliResult {
    let rt = crate::shared::descriptors::build_runtime(
        tokio::runtime::Builder::new_current_thread().enable_all(),
    )
    .map_err(|e| CliError::new(exit::EXEC_USAGE, format!("cannot start the runtime: {e}")))?;
    rt.block_on(supervise(args))
}

fn internal(what: impl std::fmt::Display) -> CliError {
    CliError::new(
        exit::EXEC_USAGE,
        format!("{what} (internal: `herdless worker` starts this)"),
    )
}

async fn supervise(args: &FenceArgs) -> CliResult {
    let stdin = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map_err(internal)?;
    let mut wire = pipe::Receiver::from_owned_fd(stdin).map_err(internal)?;
    let payload = read_payload(&mut wire).await.map_err(internal)?;
    let first = read_u64(&mut wire).await.map_err(internal)?;
    let Some(first) = first else {
        // The worker died before the attempt began: nothing to start.
        return Ok(exit::EXEC_USAGE);
    };
    // SIGTERM is for CMD (the worker's `--timeout`): keep running to report
    // its status. Installed before CMD starts, so none is missed.
    let mut term = signal(SignalKind::terminate()).map_err(internal)?;
    let mut command = args.command.iter();
    let program = command.next().ok_or_else(|| internal("no command"))?;
    let mut child = match tokio::process::Command::new(program)
        .args(command)
        .stdin(Stdio::piped())
        .kill_on_drop(false)
        .spawn()
    {
        Ok(child) => child,
        Err(e) => return Ok(started_not(start_failure("worker", program, e))),
    };
    let stdin = child.stdin.take();
    let feed = async move {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(&payload).await;
        }
        std::future::pending::<()>().await;
    };
    tokio::pin!(feed);
    let mut deadline = until(first);
    let mut wire = Wire::new(wire);
    loop {
        let lapse = async {
            match deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            status = child.wait() => return Ok(status.map_or(exit::EXEC_USAGE, code)),
            () = lapse => {
                // Woken past the deadline, perhaps after being stopped
                // itself: the extensions sent meanwhile wait in the pipe,
                // and the command may have ended within its fence. Act on
                // what is true now, not on the timer.
                if let Some(ms) = wire.drain() {
                    deadline = until(ms);
                }
                if let Ok(Some(status)) = child.try_wait() {
                    return Ok(code(status));
                }
                if wire.ended {
                    end_group("the worker is gone: ending its attempt");
                } else if deadline.is_some_and(|at| at <= Instant::now()) {
                    end_group("no extension came in time (the worker is frozen or cut off): \
                               ending the attempt before its task can be taken over");
                }
            }
            next = wire.next(), if !wire.ended => match next {
                Some(ms) => deadline = until(ms),
                None => end_group("the worker is gone: ending its attempt"),
            },
            _ = term.recv() => {}
            () = &mut feed => {}
        }
    }
}

/// The status reported for CMD's `status` (128 + N for signal N).
fn code(status: std::process::ExitStatus) -> i32 {
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// The worker's pipe after the payload: whole extension frames, read
/// either as they come ([`Wire::next`], cancel-safe: a frame cut short by
/// another branch stays in the buffer) or all at once without waiting
/// ([`Wire::drain`]).
struct Wire {
    rx: pipe::Receiver,
    buf: Vec<u8>,
    /// The end of the pipe (or an error on it) was read: the worker is gone.
    ended: bool,
}

impl Wire {
    fn new(rx: pipe::Receiver) -> Self {
        Self {
            rx,
            buf: Vec::new(),
            ended: false,
        }
    }

    /// The next extension; `None` at the end of the pipe.
    async fn next(&mut self) -> Option<u64> {
        loop {
            if let Some(ms) = self.pop() {
                return Some(ms);
            }
            if self.ended {
                return None;
            }
            if self.rx.readable().await.is_err() {
                self.ended = true;
                continue;
            }
            let mut chunk = [0u8; 512];
            match self.rx.try_read(&mut chunk) {
                Ok(0) => self.ended = true,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => self.ended = true,
            }
        }
    }

    /// Reads everything waiting in the pipe now, without waiting, and
    /// returns the latest whole extension in it. The read goes to the
    /// descriptor itself: the runtime's readiness may not yet know of bytes
    /// written while this process was stopped. (A stale "readable" left
    /// behind only costs [`Wire::next`] one empty read.)
    fn drain(&mut self) -> Option<u64> {
        let mut chunk = [0u8; 512];
        while !self.ended {
            match nix::unistd::read(&self.rx, &mut chunk) {
                Ok(0) => self.ended = true,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(nix::errno::Errno::EINTR) => {}
                Err(nix::errno::Errno::EAGAIN) => break,
                Err(_) => self.ended = true,
            }
        }
        let mut latest = None;
        while let Some(ms) = self.pop() {
            latest = Some(ms);
        }
        latest
    }

    /// The first whole frame in the buffer.
    fn pop(&mut self) -> Option<u64> {
        let frame: [u8; 8] = self.buf.get(..8)?.try_into().ok()?;
        self.buf.drain(..8);
        Some(u64::from_be_bytes(frame))
    }
}

/// The deadline of the frame `ms` on this runtime's clock (`None`:
/// unfenced).
fn until(ms: u64) -> Option<Instant> {
    left_until(ms).map(|left| Instant::now() + left)
}

/// Ends the attempt's whole group, this process included.
fn end_group(why: &str) {
    eprintln!("herdless fence: {why}");
    let _ = killpg(nix::unistd::getpgrp(), Signal::SIGKILL);
}

/// The status of a command that could not be started.
fn started_not(failure: Failure) -> i32 {
    failure.exit_status()
}
