//! `analyze`'s `spread` verdict on generated logs, both ways, over the whole
//! range: a fleet without jitter fails and one with full jitter passes at
//! every base from 10 ms to 10 s and every size from 20 to 100,000
//! workers, over several seeds, in the fields of a producer herdless did
//! not write (named with the flags).
//!
//! Each log is a fleet whose first attempts all fail within 100 ms (an
//! outage ends them together) and that retries three times before its
//! fourth attempt succeeds (`stub --fail-first 3`), each attempt taking 1 to
//! 5 ms. The old check (the largest 100 ms bucket at most 25 % of the
//! retrying tasks) failed every full-jitter fleet below a base of about
//! 400 ms, and passed a no-jitter fleet whose failures were spread.

use clap::Parser;
use herdless::Rng;
use herdless_cli::cli::{Cli, Command};
use herdless_cli::cmd::analyze::verdict::{self, Outcome, Verdict};
use herdless_cli::cmd::analyze::{AnalyzeArgs, Analyzer};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Jitter {
    None,
    Full,
    Equal,
    Decorrelated,
}

/// A fleet's log: `workers` tasks, the given base and jitter, first
/// failures uniform over `window_ms`, in another producer's field names.
fn fleet_log(workers: u32, base_s: f64, jitter: Jitter, window_ms: u64, seed: u64) -> Vec<String> {
    let mut rng = Rng::with_seed(seed);
    let uniform = |rng: &mut Rng, lo: f64, hi: f64| {
        lo + (hi - lo) * (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    };
    let t0 = 1_700_000_000.0;
    let mut lines = Vec::with_capacity(workers as usize * 4);
    for w in 0..workers {
        let mut t = t0 + uniform(&mut rng, 0.0, window_ms as f64 / 1e3);
        let mut prev = base_s;
        for attempt in 1..=3u32 {
            let ceiling = (base_s * 2f64.powi(attempt as i32 - 1)).min(30.0);
            let sleep = match jitter {
                Jitter::None => ceiling,
                Jitter::Full => uniform(&mut rng, 0.0, ceiling),
                Jitter::Equal => uniform(&mut rng, ceiling / 2.0, ceiling),
                Jitter::Decorrelated => {
                    prev = uniform(&mut rng, base_s, (prev * 3.0).min(30.0));
                    prev
                }
            };
            lines.push(format!(
                r#"{{"ts":{t:.6},"kind":"retry_scheduled","job":"w{w}","try":{attempt},"wait":{sleep:.6}}}"#
            ));
            t += sleep + uniform(&mut rng, 0.001, 0.005);
        }
        lines.push(format!(
            r#"{{"ts":{t:.6},"kind":"retry_succeeded","job":"w{w}","try":4}}"#
        ));
    }
    // A producer's lines come in time order.
    lines.sort_by(|a, b| ts(a).total_cmp(&ts(b)));
    lines
}

fn ts(line: &str) -> f64 {
    let rest = &line[line.find("\"ts\":").unwrap() + 5..];
    rest[..rest.find(',').unwrap()].parse().unwrap()
}

fn args(extra: &[&str]) -> AnalyzeArgs {
    let base = [
        "herdless",
        "analyze",
        "--time-field",
        "ts",
        "--event-field",
        "kind",
        "--task-field",
        "job",
        "--attempt-field",
        "try",
        "--sleep-field",
        "wait",
    ];
    let argv = base.iter().chain(extra);
    match Cli::try_parse_from(argv).unwrap().command {
        Command::Analyze(a) => a,
        _ => unreachable!(),
    }
}

/// The `spread` verdict and the outcome of `lines`.
fn judge(lines: &[String], extra: &[&str]) -> (Verdict, Outcome, String) {
    let args = args(extra);
    let mut a = Analyzer::new(&args);
    for l in lines {
        a.line(Some(l.as_bytes()));
    }
    a.stats.flush();
    judged(&args, &a)
}

/// Whether the old rule (the largest 100 ms bucket of retries at most 25 %
/// of the retrying tasks) failed `lines`.
fn old_rule_failed(lines: &[String]) -> bool {
    let args = args(&[]);
    let mut a = Analyzer::new(&args);
    for l in lines {
        a.line(Some(l.as_bytes()));
    }
    a.stats.flush();
    let (_, c) = a.stats.retries.largest().unwrap();
    f64::from(c) / a.stats.retrying_tasks as f64 > 0.25
}

fn judged(args: &AnalyzeArgs, a: &Analyzer) -> (Verdict, Outcome, String) {
    let t = args.thresholds();
    let lock = verdict::lockstep(&a.stats, t.spike_share, t.lockstep_spikes);
    let checks = verdict::checks(&a.stats, &t, &lock);
    let spread = checks.iter().find(|c| c.check == "spread").unwrap();
    let (outcome, _) = verdict::outcome(&a.stats, &checks);
    (spread.verdict, outcome, spread.message.clone())
}

const BASES: [f64; 5] = [0.01, 0.1, 0.3, 1.0, 10.0];

#[test]
fn no_jitter_fails_and_full_jitter_passes_at_every_base_and_size() {
    for &workers in &[20, 200, 2_000, 20_000] {
        for base in BASES {
            for seed in 1..=3 {
                let none = fleet_log(workers, base, Jitter::None, 100, seed);
                let (v, o, m) = judge(&none, &[]);
                assert_eq!(
                    v,
                    Verdict::Fail,
                    "none, {workers} workers, base {base}: {m}"
                );
                assert_eq!(o, Outcome::Failed);
                let full = fleet_log(workers, base, Jitter::Full, 100, seed);
                let (v, o, m) = judge(&full, &[]);
                assert_eq!(
                    v,
                    Verdict::Pass,
                    "full, {workers} workers, base {base}, seed {seed}: {m}"
                );
                assert_eq!(
                    o,
                    Outcome::Passed,
                    "full, {workers} workers, base {base}, seed {seed}: {}",
                    failed(&full)
                );
            }
        }
    }
}

/// The logs above that the old rule judged wrong: every full-jitter fleet
/// at a base up to 300 ms failed it.
#[test]
fn the_old_rule_failed_full_jitter_below_400_ms() {
    for base in [0.01, 0.1, 0.3] {
        for workers in [20, 2_000] {
            let full = fleet_log(workers, base, Jitter::Full, 100, 1);
            assert!(old_rule_failed(&full), "{workers} workers, base {base}");
            assert_eq!(judge(&full, &[]).0, Verdict::Pass);
        }
    }
    let spread_failures = fleet_log(500, 1.0, Jitter::None, 10_000, 7);
    assert!(!old_rule_failed(&spread_failures));
}

#[test]
fn a_hundred_thousand_workers_are_judged_the_same() {
    for (base, seed) in [(0.01, 1), (0.3, 2), (10.0, 3)] {
        let none = fleet_log(100_000, base, Jitter::None, 100, seed);
        assert_eq!(judge(&none, &[]).0, Verdict::Fail, "none, base {base}");
        let full = fleet_log(100_000, base, Jitter::Full, 100, seed);
        let (v, _, m) = judge(&full, &[]);
        assert_eq!(v, Verdict::Pass, "full, base {base}: {m}");
    }
}

#[test]
fn equal_and_decorrelated_jitter_pass_and_spread_failures_do_not_hide_no_jitter() {
    for base in BASES {
        for jitter in [Jitter::Equal, Jitter::Decorrelated] {
            let log = fleet_log(500, base, jitter, 100, 7);
            let (v, _, m) = judge(&log, &[]);
            assert_eq!(v, Verdict::Pass, "{jitter:?}, base {base}: {m}");
        }
        // Failures spread over 10 s: the old check passed this fleet.
        let log = fleet_log(500, base, Jitter::None, 10_000, 7);
        assert_eq!(
            judge(&log, &[]).0,
            Verdict::Fail,
            "none, spread failures, base {base}"
        );
    }
}

/// A wave whose sleeps are spread but end on the second (each retry waits
/// until the clock's next whole second): the retries go out bunched though
/// their failures were not, which no independent jitter does.
#[test]
fn sleeps_that_line_the_retries_up_fail() {
    let mut rng = Rng::with_seed(9);
    let mut lines = Vec::new();
    for w in 0..500 {
        let t = 1_700_000_000.0 + (rng.next_u64() % 900_000) as f64 / 1e6;
        let sleep = 1_700_000_001.0 - t;
        lines.push(format!(
            r#"{{"ts":{t:.6},"kind":"retry_scheduled","job":"w{w}","try":1,"wait":{sleep:.6}}}"#
        ));
        lines.push(format!(
            r#"{{"ts":{:.6},"kind":"retry_succeeded","job":"w{w}","try":2}}"#,
            t + sleep + 0.002
        ));
    }
    lines.sort_by(|a, b| ts(a).total_cmp(&ts(b)));
    let (v, _, m) = judge(&lines, &[]);
    assert_eq!(v, Verdict::Fail, "{m}");
    assert!(m.contains("lined"), "{m}");
}

/// Without a sleep field, a retry's sleep is the time to its task's next
/// event: no jitter still fails at a base well above an attempt's time.
#[test]
fn without_a_sleep_field_the_gaps_are_judged() {
    for base in [0.3, 1.0, 10.0] {
        let strip = |l: &String| {
            let cut = l.find(r#","wait""#).map_or(l.len() - 1, |i| i);
            format!("{}}}", &l[..cut])
        };
        let none: Vec<String> = fleet_log(500, base, Jitter::None, 100, 4)
            .iter()
            .map(strip)
            .collect();
        assert_eq!(judge(&none, &[]).0, Verdict::Fail, "none, base {base}");
        let full: Vec<String> = fleet_log(500, base, Jitter::Full, 100, 4)
            .iter()
            .map(strip)
            .collect();
        let (v, _, m) = judge(&full, &[]);
        assert_eq!(v, Verdict::Pass, "full, base {base}: {m}");
    }
}

fn failed(lines: &[String]) -> String {
    let args = args(&[]);
    let mut a = Analyzer::new(&args);
    for l in lines {
        a.line(Some(l.as_bytes()));
    }
    a.stats.flush();
    let t = args.thresholds();
    let lock = verdict::lockstep(&a.stats, t.spike_share, t.lockstep_spikes);
    let checks = verdict::checks(&a.stats, &t, &lock);
    format!(
        "{:?}",
        checks
            .iter()
            .filter(|c| c.verdict == Verdict::Fail)
            .collect::<Vec<_>>()
    )
}

/// Waves of `--min-tasks` (10) retries and a few more: a few full-jitter
/// draws within 2 % of one another are chance, not lockstep, while every
/// retry of a wave without jitter sleeping the same is.
#[test]
fn the_smallest_judged_waves_are_judged_right_over_many_seeds() {
    for workers in [10, 12, 15] {
        for base in BASES {
            for seed in 1..=40 {
                let full = fleet_log(workers, base, Jitter::Full, 100, seed);
                let (v, _, m) = judge(&full, &[]);
                assert_eq!(
                    v,
                    Verdict::Pass,
                    "full, {workers} workers, base {base}, seed {seed}: {m}"
                );
            }
            let none = fleet_log(workers, base, Jitter::None, 100, 1);
            assert_eq!(
                judge(&none, &[]).0,
                Verdict::Fail,
                "none, {workers} workers, base {base}"
            );
        }
    }
}
