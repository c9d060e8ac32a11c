//! What `exec` and `worker` share to run a command: why an attempt failed
//! ([`Failure`]) and its verdict ([`classify`]), the process group of one
//! attempt ([`child`]), and the per-attempt limits ([`limits`]: timeouts
//! and the exit-status classes in force).

pub(crate) mod child;
pub(crate) mod fence_wire;
pub(crate) mod limits;

use std::ffi::OsString;
use std::io;

use herdless::{Classification, Jitter};
use nix::unistd::Pid;

use crate::shared::classes::Classes;
use crate::shared::exit;

pub(crate) use limits::Limits;
pub(crate) use limits::{AttemptArgs, DEFAULT_KILL_AFTER};

/// The default jitter for `exec`.
pub(crate) const DEFAULT_JITTER: Jitter = Jitter::Equal;

/// Why an attempt failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The child exited with this non-zero shell status (128+N for signal N).
    Exit(i32),
    /// `--timeout` ended the attempt; the child's status after being ended.
    TimedOut(i32),
    /// The command could not be started (status 126 or 127) or herdless failed
    /// to run it (125).
    Start {
        /// The exit status herdless reports.
        status: i32,
        /// What went wrong.
        error: io::Error,
    },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Exit(status) => write!(f, "exit status {status}"),
            Failure::TimedOut(status) => write!(f, "timed out (status {status} once ended)"),
            Failure::Start { status, error } => {
                write!(f, "cannot run the command (status {status}): {error}")
            }
        }
    }
}

impl Failure {
    /// The exit status herdless reports when this is the last failure.
    pub(crate) fn exit_status(&self) -> i32 {
        match self {
            Failure::Exit(s) => *s,
            Failure::TimedOut(_) => exit::EXEC_TIMED_OUT,
            Failure::Start { status, .. } => *status,
        }
    }
}

/// The process group of a command started with `process_group(0)`: its
/// own pid.
pub(crate) fn group_of(child: &tokio::process::Child) -> Result<Pid, Failure> {
    let pid = child.id().and_then(|id| i32::try_from(id).ok());
    pid.map(Pid::from_raw).ok_or_else(|| Failure::Start {
        status: exit::EXEC_USAGE,
        error: io::Error::other("the child has no process id"),
    })
}

/// A command that could not be started, reported on stderr as `herdless
/// SUBCOMMAND: …` (`who` names the subcommand).
pub(crate) fn start_failure(who: &str, program: &OsString, error: io::Error) -> Failure {
    let name = program.to_string_lossy();
    let status = match error.kind() {
        _ if crate::shared::descriptors::is_out_of_descriptors(&error) => {
            eprintln!("herdless {who}: {name}: cannot start: {error}");
            exit::EXEC_USAGE
        }
        io::ErrorKind::NotFound => {
            eprintln!("herdless {who}: {name}: command not found");
            exit::EXEC_NOT_FOUND
        }
        io::ErrorKind::PermissionDenied => {
            eprintln!("herdless {who}: {name}: permission denied");
            exit::EXEC_NOT_EXECUTABLE
        }
        _ => {
            eprintln!("herdless {who}: {name}: cannot execute: {error}");
            exit::EXEC_NOT_EXECUTABLE
        }
    };
    Failure::Start { status, error }
}

/// The verdict on a failed attempt: its exit status by `classes`; a timeout
/// is retryable; a command that cannot be started is terminal, unless the
/// process ran out of file descriptors (a local, transient shortage).
pub(crate) fn classify(classes: &Classes, failure: &Failure) -> Classification {
    match failure {
        Failure::Exit(status) => classes.classify(*status),
        Failure::TimedOut(_) => Classification::retryable(),
        // Out of file descriptors: a local, transient shortage.
        Failure::Start { error, .. }
            if crate::shared::descriptors::is_out_of_descriptors(error) =>
        {
            Classification::retryable()
        }
        Failure::Start { .. } => Classification::terminal(),
    }
}

/// The examples that were this file's doc tests (its items are private to
/// the crate, where doc tests cannot reach).
#[cfg(test)]
mod examples {
    #[allow(unused_imports)]
    use super::*;

    #[test]
    fn classify_example() -> Result<(), Box<dyn std::error::Error>> {
        use crate::shared::{
            classes::Classes,
            process::{Failure, classify},
        };
        let classes = Classes::new(None, None)?;
        assert!(classify(&classes, &Failure::Exit(1)).is_retryable());
        assert!(!classify(&classes, &Failure::Exit(127)).is_retryable());
        assert!(classify(&classes, &Failure::TimedOut(143)).is_retryable());
        Ok(())
    }
}
