//! The `herdless` command line: argument parsing and dispatch.

use clap::{Parser, Subcommand};

use crate::error::CliResult;
use crate::{check, exec, exit, fleet, get, simulate, stub, worker};

/// Retries without the thundering herd.
#[derive(Debug, Parser)]
#[command(name = "herdless", version, about, long_about = None)]
pub struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// Every subcommand.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Simulate a fleet's retries in virtual time: see the storm and its cure.
    Simulate(simulate::SimulateArgs),
    /// Run a command, retrying failures with backoff and jitter (default jitter: equal).
    Exec(exec::ExecArgs),
    /// Show a policy's delay envelope and check it against the known failure modes.
    Check(check::CheckArgs),
    /// One logical GET with retries; the body on stdout.
    Get(get::GetArgs),
    /// A real HTTP stub controller on 127.0.0.1 (fail-first, outage, capacity).
    Stub(stub::StubArgs),
    /// N concurrent workers, one logical GET each; counts, peak share, histogram.
    Fleet(fleet::FleetArgs),
    /// Run CMD for each task of a NATS JetStream consumer; retries are jittered redeliveries.
    Worker(worker::WorkerArgs),
}

/// The command line of `herdless exec`, parsed by a command that knows only
/// `exec`: building every subcommand's arguments and help (several hundred)
/// costs about as much as the rest of herdless's start, and `exec` starts once
/// per wrapped command. Its help, errors and values are the full command's
/// (a test compares them).
#[derive(Debug, Parser)]
#[command(name = "herdless", version, about, long_about = None)]
struct ExecCli {
    #[command(subcommand)]
    command: ExecCommand,
}

/// `exec`, alone.
#[derive(Debug, Subcommand)]
enum ExecCommand {
    /// Run a command, retrying failures with backoff and jitter (default jitter: equal).
    Exec(exec::ExecArgs),
}

impl From<ExecCli> for Cli {
    fn from(cli: ExecCli) -> Self {
        let ExecCommand::Exec(args) = cli.command;
        Cli {
            command: Command::Exec(args),
        }
    }
}

/// Parses the command line, runs the subcommand, returns the exit code.
pub fn run() -> i32 {
    let parsed = if std::env::args_os().nth(1).is_some_and(|a| a == "exec") {
        ExecCli::try_parse().map(Cli::from)
    } else {
        Cli::try_parse()
    };
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => return parse_error(&e),
    };
    let (name, result): (&str, CliResult) = match cli.command {
        Command::Simulate(args) => ("simulate", simulate::run(&args)),
        Command::Exec(args) => ("exec", exec::run(&args)),
        Command::Check(args) => ("check", check::run(&args)),
        Command::Get(args) => ("get", get::run(&args)),
        Command::Stub(args) => ("stub", stub::run(&args)),
        Command::Fleet(args) => ("fleet", fleet::run(&args)),
        Command::Worker(args) => ("worker", worker::run(&args)),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            if !e.message().is_empty() {
                eprintln!("herdless {name}: {e}");
            }
            e.code()
        }
    }
}

/// Prints a parse error (or `--help` / `--version`) and returns its exit code:
/// clap's own (0 for help, 2 for usage errors), except that usage errors of
/// `exec` exit 125 so they cannot be mistaken for the wrapped command's status.
fn parse_error(e: &clap::Error) -> i32 {
    let _ = e.print();
    if let Some(var) = env_source(e) {
        eprintln!("herdless: (that value came from the environment variable {var})");
    }
    let code = e.exit_code();
    let is_exec = std::env::args_os().nth(1).is_some_and(|a| a == "exec");
    if code != exit::SUCCESS && is_exec {
        exit::EXEC_USAGE
    } else {
        code
    }
}

/// The `HERDLESS_*` variable an invalid value came from, when the flag it feeds
/// was not on the command line (clap's message names only the flag).
fn env_source(e: &clap::Error) -> Option<String> {
    let message = e.to_string();
    let args: Vec<String> = std::env::args().collect();
    std::env::vars().map(|(k, _)| k).find(|var| {
        let Some(name) = var.strip_prefix("HERDLESS_") else {
            return false;
        };
        let flag = format!("--{}", name.to_lowercase().replace('_', "-"));
        message.contains(&format!("'{flag} "))
            && !args
                .iter()
                .any(|a| a == &flag || a.starts_with(&format!("{flag}=")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a parse gives: the parsed command, or the error as printed.
    fn outcome(parsed: Result<Cli, clap::Error>) -> String {
        match parsed {
            Ok(cli) => format!("{cli:?}"),
            Err(e) => format!("{:?} {} {}", e.kind(), e.exit_code(), e.render()),
        }
    }

    #[test]
    fn the_exec_only_parser_matches_the_full_one() {
        let cases: &[&[&str]] = &[
            &["herdless", "exec", "--help"],
            &["herdless", "exec", "-h"],
            &["herdless", "exec"],
            &["herdless", "exec", "--", "true"],
            &[
                "herdless",
                "exec",
                "--max-attempts",
                "3",
                "--jitter",
                "full",
                "--",
                "sh",
                "-c",
                "exit 1",
            ],
            &["herdless", "exec", "--bogus", "--", "true"],
            &["herdless", "exec", "--max-attempts", "zero", "--", "true"],
            &[
                "herdless",
                "exec",
                "--retry-on",
                "1,2",
                "--timeout",
                "2s",
                "--",
                "x",
            ],
            &[
                "herdless",
                "exec",
                "--quiet",
                "--log-format",
                "json",
                "--",
                "x",
            ],
            &["herdless", "exec", "--version"],
        ];
        for argv in cases {
            let full = outcome(Cli::try_parse_from(*argv));
            let lazy = outcome(ExecCli::try_parse_from(*argv).map(Cli::from));
            assert_eq!(lazy, full, "{argv:?}");
        }
        // The help is the real one, not an empty shell.
        let help = outcome(ExecCli::try_parse_from(["herdless", "exec", "--help"]).map(Cli::from));
        assert!(help.contains("--max-attempts"), "{help}");
    }
}
