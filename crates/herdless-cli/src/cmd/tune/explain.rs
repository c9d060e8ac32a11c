//! `herdless tune --explain`: why the runner-up lost, why better-ranked
//! candidates were not recommended, and what the checks refused.

use herdless_sim::report::units;
use herdless_sim::tune::{Score, TuneReport, Verified, Violation};

use super::render::policy_line;

fn violations(v: &[Violation]) -> String {
    v.iter()
        .map(|v| match v.constraint {
            "peak" => format!(
                "peak {:.2}x > {}x capacity",
                v.value,
                units::number(v.limit)
            ),
            "give_ups" => format!("{:.1}% gave up > {:.1}%", v.value * 100.0, v.limit * 100.0),
            "spread" => format!(
                "{:.1}% of the fleet's retries in one 100 ms bucket > {:.1}%",
                v.value * 100.0,
                v.limit * 100.0
            ),
            _ if v.value.is_finite() => format!(
                "latency {} > {} after recovery",
                units::seconds(v.value),
                units::seconds(v.limit)
            ),
            _ => "the latency share never done".to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why `a` (the winner) ranks above `b`, from their search-seed scores.
fn why_lost(a: &Score, b: &Score) -> String {
    if (a.objective - b.objective).abs() > 1e-12 {
        format!(
            "it drains slower: worst {:.3}x the physical limit against {:.3}x",
            b.objective, a.objective
        )
    } else if (a.calls - b.calls).abs() > 1e-12 {
        format!(
            "it drains as fast but makes more calls: {:.3} per worker against {:.3}",
            b.calls, a.calls
        )
    } else {
        format!(
            "it drains as fast with as many calls but peaks higher: {:.2}x against {:.2}x",
            b.peak_over_capacity, a.peak_over_capacity
        )
    }
}

fn describe(v: &Verified) -> String {
    policy_line(&v.policy, v.guard.as_ref())
}

/// The explanation, one sentence a line.
pub(crate) fn lines(r: &TuneReport) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(rec) = &r.recommended {
        match &r.runner_up {
            Some(ru) => {
                let (Some(a), Some(b)) = (&rec.search, &ru.search) else {
                    return out;
                };
                out.push(format!(
                    "runner-up {} lost on the search seeds: {}; on the fresh seeds it drains at worst {:.3}x the \
                     limit (the recommendation {:.3}x){}",
                    describe(ru),
                    why_lost(a, b),
                    ru.verify.objective,
                    rec.verify.objective,
                    if ru.verify.feasible() {
                        String::new()
                    } else {
                        format!(" and misses the facts there ({})", violations(&ru.verify.violations))
                    }
                ));
            }
            None => out.push(
                "no other finalist met the facts on the search seeds: there is no runner-up".into(),
            ),
        }
    }
    for f in &r.failed_verification {
        out.push(format!(
            "{} ranked higher on the search seeds but missed the facts on the fresh seeds ({}): not recommended",
            describe(f),
            violations(&f.verify.violations)
        ));
    }
    if let Some(fast) = r.pareto.first().filter(|row| !row.feasible) {
        out.push(format!(
            "the fastest candidate of the front, {}, drains at {:.3}x the limit but breaks the constraints \
             ({})",
            policy_line(&fast.policy, fast.guard.as_ref()),
            fast.objective,
            violations(&fast.violations)
        ));
    }
    if r.search.ties > 0 {
        out.push(format!(
            "{} candidates tied with a better-ranked one on every figure (they differ only where the simulation \
             never reaches, such as a max_elapsed no simulated worker runs into; the larger budget ranks first, \
             as a margin against a longer outage) and were not run further",
            r.search.ties
        ));
    }
    for p in &r.search.pruned {
        out.push(format!(
            "herdless check --strict refused {} policies on {}, e.g.: {}",
            p.count, p.check, p.example
        ));
    }
    out
}

/// The explanation as a text section.
pub(crate) fn text(r: &TuneReport) -> String {
    let mut s = String::from("\nexplain:\n");
    for l in lines(r) {
        s.push_str("  ");
        s.push_str(&l);
        s.push('\n');
    }
    s
}
