//! What the integration tests in `tests/` drive in process; everything else
//! in this crate is private to it. Not an API: it changes with the tests.

use std::path::Path;

use clap::Parser;
use herdless::Jitter;

use crate::cli::{Cli, Command};
use crate::cmd::analyze::{Analyzer, verdict};
use crate::shared::config::{self, ConfigFile};
use crate::shared::policy_args::PolicyArgs;

pub use crate::cmd::stub::{
    ARRIVALS_KEPT, ArrivalOutcome, ArrivalRecord, GRACE, HEADER_TIMEOUT, Stub, StubOptions,
    StubStats,
};

/// Starts `herdless stub FLAGS` in process on 127.0.0.1 port 0 (call it in
/// a tokio runtime); it serves until the runtime ends.
///
/// # Errors
///
/// The flags' usage error.
pub fn start_stub(flags: &[&str], options: StubOptions) -> Result<Stub, String> {
    let listener = Stub::bind(0).map_err(|e| e.to_string())?;
    start_stub_on(listener, flags, options)
}

/// [`start_stub`] on a listener bound beforehand ([`Stub::bind`]), so that
/// its flags may name its own port (a gateway whose `--upstream` is itself).
///
/// # Errors
///
/// The flags' usage error.
pub fn start_stub_on(
    listener: tokio::net::TcpListener,
    flags: &[&str],
    options: StubOptions,
) -> Result<Stub, String> {
    let argv = ["herdless", "stub"].iter().chain(flags);
    let Command::Stub(args) = Cli::try_parse_from(argv)
        .map_err(|e| e.to_string())?
        .command
    else {
        unreachable!("parsed as stub")
    };
    let (stub, _task) = Stub::start(listener, &args, std::future::pending(), options)?;
    Ok(stub)
}

/// Parses `args` as the binary does and, when the subcommand takes policy
/// flags, resolves its policy (defaults, file, environment, flags): `Ok`
/// when it parses and resolves, the error's text otherwise. Never panics.
///
/// # Errors
///
/// The parse or resolve error.
pub fn parse_and_resolve(args: &[String]) -> Result<(), String> {
    let cli = Cli::try_parse_from(args).map_err(|e| e.to_string())?;
    let policy = match &cli.command {
        Command::Check(a) => Some(&a.policy),
        Command::Get(a) => Some(&a.policy),
        Command::Fleet(a) => Some(&a.policy),
        Command::Exec(a) => Some(&a.policy),
        Command::Worker(a) => Some(&a.policy),
        _ => None,
    };
    match policy {
        Some(p) => p
            .resolve_layered(Jitter::Full)
            .map(|_| ())
            .map_err(|e| e.to_string()),
        None => Ok(()),
    }
}

/// The help text of `herdless SUB --help`.
pub fn help(sub: &str) -> String {
    match Cli::try_parse_from(["herdless", sub, "--help"]) {
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => e.to_string(),
        other => panic!("{sub} --help: {other:?}"),
    }
}

/// Every key a policy table may hold.
pub fn policy_keys() -> Vec<&'static str> {
    config::keys().collect()
}

/// Parses `text` as the policy file at `path`.
///
/// # Errors
///
/// The parse error.
pub fn parse_policy_file(path: &Path, text: &str) -> Result<(), String> {
    ConfigFile::parse(path, text)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Resolves the policy `name` of the file at `path` with `jitter` as the
/// default.
///
/// # Errors
///
/// The resolve error.
pub fn resolve_policy(path: &Path, name: &str, jitter: Jitter) -> Result<(), String> {
    let args = PolicyArgs {
        config: Some(path.to_owned()),
        policy: Some(name.to_owned()),
        ..PolicyArgs::default()
    };
    args.resolve_layered(jitter)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// What `herdless analyze FLAGS` judges of some log lines, in process.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// The `spread` check's verdict: `Pass`, `Fail` or `Note`.
    pub spread: String,
    /// The run's outcome: `Passed`, `Failed` or `NotJudged`.
    pub outcome: String,
    /// The `spread` check's message.
    pub message: String,
    /// The checks that failed, as their debug text.
    pub failed: String,
    /// The largest 100 ms bucket of retries over the retrying tasks.
    pub largest_share: f64,
}

/// Runs `herdless analyze FLAGS` on `lines` in process (the flags as the
/// command line gives them, after `analyze`).
///
/// # Panics
///
/// When the flags do not parse, or no check named `spread` ran.
pub fn analyze(lines: &[String], flags: &[&str]) -> Analysis {
    let argv = ["herdless", "analyze"].iter().chain(flags);
    let Command::Analyze(args) = Cli::try_parse_from(argv).unwrap().command else {
        unreachable!("parsed as analyze")
    };
    let mut a = Analyzer::new(&args);
    for l in lines {
        a.line(Some(l.as_bytes()));
    }
    a.stats.flush();
    let t = args.thresholds();
    let lock = verdict::lockstep(&a.stats, t.spike_share, t.lockstep_spikes);
    let checks = verdict::checks(&a.stats, &t, &lock);
    let spread = checks.iter().find(|c| c.check == "spread").unwrap();
    let (outcome, _) = verdict::outcome(&a.stats, &checks);
    let largest = a.stats.retries.largest().map_or(0, |(_, c)| c);
    Analysis {
        spread: format!("{:?}", spread.verdict),
        outcome: format!("{outcome:?}"),
        message: spread.message.clone(),
        failed: format!(
            "{:?}",
            checks
                .iter()
                .filter(|c| c.verdict == verdict::Verdict::Fail)
                .collect::<Vec<_>>()
        ),
        largest_share: f64::from(largest) / a.stats.retrying_tasks as f64,
    }
}
