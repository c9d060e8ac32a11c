//! The rule list: each check's verdict on a policy, its envelope and the
//! declared facts. No delay math here: the numbers come from
//! [`herdless::policy::Envelope`].

use std::fmt;
use std::time::Duration;

use herdless::Jitter;
use herdless::policy::Envelope;

use super::human;

/// The share of the visibility timeout a call may use at worst (the rest is
/// the margin).
pub(crate) const VISIBILITY_SHARE: f64 = 0.8;

/// A check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Level {
    /// Nothing to check (a fact was not declared).
    Note,
    /// Passed.
    Ok,
    /// A likely problem; fails only under `--strict`.
    Warn,
    /// Fails the check.
    Error,
}

impl Level {
    /// The level's name in reports (`note`, `ok`, `warn`, `error`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Level::Note => "note",
            Level::Ok => "ok",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// One check's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    /// The check's name (`visibility_timeout`, …).
    pub(crate) check: &'static str,
    /// Its verdict.
    pub(crate) level: Level,
    /// Why, with the numbers.
    pub(crate) message: String,
}

/// What the checks know beyond the policy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CheckFacts {
    /// The slowest shared resource's worst-case recovery time.
    pub(crate) recovery_time: Option<Duration>,
    /// The task broker's visibility timeout.
    pub(crate) visibility_timeout: Option<Duration>,
    /// How many retriers share the resource.
    pub(crate) workers: Option<u64>,
    /// The per-attempt timeout and the TERM→KILL grace after it.
    pub(crate) attempt_limit: Option<(Duration, Duration)>,
    /// Retries are the broker's redeliveries: a worker holds a task for one
    /// attempt, not the chain.
    pub(crate) redelivery: bool,
    /// Whether `jitter` was declared rather than defaulted.
    pub(crate) jitter_declared: bool,
    /// Whether `max_retry_after` was declared rather than defaulted.
    pub(crate) max_retry_after_declared: bool,
}

/// Runs every check, in report order.
pub(crate) fn checks(envelope: &Envelope, facts: &CheckFacts) -> Vec<Finding> {
    vec![
        bounded(envelope, facts),
        jitter(envelope, facts),
        max_retry_after(envelope, facts),
        recovery_time(envelope, facts),
        visibility_timeout(envelope, facts),
    ]
}

fn finding(check: &'static str, level: Level, message: String) -> Finding {
    Finding {
        check,
        level,
        message,
    }
}

fn bounded(e: &Envelope, facts: &CheckFacts) -> Finding {
    let p = e.policy();
    let clock = if facts.redelivery {
        "since the broker stored the task (its timestamp, a wall clock every worker reads: \
         time queued before the first attempt counts)"
    } else {
        "measured on the monotonic clock"
    };
    finding(
        "bounded",
        Level::Ok,
        format!(
            "at most {} attempts and {} elapsed, {clock}",
            p.max_attempts(),
            human(p.max_elapsed())
        ),
    )
}

fn jitter(e: &Envelope, facts: &CheckFacts) -> Finding {
    let lone = facts.workers == Some(1);
    let declared = if facts.jitter_declared {
        ""
    } else {
        " (not declared: the subcommand's default)"
    };
    let (level, message) = match e.policy().jitter() {
        Jitter::None if lone => (
            Level::Ok,
            format!("none{declared}: a lone job (workers = 1) keeps a predictable schedule"),
        ),
        Jitter::None => (
            Level::Warn,
            format!(
                "none{declared}: every retrier computes the same delays, so a fleet that fails \
                 together retries in lockstep; use full (fleets) or equal (a lone job)"
            ),
        ),
        Jitter::Full if lone => (
            Level::Warn,
            format!(
                "full{declared} on a lone job (workers = 1): randomness gains nothing here and \
                 can retry almost at once; equal keeps at least half of each ceiling"
            ),
        ),
        j => (Level::Ok, format!("{j}{declared}")),
    };
    finding("jitter", level, message)
}

fn max_retry_after(e: &Envelope, facts: &CheckFacts) -> Finding {
    let clamp = human(e.policy().max_retry_after());
    if facts.max_retry_after_declared {
        finding(
            "max_retry_after",
            Level::Ok,
            format!("server-supplied delays (Retry-After) are clamped to {clamp}"),
        )
    } else {
        finding(
            "max_retry_after",
            Level::Warn,
            format!(
                "not declared: a hostile or misconfigured Retry-After header could park a worker \
                 (only the default clamp of {clamp} applies); declare max_retry_after"
            ),
        )
    }
}

