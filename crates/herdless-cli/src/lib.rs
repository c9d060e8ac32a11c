//! The `herdless` command-line tool, as a library so integration tests and
//! benchmarks can reach its parts.
//!
//! One module per subcommand: [`simulate`], [`exec`], [`check`], [`get`],
//! [`stub`], [`fleet`], [`worker`], [`tune`], [`analyze`] (the larger ones are folders split into arguments,
//! running and rendering). Shared pieces: the retry flags and their layering
//! (file → `HERDLESS_*` → flags) in [`policy_args`], policy files in
//! [`config`], exit-status lists in [`codes`], the retry-event output
//! (`--log-format`) in [`events_out`], the one error type in [`error`], stdout
//! writes that never panic in [`output`], the exit codes in [`exit`], parsing
//! and dispatch in [`cli`]. Retry decisions, metrics and capacity models live
//! in the `herdless` and `herdless-sim` libraries, not here.

#![forbid(unsafe_code)]

pub mod analyze;
pub mod check;
pub mod cli;
pub mod codes;
pub mod config;
pub mod error;
pub mod events_out;
pub mod exec;
pub mod exit;
pub mod fleet;
pub mod get;
pub mod limits;
pub mod output;
pub mod policy_args;
pub mod simulate;
pub mod stub;
mod tls;
pub mod tune;
pub mod worker;
