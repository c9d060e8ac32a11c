//! The flags of `herdless tune`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use herdless::Jitter;

use crate::shared::values::{parse_duration, parse_jitter, parse_seed};

/// An outage range, `5s..60s`, or one length, `45s`.
///
/// # Errors
///
/// Not a duration or a range of two, or a range that runs backwards.
pub(crate) fn parse_outage(s: &str) -> Result<(Duration, Duration), String> {
    let (a, b) = match s.split_once("..") {
        Some((a, b)) => (parse_duration(a)?, parse_duration(b)?),
        None => {
            let d = parse_duration(s)?;
            (d, d)
        }
    };
    if a > b {
        return Err(format!(
            "{s:?} runs backwards (write the shorter length first)"
        ));
    }
    if b.is_zero() {
        return Err("an outage must last more than 0 s".into());
    }
    if b > Duration::from_secs(86_400) {
        return Err(format!("{s:?}: an outage is at most 1 day"));
    }
    Ok((a, b))
}

/// A policy table's name for the block: letters, digits, `-` and `_` (a
/// bare TOML key, as `--policy` names it).
///
/// # Errors
///
/// Any other character, or an empty or overlong name.
pub(crate) fn parse_table_name(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && s.len() <= 128
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "{s:?}: a table name is 1 to 128 letters, digits, '-' and '_'"
        ))
    }
}

/// What `tune` prints on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum TuneFormat {
    /// The report.
    Text,
    /// The report as one JSON object (as `--json`).
    Json,
    /// The recommended `[policy.NAME]` block alone: valid TOML, for a
    /// policy file (nothing when no policy fits; the report then goes to
    /// stderr).
    Toml,
}

/// A guard tune may add: `budget` or `breaker`.
///
/// # Errors
///
/// Another name.
pub(crate) fn parse_guard(s: &str) -> Result<herdless_sim::guard::Guard, String> {
    use herdless_sim::guard::Guard;
    match s.trim().to_ascii_lowercase().as_str() {
        "budget" => Ok(Guard::Budget),
        "breaker" => Ok(Guard::Breaker),
        other => Err(format!(
            "unknown guard {other:?} (expected budget or breaker)"
        )),
    }
}

fn parse_share(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("{t:?} is not a share (0.95 or 95%)"))?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{t:?} is not within 0..=1 (0%..=100%)"))
    }
}

fn parse_peak(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 1e6 => Ok(v),
        _ => Err(format!(
            "{s:?} is not a multiple of the capacity within 0 (excluded) ..= 1000000"
        )),
    }
}

/// A grid duration: above zero (a policy's base, cap and elapsed budget are).
fn parse_grid_duration(s: &str) -> Result<Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err(format!(
            "{:?}: a policy's duration must be above zero",
            s.trim()
        )),
        d => Ok(d),
    }
}

fn parse_multiplier(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if (1.0..=1000.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?} is not a multiplier within 1..=1000")),
    }
}

