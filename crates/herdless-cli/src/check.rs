//! `herdless check [--policy NAME | policy flags]`: see a policy before deploying it.
//!
//! Prints the policy's **delay envelope** per retry and runs the first seed's
//! "Edge Cases and Gotchas" as checks, exiting non-zero when one fails so CI can
//! gate a policy change.
//!
//! # The envelope
//!
//! For each retry `k` (the delay before attempt `k + 1`, zero-based index
//! `n = k - 1`) with ceiling `c = min(cap, base · multiplierⁿ)`:
//!
//! | jitter | ceiling | median | p99 | source |
//! |---|---|---|---|---|
//! | none | `c` | `c` | `c` | closed form |
//! | full | `c` | `c/2` | `0.99 c` | closed form (uniform on `[0, c]`) |
//! | equal | `c` | `0.75 c` | `0.995 c` | closed form (uniform on `[c/2, c]`) |
//! | decorrelated, decorrelated-window | `min(cap, base · 3ⁿ⁺¹)` | sampled | sampled | [`SAMPLES`] chains of the library's own draws (`Policy::next_delay`, seed 1) |
//!
//! The decorrelated modes have no closed form (each delay depends on the
//! previous one), so their median and p99 come from the library itself; their
//! ceiling is exact (the window can reach `3 · prev`, and `prev` at most the
//! previous ceiling).
//!
//! The **cumulative worst case** is the sum of the ceilings up to that retry:
//! the longest a call can have slept by then. The budget stops a call before a
//! sleep would carry it past `max_elapsed`, so the total sleep never exceeds
//! `max_elapsed`; rows past it are marked.
//!
//! # The checks (the first seed's gotchas)
//!
//! | check | level | rule |
//! |---|---|---|
//! | `bounded` | ok | a policy always bounds attempts and elapsed time, on the monotonic clock (the "amplifier", and "clock choice matters") |
//! | `jitter` | warn | `none` synchronizes a fleet (unless `workers = 1`); `full` on a lone job (`workers = 1`) can retry almost at once: equal keeps a minimum gap |
//! | `max_retry_after` | warn | absent: a hostile or misconfigured Retry-After header could park a worker (the default 60 s clamp applies, undeclared) |
//! | `recovery_time` | warn | `cap` below the declared recovery time: the longest backoff still lands mid-recovery and the storm resumes; `max_elapsed` below it: every call gives up before recovery |
//! | `visibility_timeout` | **error** | the worst-case call — `max_elapsed`, plus the last attempt's own run time when a per-attempt `timeout` is declared (`timeout + kill_after`) — must be at most [`VISIBILITY_SHARE`] (80 %) of the broker's visibility timeout: the 20 % margin absorbs the last attempt's start-up, broker delivery latency and clock skew between broker and worker |
//!
//! Undeclared facts are reported as notes, never as failures. Exit status: 0
//! when no check failed (warnings allowed), 1 when a check failed (an error, or a
//! warning under `--strict`), 2 for usage or policy-file errors.

use std::fmt;
use std::time::Duration;

use clap::{Args, ValueEnum};
use herdless::{Jitter, Policy, Rng, Schedule};
use serde_json::{json, Value};

use crate::exit;
use crate::policy_args::{parse_duration, PolicyArgs, Resolved};

/// Decorrelated chains sampled for the median and p99.
pub const SAMPLES: usize = 10_000;

/// The share of the visibility timeout a call may use at worst (the rest is
/// the margin).
pub const VISIBILITY_SHARE: f64 = 0.8;

/// Envelope rows printed at most (later retries are all at the cap for the
/// exponential modes, and stationary for the decorrelated ones).
pub const MAX_ROWS: u32 = 30;

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ReportFormat {
    /// A table and one line per check.
    #[default]
    Text,
    /// One JSON object.
    Json,
}

