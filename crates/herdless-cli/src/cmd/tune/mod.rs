//! `herdless tune`: the facts in, the policy out.
//!
//! This module only gathers the facts (flags over the policy file's fact
//! keys `workers`, `recovery_time`, `visibility_timeout`), hands
//! [`herdless_sim::tune::run`] `herdless check --strict`'s own checks as the
//! pruning rule, checks the block it prints with `herdless check --strict`
//! itself ([`crate::shared::checks::evaluate`] on the block written to a file), and
//! renders ([`render`]). The search is the simulator's (docs/tune.md).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use herdless::{Jitter, Policy};
use herdless_sim::tune::{self, Facts, Latency, Refusal, Space, TuneParams, TuneReport};
use indicatif::{ProgressBar, ProgressStyle};

use crate::shared::checks::{self as check, CheckArgs, ReportFormat};
use crate::shared::error::{CliError, CliResult};
use crate::shared::exit;
use crate::shared::output::print;
use crate::shared::policy_args::{PolicyArgs, Resolved};

pub(crate) mod args;
pub(crate) mod explain;
pub(crate) mod render;
pub(crate) mod write;

pub(crate) use args::{TuneArgs, TuneFormat};

/// Workers when neither the flag nor the policy file says.
pub(crate) const DEFAULT_WORKERS: u32 = 40_000;

/// The outage range when neither `--outage` nor a recovery time is given.
pub(crate) const DEFAULT_OUTAGE: (Duration, Duration) =
    (Duration::from_secs(5), Duration::from_secs(60));

/// Runs `herdless tune`: 0 with a recommendation, 1 when nothing fits.
///
/// # Errors
///
/// Usage and policy-file errors (exit 2), figures or stdout that cannot be written.
pub(crate) fn run(args: &TuneArgs) -> CliResult {
    let current = current_policy(args)?;
    let facts = facts(args, current.as_ref())?;
    let params = TuneParams {
        search_seeds: args.search_seeds,
        verify_seeds: args.verify_seeds,
        finalists: args.finalists as usize,
        seed: args.seed,
        threads: args
            .threads
            .map_or_else(herdless_sim::parallel::default_threads, |t| t as usize),
        baselines: match (&args.policy, &current) {
            (Some(name), Some(r)) => vec![(format!("current ({name})"), r.policy)],
            _ => Vec::new(),
        },
        ..TuneParams::new(facts.clone(), space(args, &facts)?)
    };
    let admit = admission(&facts);
    let format = args.format();
    let report = search(&params, &admit, format != TuneFormat::Text)?;
    let block = report
        .recommended
        .as_ref()
        .map(|r| render::toml_block(&args.name, &r.policy.policy, r.guard.as_ref(), &report))
        .transpose()
        .map_err(CliError::failure)?;
    if let (Some(block), Some(r)) = (&block, &report.recommended) {
        checked_by_check(&args.name, block, &r.policy.policy)?;
    }
    // The figure is written before the report, which names its files; one
    // that cannot be written fails after the report is printed.
    let figures = match (&args.out, &report.figure) {
        (Some(dir), Some(fig)) => write_figure(fig, dir),
        _ => Ok(Vec::new()),
    };
    let written = figures.as_ref().map_or(&[][..], Vec::as_slice);
    print_report(args, format, &report, block.as_deref(), written)?;
    if let (Some(file), Some(b), Some(r)) = (&args.write, &block, &report.recommended) {
        write_block(args, file, b, &r.policy.policy)?;
    }
    figures?;
    Ok(if report.recommended.is_some() {
        exit::SUCCESS
    } else {
        exit::CHECK_FAILED
    })
}

