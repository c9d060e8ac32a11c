//! What several subcommands share. Nothing here imports a subcommand or
//! [`crate::cli`].

pub(crate) mod checks;
pub(crate) mod classes;
pub(crate) mod config;
pub(crate) mod descriptors;
pub(crate) mod error;
pub(crate) mod events_out;
pub(crate) mod exit;
pub(crate) mod http;
pub(crate) mod output;
pub(crate) mod policy_args;
pub(crate) mod process;
pub(crate) mod statuses;
pub(crate) mod values;