/// `herdless check` arguments.
#[derive(Debug, Clone, Args)]
#[command(
    about = "Show a policy's delay envelope and check it against the seed's gotchas",
    long_about = "Show a policy's delay envelope per retry (ceiling, median and p99 of the delay for its \
jitter mode, and the cumulative worst case) and check it against the first seed's gotchas: jitter \
mode, an undeclared max_retry_after, a cap below the declared recovery_time, and a budget that is \
not comfortably (80%) inside the declared visibility_timeout.\n\n\
Exit status: 0 when no check failed (warnings allowed), 1 when a check failed (an error, or a \
warning with --strict), 2 for usage or policy-file errors."
)]
pub struct CheckArgs {
    /// Policy flags (files, env, flags).
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Declared fact: the slowest shared resource's worst-case recovery time (overrides the file's).
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub recovery_time: Option<Duration>,
    /// Declared fact: the task broker's visibility timeout (overrides the file's).
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub visibility_timeout: Option<Duration>,
    /// Declared fact: how many retriers share the resource (1 = a lone job).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub workers: Option<u64>,
    /// Per-attempt timeout the policy runs with (exec --timeout; overrides the file's).
    #[arg(long, value_parser = parse_duration, value_name = "DUR")]
    pub timeout: Option<Duration>,
    /// Evaluate as `herdless exec` runs it: default jitter equal, kill_after counted.
    #[arg(long)]
    pub exec: bool,
    /// Fail on warnings too.
    #[arg(long)]
    pub strict: bool,
    /// Report format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
}

/// One envelope row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Row {
    /// 1-based retry number (the delay before attempt `retry + 1`).
    pub retry: u32,
    /// The largest delay this retry can draw.
    pub ceiling: Duration,
    /// The median delay.
    pub median: Duration,
    /// The 99th percentile delay.
    pub p99: Duration,
    /// The sum of the ceilings up to this retry.
    pub cumulative_worst: Duration,
}

/// The exact ceiling of retry index `n` for the policy's jitter mode.
pub fn ceiling(policy: &Policy, n: u32) -> Duration {
    match policy.jitter() {
        Jitter::Decorrelated | Jitter::DecorrelatedWindow => {
            let grown = policy.base().as_secs_f64() * 3f64.powf(f64::from(n) + 1.0);
            Duration::try_from_secs_f64(grown)
                .unwrap_or(Duration::MAX)
                .min(policy.cap())
        }
        _ => policy.ceiling(n),
    }
}

fn scale(d: Duration, x: f64) -> Duration {
    Duration::from_secs_f64(d.as_secs_f64() * x)
}

/// The quantile `q` of sorted `v`.
fn quantile(v: &[Duration], q: f64) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    let i = ((v.len() - 1) as f64 * q).round() as usize;
    v[i.min(v.len() - 1)]
}

/// The envelope rows for the first `rows` retries.
pub fn envelope(policy: &Policy, rows: u32) -> Vec<Row> {
    let sampled: Option<Vec<Vec<Duration>>> = match policy.jitter() {
        Jitter::Decorrelated | Jitter::DecorrelatedWindow => {
            let mut per: Vec<Vec<Duration>> =
                (0..rows).map(|_| Vec::with_capacity(SAMPLES)).collect();
            let mut rng = Rng::with_seed(1);
            for _ in 0..SAMPLES {
                let mut s = Schedule::new();
                for slot in per.iter_mut() {
                    slot.push(policy.next_delay(&mut s, &mut rng));
                }
            }
            for v in per.iter_mut() {
                v.sort_unstable();
            }
            Some(per)
        }
        _ => None,
    };
    let mut total = Duration::ZERO;
    (0..rows)
        .map(|n| {
            let c = ceiling(policy, n);
            total = total.saturating_add(c);
            let (median, p99) = match (policy.jitter(), &sampled) {
                (_, Some(per)) => (
                    quantile(&per[n as usize], 0.5),
                    quantile(&per[n as usize], 0.99),
                ),
                (Jitter::None, _) => (c, c),
                (Jitter::Equal, _) => (scale(c, 0.75), scale(c, 0.995)),
                _ => (c / 2, scale(c, 0.99)),
            };
            Row {
                retry: n + 1,
                ceiling: c,
                median,
                p99,
                cumulative_worst: total,
            }
        })
        .collect()
}

