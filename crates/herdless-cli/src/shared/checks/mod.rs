//! The policy checks: what `herdless check` evaluates and prints, and what
//! `herdless tune` runs on the block it recommends.
//!
//! # The checks
//!
//! | check | level | rule |
//! |---|---|---|
//! | `bounded` | ok | a policy always bounds attempts and elapsed time, on the monotonic clock: a loop bounded by only one of them amplifies an outage, and a wall clock can jump |
//! | `jitter` | warn | `none` synchronizes a fleet (unless `workers = 1`); `full` on a lone job (`workers = 1`) can retry almost at once: equal keeps a minimum gap |
//! | `max_retry_after` | warn | absent: a hostile or misconfigured Retry-After header could park a worker (the default 60 s clamp applies, undeclared) |
//! | `recovery_time` | **error** | the whole chain's worst-case sleep (sum of the ceilings, bounded by `max_elapsed`) is below the declared recovery time: every call gives up before the resource is back; the message names the knob (more attempts, a larger base or multiplier, a larger `max_elapsed`) |
//! | `recovery_time` | warn | the chain reaches past the recovery time but `cap` is below it: every worker's longest backoff still lands mid-recovery and the storm resumes |
//! | `visibility_timeout` | **error** | the worst-case call — `max_elapsed`, plus the last attempt's own run time when a per-attempt `timeout` is declared (`timeout + kill_after`) — must be at most [`VISIBILITY_SHARE`](rules::VISIBILITY_SHARE) (80 %) of the broker's visibility timeout: the 20 % margin absorbs the last attempt's start-up, broker delivery latency and clock skew between broker and worker |
//! | `visibility_timeout` with `--redelivery` | **error** | retries are the broker's redeliveries (`herdless worker`), so the worker holds a task for one attempt only: the check applies to one attempt (`timeout + kill_after`), and says so; without a declared `timeout` it is a note (`herdless worker` keeps a longer attempt alive with in-progress acks) |
//!
//! A cap that covers one recovery is necessary, not sufficient: with the
//! defaults (5 retries of at most 0.5, 1, 2, 4 and 8 s) a 30 s cap never comes
//! into play, and a 20 s recovery outlasts every call.
//!
//! Undeclared facts are reported as notes, never as failures. Exit status: 0
//! when no check failed (warnings allowed), 1 when a check failed (an error, or a
//! warning under `--strict`), 2 for usage or policy-file errors.
//!
//! Layout: [`args`] (the flags of `check`, which `tune` fills for its own
//! block), [`rules`] (the rule list); this file resolves the policy and the
//! facts and runs them ([`evaluate`]).

use herdless::Jitter;

use std::time::Duration;

use herdless_sim::report::units;

use crate::shared::error::CliError;
use crate::shared::policy_args::Resolved;
use crate::shared::process::{DEFAULT_JITTER, DEFAULT_KILL_AFTER};

pub(crate) mod args;
pub(crate) mod rules;

pub(crate) use args::{CheckArgs, ReportFormat};
pub(crate) use rules::{CheckFacts, Finding, Level, checks};

/// Envelope rows printed at most (later retries are all at the cap for the
/// exponential modes, and stationary for the decorrelated ones).
pub(crate) const MAX_ROWS: u32 = 30;

/// Formats a duration for people: `1 ns`, `250 ms`, `1.5 s`, `2m 30s`,
/// `more than 584 years` for a saturated sum. The one rule of every herdless
/// report ([`herdless_sim::report::units`]), shared with the simulator's
/// tables and the text retry events.
pub(crate) fn human(d: Duration) -> String {
    units::duration(d)
}

/// What `herdless check` found: the policy, its envelope, the findings and
/// the verdict (`herdless tune` checks its own output with it).
#[derive(Debug, Clone)]
pub(crate) struct Evaluation {
    /// The policy checked.
    pub(crate) resolved: Resolved,
    /// Its envelope.
    pub(crate) envelope: herdless::policy::Envelope,
    /// Every check's finding.
    pub(crate) findings: Vec<Finding>,
    /// Whether a check failed (an error, or a warning under `--strict`).
    pub(crate) failed: bool,
}

/// Resolves the policy and the facts of `args` and runs the checks: what
/// `herdless check` prints, before it is printed.
///
/// # Errors
///
/// Usage and policy-file errors (exit 2).
pub(crate) fn evaluate(args: &CheckArgs) -> Result<Evaluation, CliError> {
    let default_jitter = if args.exec {
        DEFAULT_JITTER
    } else {
        Jitter::Full
    };
    let resolved = args
        .policy
        .resolve_layered(default_jitter)
        .map_err(|e| CliError::usage(e.to_string()))?;
    // As `exec` refuses it (a file's zero timeout is refused when it is read).
    if args.timeout.is_some_and(|d| d.is_zero()) {
        return Err(CliError::usage("--timeout must be greater than zero"));
    }
    let facts = facts(args, &resolved);
    let envelope = resolved.policy.envelope(MAX_ROWS);
    let findings = checks(&envelope, &facts);
    let failed = first_failing(&findings, args.strict).is_some();
    Ok(Evaluation {
        resolved,
        envelope,
        findings,
        failed,
    })
}

/// The first finding that fails the check: an error, or a warning when
/// `strict` (`--strict`).
pub(crate) fn first_failing(findings: &[Finding], strict: bool) -> Option<&Finding> {
    findings
        .iter()
        .find(|f| f.level == Level::Error || (strict && f.level == Level::Warn))
}

/// The declared facts: flags over the policy file's.
fn facts(args: &CheckArgs, r: &Resolved) -> CheckFacts {
    let t = &r.table;
    let timeout = args.timeout.or(t.timeout.as_ref().map(|a| a.value));
    let grace = t
        .kill_after
        .as_ref()
        .map(|a| a.value)
        .unwrap_or(DEFAULT_KILL_AFTER);
    CheckFacts {
        recovery_time: args
            .recovery_time
            .or(t.recovery_time.as_ref().map(|a| a.value)),
        visibility_timeout: args
            .visibility_timeout
            .or(t.visibility_timeout.as_ref().map(|a| a.value)),
        workers: args.workers.or(t.workers.as_ref().map(|a| a.value)),
        attempt_limit: timeout.map(|t| (t, grace)),
        redelivery: args.redelivery,
        jitter_declared: r.jitter_declared,
        max_retry_after_declared: r.max_retry_after_declared,
    }
}
