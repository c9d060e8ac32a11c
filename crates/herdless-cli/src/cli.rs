//! The `herdless` command line: argument parsing and dispatch.

use std::ffi::OsString;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::cmd::{analyze, check, exec, fence, fleet, get, simulate, stub, tune, worker};
use crate::shared::checks::CheckArgs;
use crate::shared::error::CliResult;
use crate::shared::exit;
use crate::shared::policy_args::{FlagsGiven, PolicyArgs};

mod input;

/// Retries without the thundering herd.
#[derive(Debug, Parser)]
#[command(name = "herdless", version, about, long_about = None)]
pub(crate) struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Every subcommand.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Simulate a fleet's retries in virtual time: see the storm and its cure.
    Simulate(simulate::SimulateArgs),
    /// Run a command, retrying failures with backoff and jitter (default jitter: equal).
    Exec(exec::ExecArgs),
    /// Show a policy's delay envelope and check it against the known failure modes.
    Check(CheckArgs),
    /// One logical GET with retries; the body on stdout.
    Get(get::GetArgs),
    /// A real HTTP stub controller on 127.0.0.1 (fail-first, outage, capacity).
    Stub(stub::StubArgs),
    /// N concurrent workers, one logical GET each; counts, peak share, histogram.
    Fleet(fleet::FleetArgs),
    /// Run CMD for each task of a NATS JetStream consumer; retries are jittered redeliveries.
    Worker(worker::WorkerArgs),
    /// Search retry policies in the simulator for your fleet's facts.
    Tune(tune::TuneArgs),
    /// Read JSON-lines retry events and say whether the fleet retried in lockstep.
    Analyze(analyze::AnalyzeArgs),
    /// Internal: the supervisor of one `worker` attempt (started by `worker`).
    #[command(hide = true)]
    Fence(fence::FenceArgs),
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

