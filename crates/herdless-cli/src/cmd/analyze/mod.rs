//! `herdless analyze [FILE…|-]`: the logs say whether the fleet retried in lockstep.
//!
//! Reads JSON lines in one streaming pass ([`lines`] splits, [`parse`]
//! reads the few fields it needs without building a tree, [`time`] parses
//! RFC 3339 timestamps in place), tallies them ([`stats`]: memory bounded by
//! the open tasks and the 100 ms buckets of the log's span), judges them
//! ([`verdict`]: one verdict per check, thresholds as flags) and renders
//! ([`render`]: text, JSON, the timeline figure). `--follow` ([`follow`],
//! reading with [`tail`]) follows a file by name, or a stream, and prints a
//! line when a storm forms in a rolling window. See docs/cli.md for every
//! flag and field.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::shared::error::{CliError, CliResult};
use crate::shared::exit;
use crate::shared::output::print;

pub mod args;
pub mod follow;
pub mod lines;
pub mod parse;
pub mod render;
pub mod spread;
pub mod stats;
pub mod tail;
pub mod time;
pub mod verdict;

pub use args::AnalyzeArgs;

use parse::{Fields, parse_line};
use stats::Stats;

/// Exit status when the figure cannot be written (the report is printed first).
pub const FIGURE_FAILED: i32 = 3;

/// Exit status when nothing was judged: no retry event, no task that
/// retried, or a check the memory bound left unjudged (never "passed").
pub const NOT_JUDGED: i32 = 4;

/// The fields and the tally of one analysis.
#[derive(Debug)]
pub struct Analyzer {
    /// The fields read.
    pub fields: Fields,
    /// The tally.
    pub stats: Stats,
}

impl Analyzer {
    /// An analyzer for the fields `args` names.
    pub fn new(args: &AnalyzeArgs) -> Analyzer {
        Analyzer {
            fields: Fields::new(
                &args.time_field,
                &args.event_field,
                &args.task_field,
                &args.attempt_field,
                &args.sleep_field,
                &args.status_field,
            ),
            stats: Stats::new(usize::try_from(args.max_open_tasks).unwrap_or(usize::MAX)),
        }
    }

    /// Counts one line (`None`: too long).
    pub fn line(&mut self, line: Option<&[u8]>) {
        let rec = line.and_then(|l| parse_line(l, &self.fields));
        self.stats.add(rec);
    }

    /// Reads `r` to its end.
    ///
    /// # Errors
    ///
    /// A read error.
    pub fn read_all(&mut self, mut r: impl Read) -> io::Result<()> {
        let mut buf = vec![0u8; 1 << 16];
        let mut lines = lines::Lines::default();
        let mut f = |l: Option<&[u8]>| self.line(l);
        loop {
            let n = match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            lines.feed(&buf[..n], &mut f);
        }
        lines.finish(&mut f);
        Ok(())
    }
}

/// Runs `herdless analyze`: 0 when every check passed, 1 when one failed,
/// [`NOT_JUDGED`] when nothing was judged.
///
/// # Errors
///
/// Usage errors and unreadable inputs (exit 2), a figure that cannot be
/// written (exit 3), a stdout that cannot be written.
pub fn run(args: &AnalyzeArgs) -> CliResult {
    let mut a = Analyzer::new(args);
    if args.follow {
        return follow::run(args, a);
    }
    let files: Vec<PathBuf> = if args.files.is_empty() {
        vec![PathBuf::from("-")]
    } else {
        args.files.clone()
    };
    for f in &files {
        read_one(&mut a, f)?;
    }
    finish(args, a)
}

fn read_one(a: &mut Analyzer, f: &Path) -> Result<(), CliError> {
    let cannot = |e: io::Error| CliError::usage(format!("cannot read {}: {e}", f.display()));
    if f == Path::new("-") {
        a.read_all(io::stdin().lock()).map_err(cannot)
    } else {
        a.read_all(File::open(f).map_err(cannot)?).map_err(cannot)
    }
}

/// Closes the open tasks, judges, prints the report and writes the figure.
///
/// # Errors
///
/// As [`run`]; a figure that cannot be written fails after the report is
/// printed (as `simulate`).
pub fn finish(args: &AnalyzeArgs, mut a: Analyzer) -> CliResult {
    a.stats.flush();
    let t = args.thresholds();
    let lock = verdict::lockstep(&a.stats, t.spike_share, t.lockstep_spikes);
    let checks = verdict::checks(&a.stats, &t, &lock);
    let (outcome, why) = verdict::outcome(&a.stats, &checks);
    let waves = spread::judge(&a.stats.waves, &t).1;
    let figure = match &args.out {
        Some(dir) => render::figure(&a.stats, &lock, dir),
        None => Ok(Vec::new()),
    };
    let written = figure.clone().unwrap_or_default();
    let report = render::Report {
        stats: &a.stats,
        lockstep: &lock,
        checks: &checks,
        outcome,
        why: why.as_deref(),
        waves: &waves,
        figures: &written,
    };
    if args.json {
        print(&format!("{}\n", report.json()))?;
    } else {
        print(&report.text())?;
    }
    if let Err(e) = figure {
        return Err(CliError::new(FIGURE_FAILED, e));
    }
    Ok(match outcome {
        verdict::Outcome::Passed => exit::SUCCESS,
        verdict::Outcome::Failed => exit::CHECK_FAILED,
        verdict::Outcome::NotJudged => NOT_JUDGED,
    })
}
