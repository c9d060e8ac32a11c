//! The flags of `herdless check`.

use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::shared::policy_args::PolicyArgs;
use crate::shared::values::parse_duration;

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum ReportFormat {
    /// A table and one line per check.
    #[default]
    Text,
    /// One JSON object.
    Json,
}

/// `herdless check` arguments.
#[derive(Debug, Clone, Args)]
#[command(
    // The policy flags that do not shape the policy check shows.
    mut_arg("seed", |a| a.hide(true)),
    mut_arg("task_id", |a| a.hide(true)),
    mut_arg("log_format", |a| a.hide(true)),
    mut_arg("quiet", |a| a.hide(true)),
    about = "Show a policy's delay envelope and check it against the known failure modes",
    long_about = "Show a policy's delay envelope per retry (ceiling, median and p99 of the delay for its \
jitter mode, and the cumulative worst case) and check it against the known failure modes of a retry \
policy: a jitter mode that synchronizes a fleet, an undeclared max_retry_after, a cap below the \
declared recovery_time, a chain of retries that gives up before the recovery_time has passed, and a \
budget that is not comfortably (80%) inside the declared visibility_timeout (with --redelivery: one \
attempt, since the broker holds the task between attempts).\n\n\
Exit status: 0 when no check failed (warnings allowed), 1 when a check failed (an error, or a \
warning with --strict), 2 for usage or policy-file errors."
)]
pub(crate) struct CheckArgs {
    /// Policy flags (files, env, flags).
    #[command(flatten)]
    pub(crate) policy: PolicyArgs,
    /// Declared fact: the slowest shared resource's worst-case recovery time (overrides the file's).
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub(crate) recovery_time: Option<Duration>,
    /// Declared fact: the task broker's visibility timeout (overrides the file's).
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub(crate) visibility_timeout: Option<Duration>,
    /// Declared fact: how many retriers share the resource (1 = a lone job).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) workers: Option<u64>,
    /// Per-attempt timeout the policy runs with (exec --timeout; overrides the file's).
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub(crate) timeout: Option<Duration>,
    /// Evaluate as `herdless exec` runs it: default jitter equal, kill_after counted.
    #[arg(long)]
    pub(crate) exec: bool,
    /// Retries are the broker's redeliveries (`herdless worker`): the visibility timeout covers one attempt, not the chain.
    #[arg(long)]
    pub(crate) redelivery: bool,
    /// Fail on warnings too.
    #[arg(long)]
    pub(crate) strict: bool,
    /// Report format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub(crate) format: ReportFormat,
}