impl Command {
    /// The subcommand's policy flags, if it takes them.
    fn policy_mut(&mut self) -> Option<&mut PolicyArgs> {
        match self {
            Command::Exec(a) => Some(&mut a.policy),
            Command::Check(a) => Some(&mut a.policy),
            Command::Get(a) => Some(&mut a.policy),
            Command::Fleet(a) => Some(&mut a.policy),
            Command::Worker(a) => Some(&mut a.policy),
            Command::Simulate(_)
            | Command::Stub(_)
            | Command::Tune(_)
            | Command::Analyze(_)
            | Command::Fence(_) => None,
        }
    }
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
    let args: Vec<OsString> = std::env::args_os().collect();
    let mut cli = match parse(&args) {
        Ok(cli) => cli,
        Err(e) => return parse_error(&e, &args),
    };
    // Which flags came from the command line, read once: a policy error
    // names the layer that set the culprit.
    if let Some(policy) = cli.command.policy_mut() {
        policy.given = FlagsGiven::from_args(&args);
    }
    let (name, result): (&str, CliResult) = match cli.command {
        Command::Simulate(args) => ("simulate", simulate::run(&args)),
        Command::Exec(args) => ("exec", exec::run(&args)),
        Command::Check(args) => ("check", check::run(&args)),
        Command::Get(args) => ("get", get::run(&args)),
        Command::Stub(args) => ("stub", stub::run(&args)),
        Command::Fleet(args) => ("fleet", fleet::run(&args)),
        Command::Worker(args) => ("worker", worker::run(&args)),
        Command::Tune(args) => ("tune", tune::run(&args)),
        Command::Analyze(args) => ("analyze", analyze::run(&args)),
        Command::Fence(args) => ("fence", fence::run(&args)),
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

/// Whether the command line is `herdless exec ...`.
fn is_exec(args: &[OsString]) -> bool {
    args.get(1).is_some_and(|a| a == "exec")
}

/// Parses `args` (as the OS gave them: see [`input`]); `exec` with the parser
/// that knows only `exec`. A variable that is set but empty counts as unset.
fn parse(args: &[OsString]) -> Result<Cli, clap::Error> {
    if let Some(cli) = plain_fence(args) {
        return Ok(cli);
    }
    if let Some(cli) = plain_exec(args, input::any_herdless_var()) {
        return Ok(cli);
    }
    if !input::any_empty_var() {
        return if is_exec(args) {
            ExecCli::try_parse_from(args).map(Cli::from)
        } else {
            Cli::try_parse_from(args)
        };
    }
    if is_exec(args) {
        let cmd = input::without_empty_env(ExecCli::command());
        let mut m = cmd.try_get_matches_from(args)?;
        ExecCli::from_arg_matches_mut(&mut m).map(Cli::from)
    } else {
        let cmd = input::without_empty_env(Cli::command());
        let mut m = cmd.try_get_matches_from(args)?;
        Cli::from_arg_matches_mut(&mut m)
    }
}

/// `herdless fence -- CMD [ARGS]...`, as `worker` starts it for every
/// attempt: what clap would parse (the subcommand takes no flag and no
/// variable), without building the parser (every subcommand's flags and
/// help), which would be paid once per task.
fn plain_fence(args: &[OsString]) -> Option<Cli> {
    match args {
        [_, sub, dashes, command @ ..]
            if sub == "fence" && dashes == "--" && !command.is_empty() =>
        {
            Some(Cli {
                command: Command::Fence(fence::FenceArgs {
                    command: command.to_vec(),
                }),
            })
        }
        _ => None,
    }
}

/// `herdless exec -- CMD [ARGS]...` with nothing between `exec` and `--`, and no
/// `HERDLESS_*` variable set (`herdless_vars`): what clap would parse (every flag
/// at its default, the command as given), without building the parser. Building
/// it (every flag with its help and value parser) was about 35 of the 236 page
/// faults of `exec -- true`. Any other command line, or any `HERDLESS_*` variable,
/// takes clap's path (`None`).
fn plain_exec(args: &[OsString], herdless_vars: bool) -> Option<Cli> {
    match args {
        [_, sub, dashes, command @ ..]
            if sub == "exec" && dashes == "--" && !command.is_empty() && !herdless_vars =>
        {
            Some(Cli {
                command: Command::Exec(exec::ExecArgs::plain(command.to_vec())),
            })
        }
        _ => None,
    }
}

/// Prints a parse error (or `--help` / `--version`) and returns its exit code:
/// clap's own (0 for help, 2 for usage errors), except that usage errors of
/// `exec` exit 125 so they cannot be mistaken for the wrapped command's status.
fn parse_error(e: &clap::Error, args: &[OsString]) -> i32 {
    let _ = e.print();
    if e.kind() == clap::error::ErrorKind::InvalidUtf8 {
        if let Some(what) = input::not_utf8(&Cli::command(), args) {
            eprintln!(
                "herdless: {what} (text is expected there; paths and a command's arguments \
                 after -- may be any bytes)"
            );
        }
    } else if let Some(var) = env_source(e, &FlagsGiven::from_args(args)) {
        eprintln!("herdless: (that value came from the environment variable {var})");
    }
    let code = e.exit_code();
    if code != exit::SUCCESS && is_exec(args) {
        exit::EXEC_USAGE
    } else {
        code
    }
}

/// The `HERDLESS_*` variable an invalid value came from, when the flag it feeds
/// was not on the command line (clap's message names only the flag).
fn env_source(e: &clap::Error, given: &FlagsGiven) -> Option<String> {
    let message = e.to_string();
    std::env::vars_os()
        .filter(|(_, v)| !v.is_empty())
        .filter_map(|(k, _)| k.into_string().ok())
        .find(|var| {
            let Some(name) = var.strip_prefix("HERDLESS_") else {
                return false;
            };
            let flag = format!("--{}", name.to_lowercase().replace('_', "-"));
            (message.contains(&format!("'{flag} ")) || message.contains(&format!("'{flag}'")))
                && !given.contains(&flag)
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
    fn the_plain_fence_parse_matches_clap() {
        let argv: Vec<OsString> = ["herdless", "fence", "--", "sh", "-c", "exit 3", "--x"]
            .map(OsString::from)
            .to_vec();
        let full = outcome(Cli::try_parse_from(&argv));
        assert_eq!(
            outcome(plain_fence(&argv).ok_or_else(|| unreachable!())),
            full
        );
        let flagged: Vec<OsString> = ["herdless", "fence", "sh"].map(OsString::from).to_vec();
        assert!(plain_fence(&flagged).is_none(), "clap's path");
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

    /// Clap's parse of `argv` with no variable read, whatever the test's environment.
    fn clap_without_env(argv: &[OsString]) -> String {
        let cmd = ExecCli::command()
            .mut_subcommand("exec", |s| s.mut_args(|a| a.env(None::<&'static str>)));
        outcome(
            cmd.try_get_matches_from(argv)
                .and_then(|mut m| ExecCli::from_arg_matches_mut(&mut m))
                .map(Cli::from),
        )
    }

    #[test]
    fn the_plain_exec_shortcut_parses_as_clap_does() {
        use std::os::unix::ffi::OsStringExt;
        let os = |argv: &[&str]| argv.iter().map(OsString::from).collect::<Vec<_>>();
        let mut taken = vec![
            os(&["herdless", "exec", "--", "true"]),
            os(&["herdless", "exec", "--", "sh", "-c", "exit 1"]),
            os(&["herdless", "exec", "--", "--", "x"]),
            os(&["herdless", "exec", "--", "--help"]),
            os(&["herdless", "exec", "--", "ls", "--max-attempts", "3", ""]),
        ];
        taken.push(vec![
            "herdless".into(),
            "exec".into(),
            "--".into(),
            OsString::from_vec(b"ca\xfft".to_vec()),
            OsString::from_vec(vec![0xff, 0xfe]),
        ]);
        for argv in &taken {
            let plain = plain_exec(argv, false).map(|cli| format!("{cli:?}"));
            assert_eq!(plain, Some(clap_without_env(argv)), "{argv:?}");
            // A HERDLESS_* variable may change the flags: clap decides then.
            assert!(plain_exec(argv, true).is_none(), "{argv:?}");
        }
        let left_to_clap: &[&[&str]] = &[
            &["herdless", "exec", "--"],
            &["herdless", "exec"],
            &["herdless", "exec", "true"],
            &["herdless", "exec", "--quiet", "--", "true"],
            &["herdless", "exec", "-q", "--", "true"],
            &["herdless", "simulate", "--", "true"],
            &["herdless", "--", "exec", "true"],
            &["herdless"],
        ];
        for argv in left_to_clap {
            assert!(plain_exec(&os(argv), false).is_none(), "{argv:?}");
        }
    }

    /// The shortcut is taken only without `HERDLESS_*` variables, so it is right
    /// only while every variable `exec` reads has that prefix.
    #[test]
    fn every_variable_exec_reads_is_a_herdless_one() {
        let cmd = ExecCli::command();
        let exec = cmd.find_subcommand("exec").expect("exec");
        let vars: Vec<_> = exec.get_arguments().filter_map(|a| a.get_env()).collect();
        assert!(vars.len() >= 10, "{vars:?}");
        for var in vars {
            assert!(
                var.to_str().is_some_and(|v| v.starts_with("HERDLESS_")),
                "{var:?}"
            );
        }
    }
}
