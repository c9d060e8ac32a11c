//! What several subcommands share. Nothing here imports a subcommand or
//! [`crate::cli`].

pub mod checks;
pub mod classes;
pub mod codes;
pub mod config;
pub mod descriptors;
pub mod error;
pub mod events_out;
pub mod exit;
pub mod http;
pub mod output;
pub mod policy_args;
pub mod process;
pub mod values;