/// Two rules. The chain of retries must still be going when the resource is
/// back: its worst-case sleep (the sum of the ceilings, bounded by
/// `max_elapsed`) must reach the recovery time, or every call gives up first
/// (an error). And the cap should reach past one recovery, or every worker's
/// longest backoff still lands mid-recovery and the storm resumes (a warning).
fn recovery_time(e: &Envelope, facts: &CheckFacts) -> Finding {
    let Some(r) = facts.recovery_time else {
        return finding(
            "recovery_time",
            Level::Note,
            "not declared: the cap cannot be checked against the slowest shared resource's \
             worst-case recovery"
                .into(),
        );
    };
    let p = e.policy();
    let (cap, rt) = (human(p.cap()), human(r));
    if !e.reaches(r) {
        let short_budget = p.max_elapsed() < r;
        let short_chain = e.sum_of_ceilings() < r;
        let more_attempts = e
            .retries_to_reach(r)
            .and_then(|n| n.checked_add(1))
            .map_or("a larger base or multiplier".to_string(), |a| {
                format!("max_attempts to {a}, or a larger base or multiplier")
            });
        let (why, fix) = match (short_budget, short_chain) {
            (true, false) => (
                format!("max_elapsed {}", human(p.max_elapsed())),
                format!("raise max_elapsed above {rt}"),
            ),
            (true, true) => (
                format!(
                    "max_elapsed {}, and the ceilings of its {} retries sum to {}",
                    human(p.max_elapsed()),
                    e.retries(),
                    human(e.sum_of_ceilings())
                ),
                format!("raise max_elapsed above {rt} and {more_attempts}"),
            ),
            _ => (
                format!("the sum of the ceilings of its {} retries", e.retries()),
                format!("raise {more_attempts}"),
            ),
        };
        return finding(
            "recovery_time",
            Level::Error,
            format!(
                "the whole chain of retries sleeps at most {} ({why}), less than recovery_time \
                 {rt}: every call gives up before the resource is back, whatever the cap; {fix}",
                human(e.worst_case_sleep())
            ),
        );
    }
    if p.cap() < r {
        return finding(
            "recovery_time",
            Level::Warn,
            format!(
                "cap {cap} is below recovery_time {rt}: every worker's longest backoff still \
                 lands mid-recovery and the storm resumes; size cap above it"
            ),
        );
    }
    finding(
        "recovery_time",
        Level::Ok,
        format!(
            "cap {cap} covers recovery_time {rt}, and the chain of retries can sleep up to {} \
             (past it)",
            human(e.worst_case_sleep())
        ),
    )
}

fn visibility_timeout(e: &Envelope, facts: &CheckFacts) -> Finding {
    let Some(v) = facts.visibility_timeout else {
        return finding(
            "visibility_timeout",
            Level::Note,
            "not declared: the budget cannot be checked against the task broker's visibility \
             timeout"
                .into(),
        );
    };
    if facts.redelivery {
        return one_attempt(v, facts);
    }
    let max_elapsed = e.policy().max_elapsed();
    let (worst, how) = match facts.attempt_limit {
        Some((t, grace)) => (
            max_elapsed.saturating_add(t).saturating_add(grace),
            format!(
                "max_elapsed {} + the last attempt's timeout {} and kill grace {}",
                human(max_elapsed),
                human(t),
                human(grace)
            ),
        ),
        None => (
            max_elapsed,
            format!(
                "max_elapsed {} (no per-attempt timeout declared: the last attempt's own \
                 run time comes on top)",
                human(max_elapsed)
            ),
        ),
    };
    let (limit, margin) = margin(v);
    if worst > limit {
        finding(
            "visibility_timeout",
            Level::Error,
            format!(
                "worst case {} ({how}) is not comfortably inside the visibility timeout: \
                 it must be at most {margin}; the broker would redeliver the task to a \
                 second worker while the first still retries",
                human(worst)
            ),
        )
    } else {
        finding(
            "visibility_timeout",
            Level::Ok,
            format!("worst case {} ({how}) is within {margin}", human(worst)),
        )
    }
}

/// 80 % of the visibility timeout, and the sentence that says so.
fn margin(v: Duration) -> (Duration, String) {
    let limit = Duration::from_secs_f64(v.as_secs_f64() * VISIBILITY_SHARE);
    let margin = format!(
        "{:.0}% of visibility_timeout {} = {}, a {:.0}% margin for start-up, broker \
         latency and clock skew",
        VISIBILITY_SHARE * 100.0,
        human(v),
        human(limit),
        (1.0 - VISIBILITY_SHARE) * 100.0
    );
    (limit, margin)
}

