//! When nothing fits: which fact to change, and to what.
//!
//! Three ways a search comes back empty, each answered with one fact:
//!
//! * the checks refused the whole grid: the visibility timeout leaves no
//!   budget that outlasts the recovery (`visibility_timeout`), or no policy
//!   of the grid reaches past the recovery (`recovery_time`), or whichever
//!   check refused most;
//! * every simulated candidate broke a constraint: the candidate closest to
//!   the facts (smallest largest violation over its limit) names the
//!   constraint and the value it reached (`max_peak` or `capacity`,
//!   `max_give_up_share`, `max_bucket_share`, `latency`);
//! * candidates met the facts on the search seeds but none on the fresh
//!   ones: the same, from the verification's violations.

use std::collections::BTreeMap;

use super::Facts;
use super::eval::{Score, Violation};
use super::grid::Candidate;
use super::report::{Pruned, Unsatisfied, Verified};
use crate::report::units;

pub(crate) fn why(
    facts: &Facts,
    pruned: &BTreeMap<String, Pruned>,
    scored: &[(Candidate, Score)],
    failed: &[Verified],
) -> Unsatisfied {
    let r = facts.recovery_time;
    if scored.is_empty() {
        if let Some(v) = facts.visibility_timeout {
            if v.as_secs_f64() * 0.8 < r.as_secs_f64() {
                return Unsatisfied {
                    fact: "visibility_timeout".into(),
                    message: format!(
                        "the visibility timeout {} leaves at most {} (80%) for a call's budget, \
                         less than the recovery time {}: every call would give up before the \
                         device is back, or be redelivered while it still retries; raise \
                         visibility_timeout to at least {} (or shorten the outage)",
                        units::duration(v),
                        units::seconds(v.as_secs_f64() * 0.8),
                        units::duration(r),
                        units::seconds(r.as_secs_f64() / 0.8)
                    ),
                };
            }
        }
        let top = pruned.values().max_by_key(|p| p.count);
        let (fact, example) = top.map_or(("recovery_time".to_string(), String::new()), |p| {
            (p.check.clone(), p.example.clone())
        });
        let fact = if fact == "invalid" {
            "recovery_time".to_string()
        } else {
            fact
        };
        return Unsatisfied {
            message: format!(
                "herdless check refused every policy of the grid ({}); the most refusals came \
                 from {fact}: {example}",
                pruned
                    .values()
                    .map(|p| format!("{} {}", p.check, p.count))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            fact,
        };
    }
    let (violations, when) = match failed.first() {
        Some(v) => (v.verify.violations.clone(), "on the verification seeds"),
        None => {
            // Candidates that met the facts on the first seed only (past
            // the rounds of finalists) have no violation to report.
            let closest = scored
                .iter()
                .filter(|(_, s)| !s.violations.is_empty())
                .min_by(|a, b| a.1.excess().total_cmp(&b.1.excess()))
                .map(|(_, s)| s.violations.clone())
                .unwrap_or_default();
            (closest, "on the search seeds")
        }
    };
    let worst = violations
        .iter()
        .max_by(|a, b| ratio(a).total_cmp(&ratio(b)))
        .cloned()
        .unwrap_or(Violation {
            constraint: "peak",
            value: 0.0,
            limit: facts.max_peak,
        });
    let (fact, message) = match worst.constraint {
        "peak" => (
            "max_peak",
            format!(
                "no policy keeps the peak after recovery within {}x the capacity ({}/s): the \
                 closest peaks at {}x {when}; raise --max-peak to {} or the capacity to {}/s",
                units::number(worst.limit),
                facts.capacity,
                units::number(worst.value),
                units::number((worst.value * 100.0).ceil() / 100.0),
                (f64::from(facts.capacity) * worst.value / worst.limit).ceil()
            ),
        ),
        "spread" => (
            "max_bucket_share",
            format!(
                "no policy keeps every 100 ms bucket of retries within {:.1}% of the clients: the \
                 closest puts {:.1}% in one {when}; allow that share (--max-bucket-share) or widen \
                 the first failures' window",
                worst.limit * 100.0,
                worst.value * 100.0
            ),
        ),
        "give_ups" => (
            "max_give_up_share",
            format!(
                "no policy keeps the give-ups within {:.1}% of the clients: the closest loses \
                 {:.1}% {when}; allow that share (--max-give-up-share) or shorten the outage",
                worst.limit * 100.0,
                worst.value * 100.0
            ),
        ),
        _ => (
            "latency",
            if worst.value.is_finite() {
                format!(
                    "no policy gets the latency share done within {} after recovery: the \
                     closest takes {} {when}; raise --latency to {}",
                    units::seconds(worst.limit),
                    units::seconds(worst.value),
                    units::seconds(worst.value.ceil())
                )
            } else {
                format!(
                    "no policy gets the latency share of the clients done at all {when}: lower \
                     --latency-share or allow fewer give-ups"
                )
            },
        ),
    };
    Unsatisfied {
        fact: fact.into(),
        message,
    }
}

fn ratio(v: &Violation) -> f64 {
    if v.limit > 0.0 {
        v.value / v.limit
    } else {
        1.0 + v.value * 100.0
    }
}
