//! The `herdless` command-line tool, as a library so integration tests and
//! benchmarks can reach its parts.
//!
//! One module per subcommand; the flags shared by every retrying subcommand are
//! in [`policy_args`], the retry-event output (`--log-format`) in
//! [`events_out`], the exit codes in [`exit`], parsing and dispatch in [`cli`].

#![forbid(unsafe_code)]
#![warn(missing_debug_implementations, rust_2018_idioms)]

pub mod cli;
pub mod events_out;
pub mod exit;
pub mod policy_args;
pub mod simulate;