/// The sum of the ceilings of all `retries` retries (an upper bound when
/// there are more than can be summed one by one: the rest count at the cap).
pub fn total_worst(policy: &Policy, retries: u32) -> Duration {
    const EXACT: u32 = 100_000;
    let exact = retries.min(EXACT);
    let mut total = Duration::ZERO;
    for n in 0..exact {
        let c = ceiling(policy, n);
        if c == policy.cap() {
            return total.saturating_add(policy.cap().saturating_mul(retries - n));
        }
        total = total.saturating_add(c);
    }
    total.saturating_add(policy.cap().saturating_mul(retries - exact))
}

/// A check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
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
    fn as_str(self) -> &'static str {
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
pub struct Finding {
    /// The check's name (`visibility_timeout`, …).
    pub check: &'static str,
    /// Its verdict.
    pub level: Level,
    /// Why, with the numbers.
    pub message: String,
}

/// What the checks know beyond the policy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Facts {
    /// The slowest shared resource's worst-case recovery time.
    pub recovery_time: Option<Duration>,
    /// The task broker's visibility timeout.
    pub visibility_timeout: Option<Duration>,
    /// How many retriers share the resource.
    pub workers: Option<u64>,
    /// The per-attempt timeout and the TERM→KILL grace after it.
    pub attempt_limit: Option<(Duration, Duration)>,
    /// Whether `jitter` was declared rather than defaulted.
    pub jitter_declared: bool,
    /// Whether `max_retry_after` was declared rather than defaulted.
    pub max_retry_after_declared: bool,
}

/// Formats a duration for people: `250 ms`, `1.5 s`, `2m 30s`.
pub fn human(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1.0 {
        format!("{:.0} ms", s * 1000.0)
    } else if s < 120.0 {
        let t = format!("{s:.2}");
        format!("{} s", t.trim_end_matches('0').trim_end_matches('.'))
    } else {
        humantime::format_duration(Duration::from_secs(d.as_secs())).to_string()
    }
}