/// With redelivery the broker holds the task between attempts: the
/// visibility timeout covers one attempt (its timeout and kill grace).
fn one_attempt(v: Duration, facts: &CheckFacts) -> Finding {
    const WHY: &str = "with redelivery the broker holds the task between attempts, so the \
                       visibility timeout covers one attempt, not the chain";
    let (limit, margin) = margin(v);
    let Some((t, grace)) = facts.attempt_limit else {
        return finding(
            "visibility_timeout",
            Level::Note,
            format!(
                "{WHY}; no per-attempt timeout declared, so one attempt cannot be checked \
                 (herdless worker keeps a longer attempt alive with in-progress acks)"
            ),
        );
    };
    let worst = t.saturating_add(grace);
    let how = format!(
        "one attempt: timeout {} and kill grace {}",
        human(t),
        human(grace)
    );
    if worst > limit {
        finding(
            "visibility_timeout",
            Level::Error,
            format!(
                "{WHY}: worst case {} ({how}) must be at most {margin}; a broker without \
                 in-progress acks would redeliver a running attempt to a second worker",
                human(worst)
            ),
        )
    } else {
        finding(
            "visibility_timeout",
            Level::Ok,
            format!(
                "{WHY}: worst case {} ({how}) is within {margin}",
                human(worst)
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use herdless::Policy;

    fn level(p: &Policy, facts: &CheckFacts, check: &str) -> Level {
        let findings = checks(&p.envelope(0), facts);
        findings.iter().find(|f| f.check == check).unwrap().level
    }

    fn policy(jitter: Jitter) -> Policy {
        Policy::builder().jitter(jitter).build().unwrap()
    }

    #[test]
    fn visibility_timeout_needs_a_twenty_percent_margin() {
        let p = Policy::builder()
            .max_elapsed(Duration::from_secs(120))
            .build()
            .unwrap();
        let with = |v: u64, limit: Option<(u64, u64)>| {
            let facts = CheckFacts {
                visibility_timeout: Some(Duration::from_secs(v)),
                attempt_limit: limit.map(|(t, g)| (Duration::from_secs(t), Duration::from_secs(g))),
                ..CheckFacts::default()
            };
            level(&p, &facts, "visibility_timeout")
        };
        assert_eq!(with(100, None), Level::Error, "longer than the timeout");
        assert_eq!(with(140, None), Level::Error, "inside, but not comfortably");
        assert_eq!(with(150, None), Level::Ok, "exactly 80 %");
        assert_eq!(
            with(150, Some((10, 5))),
            Level::Error,
            "the last attempt counts"
        );
        assert_eq!(with(300, Some((10, 5))), Level::Ok);
        assert_eq!(
            level(&p, &CheckFacts::default(), "visibility_timeout"),
            Level::Note
        );
    }

    #[test]
    fn with_redelivery_the_visibility_timeout_covers_one_attempt() {
        // A two-minute chain, 30 s attempts: too long for a 60 s visibility
        // timeout held across the chain, fine for one attempt at a time.
        let p = Policy::builder()
            .max_elapsed(Duration::from_secs(120))
            .build()
            .unwrap();
        let facts = |redelivery: bool, timeout: Option<u64>| CheckFacts {
            visibility_timeout: Some(Duration::from_secs(60)),
            attempt_limit: timeout.map(|t| (Duration::from_secs(t), Duration::from_secs(10))),
            redelivery,
            ..CheckFacts::default()
        };
        assert_eq!(
            level(&p, &facts(false, Some(30)), "visibility_timeout"),
            Level::Error
        );
        assert_eq!(
            level(&p, &facts(true, Some(30)), "visibility_timeout"),
            Level::Ok
        );
        assert_eq!(
            level(&p, &facts(true, Some(50)), "visibility_timeout"),
            Level::Error
        );
        assert_eq!(
            level(&p, &facts(true, None), "visibility_timeout"),
            Level::Note
        );
        let said = checks(&p.envelope(0), &facts(true, Some(30)));
        let v = said
            .iter()
            .find(|f| f.check == "visibility_timeout")
            .unwrap();
        assert!(
            v.message.contains("covers one attempt, not the chain"),
            "{}",
            v.message
        );
    }

    #[test]
    fn the_chain_must_reach_the_recovery_time_and_the_cap_past_it() {
        let facts = |r: u64| CheckFacts {
            recovery_time: Some(Duration::from_secs(r)),
            ..CheckFacts::default()
        };
        // Defaults: cap 30 s, 5 retries sleep at most 15.5 s.
        let p = Policy::default();
        assert_eq!(level(&p, &facts(15), "recovery_time"), Level::Ok);
        assert_eq!(level(&p, &facts(20), "recovery_time"), Level::Error);
        assert_eq!(level(&p, &facts(45), "recovery_time"), Level::Error);
        // Ten attempts sleep up to 120 s (max_elapsed): the chain reaches 45 s,
        // the cap does not.
        let long = p.to_builder().max_attempts(10).build().unwrap();
        assert_eq!(level(&long, &facts(45), "recovery_time"), Level::Warn);
        assert_eq!(level(&long, &facts(30), "recovery_time"), Level::Ok);
        assert_eq!(level(&long, &facts(121), "recovery_time"), Level::Error);
        assert_eq!(
            level(&p, &CheckFacts::default(), "recovery_time"),
            Level::Note
        );
    }

    #[test]
    fn retry_after_and_jitter() {
        let p = Policy::default(); // full jitter
        assert_eq!(
            level(&p, &CheckFacts::default(), "max_retry_after"),
            Level::Warn
        );
        let declared = CheckFacts {
            max_retry_after_declared: true,
            ..CheckFacts::default()
        };
        assert_eq!(level(&p, &declared, "max_retry_after"), Level::Ok);
        let lone = CheckFacts {
            workers: Some(1),
            ..CheckFacts::default()
        };
        assert_eq!(level(&p, &lone, "jitter"), Level::Warn);
        let none = policy(Jitter::None);
        assert_eq!(level(&none, &CheckFacts::default(), "jitter"), Level::Warn);
        assert_eq!(level(&none, &lone, "jitter"), Level::Ok);
        assert_eq!(level(&policy(Jitter::Equal), &lone, "jitter"), Level::Ok);
    }
}
