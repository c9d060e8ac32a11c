//! The report of `herdless check`, as text for people and as one JSON object
//! for CI. Renders the library's [`Envelope`] and the findings; computes
//! nothing but formatting.

use std::fmt::Write as _;

use herdless::policy::{Envelope, QuantileSource};
use herdless_sim::report::units;
use serde_json::{Value, json};

use crate::shared::checks::{Finding, human};
use crate::shared::policy_args::Resolved;

fn source(r: &Resolved) -> String {
    match (&r.name, &r.file) {
        (Some(name), Some(file)) => format!("policy {name} from {}", file.display()),
        _ => "policy from flags, environment and defaults".into(),
    }
}

/// The file's `exec` keys, as `key value` strings.
fn exec_settings(r: &Resolved) -> Vec<String> {
    let t = &r.table;
    let mut out = Vec::new();
    if let Some(a) = &t.retry_on {
        out.push(format!("retry_on {}", a.value));
    }
    if let Some(a) = &t.terminal_on {
        out.push(format!("terminal_on {}", a.value));
    }
    if let Some(a) = &t.timeout {
        out.push(format!("timeout {}", human(a.value)));
    }
    if let Some(a) = &t.kill_after {
        out.push(format!("kill_after {}", human(a.value)));
    }
    out
}

fn quantile_source(e: &Envelope) -> String {
    match e.quantiles() {
        QuantileSource::ClosedForm => "closed forms".into(),
        QuantileSource::Sampled { chains, .. } => format!(
            "median and p99 sampled from {} chains of the library's draws",
            thousands(chains)
        ),
    }
}

fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The text report: the policy, the envelope table, the checks, the verdict.
pub(crate) fn text(r: &Resolved, e: &Envelope, findings: &[Finding], failed: bool) -> String {
    let p = e.policy();
    let mut s = String::new();
    let _ = writeln!(s, "{}", source(r));
    let _ = writeln!(
        s,
        "  jitter {}, base {}, multiplier {}, cap {}, max_attempts {}, max_elapsed {}, max_retry_after {}",
        p.jitter(),
        human(p.base()),
        units::number(p.multiplier()),
        human(p.cap()),
        p.max_attempts(),
        human(p.max_elapsed()),
        human(p.max_retry_after())
    );
    if let Some(t) = p.attempt_timeout() {
        let _ = writeln!(s, "  attempt_timeout {}", human(t));
    }
    let exec = exec_settings(r);
    if !exec.is_empty() {
        let _ = writeln!(s, "  exec: {}", exec.join(", "));
    }
    let _ = writeln!(s, "\ndelay before each retry ({}):", quantile_source(e));
    let _ = writeln!(
        s,
        "  {:>5}  {:>10}  {:>10}  {:>10}  {:>16}",
        "retry", "ceiling", "median", "p99", "cumulative worst"
    );
    for row in e.rows() {
        let past = if row.cumulative_worst > p.max_elapsed() {
            "  (may be cut by max_elapsed)"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "  {:>5}  {:>10}  {:>10}  {:>10}  {:>16}{past}",
            row.retry,
            human(row.ceiling),
            human(row.median),
            human(row.p99),
            human(row.cumulative_worst)
        );
    }
    let retries = e.retries();
    if retries as usize > e.rows().len() {
        let _ = writeln!(
            s,
            "  ... {} more retries",
            retries as usize - e.rows().len()
        );
    }
    let _ = writeln!(
        s,
        "  worst case: {} of sleep over {retries} retries (sum of ceilings {}, budget max_elapsed {})",
        human(e.worst_case_sleep()),
        human(e.sum_of_ceilings()),
        human(p.max_elapsed())
    );
    let _ = writeln!(s, "\nchecks:");
    for f in findings {
        let _ = writeln!(s, "  {:<5} {}: {}", f.level, f.check, f.message);
    }
    let _ = writeln!(s, "\n{}", if failed { "FAILED" } else { "passed" });
    s
}

/// The JSON report (field names are a public contract: docs/cli.md).
pub(crate) fn json(r: &Resolved, e: &Envelope, findings: &[Finding], passed: bool) -> Value {
    let p = e.policy();
    json!({
        "policy": {
            "name": r.name,
            "file": r.file.as_ref().map(|f| f.display().to_string()),
            "jitter": p.jitter().name(),
            "base_s": p.base().as_secs_f64(),
            "multiplier": p.multiplier(),
            "cap_s": p.cap().as_secs_f64(),
            "max_attempts": p.max_attempts(),
            "max_elapsed_s": p.max_elapsed().as_secs_f64(),
            "max_retry_after_s": p.max_retry_after().as_secs_f64(),
            "attempt_timeout_s": p.attempt_timeout().map(|t| t.as_secs_f64()),
            "exec": exec_settings(r),
        },
        "envelope": e.rows().iter().map(|row| json!({
            "retry": row.retry,
            "ceiling_s": row.ceiling.as_secs_f64(),
            "median_s": row.median.as_secs_f64(),
            "p99_s": row.p99.as_secs_f64(),
            "cumulative_worst_s": row.cumulative_worst.as_secs_f64(),
        })).collect::<Vec<_>>(),
        "retries": e.retries(),
        "worst_case_sleep_s": e.worst_case_sleep().as_secs_f64(),
        "sum_of_ceilings_s": e.sum_of_ceilings().as_secs_f64(),
        "checks": findings.iter().map(|f| json!({
            "check": f.check,
            "level": f.level.as_str(),
            "message": f.message,
        })).collect::<Vec<_>>(),
        "passed": passed,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn human_durations() {
        assert_eq!(human(Duration::from_millis(250)), "250 ms");
        assert_eq!(human(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(human(Duration::from_secs(30)), "30 s");
        assert_eq!(human(Duration::from_secs(150)), "2m 30s");
        // Below a millisecond, a duration keeps its digits (was `0 ms`).
        assert_eq!(human(Duration::from_nanos(1)), "1 ns");
        assert_eq!(human(Duration::from_micros(1500)), "1.5 ms");
        // A saturated sum says so, instead of a number that reads as exact.
        assert_eq!(human(herdless::policy::MAX_DURATION), "more than 584 years");
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(10_000), "10,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