/// Runs every check.
pub fn checks(policy: &Policy, facts: &Facts) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut push = |check, level, message: String| {
        out.push(Finding {
            check,
            level,
            message,
        })
    };
    push(
        "bounded",
        Level::Ok,
        format!(
            "at most {} attempts and {} elapsed, measured on the monotonic clock",
            policy.max_attempts(),
            human(policy.max_elapsed())
        ),
    );

    let lone = facts.workers == Some(1);
    let declared = if facts.jitter_declared {
        ""
    } else {
        " (not declared: the subcommand's default)"
    };
    match policy.jitter() {
        Jitter::None if lone => push(
            "jitter",
            Level::Ok,
            format!("none{declared}: a lone job (workers = 1) keeps a predictable schedule"),
        ),
        Jitter::None => push(
            "jitter",
            Level::Warn,
            format!(
                "none{declared}: every retrier computes the same delays, so a fleet that fails \
                 together retries in lockstep; use full (fleets) or equal (a lone job)"
            ),
        ),
        Jitter::Full if lone => push(
            "jitter",
            Level::Warn,
            format!(
                "full{declared} on a lone job (workers = 1): randomness gains nothing here and \
                 can retry almost at once; equal keeps at least half of each ceiling"
            ),
        ),
        j => push("jitter", Level::Ok, format!("{j}{declared}")),
    }

    if facts.max_retry_after_declared {
        push(
            "max_retry_after",
            Level::Ok,
            format!(
                "server-supplied delays (Retry-After) are clamped to {}",
                human(policy.max_retry_after())
            ),
        );
    } else {
        push(
            "max_retry_after",
            Level::Warn,
            format!(
                "not declared: a hostile or misconfigured Retry-After header could park a worker \
                 (only the default clamp of {} applies); declare max_retry_after",
                human(policy.max_retry_after())
            ),
        );
    }

    match facts.recovery_time {
        None => push(
            "recovery_time",
            Level::Note,
            "not declared: the cap cannot be checked against the slowest shared resource's \
             worst-case recovery"
                .into(),
        ),
        Some(r) if policy.cap() < r => push(
            "recovery_time",
            Level::Warn,
            format!(
                "cap {} is below recovery_time {}: every worker's longest backoff still lands \
                 mid-recovery and the storm resumes; size cap above it",
                human(policy.cap()),
                human(r)
            ),
        ),
        Some(r) if policy.max_elapsed() < r => push(
            "recovery_time",
            Level::Warn,
            format!(
                "max_elapsed {} is below recovery_time {}: every call gives up before the \
                 resource is back",
                human(policy.max_elapsed()),
                human(r)
            ),
        ),
        Some(r) => push(
            "recovery_time",
            Level::Ok,
            format!(
                "cap {} covers recovery_time {}",
                human(policy.cap()),
                human(r)
            ),
        ),
    }

    match facts.visibility_timeout {
        None => push(
            "visibility_timeout",
            Level::Note,
            "not declared: the budget cannot be checked against the task broker's visibility \
             timeout"
                .into(),
        ),
        Some(v) => {
            let (worst, how) = match facts.attempt_limit {
                Some((t, grace)) => (
                    policy.max_elapsed().saturating_add(t).saturating_add(grace),
                    format!(
                        "max_elapsed {} + the last attempt's timeout {} and kill grace {}",
                        human(policy.max_elapsed()),
                        human(t),
                        human(grace)
                    ),
                ),
                None => (
                    policy.max_elapsed(),
                    format!(
                        "max_elapsed {} (no per-attempt timeout declared: the last attempt's own \
                         run time comes on top)",
                        human(policy.max_elapsed())
                    ),
                ),
            };
            let limit = Duration::from_secs_f64(v.as_secs_f64() * VISIBILITY_SHARE);
            let margin = format!(
                "{:.0}% of visibility_timeout {} = {}, a {:.0}% margin for start-up, broker \
                 latency and clock skew",
                VISIBILITY_SHARE * 100.0,
                human(v),
                human(limit),
                (1.0 - VISIBILITY_SHARE) * 100.0
            );
            if worst > limit {
                push(
                    "visibility_timeout",
                    Level::Error,
                    format!(
                        "worst case {} ({how}) is not comfortably inside the visibility timeout: \
                         it must be at most {margin}; the broker would redeliver the task to a \
                         second worker while the first still retries",
                        human(worst)
                    ),
                );
            } else {
                push(
                    "visibility_timeout",
                    Level::Ok,
                    format!("worst case {} ({how}) is within {margin}", human(worst)),
                );
            }
        }
    }
    out
}

/// Runs `herdless check`; returns the exit status.
pub fn run(args: &CheckArgs) -> i32 {
    let default_jitter = if args.exec {
        crate::exec::DEFAULT_JITTER
    } else {
        Jitter::Full
    };
    let resolved = match args.policy.resolve_layered(default_jitter) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("herdless check: {e}");
            return exit::USAGE;
        }
    };
    let facts = facts(args, &resolved);
    let policy = resolved.policy;
    let retries = policy.max_attempts().saturating_sub(1);
    let rows = envelope(&policy, retries.min(MAX_ROWS));
    let total = total_worst(&policy, retries);
    let findings = checks(&policy, &facts);
    let failed = findings
        .iter()
        .any(|f| f.level == Level::Error || (args.strict && f.level == Level::Warn));
    match args.format {
        ReportFormat::Json => println!(
            "{}",
            report_json(&resolved, &rows, retries, total, &findings, !failed)
        ),
        ReportFormat::Text => print!(
            "{}",
            report_text(&resolved, &rows, retries, total, &findings, failed)
        ),
    }
    if failed {
        exit::CHECK_FAILED
    } else {
        exit::SUCCESS
    }
}

fn facts(args: &CheckArgs, r: &Resolved) -> Facts {
    let t = &r.table;
    let timeout = args.timeout.or(t.timeout.as_ref().map(|a| a.value));
    let grace = t
        .kill_after
        .as_ref()
        .map(|a| a.value)
        .unwrap_or(crate::exec::DEFAULT_KILL_AFTER);
    Facts {
        recovery_time: args
            .recovery_time
            .or(t.recovery_time.as_ref().map(|a| a.value)),
        visibility_timeout: args
            .visibility_timeout
            .or(t.visibility_timeout.as_ref().map(|a| a.value)),
        workers: args.workers.or(t.workers.as_ref().map(|a| a.value)),
        attempt_limit: timeout.map(|t| (t, grace)),
        jitter_declared: r.jitter_declared,
        max_retry_after_declared: r.max_retry_after_declared,
    }
}

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

