//! `herdless simulate`: the fleet simulator (the README's main job).
//!
//! Runs a scenario of `herdless-sim` (spread, outage by default, contention,
//! robustness, latency-tail, reactivation),
//! prints an aligned table with the strategies side by side (or one JSON
//! object with `--json`) and writes SVG and PNG figures into `--out DIR`
//! (default `./herdless-report/`), saying where. A progress bar is drawn on
//! stderr for long runs, only when stderr is a terminal and not with `--json`.
//!
//! Flags that do not apply to the chosen scenario are refused (exit 2) rather
//! than silently ignored. With `--json`, figures are written only when `--out`
//! is given, so a script's working directory is not filled unasked.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use herdless_sim::endpoint::OutageEnd;
use herdless_sim::scenario::reactivation::PlanMode;
use herdless_sim::{Config, Progress, Scenario, Simulation, StrategyKind};
use indicatif::{ProgressBar, ProgressStyle};

use crate::shared::error::{CliError, CliResult};
use crate::shared::exit;
use crate::shared::output::print;
use crate::shared::values::parse_duration;

mod build;
mod server;
use server::ServerArgs;

/// The default directory of the figures.
pub(crate) const DEFAULT_OUT: &str = "herdless-report";

/// Flags of `herdless simulate`.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct SimulateArgs {
    /// Scenario: spread, outage, contention, robustness (the outage with the
    /// server told a fixed capacity E, cell by cell: true capacity E/2, E,
    /// 2E x outage end x honor, plus 20 s and 60 s outages),
    /// latency-tail (hedged requests against a slow tail, then an overload),
    /// reactivation (a whole fleet back at once to a server that is up:
    /// full, full+pushback, full+hold, full+throttle and full+waves on three
    /// fleets: all honoring, half ignoring, three replicas) or field (outages of
    /// 5 s to 90 s, end known or not, 1, 3 or 8 server replicas with each split,
    /// with and without shared state; the default policy).
    #[arg(long, value_parser = parse_scenario, default_value = "outage", value_name = "NAME")]
    pub(crate) scenario: Scenario,
    /// Strategies to compare, comma-separated: none, full, equal, decorrelated,
    /// decorrelated-window, fixed-1s, no-backoff, (outage) a jitter mode
    /// with a fleet-level guard: full+budget, full+breaker, full+pushback,
    /// full+static-pushback, full+hold, full+throttle, full+cubic, full+waves,
    /// full+waves+throttle,
    /// (latency-tail) hedge, hedge+budget [default: every jitter mode plus
    /// the scenario's baseline; outage adds full+budget, full+breaker,
    /// full+pushback; robustness tests full+hold, full+pushback and
    /// full+throttle; latency-tail compares full, hedge, hedge+budget].
    #[arg(long, value_delimiter = ',', value_parser = parse_strategy, value_name = "LIST")]
    pub(crate) jitter: Vec<StrategyKind>,
    /// Seed: the same seed gives the same output.
    #[arg(long, default_value_t = Simulation::DEFAULT_SEED, value_name = "N")]
    pub(crate) seed: u64,
    /// Outage, robustness: number of clients [default: 40000]. Contention: the largest
    /// number of clients; the sweep has 20 evenly spaced sizes up to it [default: 200].
    #[arg(long, value_name = "N")]
    pub(crate) clients: Option<u32>,
    /// Outage, robustness: how long the endpoint fails everything [default: 5s].
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub(crate) outage: Option<Duration>,
    /// Outage: calls per second served after the outage. Robustness: the
    /// capacity estimate E the server is told (each cell's true capacity is
    /// a multiple of it) [default: 10000].
    #[arg(long, value_name = "PER_S")]
    pub(crate) capacity: Option<u32>,
    /// Outage, robustness: the endpoint's token bucket size [default: capacity / 10].
    #[arg(long, value_name = "N")]
    pub(crate) burst: Option<u32>,
    /// Outage, robustness: clients sharing one process's retry budget and breaker
    /// (full+budget, full+breaker) [default: 100].
    #[arg(long, value_name = "N")]
    pub(crate) clients_per_process: Option<u32>,
    /// Outage: the share of clients that honor Retry-After, 0 to 1; the rest
    /// use their own backoff [default: 1]. Reactivation: the share that
    /// honors plans and Retry-After in the mixed fleet [default: 0.5].
    #[arg(long, value_name = "FRACTION")]
    pub(crate) honor: Option<f64>,
    /// Outage: the pushback allocator's starting capacity estimate over the
    /// true capacity, 0.01 to 100 [default: 1].
    #[arg(long, value_name = "FACTOR")]
    pub(crate) capacity_estimate: Option<f64>,
    /// Outage: whether the pushback allocator is told when the outage ends:
    /// known or unknown [default: unknown].
    #[arg(long, value_parser = parse_outage_end, value_name = "known|unknown")]
    pub(crate) outage_end: Option<OutageEnd>,
    /// Reactivation: when the clients learn the plan of waves: announced
    /// (before the disconnect: the first reconnect is in the wave) or
    /// unannounced (from the first refusal) [default: announced].
    #[arg(long, value_parser = parse_plan, value_name = "announced|unannounced")]
    pub(crate) plan: Option<PlanMode>,
    /// Spread: number of workers [default: 200].
    #[arg(long, value_name = "N")]
    pub(crate) workers: Option<u32>,
    /// Spread: calls the controller fails per worker [default: 3].
    #[arg(long, value_name = "K")]
    pub(crate) failures: Option<u32>,
    /// Contention: trials averaged per number of clients [default: 100].
    #[arg(long, value_name = "N")]
    pub(crate) trials: Option<u32>,
    /// Latency-tail: calls made, 1000 per second [default: 20000].
    #[arg(long, value_name = "N")]
    pub(crate) calls: Option<u32>,
    /// Base delay [default: 500ms spread, 1s outage, 5ms contention].
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub(crate) base: Option<Duration>,
    /// Growth factor per retry [default: 2].
    #[arg(long, value_name = "X")]
    pub(crate) multiplier: Option<f64>,
    /// Cap on one delay [default: 30s; contention 2s].
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub(crate) cap: Option<Duration>,
    /// Attempt limit, counting the first call: 1 to 4294967294, or
    /// `unlimited` [default: 6; contention unlimited].
    #[arg(long, value_parser = parse_max_attempts, value_name = "N")]
    pub(crate) max_attempts: Option<u32>,
    /// Elapsed-time budget per client [default: 120s; contention unlimited].
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub(crate) max_elapsed: Option<Duration>,
    /// Directory for the SVG and PNG figures [default: ./herdless-report/].
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// Print one JSON object instead of the table (figures only with --out).
    #[arg(long)]
    pub(crate) json: bool,
    /// Do not write figures.
    #[arg(long)]
    pub(crate) no_plots: bool,
    /// Worker threads [default: available cores]; the output does not depend on it.
    #[arg(long, value_name = "N")]
    pub(crate) threads: Option<usize>,
    /// The pushback server's settings.
    #[command(flatten)]
    pub(crate) server: ServerArgs,
}

