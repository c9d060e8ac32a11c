//! The report of `herdless tune`: the `herdless.toml` block, the figures of
//! the honest re-run beside the baselines, the Pareto front, `--explain`,
//! and the JSON object. Formatting only: every number is the simulator's.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use herdless::Policy;
use herdless_sim::report::units;
use herdless_sim::tune::{FrontRow, GuardChoice, Score, TuneReport, Verified};
use serde_json::{Value, json};

use crate::shared::checks::human;

/// A duration as the policy file writes it (`1m 30s`, `250ms`): humantime's
/// form, which the file reads back exactly.
fn toml_duration(d: Duration) -> String {
    format!("\"{}\"", humantime::format_duration(d))
}

/// The recommended policy as a `herdless.toml` table, with the facts as its
/// fact keys (so `herdless check --strict --policy NAME` checks the same
/// facts) and the guard, which is not a policy key, as a comment.
///
/// # Errors
///
/// A table name that is not a bare TOML key.
pub fn toml_block(
    name: &str,
    p: &Policy,
    guard: Option<&GuardChoice>,
    r: &TuneReport,
) -> Result<String, String> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "--name {name:?}: a table name is letters, digits, '-' and '_'"
        ));
    }
    let mut s = String::new();
    let outages: Vec<String> = r
        .facts
        .outages_s
        .iter()
        .map(|&o| units::seconds(o))
        .collect();
    let _ = writeln!(
        s,
        "# herdless tune: {} workers, capacity {}/s, outages {}",
        r.facts.clients,
        r.facts.capacity_per_s,
        outages.join(", ")
    );
    let _ = writeln!(s, "[policy.{name}]");
    let _ = writeln!(s, "jitter = \"{}\"", p.jitter().name());
    let _ = writeln!(s, "base = {}", toml_duration(p.base()));
    let _ = writeln!(s, "multiplier = {:?}", p.multiplier());
    let _ = writeln!(s, "cap = {}", toml_duration(p.cap()));
    let _ = writeln!(s, "max_attempts = {}", p.max_attempts());
    let _ = writeln!(s, "max_elapsed = {}", toml_duration(p.max_elapsed()));
    let _ = writeln!(
        s,
        "max_retry_after = {}",
        toml_duration(p.max_retry_after())
    );
    let _ = writeln!(
        s,
        "recovery_time = {}",
        toml_duration(Duration::from_secs_f64(r.facts.recovery_time_s))
    );
    if let Some(v) = r.facts.visibility_timeout_s {
        let _ = writeln!(
            s,
            "visibility_timeout = {}",
            toml_duration(Duration::from_secs_f64(v))
        );
    }
    let _ = writeln!(s, "workers = {}", r.facts.clients);
    match guard {
        Some(GuardChoice::Budget {
            tokens,
            token_ratio,
        }) => {
            let _ = writeln!(
                s,
                "# and a shared retry budget (not a policy key): RetryBudget::grpc({}, {}) per process",
                units::number(*tokens),
                units::number(*token_ratio)
            );
        }
        Some(GuardChoice::Breaker {
            threshold,
            probe_wait_s,
        }) => {
            let _ = writeln!(
                s,
                "# and a breaker (not a policy key): herdless fleet --breaker {threshold} --probe-wait {}",
                humantime::format_duration(Duration::from_secs_f64(*probe_wait_s))
            );
        }
        None => {}
    }
    Ok(s)
}

pub(crate) fn policy_line(
    v: &herdless_sim::tune::PolicyReport,
    guard: Option<&GuardChoice>,
) -> String {
    let p = &v.policy;
    let g = guard.map_or(String::new(), |g| format!(", {}", g.describe()));
    format!(
        "{} base {} x{} cap {} attempts {} elapsed {}{g}",
        p.jitter(),
        human(p.base()),
        units::number(p.multiplier()),
        human(p.cap()),
        p.max_attempts(),
        human(p.max_elapsed())
    )
}

fn secs(v: Option<f64>) -> String {
    v.map_or("gave up".into(), units::seconds)
}

/// The rows of the figures table for one score.
fn column(s: &Score, outages: &[f64]) -> Vec<String> {
    let mut col: Vec<String> = s.drain_s.iter().map(|d| secs(*d)).collect();
    col.resize(outages.len(), "-".into());
    col.push(if s.give_up_share > 0.0 {
        "did not drain".into()
    } else {
        format!("{:.2}x", s.objective)
    });
    col.push(format!("{:.2}x", s.peak_over_capacity));
    // The table is the worst over the seeds: the run that called most.
    col.push(format!("{:.2}", s.calls_worst));
    col.push(format!("{:.1}%", s.give_up_share * 100.0));
    col.push(format!("{:.1}%", s.max_bucket_share * 100.0));
    col.push(s.done_after_recovery_s.map_or("-".into(), units::seconds));
    col
}

