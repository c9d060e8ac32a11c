//! The `herdless` command-line tool, as a library so integration tests and
//! benchmarks can reach its parts.
//!
//! One module per subcommand ([`exec`], [`check`]); the flags shared by every
//! retrying subcommand and their layering (file → `HERDLESS_*` → flags) are in
//! [`policy_args`], policy files in [`config`], exit-status lists in [`codes`],
//! the retry-event output (`--log-format`) in [`events_out`], the exit codes in
//! [`exit`], parsing and dispatch in [`cli`].

#![forbid(unsafe_code)]
#![warn(missing_debug_implementations, rust_2018_idioms)]

pub mod check;
pub mod cli;
pub mod codes;
pub mod config;
pub mod events_out;
pub mod exec;
pub mod exit;
pub mod fleet;
pub mod get;
pub mod limits;
pub mod policy_args;
pub mod simulate;
pub mod stub;