/// The simulator's "no attempt limit": `u32::MAX` attempts, reported as
/// such (`null` in the JSON, "no attempt limit" in the table).
pub(crate) const UNLIMITED_ATTEMPTS: u32 = u32::MAX;

/// `--max-attempts`: 1 to `u32::MAX - 1`, or `unlimited` (which is
/// `u32::MAX`: the simulator reports that count as no limit, so the number
/// itself is refused rather than silently read as `unlimited`).
///
/// # Errors
///
/// Not a count in that range.
pub(crate) fn parse_max_attempts(s: &str) -> Result<u32, String> {
    if s.trim() == "unlimited" {
        return Ok(UNLIMITED_ATTEMPTS);
    }
    s.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| (1..UNLIMITED_ATTEMPTS).contains(n))
        .ok_or_else(|| {
            format!(
                "{s:?}: must be 1 to {}, or unlimited (the simulator's no-limit, which it \
                 counts as {UNLIMITED_ATTEMPTS} attempts)",
                UNLIMITED_ATTEMPTS - 1
            )
        })
}

fn parse_scenario(s: &str) -> Result<Scenario, String> {
    s.parse()
}

fn parse_outage_end(s: &str) -> Result<OutageEnd, String> {
    s.parse()
}

fn parse_plan(s: &str) -> Result<PlanMode, String> {
    s.parse()
}

