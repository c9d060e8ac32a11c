//! The search itself: prune, screen, guards, finalists, verify (see the
//! [module documentation](super)).

use std::collections::BTreeMap;

use herdless::Policy;

use super::eval::{RunFigures, Score, by_rank, simulate};
use super::grid::Candidate;
use super::report::{FactsReport, Pruned, SearchReport, TuneReport, Verified, front};
use super::{Admit, FRONT_ROWS, GUARDED_POLICIES, TuneParams, unsat};
use crate::Progress;
use crate::error::SimError;
use crate::parallel::par_map;
use crate::report::OutageReport;
use crate::scenario::outage::OutageFigures;

/// A candidate with its score.
type Scored = (Candidate, Score);

/// Rounds of finalists at most (see step 4).
const MAX_ROUNDS: usize = 4;
use std::cmp::Ordering;

/// Runs the search. `admit` prunes the grid before anything is simulated;
/// `progress` counts simulation runs.
///
/// # Errors
///
/// Facts or parameters out of range ([`SimError::Invalid`]); a simulation
/// error.
pub fn run(
    params: &TuneParams,
    admit: &Admit<'_>,
    progress: &dyn Progress,
) -> Result<TuneReport, SimError> {
    let facts = &params.facts;
    facts.validate()?;
    if !(1..=20).contains(&params.search_seeds) || !(1..=20).contains(&params.verify_seeds) {
        return Err(SimError::Invalid(
            "tune uses 1 to 20 search and verification seeds".into(),
        ));
    }
    if !(1..=100).contains(&params.finalists) {
        return Err(SimError::Invalid("tune keeps 1 to 100 finalists".into()));
    }
    let (search_seeds, verify_seeds) = params.seeds();
    let outages = facts.outages.len();

    // 1. Prune.
    let mut pruned: BTreeMap<String, Pruned> = BTreeMap::new();
    let mut admitted = Vec::new();
    for p in params.space.policies() {
        let refusal = match p {
            Err(e) => Some(("invalid".to_string(), e.to_string())),
            Ok(p) => match admit(&p) {
                Ok(()) => {
                    admitted.push(Candidate {
                        policy: p,
                        guard: None,
                    });
                    None
                }
                Err(r) => Some((r.check, r.message)),
            },
        };
        if let Some((check, message)) = refusal {
            pruned
                .entry(check.clone())
                .or_insert(Pruned {
                    check,
                    count: 0,
                    example: message,
                })
                .count += 1;
        }
    }
    let variants = params.space.guard_variants(&facts.guards);
    let guarded_n = admitted.len().min(GUARDED_POLICIES) * variants.len();
    let finalists_n = params.finalists.min(admitted.len() + guarded_n);
    let baselines_n = 1 + params.baselines.len();
    let mut total = (admitted.len() + guarded_n) * outages
        + finalists_n * outages * (search_seeds.len() - 1)
        + (finalists_n + baselines_n) * outages * verify_seeds.len();
    progress.start(total as u64);
    let mut runs = 0usize;
    let mut sim = |cands: &[Candidate], seeds: &[u64]| -> Result<Vec<Vec<RunFigures>>, SimError> {
        let tasks: Vec<(usize, usize, u64)> = (0..cands.len())
            .flat_map(|c| (0..outages).flat_map(move |o| seeds.iter().map(move |&s| (c, o, s))))
            .collect();
        runs += tasks.len();
        let out = par_map(&tasks, params.threads, |&(c, o, s)| {
            let r = simulate(facts, &cands[c], facts.outages[o], s)
                .map(|f| RunFigures::new(facts, facts.outages[o], s, &f));
            progress.advance(1);
            r
        });
        let mut per: Vec<Vec<RunFigures>> = vec![Vec::new(); cands.len()];
        for ((c, _, _), r) in tasks.iter().zip(out) {
            per[*c].push(r?);
        }
        Ok(per)
    };

    // 2. Screen, 3. guards.
    let mut scored: Vec<(Candidate, Score)> = Vec::new();
    let screen = sim(&admitted, &search_seeds[..1])?;
    scored.extend(
        admitted
            .iter()
            .copied()
            .zip(screen.into_iter().map(|r| Score::new(facts, r))),
    );
    scored.sort_by(ranked);
    if !variants.is_empty() {
        let guarded: Vec<Candidate> = scored
            .iter()
            .take(GUARDED_POLICIES)
            .flat_map(|(c, _)| {
                variants.iter().map(|&g| Candidate {
                    guard: Some(g),
                    ..*c
                })
            })
            .collect();
        let screen = sim(&guarded, &search_seeds[..1])?;
        scored.extend(
            guarded
                .into_iter()
                .zip(screen.into_iter().map(|r| Score::new(facts, r))),
        );
        scored.sort_by(ranked);
    }

    // Candidates that tie with a better-ranked one on every figure differ
    // only where the simulation never reaches (a budget no simulated worker
    // runs into): they go to the end, so finalists and the runner-up differ.
    let mut ties = 0usize;
    let (mut uniq, mut dups): (Vec<Scored>, Vec<Scored>) = (Vec::new(), Vec::new());
    for x in scored {
        if uniq
            .last()
            .is_some_and(|u: &(Candidate, Score)| same_figures(&u.1, &x.1))
        {
            ties += 1;
            dups.push(x);
        } else {
            uniq.push(x);
        }
    }
    uniq.extend(dups);
    let mut scored = uniq;

    // 4. Finalists on every search seed: rounds of `finalists` candidates,
    // until one meets the facts on every seed (or none that met them on the
    // first is left, or MAX_ROUNDS rounds were run).
    let mut done = 0usize;
    for round in 0..MAX_ROUNDS {
        let end = (done + params.finalists).min(scored.len());
        if end == done {
            break;
        }
        if round > 0 {
            total += (end - done) * outages * (search_seeds.len() - 1 + verify_seeds.len());
            progress.start(total as u64);
        }
        if search_seeds.len() > 1 {
            let batch: Vec<Candidate> = scored[done..end].iter().map(|(c, _)| *c).collect();
            let more = sim(&batch, &search_seeds[1..])?;
            for (i, extra) in more.into_iter().enumerate() {
                let mut all = scored[done + i].1.runs.clone();
                all.extend(extra);
                scored[done + i].1 = Score::new(facts, all);
            }
        }
        done = end;
        scored[..done].sort_by(ranked);
        if scored[..done].iter().any(|(_, s)| s.feasible())
            || !scored[done..].iter().any(|(_, s)| s.feasible())
        {
            break;
        }
    }
    let finalists_n = done;

    // 5. Verify in rank order until one holds on fresh seeds.
    let mut figure_runs: Vec<OutageFigures> = Vec::new();
    let longest = facts.outages.iter().copied().max().unwrap_or_default();
    let mut verify_one = |c: &Candidate, label: &str, keep: bool, figs: &mut Vec<OutageFigures>| {
        let r = sim(std::slice::from_ref(c), &verify_seeds)?;
        if keep {
            let mut f = simulate(facts, c, longest, verify_seeds[0])?;
            f.strategy = label.to_string();
            figs.push(f);
        }
        Ok::<_, SimError>(Score::new(facts, r.into_iter().next().unwrap_or_default()))
    };
    let (mut recommended, mut runner_up, mut failed) = (None, None, Vec::new());
    for (c, s) in scored
        .iter()
        .take(finalists_n)
        .filter(|(_, s)| s.feasible())
    {
        // A runner-up that ties on every figure differs only where the
        // simulation never reaches (a budget no client runs into): skip it.
        if recommended.as_ref().is_some_and(|r| rec_ties(r, s)) {
            continue;
        }
        let label = if recommended.is_none() {
            "recommended"
        } else {
            "runner-up"
        };
        let v = verified(
            label,
            c,
            None,
            Some(s.clone()),
            verify_one(c, label, recommended.is_none(), &mut figure_runs)?,
        );
        if recommended.is_some() {
            runner_up = Some(v);
            break;
        }
        if v.verify.feasible() {
            recommended = Some(v);
        } else {
            figure_runs.clear();
            failed.push(v);
        }
    }
    if recommended.is_none() {
        figure_runs.clear();
    }
    let mut baselines = Vec::new();
    let defaults = ("full jitter, defaults".to_string(), Policy::default());
    for (label, p) in std::iter::once(&defaults).chain(&params.baselines) {
        let c = Candidate {
            policy: *p,
            guard: None,
        };
        let check = admit(p)
            .err()
            .map(|r| format!("{}: {}", r.check, r.message));
        let keep = recommended.is_some();
        baselines.push(verified(
            label,
            &c,
            check,
            None,
            verify_one(&c, label, keep, &mut figure_runs)?,
        ));
    }
    let unsatisfied = if recommended.is_some() {
        None
    } else {
        Some(unsat::why(facts, &pruned, &scored, &failed))
    };
    let figure = (!figure_runs.is_empty()).then(|| {
        let c = Candidate {
            policy: Policy::default(),
            guard: None,
        };
        OutageReport::new(
            &super::eval::params(facts, &c, longest),
            verify_seeds[0],
            figure_runs,
        )
    });
    progress.advance(total.saturating_sub(runs) as u64);
    Ok(TuneReport {
        facts: FactsReport::from(facts),
        search: SearchReport {
            grid: params.space.len(),
            pruned: pruned.into_values().collect(),
            candidates: admitted.len() + guarded_n,
            guard_candidates: guarded_n,
            finalists: finalists_n,
            ties,
            runs,
            search_seeds,
            verify_seeds,
        },
        recommended,
        runner_up,
        failed_verification: failed,
        baselines,
        pareto: front(&scored[..scored.len() - ties], facts, FRONT_ROWS),
        unsatisfied,
        figure,
    })
}