/// The fleet's facts: flags over the policy file's fact keys over the
/// defaults (the recovery time is the longest outage to survive).
fn facts(args: &TuneArgs, current: Option<&Resolved>) -> Result<Facts, CliError> {
    let table = current.map(|r| r.table.clone()).unwrap_or_default();
    let workers = match (args.workers, table.workers.as_ref()) {
        (Some(w), _) => w,
        (None, Some(w)) => u32::try_from(w.value)
            .ok()
            .filter(|w| *w <= 10_000_000)
            .ok_or_else(|| {
                CliError::usage("the policy file's workers must be at most 10000000 for tune")
            })?,
        (None, None) => DEFAULT_WORKERS,
    };
    let recovery = args
        .recovery_time
        .or(table.recovery_time.as_ref().map(|a| a.value));
    let visibility = args
        .visibility_timeout
        .or(table.visibility_timeout.as_ref().map(|a| a.value));
    let (from, to) = match (args.outage, recovery) {
        (Some(r), _) => r,
        (None, Some(r)) if !r.is_zero() => (r / 3, r),
        _ => DEFAULT_OUTAGE,
    };
    let recovery_time = recovery.unwrap_or(to);
    if recovery_time < to {
        return Err(CliError::usage(format!(
            "--outage ends at {}, past the recovery time {}: the recovery time is the longest outage",
            check::human(to),
            check::human(recovery_time)
        )));
    }
    let mut facts = Facts::new(
        workers,
        args.capacity,
        tune::outage_lengths(from, to, args.outages),
    );
    facts.recovery_time = recovery_time;
    facts.first_call_window = args.failure_window;
    facts.visibility_timeout = visibility;
    facts.latency = args.latency.map(|within| Latency {
        share: args.latency_share,
        within,
    });
    facts.guards = args.allow_guards.clone();
    facts.max_peak = args.max_peak;
    facts.max_give_up_share = args.max_give_up_share;
    facts.max_bucket_share = args.max_bucket_share;
    Ok(facts)
}

/// `herdless check --strict`'s rules, on each candidate of the grid, with
/// the fleet's facts declared.
fn admission(facts: &Facts) -> impl Fn(&Policy) -> Result<(), Refusal> + Sync + use<> {
    let check_facts = check::CheckFacts {
        recovery_time: Some(facts.recovery_time),
        visibility_timeout: facts.visibility_timeout,
        workers: Some(u64::from(facts.clients)),
        jitter_declared: true,
        max_retry_after_declared: true,
        ..check::CheckFacts::default()
    };
    move |p: &Policy| -> Result<(), Refusal> {
        let findings = check::checks(&p.envelope(0), &check_facts);
        match check::first_failing(&findings, true) {
            None => Ok(()),
            Some(f) => Err(Refusal {
                check: f.check.to_string(),
                message: f.message.clone(),
            }),
        }
    }
}

/// The report in the asked format; `--format toml` prints the block alone
/// (without one, the report says why, on stderr).
fn print_report(
    args: &TuneArgs,
    format: TuneFormat,
    report: &TuneReport,
    block: Option<&str>,
    written: &[PathBuf],
) -> Result<(), CliError> {
    match format {
        TuneFormat::Json => print(&format!("{}\n", render::json(report, block, written)))?,
        TuneFormat::Text => print(&render::text(report, block, args.explain, written))?,
        TuneFormat::Toml => match block {
            Some(b) => print(b)?,
            None => eprint!("{}", render::text(report, None, args.explain, written)),
        },
    }
    Ok(())
}

/// `--write FILE`: the block added to (or replacing its table in) the file.
fn write_block(args: &TuneArgs, file: &Path, block: &str, policy: &Policy) -> Result<(), CliError> {
    let done = write::write(file, &args.name, block, policy, args.force)?;
    let what = match done {
        write::Written::Added => "added to",
        write::Written::Replaced => "replaced in",
        write::Written::Unchanged => "already in",
    };
    eprintln!(
        "herdless tune: [policy.{}] {what} {}",
        args.name,
        file.display()
    );
    Ok(())
}

/// The policy of `--policy NAME` (and its file's fact keys), when one is named.
fn current_policy(args: &TuneArgs) -> Result<Option<Resolved>, CliError> {
    if args.policy.is_none() && args.config.is_none() {
        return Ok(None);
    }
    let flags = PolicyArgs {
        policy: args.policy.clone(),
        config: args.config.clone(),
        ..PolicyArgs::default()
    };
    flags
        .resolve_layered(Jitter::Full)
        .map(Some)
        .map_err(|e| CliError::usage(e.to_string()))
}

