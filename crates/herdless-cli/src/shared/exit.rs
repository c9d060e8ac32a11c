//! Exit codes shared by every subcommand (documented in the README).
//!
//! `exec` is the exception for terminal and exhausted outcomes: it exits with the
//! child's own last status, so scripts see the real error. Its own codes follow
//! the convention of wrappers such as `timeout(1)` and `env(1)` (124–127), which
//! a wrapped command rarely uses for itself, rather than 2, which many commands
//! use for their own usage errors.

/// The operation succeeded.
pub(crate) const SUCCESS: i32 = 0;
/// `check`: a check failed (an error, or a warning under `--strict`).
pub(crate) const CHECK_FAILED: i32 = 1;
/// A failure outside the retry outcome: cannot bind a port, cannot start the
/// runtime, cannot write stdout.
pub(crate) const FAILURE: i32 = 1;
/// A terminal (or unclassified) error ended the call after one attempt.
pub(crate) const TERMINAL: i32 = 3;
/// The retry budget (attempts, elapsed time or shared budget) ran out.
pub(crate) const EXHAUSTED: i32 = 4;
/// Bad command-line input or configuration (clap itself also exits 2).
pub(crate) const USAGE: i32 = 2;
/// `exec`: the last attempt was ended by `--timeout` (as `timeout(1)`).
pub(crate) const EXEC_TIMED_OUT: i32 = 124;
/// `exec`: bad command-line input or policy file, or herdless itself failed
/// (as `timeout(1)` and `env(1)`).
pub(crate) const EXEC_USAGE: i32 = 125;
/// `simulate` and `tune`: the figures could not be written (the table or
/// JSON was printed before).
pub(crate) const FIGURES_FAILED: i32 = 1;
/// `exec`: the command was found but could not be executed (as the shell).
pub(crate) const EXEC_NOT_EXECUTABLE: i32 = 126;
/// `exec`: the command was not found (as the shell).
pub(crate) const EXEC_NOT_FOUND: i32 = 127;
/// `exec`: 128 + the signal number when herdless was interrupted (as the shell).
pub(crate) const SIGNAL_BASE: i32 = 128;