/// The ranking: by score; among equal figures the larger elapsed budget
/// (the checks already keep it inside the visibility timeout; it is the
/// margin against an outage longer, or a device slower, than the facts),
/// then fewer attempts and the smaller cap, then grid order.
fn ranked(a: &(Candidate, Score), b: &(Candidate, Score)) -> Ordering {
    by_rank(&a.1, &b.1)
        .then(b.0.policy.max_elapsed().cmp(&a.0.policy.max_elapsed()))
        .then(a.0.policy.max_attempts().cmp(&b.0.policy.max_attempts()))
        .then(a.0.policy.cap().cmp(&b.0.policy.cap()))
}

fn rec_ties(rec: &Verified, s: &Score) -> bool {
    rec.search.as_ref().is_some_and(|r| same_figures(r, s))
}

fn same_figures(a: &Score, b: &Score) -> bool {
    a.rank_key() == b.rank_key() && a.drain_s == b.drain_s && a.give_up_share == b.give_up_share
}

fn verified(
    label: &str,
    c: &Candidate,
    check: Option<String>,
    search: Option<Score>,
    verify: Score,
) -> Verified {
    Verified {
        label: label.to_string(),
        policy: (&c.policy).into(),
        guard: c.guard,
        check,
        search,
        verify,
    }
}
