//! `herdless fleet`'s flags, and the fleet-level pieces they build.

use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use herdless::adapters::reqwest::ReqwestClassifier;
use herdless::guard::Throttle;
use herdless::http::StatusClassifier;
use herdless::{Breaker, RetryBudget, Urgent};
use serde::Serialize;

use crate::shared::policy_args::PolicyArgs;
use crate::shared::values::parse_duration;

/// The largest `--workers`: one process's fleet. Its memory grows linearly with
/// the workers (docs/http.md gives the measured figure per worker), and a
/// larger fleet needs more sockets than a default open-file limit allows.
pub(crate) const MAX_WORKERS: u32 = 100_000;

/// The most URLs one fleet spreads its requests over.
pub(crate) const MAX_URLS: usize = 1_000;

/// `herdless fleet` flags.
#[derive(Debug, Clone, Args)]
pub(crate) struct FleetArgs {
    /// The URL every worker GETs; with several, each request (a retry
    /// included) goes to the next of them in turn, as a round-robin
    /// balancer in front of them would send it.
    #[arg(required = true, value_name = "URL")]
    pub(crate) urls: Vec<String>,
    /// Number of concurrent workers, 1 to 100000 (each holds a task, a
    /// socket and its attempt times: see docs/http.md for the memory per worker).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_WORKERS)))]
    pub(crate) workers: u32,
    /// Per-attempt timeout (connect to end of response).
    #[arg(long, value_parser = parse_duration, value_name = "DUR", default_value = "10s")]
    pub(crate) timeout: Duration,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
    /// A retry budget shared by every worker (token bucket): none, grpc or aws.
    #[arg(long, value_enum, value_name = "KIND", default_value = "none")]
    pub(crate) retry_budget: BudgetKind,
    /// The budget's capacity in tokens (default: grpc 100, aws 500).
    #[arg(long, value_name = "T")]
    pub(crate) budget_tokens: Option<f64>,
    /// A half-open probe breaker shared by every worker: opens after THRESHOLD
    /// consecutive failures, then one retry at a time probes.
    #[arg(long, value_name = "THRESHOLD")]
    pub(crate) breaker: Option<u32>,
    /// With --breaker: how long the others wait behind a probe (jittered in [DUR/2, DUR]).
    #[arg(long, value_parser = parse_duration, value_name = "DUR", default_value = "1s", requires = "breaker")]
    pub(crate) probe_wait: Duration,
    /// With --breaker: when the probe succeeds, release the calls held behind
    /// it over DUR instead of at their next check; size it to the capacity
    /// (held calls / the endpoint's rate), at most 1h [default: 0s].
    #[arg(long, value_parser = parse_duration, value_name = "DUR", requires = "breaker")]
    pub(crate) breaker_release: Option<Duration>,
    /// A client-side adaptive throttle shared by every worker: paces every
    /// attempt, the first included, by what the endpoint answers (no server
    /// help; see docs/fleet-protection.md).
    #[arg(long)]
    pub(crate) throttle: bool,
    /// Ignore the plans of waves a server announces (`Herdless-Plan`): by
    /// default each worker comes back in its own wave, computed from its
    /// X-Worker-Id (see docs/fleet-protection.md).
    #[arg(long)]
    pub(crate) ignore_plan: bool,
    /// Escape lane: urgent calls never sleep past DUR from their start.
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub(crate) urgent: Option<Duration>,
    /// With --urgent: retries per call that skip the budget and the breaker.
    #[arg(long, value_name = "Q", default_value_t = 2, requires = "urgent")]
    pub(crate) urgent_quota: u32,
    /// With --urgent: how many workers (the first K) are urgent (default: all).
    #[arg(long, value_name = "K", requires = "urgent")]
    pub(crate) urgent_workers: Option<u32>,
    /// HTTP statuses to retry beyond the library's retryable set (comma-separated,
    /// 400..=599), e.g. 409; a status listed here is retried even when the
    /// library calls it terminal (what `herdless analyze` flags as a terminal error retried).
    #[arg(long, value_delimiter = ',', value_name = "STATUSES", value_parser = clap::value_parser!(u16).range(400..=599))]
    pub(crate) retry_on: Vec<u16>,
    /// Retry policy.
    #[command(flatten)]
    pub(crate) policy: PolicyArgs,
}

/// `--retry-budget` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum BudgetKind {
    /// No shared budget.
    None,
    /// gRPC retry throttling.
    Grpc,
    /// The AWS SDK retry quota.
    Aws,
}

/// The fleet-level pieces every worker shares.
#[derive(Debug, Clone, Default)]
pub(crate) struct GuardFlags {
    /// The shared retry budget.
    pub(crate) budget: Option<Arc<RetryBudget>>,
    /// The shared breaker.
    pub(crate) breaker: Option<Arc<Breaker>>,
    /// The shared adaptive throttle.
    pub(crate) throttle: Option<Arc<Throttle>>,
    /// Whether each worker has a wave guard (follows announced plans).
    pub(crate) waves: bool,
    /// The escape lane, for the first `urgent_workers` workers.
    pub(crate) urgent: Option<Urgent>,
    /// How many workers are urgent.
    pub(crate) urgent_workers: u32,
    /// The classifier every worker uses: the library's statuses, with `--retry-on` added.
    pub(crate) classifier: ReqwestClassifier,
}

