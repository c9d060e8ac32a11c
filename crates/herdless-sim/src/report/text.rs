//! The aligned terminal tables of the spread, outage and contention
//! scenarios (the robustness table is beside its report), and the helpers
//! they share: the policy line, seconds, the grid.

use std::fmt::Write as _;

use super::{ContentionReport, OutageReport, PolicyParameters, SpreadReport, units};

/// `base 1 s, x2, cap 30 s, 6 attempts, 120 s budget`: the heading's policy.
pub(super) fn policy_line(p: &PolicyParameters) -> String {
    let attempts = p
        .max_attempts
        .map_or("no attempt limit".to_owned(), |n| format!("{n} attempts"));
    let elapsed = p.max_elapsed_s.map_or("no time limit".to_owned(), |s| {
        format!("{} budget", secs(s))
    });
    format!(
        "base {}, x{}, cap {}, {attempts}, {elapsed}",
        secs(p.base_s),
        units::number(p.multiplier),
        secs(p.cap_s)
    )
}

/// Seconds as a person reads them: [`units::seconds`], the one rule of
/// every herdless report.
pub(super) fn secs(s: f64) -> String {
    units::seconds(s)
}

/// Lays out rows: first column left-aligned, the others right-aligned.
pub(super) fn grid(header: &[String], rows: &[Vec<String>]) -> String {
    let cols = header.len();
    let width: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .chain([header[c].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c == 0 {
                let _ = write!(line, "{cell:<w$}", w = width[0]);
            } else {
                let _ = write!(line, "  {cell:>w$}", w = width[c]);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn header(first: &str, names: impl Iterator<Item = String>) -> Vec<String> {
    std::iter::once(first.to_owned()).chain(names).collect()
}

fn row(label: &str, cells: impl Iterator<Item = String>) -> Vec<String> {
    std::iter::once(label.to_owned()).chain(cells).collect()
}

pub(super) fn spread_table(r: &SpreadReport) -> String {
    let p = &r.parameters;
    let s = &r.strategies;
    let mut out = format!(
        "spread: {} workers, the controller fails each one's first {} calls; seed {}\n\
         policy: {}\n\n",
        p.workers,
        p.failures,
        r.seed,
        policy_line(&p.policy)
    );
    let h = header("", s.iter().map(|f| f.strategy.clone()));
    let rows = vec![
        row(
            "largest 100 ms bucket, share of fleet",
            s.iter().map(|f| format!("{:.3}", f.max_bucket_share)),
        ),
        row(
            "  at (s)",
            s.iter().map(|f| format!("{:.1}", f.max_bucket_start_s)),
        ),
        row(
            "calls per worker",
            s.iter().map(|f| format!("{:.2}", f.calls)),
        ),
        row(
            "completion (s)",
            s.iter().map(|f| format!("{:.3}", f.completion_s)),
        ),
        row("gave up", s.iter().map(|f| f.gave_up.to_string())),
    ];
    out.push_str(&grid(&h, &rows));
    out
}

pub(super) fn outage_table(r: &OutageReport) -> String {
    let s = &r.strategies;
    let mut out = outage_header(r);
    let h = header(
        "",
        s.iter()
            .map(|f| f.strategy.clone())
            .chain(["physical limit".to_owned()]),
    );
    let mut rows = outage_rows(r);
    if r.parameters.honor < 1.0 {
        rows.extend(honoring_rows(r));
    }
    out.push_str(&grid(&h, &rows));
    if s.iter().any(|f| !f.drained) {
        out.push_str(
            "\n-: clients gave up, so the fleet did not drain (no completion to compare \
             with the physical limit)\n",
        );
    }
    out
}

/// The outage table's first lines: the scenario, the policy, the physical
/// limit, the guards' settings when a guard runs, the share honoring
/// Retry-After when not all do; then a blank line.
fn outage_header(r: &OutageReport) -> String {
    let p = &r.parameters;
    let s = &r.strategies;
    let mut out = format!(
        "outage: {} clients (first calls within {}), endpoint down {}, then {} calls/s \
         (burst {}); seed {}\n\
         policy: {}; fixed-1s retries every second, no attempt limit\n\
         physical limit: T + N/C = {} + {} / {} per s = {:.3} s\n",
        p.clients,
        secs(p.first_call_window_s),
        secs(p.outage_s),
        p.capacity_per_s,
        p.burst,
        r.seed,
        policy_line(&p.policy),
        secs(p.outage_s),
        p.clients,
        p.capacity_per_s,
        r.physical_limit_s
    );
    if s.iter().any(|f| f.strategy.contains('+')) {
        let g = &p.guards;
        let _ = writeln!(
            out,
            "guards: {} processes of {} clients, each with a budget of {} tokens \
             (gRPC, ratio {}) and a breaker (opens after {} failures, probe wait {}, \
             probe round trip {}, releases over {}); pushback: Retry-After slots, horizon {}, starting \
             estimate {}x the capacity, outage end {}",
            g.processes,
            g.clients_per_process,
            units::number(g.budget_max_tokens),
            units::number(g.budget_token_ratio),
            g.breaker_threshold,
            secs(g.probe_wait_s),
            secs(g.probe_rtt_s),
            secs(g.breaker_release_s),
            secs(g.pushback_horizon_s),
            units::number(p.capacity_estimate),
            p.outage_end
        );
    }
    if p.honor < 1.0 {
        let _ = writeln!(
            out,
            "clients honoring Retry-After: {} (the others use their own backoff)",
            units::number(p.honor)
        );
    }
    out.push('\n');
    out
}

/// The outage table's rows for every client, the physical limit's column last.
fn outage_rows(r: &OutageReport) -> Vec<Vec<String>> {
    let s = &r.strategies;
    vec![
        row(
            "calls per client",
            s.iter()
                .map(|f| format!("{:.2}", f.calls))
                .chain([format!("{:.2}", r.min_calls_per_client)]),
        ),
        // A run with give-ups did not drain: it has no completion to set
        // beside the limit (it may be "done" long before it, by giving up).
        row(
            "completion (s)",
            s.iter()
                .map(|f| f.drain_s.map_or("-".to_owned(), |d| format!("{d:.3}")))
                .chain([format!("{:.3}", r.physical_limit_s)]),
        ),
        row(
            "x physical limit",
            s.iter()
                .map(|f| {
                    f.drain_vs_limit
                        .map_or("-".to_owned(), |x| format!("{x:.2}"))
                })
                .chain(["1.00".to_owned()]),
        ),
        row(
            "gave up",
            s.iter()
                .map(|f| f.gave_up.to_string())
                .chain(["0".to_owned()]),
        ),
        row(
            "  of which denied by the retry budget",
            s.iter()
                .map(|f| f.gave_up_retry_budget.to_string())
                .chain(["0".to_owned()]),
        ),
        row(
            "  largest 100 ms give-up bucket / give-ups",
            s.iter()
                .map(|f| {
                    if f.gave_up == 0 {
                        "-".to_owned()
                    } else {
                        format!("{:.3}", f.give_up_max_bucket_share)
                    }
                })
                .chain(["-".to_owned()]),
        ),
        row(
            "peak per 100 ms after T / capacity",
            s.iter()
                .map(|f| format!("{:.2}", f.peak_over_capacity))
                .chain(["1.00".to_owned()]),
        ),
        row(
            "largest 100 ms retry bucket / fleet",
            s.iter()
                .map(|f| format!("{:.3}", f.max_bucket_share))
                .chain(["-".to_owned()]),
        ),
    ]
}

/// The rows of the clients that honor Retry-After (when not all do).
fn honoring_rows(r: &OutageReport) -> Vec<Vec<String>> {
    let s = &r.strategies;
    vec![
        row(
            "honoring clients: calls per client",
            s.iter()
                .map(|f| format!("{:.2}", f.honoring_calls))
                .chain([format!("{:.2}", r.min_calls_per_client)]),
        ),
        row(
            "  completion x physical limit",
            s.iter()
                .map(|f| {
                    f.honoring_vs_limit
                        .map_or("-".to_owned(), |x| format!("{x:.2}"))
                })
                .chain(["1.00".to_owned()]),
        ),
        row(
            "  gave up",
            s.iter()
                .map(|f| f.honoring_gave_up.to_string())
                .chain(["0".to_owned()]),
        ),
    ]
}

pub(super) fn contention_table(r: &ContentionReport) -> String {
    let p = &r.parameters;
    let s = &r.strategies;
    let mut out = format!(
        "contention: clients {}..{}, {} trials each, hops |Normal({}, {})|; seed {}\n\
         policy: {}\n",
        p.clients.first().copied().unwrap_or(0),
        p.clients.last().copied().unwrap_or(0),
        p.trials,
        secs(p.hop_mean_s),
        secs(p.hop_sd_s),
        r.seed,
        policy_line(&p.policy)
    );
    let h = header("clients", s.iter().map(|f| f.strategy.clone()));
    for (title, pick) in [
        (
            "write calls (mean over trials)",
            (|pt: &crate::scenario::contention::ContentionPoint| format!("{:.0}", pt.calls))
                as fn(&_) -> String,
        ),
        ("completion time, s (mean over trials)", |pt| {
            format!("{:.3}", pt.completion_s)
        }),
    ] {
        let _ = write!(out, "\n{title}\n");
        let rows: Vec<Vec<String>> = p
            .clients
            .iter()
            .enumerate()
            .map(|(i, n)| {
                row(
                    &n.to_string(),
                    s.iter()
                        .map(|f| f.points.get(i).map_or(String::new(), pick)),
                )
            })
            .collect();
        out.push_str(&grid(&h, &rows));
    }
    out
}
