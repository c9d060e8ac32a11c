//! The `herdless` binary: see the crate's library for the subcommands.

#![forbid(unsafe_code)]

fn main() {
    std::process::exit(herdless_cli::run());
}