/// `herdless tune` arguments.
#[derive(Debug, Clone, Args)]
#[command(
    about = "Search retry policies in the simulator for your fleet's facts",
    long_about = "State the facts of a fleet (workers, the device's capacity, the outage lengths \
it must survive, the broker's visibility timeout, a latency objective, the guards allowed); tune \
searches jitter x base x multiplier x cap x max attempts x max elapsed in the simulator over \
several seeds and outage lengths, never simulating a policy `herdless check --strict` refuses, \
re-simulates the best on seeds the search did not use, and prints it as a herdless.toml block \
(checked with `herdless check --strict` before it is printed) beside your current policy and \
full jitter with the defaults, with the Pareto front of drain, peak and calls.\n\n\
Exit status: 0 with a recommendation, 1 when no policy fits the facts (the report says which \
fact to change), 2 for usage or policy-file errors, 3 when figures cannot be written."
)]
pub(crate) struct TuneArgs {
    /// Fact: how many workers (clients) retry against the device [default: the policy file's `workers`, else 40000].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    pub(crate) workers: Option<u32>,
    /// Fact: calls per second the device serves once back.
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) capacity: u32,
    /// Fact: the outage lengths to survive, `5s..60s` (several simulated) or one length
    /// [default: recovery_time/3..recovery_time, else 5s..60s].
    #[arg(long, value_parser = parse_outage, value_name = "RANGE")]
    pub(crate) outage: Option<(Duration, Duration)>,
    /// How many lengths of the --outage range are simulated (1..=20).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub(crate) outages: u32,
    /// Fact: the device's worst-case recovery time, the checks' `recovery_time`
    /// [default: the policy file's, else the end of --outage].
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub(crate) recovery_time: Option<Duration>,
    /// Fact: the broker's visibility timeout [default: the policy file's, if any].
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub(crate) visibility_timeout: Option<Duration>,
    /// Fact: how spread the first failures are (the first calls are uniform over DUR).
    #[arg(long, value_parser = parse_duration, value_name = "DUR", default_value = "100ms")]
    pub(crate) failure_window: Duration,
    /// Objective: --latency-share of the calls done within DUR after the device is back.
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub(crate) latency: Option<Duration>,
    /// With --latency: the share of the calls (0.95 or 95%).
    #[arg(long, value_parser = parse_share, value_name = "SHARE", default_value = "0.95", requires = "latency")]
    pub(crate) latency_share: f64,
    /// Guards the search may add: budget, breaker (comma-separated).
    #[arg(long, value_parser = parse_guard, value_delimiter = ',', value_name = "GUARDS")]
    pub(crate) allow_guards: Vec<herdless_sim::guard::Guard>,
    /// Constraint: the peak after recovery, at most X times the capacity per 100 ms.
    #[arg(long, value_parser = parse_peak, value_name = "X", default_value = "2")]
    pub(crate) max_peak: f64,
    /// Constraint: the largest 100 ms bucket of retries, at most this share of the workers
    /// (analyze's `spread` check, same default).
    #[arg(long, value_parser = parse_share, value_name = "SHARE", default_value = "0.25")]
    pub(crate) max_bucket_share: f64,
    /// Constraint: the share of the workers allowed to give up (0.01 or 1%).
    #[arg(long, value_parser = parse_share, value_name = "SHARE", default_value = "0")]
    pub(crate) max_give_up_share: f64,
    /// Your current policy from the policy file, shown beside the recommendation (its fact keys count as facts).
    #[arg(long, env = "HERDLESS_POLICY", value_name = "NAME")]
    pub(crate) policy: Option<String>,
    /// Policy file (--help of `herdless check` names where it is looked for).
    #[arg(long, env = "HERDLESS_CONFIG", value_name = "PATH")]
    pub(crate) config: Option<PathBuf>,
    /// The name of the recommended policy's table in the printed block.
    #[arg(long, value_name = "NAME", default_value = "tuned", value_parser = parse_table_name)]
    pub(crate) name: String,
    /// Add the recommended [policy.NAME] table to this policy file, or replace the table of that name (created if missing; everything else kept byte for byte).
    #[arg(long, value_name = "FILE")]
    pub(crate) write: Option<PathBuf>,
    /// With --write: replace a [policy.NAME] table that reads differently.
    #[arg(long, requires = "write")]
    pub(crate) force: bool,
    /// What stdout gets: text, json (as --json) or toml (the block alone).
    #[arg(long, value_enum, value_name = "FORMAT", conflicts_with = "json")]
    pub(crate) format: Option<TuneFormat>,
    /// Grid: jitter modes (comma-separated) [default: all five].
    #[arg(long, value_parser = parse_jitter, value_delimiter = ',', value_name = "MODES")]
    pub(crate) jitters: Vec<Jitter>,
    /// Grid: base delays [default: 250ms,1s,4s].
    #[arg(long, value_parser = parse_grid_duration, value_delimiter = ',', value_name = "DURS")]
    pub(crate) bases: Vec<Duration>,
    /// Grid: multipliers [default: 1.5,2,3].
    #[arg(long, value_parser = parse_multiplier, value_delimiter = ',', value_name = "XS")]
    pub(crate) multipliers: Vec<f64>,
    /// Grid: caps [default: recovery_time and twice it].
    #[arg(long, value_parser = parse_grid_duration, value_delimiter = ',', value_name = "DURS")]
    pub(crate) caps: Vec<Duration>,
    /// Grid: attempt limits [default: 5,8,12].
    #[arg(long, value_delimiter = ',', value_name = "NS", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) attempts: Vec<u32>,
    /// Grid: elapsed budgets [default: 2 and 4 times recovery_time, and 80% of visibility_timeout].
    #[arg(long, value_parser = parse_grid_duration, value_delimiter = ',', value_name = "DURS")]
    pub(crate) elapsed: Vec<Duration>,
    /// The seed the search and verification seeds are derived from.
    #[arg(long, value_parser = parse_seed, value_name = "N", default_value = "1")]
    pub(crate) seed: u64,
    /// Search seeds (1..=20): the first screens every candidate, all run the finalists.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub(crate) search_seeds: u32,
    /// Seeds of the honest re-run (1..=20), never among the search seeds.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub(crate) verify_seeds: u32,
    /// Candidates run on every search seed (1..=100).
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub(crate) finalists: u32,
    /// Threads [default: every core].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub(crate) threads: Option<u32>,
    /// One JSON object on stdout instead of the text report (--format json).
    #[arg(long)]
    pub(crate) json: bool,
    /// Write the figure (SVG and PNG) into DIR.
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// Say why the runner-up lost (and why better-ranked candidates were not recommended).
    #[arg(long)]
    pub(crate) explain: bool,
}

impl TuneArgs {
    /// What stdout gets (`--json` is `--format json`).
    pub(crate) fn format(&self) -> TuneFormat {
        match (self.format, self.json) {
            (Some(f), _) => f,
            (None, true) => TuneFormat::Json,
            (None, false) => TuneFormat::Text,
        }
    }
}

/// The examples that were this file's doc tests (its items are private to
/// the crate, where doc tests cannot reach).
#[cfg(test)]
mod examples {
    #[allow(unused_imports)]
    use super::*;

    #[test]
    fn parse_outage_example() -> Result<(), Box<dyn std::error::Error>> {
        use crate::cmd::tune::args::parse_outage;
        use std::time::Duration;
        assert_eq!(
            parse_outage("5s..60s"),
            Ok((Duration::from_secs(5), Duration::from_secs(60)))
        );
        assert_eq!(
            parse_outage("45s"),
            Ok((Duration::from_secs(45), Duration::from_secs(45)))
        );
        assert!(parse_outage("60s..5s").is_err());
        Ok(())
    }

    #[test]
    fn parse_table_name_example() -> Result<(), Box<dyn std::error::Error>> {
        use crate::cmd::tune::args::parse_table_name;
        assert_eq!(parse_table_name("ingest-v2"), Ok("ingest-v2".to_owned()));
        assert!(parse_table_name("x.y").is_err());
        assert!(parse_table_name("").is_err());
        Ok(())
    }
}
