//! The `herdless` command line: argument parsing and dispatch.

use clap::{Parser, Subcommand};

use crate::{exit, policy_args, simulate};

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
    /// Show the delay envelope of a retry policy (a short demonstration).
    Demo(policy_args::PolicyArgs),
    /// Simulate a fleet's retries in virtual time: see the storm and its cure.
    Simulate(simulate::SimulateArgs),
}

/// Parses the command line, runs the subcommand, returns the exit code.
pub fn run() -> i32 {
    let cli = Cli::parse();
    match cli.command {
        Command::Demo(args) => demo(&args),
        Command::Simulate(args) => simulate::run(&args),
    }
}

fn demo(args: &policy_args::PolicyArgs) -> i32 {
    let policy = match args.resolve(herdless::Jitter::Full) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("herdless: {e}");
            return exit::USAGE;
        }
    };
    println!(
        "policy: base {:?}, multiplier {}, cap {:?}, {} attempts, {:?} budget, {} jitter",
        policy.base(),
        policy.multiplier(),
        policy.cap(),
        policy.max_attempts(),
        policy.max_elapsed(),
        policy.jitter()
    );
    let mut rng = herdless::Rng::with_seed(args.seed.unwrap_or(1));
    for n in 0..policy.max_attempts().saturating_sub(1) {
        let mut schedule = herdless::Schedule::at(n);
        let d = policy.next_delay(&mut schedule, &mut rng);
        println!(
            "retry {:>2}: ceiling {:>8.3} s, drawn {:>8.3} s",
            n + 1,
            policy.ceiling(n).as_secs_f64(),
            d.as_secs_f64()
        );
    }
    exit::SUCCESS
}
