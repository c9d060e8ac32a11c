//! Exit codes shared by every subcommand (documented in the README).
//!
//! `exec` is the exception for terminal and exhausted outcomes: it exits with the
//! child's own last status, so scripts see the real error.

/// The operation succeeded.
pub const SUCCESS: i32 = 0;
/// A failure outside the retry outcome: cannot bind a port, cannot start the
/// runtime, cannot write stdout.
pub const FAILURE: i32 = 1;
/// A terminal (or unclassified) error ended the call after one attempt.
pub const TERMINAL: i32 = 3;
/// The retry budget (attempts, elapsed time or shared budget) ran out.
pub const EXHAUSTED: i32 = 4;
/// Bad command-line input or configuration (clap itself also exits 2).
pub const USAGE: i32 = 2;
