//! The `herdless` command-line tool. Its one entry point is [`run`] (what
//! the binary calls); [`testing`] is what the integration tests drive in
//! process. Everything else is private to the crate.
//!
//! Three floors, each importing only the ones below it:
//!
//! 1. `cli`: the arguments and the dispatch to a subcommand;
//! 2. `cmd`: one folder per subcommand (`simulate`, `exec`, `check`, `get`,
//!    `stub`, `fleet`, `worker`, `tune`, `analyze`); only `cli` imports
//!    them, and none imports another;
//! 3. `shared`: what several subcommands use (policy flags and their
//!    layering, policy files, the retry-event output, exit codes and errors,
//!    process handling, HTTP helpers, the policy checks); it imports no
//!    subcommand and not `cli`.
//!
//! Retry decisions, metrics and capacity models live in the `herdless` and
//! `herdless-sim` libraries, not here. `scripts/import-circles.py
//! crates/herdless-cli/src` counts the import circles between the modules
//! (none).

#![forbid(unsafe_code)]

mod cli;
mod cmd;
mod shared;
pub mod testing;

pub use cli::run;