/// The strategy a report was made with (echoed in the JSON).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct FleetStrategy {
    /// `none`, `grpc` or `aws`.
    pub(crate) retry_budget: BudgetKind,
    /// The budget's capacity in tokens (null without a budget).
    pub(crate) budget_tokens: Option<f64>,
    /// The breaker's threshold (null without a breaker).
    pub(crate) breaker: Option<u32>,
    /// The breaker's release window, seconds (null without a breaker).
    pub(crate) breaker_release_s: Option<f64>,
    /// Whether the workers shared an adaptive throttle.
    pub(crate) throttle: bool,
    /// Whether each worker followed the plans of waves announced to it.
    pub(crate) waves: bool,
    /// The urgent deadline in seconds (null without the escape lane).
    pub(crate) urgent_s: Option<f64>,
    /// How many workers were urgent.
    pub(crate) urgent_workers: u32,
}

impl FleetArgs {
    /// Builds the shared pieces the flags ask for.
    ///
    /// # Errors
    ///
    /// A message for an invalid budget size or urgent deadline.
    pub(crate) fn guards(&self) -> Result<(GuardFlags, FleetStrategy), String> {
        let budget = match (self.retry_budget, self.budget_tokens) {
            (BudgetKind::None, Some(_)) => {
                return Err("--budget-tokens needs --retry-budget grpc|aws".into());
            }
            (BudgetKind::None, None) => None,
            (BudgetKind::Grpc, t) => Some(
                RetryBudget::builder()
                    .grpc(t.unwrap_or(100.0), 0.1)
                    .build()
                    .map_err(|e| format!("--budget-tokens: {e}"))?,
            ),
            (BudgetKind::Aws, t) => Some(
                RetryBudget::builder()
                    .aws()
                    .max_tokens(t.unwrap_or(500.0))
                    .build()
                    .map_err(|e| format!("--budget-tokens: {e}"))?,
            ),
        };
        // The library's builder validates (threshold at least 1, probe wait
        // from 1 ms: a shorter one would make the waiting calls spin).
        let breaker = match self.breaker {
            None => None,
            Some(threshold) => Some(
                Breaker::builder()
                    .threshold(threshold)
                    .probe_wait(self.probe_wait)
                    .build()
                    .map_err(|e| match e.field() {
                        "threshold" => format!("--breaker {threshold}: {e}"),
                        _ => format!("--probe-wait: {e}"),
                    })?,
            ),
        };
        if self
            .breaker_release
            .is_some_and(|d| d > Duration::from_secs(3_600))
        {
            return Err("--breaker-release must be at most 1h".into());
        }
        if self.urgent.is_some_and(|d| d.is_zero()) {
            return Err("--urgent must be positive".into());
        }
        if self.urgent.is_none() && self.urgent_workers.is_some() {
            return Err("--urgent-workers needs --urgent DUR".into());
        }
        let urgent_workers = match self.urgent {
            Some(_) => self
                .urgent_workers
                .unwrap_or(self.workers)
                .min(self.workers),
            None => 0,
        };
        let strategy = FleetStrategy {
            retry_budget: self.retry_budget,
            budget_tokens: budget.as_ref().map(RetryBudget::max_tokens),
            breaker: self.breaker,
            breaker_release_s: self
                .breaker
                .map(|_| self.breaker_release.unwrap_or_default().as_secs_f64()),
            throttle: self.throttle,
            waves: !self.ignore_plan,
            urgent_s: self.urgent.map(|d| d.as_secs_f64()),
            urgent_workers,
        };
        let guards = GuardFlags {
            budget: budget.map(Arc::new),
            breaker: breaker
                .map(|b| Arc::new(b.release_window(self.breaker_release.unwrap_or_default()))),
            throttle: self.throttle.then(|| Arc::new(Throttle::new())),
            waves: !self.ignore_plan,
            urgent: self.urgent.map(|d| Urgent::new(d).quota(self.urgent_quota)),
            urgent_workers,
            classifier: ReqwestClassifier::new(
                self.retry_on
                    .iter()
                    .fold(StatusClassifier::default(), |c, &s| c.retry(s)),
            ),
        };
        Ok((guards, strategy))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command line as `herdless` parses it, for `fleet` alone (a
    /// subcommand does not import the parser above it).
    mod cli {
        #[derive(Debug, clap::Parser)]
        #[command(name = "herdless")]
        pub(super) struct Cli {
            #[command(subcommand)]
            pub(super) command: Command,
        }

        #[derive(Debug, clap::Subcommand)]
        #[allow(clippy::large_enum_variant)] // a test's parser: one value, parsed once
        pub(super) enum Command {
            Fleet(super::FleetArgs),
            /// Stands for every other subcommand.
            Other,
        }
    }

    #[test]
    fn workers_has_a_documented_range_named_in_the_error() {
        use clap::Parser;
        let parse = |n: &str| {
            cli::Cli::try_parse_from(["herdless", "fleet", "--workers", n, "http://127.0.0.1:1/"])
        };
        for bad in ["0", "100001", "100000000"] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
            let msg = e.to_string();
            assert!(msg.contains("--workers"), "{bad}: {msg}");
            assert!(msg.contains("1..=100000"), "{bad}: {msg}");
        }
        for good in ["1", "100000"] {
            assert!(parse(good).is_ok(), "{good}");
        }
    }

    /// A flag that only means something beside another is refused without it
    /// (exit 2), and the message names the flag it needs.
    #[test]
    fn flags_that_cannot_apply_are_refused_naming_what_they_need() {
        use clap::Parser;
        let parse = |extra: &[&str]| {
            let argv = ["herdless", "fleet", "--workers", "10"]
                .iter()
                .chain(extra)
                .chain(&["http://127.0.0.1:1/"]);
            cli::Cli::try_parse_from(argv)
        };
        for (bad, needs) in [
            (&["--urgent-quota", "3"][..], "--urgent <DUR>"),
            (&["--urgent-workers", "2"], "--urgent <DUR>"),
            (&["--probe-wait", "1s"], "--breaker <THRESHOLD>"),
            (&["--breaker-release", "4s"], "--breaker <THRESHOLD>"),
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}");
            let msg = e.to_string();
            assert!(msg.contains(needs), "{bad:?}: {msg}");
        }
        for good in [
            &["--urgent", "1s", "--urgent-quota", "3"][..],
            &["--urgent", "1s", "--urgent-workers", "2"],
            &["--breaker", "3", "--probe-wait", "1s"],
            &[],
        ] {
            assert!(parse(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn guard_flags_build_shared_pieces_or_clear_errors() {
        use clap::Parser;
        let parse = |extra: &[&str]| {
            let argv = ["herdless", "fleet", "--workers", "10"]
                .iter()
                .chain(extra)
                .chain(&["http://127.0.0.1:1/"]);
            let cli::Command::Fleet(a) = cli::Cli::try_parse_from(argv).unwrap().command else {
                unreachable!()
            };
            a.guards()
        };
        let (g, s) = parse(&[]).unwrap();
        assert!(g.budget.is_none() && g.breaker.is_none() && g.urgent.is_none());
        assert!(g.throttle.is_none() && !s.throttle);
        assert_eq!(s.retry_budget, BudgetKind::None);
        let (g, s) = parse(&["--throttle"]).unwrap();
        assert!(g.throttle.is_some() && s.throttle);
        let (g, s) = parse(&["--retry-budget", "grpc"]).unwrap();
        assert_eq!(g.budget.unwrap().max_tokens(), 100.0);
        assert_eq!(s.budget_tokens, Some(100.0));
        let (g, _) = parse(&["--retry-budget", "aws", "--budget-tokens", "50"]).unwrap();
        assert_eq!(g.budget.unwrap().max_tokens(), 50.0);
        let (g, s) = parse(&["--breaker", "3", "--probe-wait", "200ms"]).unwrap();
        let b = g.breaker.unwrap();
        assert_eq!(
            (b.threshold(), b.probe_wait_time()),
            (3, Duration::from_millis(200))
        );
        assert_eq!(s.breaker, Some(3));
        assert_eq!(s.breaker_release_s, Some(0.0));
        let (g, s) = parse(&["--breaker", "3", "--breaker-release", "4s"]).unwrap();
        assert_eq!(
            g.breaker.unwrap().release_window_time(),
            Duration::from_secs(4)
        );
        assert_eq!(s.breaker_release_s, Some(4.0));
        let (g, s) = parse(&["--urgent", "800ms", "--urgent-workers", "4"]).unwrap();
        assert_eq!(g.urgent.unwrap().deadline(), Duration::from_millis(800));
        assert_eq!((g.urgent_workers, s.urgent_workers), (4, 4));
        let (g, _) = parse(&["--urgent", "1s"]).unwrap();
        assert_eq!(g.urgent_workers, 10);
        for (bad, msg) in [
            (&["--budget-tokens", "5"][..], "needs --retry-budget"),
            (
                &["--retry-budget", "grpc", "--budget-tokens=-1"],
                "--budget-tokens",
            ),
            (&["--breaker", "0"], "at least 1"),
            (&["--urgent", "0s"], "positive"),
            (&["--breaker", "3", "--probe-wait", "0ms"], "--probe-wait"),
            (
                &["--breaker", "3", "--probe-wait", "500us"],
                "--probe-wait: invalid breaker probe_wait: 500µs is below the minimum 1ms",
            ),
            (
                &["--breaker", "3", "--breaker-release", "2h"],
                "--breaker-release",
            ),
            (
                &["--retry-budget", "aws", "--budget-tokens", "NaN"],
                "--budget-tokens",
            ),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(msg), "{bad:?}: {e}");
        }
    }
}