/// The grid: the defaults for the facts, each axis replaced by its flag.
///
/// # Errors
///
/// A usage error when `--caps` or `--bases` leave no pair with the cap at
/// least the base: no policy of the grid would be valid, and the search
/// would end in "no policy fits" blaming a fact.
fn space(args: &TuneArgs, facts: &Facts) -> Result<Space, CliError> {
    let mut s = Space::for_facts(facts.recovery_time, facts.visibility_timeout);
    set(&mut s.jitters, &args.jitters);
    set(&mut s.bases, &args.bases);
    set(&mut s.multipliers, &args.multipliers);
    set(&mut s.caps, &args.caps);
    set(&mut s.max_attempts, &args.attempts);
    set(&mut s.max_elapsed, &args.elapsed);
    let valid = s.bases.iter().any(|b| s.caps.iter().any(|c| c >= b));
    if !valid && (!args.caps.is_empty() || !args.bases.is_empty()) {
        let list = |v: &[Duration]| {
            v.iter()
                .map(|d| check::human(*d))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let given = |flag: bool, name: &'static str| if flag { name } else { "" };
        return Err(CliError::usage(format!(
            "every cap ({}{}) is below every base ({}{}): no policy of the grid is valid; widen \
             {}",
            given(!args.caps.is_empty(), "--caps "),
            list(&s.caps),
            given(!args.bases.is_empty(), "--bases "),
            list(&s.bases),
            match (args.caps.is_empty(), args.bases.is_empty()) {
                (false, false) => "--caps or --bases",
                (false, true) => "--caps",
                _ => "--bases",
            }
        )));
    }
    Ok(s)
}

fn set<T: Clone>(axis: &mut Vec<T>, flag: &[T]) {
    if !flag.is_empty() {
        *axis = flag.to_vec();
    }
}

/// A progress bar on stderr (indicatif), only on a terminal.
struct Bar(ProgressBar);

impl herdless_sim::Progress for Bar {
    fn start(&self, total: u64) {
        self.0.set_length(total);
    }
    fn advance(&self, n: u64) {
        self.0.inc(n);
    }
}

fn search(
    params: &TuneParams,
    admit: &tune::Admit<'_>,
    json: bool,
) -> Result<TuneReport, CliError> {
    let result = if !json && std::io::stderr().is_terminal() {
        let bar = ProgressBar::new(0);
        if let Ok(style) = ProgressStyle::with_template(
            "{spinner} tuning {wide_bar} {pos}/{len} runs, {elapsed} (eta {eta})",
        ) {
            bar.set_style(style);
        }
        let r = tune::run(params, admit, &Bar(bar.clone()));
        bar.finish_and_clear();
        r
    } else {
        tune::run(params, admit, &herdless_sim::NoProgress)
    };
    result.map_err(|e| CliError::usage(e.to_string()))
}

/// Runs `herdless check --strict --config FILE --policy NAME` on the block
/// (written to a temporary file): the block is printed only if it passes and
/// reads back as the recommended policy.
fn checked_by_check(name: &str, block: &str, policy: &Policy) -> Result<(), CliError> {
    let internal = |m: String| CliError::failure(format!("internal error: {m}"));
    let dir = tempfile::tempdir()
        .map_err(|e| internal(format!("cannot create a temporary directory: {e}")))?;
    let path = dir.path().join(crate::shared::config::FILE_NAME);
    std::fs::write(&path, block)
        .map_err(|e| internal(format!("cannot write {}: {e}", path.display())))?;
    reads_back(&path, name, policy).map_err(internal)
}

/// Whether the policy file `path` reads as one, with `[policy.NAME]`
/// passing `herdless check --strict` and reading back as `policy`.
pub(crate) fn reads_back(path: &Path, name: &str, policy: &Policy) -> Result<(), String> {
    let args = CheckArgs {
        policy: PolicyArgs {
            policy: Some(name.to_string()),
            config: Some(path.to_owned()),
            ..PolicyArgs::default()
        },
        recovery_time: None,
        visibility_timeout: None,
        workers: None,
        timeout: None,
        exec: false,
        redelivery: false,
        strict: true,
        format: ReportFormat::Text,
    };
    let e = check::evaluate(&args).map_err(|e| format!("it does not read back: {e}"))?;
    if let Some(f) = check::first_failing(&e.findings, true) {
        return Err(format!(
            "herdless check --strict refuses [policy.{name}]: {}: {}",
            f.check, f.message
        ));
    }
    if e.resolved.policy != *policy {
        return Err(format!(
            "[policy.{name}] reads back as {:?}, not {policy:?}",
            e.resolved.policy
        ));
    }
    Ok(())
}

fn write_figure(
    fig: &herdless_sim::report::OutageReport,
    dir: &Path,
) -> Result<Vec<PathBuf>, CliError> {
    herdless_sim::plots::write_all(&herdless_sim::Report::Outage(fig.clone()), dir)
        .map_err(|e| CliError::new(crate::shared::exit::FIGURES_FAILED, e.to_string()))
}