fn parse_strategy(s: &str) -> Result<StrategyKind, String> {
    s.parse::<StrategyKind>().map_err(|e| e.to_string())
}

/// A progress bar on stderr (indicatif).
#[derive(Debug)]
struct Bar(ProgressBar);

impl Progress for Bar {
    fn start(&self, total: u64) {
        self.0.set_length(total);
    }
    fn advance(&self, n: u64) {
        self.0.inc(n);
    }
}

/// Whether a run is long enough to deserve a progress bar: every contention
/// sweep, and outage runs of more than a few million simulated calls.
fn is_long(sim: &Simulation) -> bool {
    match sim.config() {
        Config::Contention(_)
        | Config::Robustness(_)
        | Config::Reactivation(_)
        | Config::Field(_) => true,
        Config::Outage(p) => u64::from(p.clients) * sim.strategy_kinds().len() as u64 >= 500_000,
        Config::Spread(p) => u64::from(p.workers) * sim.strategy_kinds().len() as u64 >= 5_000_000,
        Config::LatencyTail(p) => {
            u64::from(p.calls) * sim.strategy_kinds().len() as u64 >= 5_000_000
        }
    }
}

/// Runs `herdless simulate`.
///
/// # Errors
///
/// Out-of-range parameters (exit 2).
pub(crate) fn run(args: &SimulateArgs) -> CliResult {
    let sim = args
        .simulation()
        .map_err(|e| CliError::usage(e.to_string()))?;
    let show_bar = !args.json && std::io::stderr().is_terminal() && is_long(&sim);
    let result = if show_bar {
        let bar = ProgressBar::new(sim.work_units());
        if let Ok(style) = ProgressStyle::with_template(
            "{spinner} simulating {wide_bar} {pos}/{len} runs, {elapsed} (eta {eta})",
        ) {
            bar.set_style(style);
        }
        let r = sim.run_with_progress(&Bar(bar.clone()));
        bar.finish_and_clear();
        r
    } else {
        sim.run()
    };
    let report = result.map_err(|e| CliError::usage(e.to_string()))?;
    if args.json {
        print(&format!("{}\n", report.to_json()))?;
    } else {
        print(&report.table())?;
    }
    let out = match (&args.out, args.json, args.no_plots) {
        (_, _, true) | (None, true, _) => return Ok(exit::SUCCESS),
        (Some(dir), _, _) => dir.clone(),
        (None, false, false) => PathBuf::from(DEFAULT_OUT),
    };
    match herdless_sim::plots::write_all(&report, &out) {
        Ok(files) => {
            let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
            let msg = if names.is_empty() {
                "this scenario draws no figure".to_owned()
            } else {
                format!("figures written to {}: {}", out.display(), names.join(", "))
            };
            if args.json {
                eprintln!("{msg}");
            } else {
                print(&format!("\n{msg}\n"))?;
            }
            Ok(exit::SUCCESS)
        }
        Err(e) => Err(CliError::new(exit::FIGURES_FAILED, e.to_string())),
    }
}

/// The examples that were this file's doc tests (its items are private to
/// the crate, where doc tests cannot reach).
#[cfg(test)]
mod examples {
    #[allow(unused_imports)]
    use super::*;

    #[test]
    fn parse_max_attempts_example() -> Result<(), Box<dyn std::error::Error>> {
        use crate::cmd::simulate::parse_max_attempts;
        assert_eq!(parse_max_attempts("6"), Ok(6));
        assert_eq!(parse_max_attempts("unlimited"), Ok(u32::MAX));
        assert!(
            parse_max_attempts("4294967295")
                .unwrap_err()
                .contains("1 to 4294967294")
        );
        Ok(())
    }
}
