//! `herdless check [--policy NAME | policy flags]`: see a policy before deploying it.
//!
//! Prints the policy's **delay envelope** per retry and checks the policy
//! against the known failure modes of a retry policy, exiting non-zero when one
//! fails so CI can gate a policy change.
//!
//! # The envelope
//!
//! The numbers are the library's: [`herdless::Policy::envelope`] gives, per
//! retry, the ceiling, median and p99 of the delay for the jitter mode (closed
//! forms for none/full/equal, the library's own draws for the decorrelated
//! modes) and the cumulative worst case; this command only renders them, at
//! most [`MAX_ROWS`] rows. The worst case of the whole chain is the sum of the
//! ceilings of all its retries, bounded by `max_elapsed` (the budget stops a
//! call before a sleep would carry it past); rows past `max_elapsed` are
//! marked.
//!
//! # The checks
//!
//! The rule list and why: [`crate::shared::checks`] (`tune` runs the same
//! checks on the block it recommends). Exit status: 0 when no check failed
//! (warnings allowed), 1 when a check failed (an error, or a warning under
//! `--strict`), 2 for usage or policy-file errors.
//!
//! Layout: the flags are [`CheckArgs`] (shared with `tune`), the evaluation
//! [`evaluate`]; [`render`] (text and JSON) is this command's; this file
//! prints the report.

use crate::shared::checks::{CheckArgs, Evaluation, ReportFormat, evaluate};
use crate::shared::error::CliResult;
use crate::shared::exit;
use crate::shared::output::print;

pub(crate) mod render;

/// Runs `herdless check`: exit 0 when no check failed, 1 when one did.
///
/// # Errors
///
/// Usage and policy-file errors (exit 2), a stdout that cannot be written.
pub(crate) fn run(args: &CheckArgs) -> CliResult {
    let Evaluation {
        resolved,
        envelope,
        findings,
        failed,
    } = evaluate(args)?;
    match args.format {
        ReportFormat::Json => print(&format!(
            "{}\n",
            render::json(&resolved, &envelope, &findings, !failed)
        ))?,
        ReportFormat::Text => print(&render::text(&resolved, &envelope, &findings, failed))?,
    }
    Ok(if failed {
        exit::CHECK_FAILED
    } else {
        exit::SUCCESS
    })
}
