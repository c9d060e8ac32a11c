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
    // 1. Prune.
    let (pruned, admitted) = prune(params, admit);
    let variants = params.space.guard_variants(&facts.guards);
    let guarded_n = admitted.len().min(GUARDED_POLICIES) * variants.len();
    let mut search = Search {
        params,
        progress,
        outages: facts.outages.len(),
        search_seeds,
        verify_seeds,
        runs: 0,
        total: 0,
    };
    search.start(admitted.len() + guarded_n);
    // 2. Screen, 3. guards.
    let (scored, ties) = untie(search.screen(&admitted, &variants)?);
    let mut scored = scored;
    // 4. Finalists on every search seed.
    let finalists_n = search.finalists(&mut scored)?;
    // 5. Verify in rank order until one holds on fresh seeds.
    let mut verification = search.verify(&scored, finalists_n)?;
    let baselines = search.baselines(admit, &mut verification)?;
    let Verification {
        recommended,
        runner_up,
        failed,
        figure_runs,
    } = verification;
    let unsatisfied = if recommended.is_some() {
        None
    } else {
        Some(unsat::why(facts, &pruned, &scored, &failed))
    };
    let figure = search.figure(figure_runs);
    progress.advance(search.total.saturating_sub(search.runs) as u64);
    Ok(TuneReport {
        facts: FactsReport::from(facts),
        search: SearchReport {
            grid: params.space.len(),
            pruned: pruned.into_values().collect(),
            candidates: admitted.len() + guarded_n,
            guard_candidates: guarded_n,
            finalists: finalists_n,
            ties,
            runs: search.runs,
            search_seeds: search.search_seeds,
            verify_seeds: search.verify_seeds,
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

/// Step 1: the grid's valid policies that `admit` lets through, and the
/// others counted by the check that refused them (with one example each).
fn prune(params: &TuneParams, admit: &Admit<'_>) -> (BTreeMap<String, Pruned>, Vec<Candidate>) {
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
    (pruned, admitted)
}

/// Candidates that tie with a better-ranked one on every figure differ only
/// where the simulation never reaches (a budget no simulated worker runs
/// into): they go to the end, so finalists and the runner-up differ.
/// Returns the candidates and how many tied.
fn untie(scored: Vec<Scored>) -> (Vec<Scored>, usize) {
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
    (uniq, ties)
}

/// What step 5 found: the recommended policy and the runner-up (if any),
/// the finalists that failed on fresh seeds, and the runs drawn in the
/// figure.
struct Verification {
    recommended: Option<Verified>,
    runner_up: Option<Verified>,
    failed: Vec<Verified>,
    figure_runs: Vec<OutageFigures>,
}

/// One search: what every step reads, and the runs made so far (the
/// progress bar's count).
struct Search<'a> {
    params: &'a TuneParams,
    progress: &'a dyn Progress,
    outages: usize,
    search_seeds: Vec<u64>,
    verify_seeds: Vec<u64>,
    runs: usize,
    total: usize,
}

impl Search<'_> {
    /// The runs the search will make with `candidates` screened (more if
    /// step 4 needs more rounds), told to the progress bar.
    fn start(&mut self, candidates: usize) {
        let p = self.params;
        let finalists_n = p.finalists.min(candidates);
        let baselines_n = 1 + p.baselines.len();
        self.total = candidates * self.outages
            + finalists_n * self.outages * (self.search_seeds.len() - 1)
            + (finalists_n + baselines_n) * self.outages * self.verify_seeds.len();
        self.progress.start(self.total as u64);
    }

    /// Simulates every candidate on every outage and seed (in parallel);
    /// each candidate's runs, in order.
    fn sim(
        &mut self,
        cands: &[Candidate],
        seeds: &[u64],
    ) -> Result<Vec<Vec<RunFigures>>, SimError> {
        let (facts, outages, progress) = (&self.params.facts, self.outages, self.progress);
        let tasks: Vec<(usize, usize, u64)> = (0..cands.len())
            .flat_map(|c| (0..outages).flat_map(move |o| seeds.iter().map(move |&s| (c, o, s))))
            .collect();
        self.runs += tasks.len();
        let out = par_map(&tasks, self.params.threads, |&(c, o, s)| {
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
    }

    /// Steps 2 and 3: every admitted policy on the first search seed, then
    /// the best [`GUARDED_POLICIES`] with each guard variant; ranked.
    fn screen(
        &mut self,
        admitted: &[Candidate],
        variants: &[super::grid::GuardChoice],
    ) -> Result<Vec<Scored>, SimError> {
        let facts = &self.params.facts;
        let first = self.search_seeds[..1].to_vec();
        let mut scored: Vec<(Candidate, Score)> = Vec::new();
        let screen = self.sim(admitted, &first)?;
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
            let screen = self.sim(&guarded, &first)?;
            scored.extend(
                guarded
                    .into_iter()
                    .zip(screen.into_iter().map(|r| Score::new(facts, r))),
            );
            scored.sort_by(ranked);
        }
        Ok(scored)
    }

    /// Step 4: rounds of `finalists` candidates on every search seed, until
    /// one meets the facts on every seed (or none that met them on the first
    /// is left, or [`MAX_ROUNDS`] rounds were run). Returns how many
    /// candidates became finalists (ranked first in `scored`).
    fn finalists(&mut self, scored: &mut [Scored]) -> Result<usize, SimError> {
        let facts = &self.params.facts;
        let mut done = 0usize;
        for round in 0..MAX_ROUNDS {
            let end = (done + self.params.finalists).min(scored.len());
            if end == done {
                break;
            }
            if round > 0 {
                self.total += (end - done)
                    * self.outages
                    * (self.search_seeds.len() - 1 + self.verify_seeds.len());
                self.progress.start(self.total as u64);
            }
            if self.search_seeds.len() > 1 {
                let batch: Vec<Candidate> = scored[done..end].iter().map(|(c, _)| *c).collect();
                let rest = self.search_seeds[1..].to_vec();
                let more = self.sim(&batch, &rest)?;
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
        Ok(done)
    }

    /// One candidate on the verification seeds; with `keep`, its run at the
    /// longest outage joins the figure, labelled `label`.
    fn verify_one(
        &mut self,
        c: &Candidate,
        label: &str,
        keep: bool,
        figs: &mut Vec<OutageFigures>,
    ) -> Result<Score, SimError> {
        let facts = &self.params.facts;
        let seeds = self.verify_seeds.clone();
        let r = self.sim(std::slice::from_ref(c), &seeds)?;
        if keep {
            let mut f = simulate(facts, c, longest(facts), seeds[0])?;
            f.strategy = label.to_string();
            figs.push(f);
        }
        Ok(Score::new(facts, r.into_iter().next().unwrap_or_default()))
    }

    /// Step 5: the feasible finalists in rank order on fresh seeds, until
    /// one holds (the recommended policy), then the next that does not tie
    /// with it (the runner-up).
    fn verify(&mut self, scored: &[Scored], finalists_n: usize) -> Result<Verification, SimError> {
        let mut figure_runs: Vec<OutageFigures> = Vec::new();
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
            let score = self.verify_one(c, label, recommended.is_none(), &mut figure_runs)?;
            let v = verified(label, c, None, Some(s.clone()), score);
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
        Ok(Verification {
            recommended,
            runner_up,
            failed,
            figure_runs,
        })
    }

    /// The baselines (the defaults with full jitter, then the caller's) on
    /// the verification seeds, each with what `admit` says of it; drawn in
    /// the figure when a policy was recommended.
    fn baselines(
        &mut self,
        admit: &Admit<'_>,
        v: &mut Verification,
    ) -> Result<Vec<Verified>, SimError> {
        let mut baselines = Vec::new();
        let defaults = ("full jitter, defaults".to_string(), Policy::default());
        let params = self.params;
        for (label, p) in std::iter::once(&defaults).chain(&params.baselines) {
            let c = Candidate {
                policy: *p,
                guard: None,
            };
            let check = admit(p)
                .err()
                .map(|r| format!("{}: {}", r.check, r.message));
            let keep = v.recommended.is_some();
            let score = self.verify_one(&c, label, keep, &mut v.figure_runs)?;
            baselines.push(verified(label, &c, check, None, score));
        }
        Ok(baselines)
    }

    /// The figure of the longest outage, when any run was kept for it.
    fn figure(&self, figure_runs: Vec<OutageFigures>) -> Option<OutageReport> {
        (!figure_runs.is_empty()).then(|| {
            let c = Candidate {
                policy: Policy::default(),
                guard: None,
            };
            let facts = &self.params.facts;
            OutageReport::new(
                &super::eval::params(facts, &c, longest(facts)),
                self.verify_seeds[0],
                figure_runs,
            )
        })
    }
}

/// The longest outage of the facts (the one the figure draws).
fn longest(facts: &super::Facts) -> std::time::Duration {
    facts.outages.iter().copied().max().unwrap_or_default()
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