fn figures_table(s: &mut String, r: &TuneReport, cols: &[&Verified]) {
    let mut labels: Vec<String> = r
        .facts
        .outages_s
        .iter()
        .map(|o| format!("drain, {} outage", units::seconds(*o)))
        .collect();
    labels.push("worst vs limit T + N/C".into());
    labels.push("peak after recovery".into());
    labels.push("calls per worker".into());
    labels.push("gave up (worst)".into());
    labels.push("largest 100 ms of retries".into());
    labels.push(match (r.facts.latency_share, r.facts.latency_within_s) {
        (Some(q), Some(w)) => format!(
            "{:.0}% done after recovery (<= {})",
            q * 100.0,
            units::seconds(w)
        ),
        _ => "latency (no objective)".into(),
    });
    let data: Vec<Vec<String>> = cols
        .iter()
        .map(|v| column(&v.verify, &r.facts.outages_s))
        .collect();
    let w = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let widths: Vec<usize> = cols
        .iter()
        .zip(&data)
        .map(|(v, d)| {
            d.iter()
                .map(String::len)
                .chain([v.label.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let _ = write!(s, "  {:w$}", "");
    for (v, cw) in cols.iter().zip(&widths) {
        let _ = write!(s, "  {:>cw$}", v.label);
    }
    s.push('\n');
    for (i, l) in labels.iter().enumerate() {
        let _ = write!(s, "  {l:w$}");
        for (d, cw) in data.iter().zip(&widths) {
            let _ = write!(s, "  {:>cw$}", d[i]);
        }
        s.push('\n');
    }
    for v in cols {
        let verdict = match (&v.check, v.search.is_some()) {
            (Some(c), _) => format!("refused by herdless check --strict ({c})"),
            (None, true) => "passes herdless check --strict".into(),
            (None, false) => "passes herdless check --strict".into(),
        };
        let meets = if v.verify.feasible() {
            "meets the facts"
        } else {
            "misses the facts"
        };
        let _ = writeln!(
            s,
            "  {}: {}; {meets}; {verdict}",
            v.label,
            policy_line(&v.policy, v.guard.as_ref())
        );
    }
}

fn front_table(s: &mut String, rows: &[FrontRow]) {
    let _ = writeln!(
        s,
        "  {:>6}  {:>7}  {:>6}  {:>5}  policy",
        "drain", "peak", "calls", "meets"
    );
    for row in rows {
        let _ = writeln!(
            s,
            "  {:>5.2}x  {:>6.2}x  {:>6.2}  {:>5}  {}",
            row.objective,
            row.peak_over_capacity,
            row.calls,
            if row.feasible { "yes" } else { "no" },
            policy_line(&row.policy, row.guard.as_ref())
        );
    }
}

/// The text report.
pub fn text(r: &TuneReport, block: Option<&str>, explain: bool, figures: &[PathBuf]) -> String {
    let mut s = String::new();
    let f = &r.facts;
    let outages: Vec<String> = f.outages_s.iter().map(|&o| units::seconds(o)).collect();
    let _ = writeln!(
        s,
        "herdless tune: {} workers, capacity {}/s, outages {} (recovery_time {}){}",
        f.clients,
        f.capacity_per_s,
        outages.join(", "),
        units::seconds(f.recovery_time_s),
        f.visibility_timeout_s.map_or(String::new(), |v| format!(
            ", visibility_timeout {}",
            units::seconds(v)
        ))
    );
    let pruned: usize = r.search.pruned.iter().map(|p| p.count).sum();
    let by: Vec<String> = r
        .search
        .pruned
        .iter()
        .map(|p| format!("{} {}", p.check, p.count))
        .collect();
    let _ = writeln!(
        s,
        "  grid of {} policies: {pruned} refused by herdless check --strict before simulating ({}); {} candidates \
         simulated on {} outage lengths ({} with a guard), {} finalists on {} seeds, verified on {} other seeds; {} runs",
        r.search.grid,
        if by.is_empty() {
            "none".into()
        } else {
            by.join(", ")
        },
        r.search.candidates,
        f.outages_s.len(),
        r.search.guard_candidates,
        r.search.finalists,
        r.search.search_seeds.len(),
        r.search.verify_seeds.len(),
        r.search.runs
    );
    let _ = writeln!(
        s,
        "  constraints: peak after recovery <= {}x capacity, give-ups <= {:.1}%, retries in any 100 ms <= {:.1}% of the workers",
        units::number(f.max_peak),
        f.max_give_up_share * 100.0,
        f.max_bucket_share * 100.0
    );
    match (&r.recommended, block) {
        (Some(rec), Some(block)) => {
            let _ = writeln!(
                s,
                "\nrecommended (herdless check --strict passes this block):\n\n{block}"
            );
            let _ = writeln!(
                s,
                "figures re-simulated on {} seeds the search did not use (worst over seeds):",
                r.search.verify_seeds.len()
            );
            let mut cols = vec![rec];
            cols.extend(&r.baselines);
            figures_table(&mut s, r, &cols);
        }
        _ => {
            let u = r.unsatisfied.as_ref();
            let _ = writeln!(
                s,
                "\nno policy fits the facts: change {}\n  {}",
                u.map_or("the facts", |u| u.fact.as_str()),
                u.map_or("", |u| u.message.as_str())
            );
            if !r.baselines.is_empty() {
                let _ = writeln!(s, "\nthe baselines, on the verification seeds:");
                let cols: Vec<&Verified> = r.baselines.iter().collect();
                figures_table(&mut s, r, &cols);
            }
        }
    }
    if !r.pareto.is_empty() {
        let _ = writeln!(
            s,
            "\nPareto front (drain vs peak vs calls; worst over lengths, search seeds):"
        );
        front_table(&mut s, &r.pareto);
    }
    if explain {
        s.push_str(&super::explain::text(r));
    }
    if !figures.is_empty() {
        let names: Vec<String> = figures.iter().map(|p| p.display().to_string()).collect();
        let _ = writeln!(s, "\nfigure written: {}", names.join(", "));
    }
    s
}

/// The JSON report: the library's report (docs/cli.md) with the block and the figures.
pub fn json(r: &TuneReport, block: Option<&str>, figures: &[PathBuf]) -> Value {
    let mut v = serde_json::to_value(r).unwrap_or_else(|_| json!({}));
    if let Value::Object(map) = &mut v {
        map.insert("toml".into(), json!(block));
        map.insert("checked".into(), json!(block.is_some()));
        map.insert("explain".into(), json!(super::explain::lines(r)));
        map.insert(
            "figures".into(),
            json!(
                figures
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
            ),
        );
    }
    v
}