fn report_text(
    r: &Resolved,
    rows: &[Row],
    retries: u32,
    total: Duration,
    findings: &[Finding],
    failed: bool,
) -> String {
    use std::fmt::Write as _;
    let p = &r.policy;
    let mut s = String::new();
    let _ = writeln!(s, "{}", source(r));
    let _ = writeln!(
        s,
        "  jitter {}, base {}, multiplier {}, cap {}, max_attempts {}, max_elapsed {}, max_retry_after {}",
        p.jitter(),
        human(p.base()),
        p.multiplier(),
        human(p.cap()),
        p.max_attempts(),
        human(p.max_elapsed()),
        human(p.max_retry_after())
    );
    let exec = exec_settings(r);
    if !exec.is_empty() {
        let _ = writeln!(s, "  exec: {}", exec.join(", "));
    }
    let sampled = matches!(
        p.jitter(),
        Jitter::Decorrelated | Jitter::DecorrelatedWindow
    );
    let _ = writeln!(
        s,
        "\ndelay before each retry ({}):",
        if sampled {
            "median and p99 sampled from 10,000 chains of the library's draws"
        } else {
            "closed forms"
        }
    );
    let _ = writeln!(
        s,
        "  {:>5}  {:>10}  {:>10}  {:>10}  {:>16}",
        "retry", "ceiling", "median", "p99", "cumulative worst"
    );
    for row in rows {
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
    if retries as usize > rows.len() {
        let _ = writeln!(s, "  ... {} more retries", retries as usize - rows.len());
    }
    let slept = total.min(p.max_elapsed());
    let _ = writeln!(
        s,
        "  worst case: {} of sleep over {retries} retries (sum of ceilings {}, budget max_elapsed {})",
        human(slept),
        human(total),
        human(p.max_elapsed())
    );
    let _ = writeln!(s, "\nchecks:");
    for f in findings {
        let _ = writeln!(s, "  {:<5} {}: {}", f.level, f.check, f.message);
    }
    let _ = writeln!(s, "\n{}", if failed { "FAILED" } else { "passed" });
    s
}

fn report_json(
    r: &Resolved,
    rows: &[Row],
    retries: u32,
    total: Duration,
    findings: &[Finding],
    passed: bool,
) -> Value {
    let p = &r.policy;
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
            "exec": exec_settings(r),
        },
        "envelope": rows.iter().map(|r| json!({
            "retry": r.retry,
            "ceiling_s": r.ceiling.as_secs_f64(),
            "median_s": r.median.as_secs_f64(),
            "p99_s": r.p99.as_secs_f64(),
            "cumulative_worst_s": r.cumulative_worst.as_secs_f64(),
        })).collect::<Vec<_>>(),
        "retries": retries,
        "worst_case_sleep_s": total.min(p.max_elapsed()).as_secs_f64(),
        "sum_of_ceilings_s": total.as_secs_f64(),
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
    use super::*;

    fn policy(jitter: Jitter) -> Policy {
        Policy::builder().jitter(jitter).build().unwrap()
    }

    #[test]
    fn closed_forms_match_the_library_draws() {
        // The closed forms must describe what Policy::next_delay actually draws.
        for jitter in [Jitter::None, Jitter::Full, Jitter::Equal] {
            let p = policy(jitter);
            let rows = envelope(&p, 8);
            let mut rng = Rng::with_seed(9);
            for row in &rows {
                let n = row.retry - 1;
                let mut draws: Vec<Duration> = (0..20_000)
                    .map(|_| p.next_delay(&mut Schedule::at(n), &mut rng))
                    .collect();
                draws.sort_unstable();
                assert!(*draws.last().unwrap() <= row.ceiling, "{jitter} {n}");
                let tol = row.ceiling.as_secs_f64() * 0.02;
                for (q, want) in [(0.5, row.median), (0.99, row.p99)] {
                    let got = quantile(&draws, q).as_secs_f64();
                    assert!(
                        (got - want.as_secs_f64()).abs() <= tol,
                        "{jitter} retry {} q{q}: sampled {got}, closed form {want:?}",
                        row.retry
                    );
                }
            }
        }
    }

    #[test]
    fn decorrelated_ceilings_bound_every_draw() {
        for jitter in [Jitter::Decorrelated, Jitter::DecorrelatedWindow] {
            let p = policy(jitter);
            let rows = envelope(&p, 12);
            let mut rng = Rng::with_seed(4);
            for _ in 0..5_000 {
                let mut s = Schedule::new();
                for row in &rows {
                    let d = p.next_delay(&mut s, &mut rng);
                    assert!(d <= row.ceiling, "{jitter} retry {}: {d:?}", row.retry);
                }
            }
            assert_eq!(rows[0].ceiling, p.base() * 3);
            assert!(rows.iter().all(|r| r.median <= r.p99 && r.p99 <= r.ceiling));
        }
    }

    #[test]
    fn cumulative_worst_case_sums_ceilings() {
        let p = policy(Jitter::Full); // 0.5, 1, 2, 4, 8 s
        let rows = envelope(&p, 5);
        assert_eq!(rows[4].cumulative_worst, Duration::from_millis(15_500));
        assert_eq!(total_worst(&p, 5), Duration::from_millis(15_500));
        // 0.5+1+2+4+8+16 = 31.5 s, then 30 s per retry.
        assert_eq!(total_worst(&p, 8), Duration::from_millis(31_500 + 60_000));
        let flat = Policy::builder()
            .multiplier(1.0)
            .max_attempts(u32::MAX)
            .build()
            .unwrap();
        assert!(total_worst(&flat, u32::MAX - 1) >= Duration::from_secs(1_000_000));
    }

    fn level(findings: &[Finding], check: &str) -> Level {
        findings.iter().find(|f| f.check == check).unwrap().level
    }

    #[test]
    fn visibility_timeout_needs_a_twenty_percent_margin() {
        let p = Policy::builder()
            .max_elapsed(Duration::from_secs(120))
            .build()
            .unwrap();
        let with = |v: u64, limit: Option<(u64, u64)>| {
            let facts = Facts {
                visibility_timeout: Some(Duration::from_secs(v)),
                attempt_limit: limit.map(|(t, g)| (Duration::from_secs(t), Duration::from_secs(g))),
                ..Facts::default()
            };
            level(&checks(&p, &facts), "visibility_timeout")
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
            level(&checks(&p, &Facts::default()), "visibility_timeout"),
            Level::Note
        );
    }

    #[test]
    fn recovery_retry_after_and_jitter_gotchas() {
        let p = Policy::default(); // cap 30 s, max_elapsed 120 s, full jitter
        let facts = |r: u64| Facts {
            recovery_time: Some(Duration::from_secs(r)),
            ..Facts::default()
        };
        assert_eq!(level(&checks(&p, &facts(45)), "recovery_time"), Level::Warn);
        assert_eq!(level(&checks(&p, &facts(30)), "recovery_time"), Level::Ok);
        assert_eq!(
            level(&checks(&p, &Facts::default()), "max_retry_after"),
            Level::Warn
        );
        let declared = Facts {
            max_retry_after_declared: true,
            ..Facts::default()
        };
        assert_eq!(level(&checks(&p, &declared), "max_retry_after"), Level::Ok);
        let lone = Facts {
            workers: Some(1),
            ..Facts::default()
        };
        assert_eq!(level(&checks(&p, &lone), "jitter"), Level::Warn);
        assert_eq!(
            level(&checks(&policy(Jitter::None), &Facts::default()), "jitter"),
            Level::Warn
        );
        assert_eq!(
            level(&checks(&policy(Jitter::Equal), &lone), "jitter"),
            Level::Ok
        );
    }

    #[test]
    fn human_durations() {
        assert_eq!(human(Duration::from_millis(250)), "250 ms");
        assert_eq!(human(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(human(Duration::from_secs(30)), "30 s");
        assert_eq!(human(Duration::from_secs(150)), "2m 30s");
    }
}
