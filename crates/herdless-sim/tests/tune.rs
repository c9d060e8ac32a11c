//! The policy search: deterministic, never recommends what `admit` refuses,
//! verifies on seeds it did not search with, says what to change.

use std::time::Duration;

use herdless::{Jitter, Policy};
use herdless_sim::NoProgress;
use herdless_sim::tune::{self, Facts, Refusal, Space, TuneParams};

fn small() -> TuneParams {
    let s = Duration::from_secs;
    let facts = Facts::new(400, 100, vec![s(5), s(15)]);
    let mut space = Space::for_facts(facts.recovery_time, None);
    space.bases = vec![Duration::from_millis(500), s(2)];
    space.max_attempts = vec![6, 10];
    TuneParams {
        threads: 1,
        ..TuneParams::new(facts, space)
    }
}

fn refuse(check: &str) -> Refusal {
    Refusal {
        check: check.into(),
        message: format!("{check} says no"),
    }
}

#[test]
fn the_same_search_gives_the_same_report_on_any_number_of_threads() {
    let p = small();
    let one = tune::run(&p, &|_| Ok(()), &NoProgress).unwrap();
    let two = tune::run(&TuneParams { threads: 2, ..p }, &|_| Ok(()), &NoProgress).unwrap();
    assert_eq!(
        serde_json::to_string(&one).unwrap(),
        serde_json::to_string(&two).unwrap()
    );
    assert!(one.recommended.is_some());
}

#[test]
fn a_policy_admit_refuses_is_never_simulated_nor_recommended() {
    let p = small();
    let admit = |pol: &Policy| match pol.jitter() {
        Jitter::Equal => Ok(()),
        _ => Err(refuse("only-equal")),
    };
    let r = tune::run(&p, &admit, &NoProgress).unwrap();
    let rec = r.recommended.expect("an equal-jitter policy fits");
    assert_eq!(rec.policy.policy.jitter(), Jitter::Equal);
    assert_eq!(r.search.candidates, p.space.len() / 5);
    assert!(r.pareto.iter().all(|row| row.policy.jitter == "equal"));
    let pruned = &r.search.pruned;
    assert_eq!(pruned.len(), 1);
    assert_eq!(pruned[0].count, p.space.len() * 4 / 5);
    // The baselines are shown with the refusal, not pruned.
    assert_eq!(r.baselines[0].label, "full jitter, defaults");
    assert!(
        r.baselines[0]
            .check
            .as_deref()
            .unwrap()
            .contains("only-equal")
    );
}

#[test]
fn the_recommendation_is_verified_on_seeds_the_search_did_not_use() {
    let r = tune::run(&small(), &|_| Ok(()), &NoProgress).unwrap();
    let rec = r.recommended.unwrap();
    let search = &r.search.search_seeds;
    let verify = &r.search.verify_seeds;
    assert!(verify.iter().all(|s| !search.contains(s)));
    assert!(rec.verify.runs.iter().all(|run| verify.contains(&run.seed)));
    assert!(
        rec.search
            .unwrap()
            .runs
            .iter()
            .all(|run| search.contains(&run.seed))
    );
    assert!(rec.verify.feasible());
    // The figure is the fresh run of the longest outage.
    let fig = r.figure.unwrap();
    assert_eq!(fig.seed, verify[0]);
    assert_eq!(fig.parameters.outage_s, 15.0);
    assert_eq!(fig.strategies[0].strategy, "recommended");
}

#[test]
fn nothing_admitted_or_nothing_feasible_names_the_fact() {
    let r = tune::run(&small(), &|_| Err(refuse("recovery_time")), &NoProgress).unwrap();
    assert!(r.recommended.is_none());
    assert_eq!(r.unsatisfied.as_ref().unwrap().fact, "recovery_time");
    let mut p = small();
    p.facts.visibility_timeout = Some(Duration::from_secs(10));
    let r = tune::run(&p, &|_| Err(refuse("visibility_timeout")), &NoProgress).unwrap();
    assert_eq!(r.unsatisfied.unwrap().fact, "visibility_timeout");
    let mut p = small();
    p.facts.max_peak = 0.001;
    let r = tune::run(&p, &|_| Ok(()), &NoProgress).unwrap();
    let u = r.unsatisfied.unwrap();
    assert_eq!(u.fact, "max_peak", "{}", u.message);
    assert!(r.recommended.is_none() && r.figure.is_none());
}

#[test]
fn out_of_range_facts_are_refused() {
    let mut p = small();
    p.facts.outages.clear();
    assert!(tune::run(&p, &|_| Ok(()), &NoProgress).is_err());
    let mut p = small();
    p.facts.recovery_time = Duration::from_secs(1);
    assert!(tune::run(&p, &|_| Ok(()), &NoProgress).is_err());
    let mut p = small();
    p.search_seeds = 0;
    assert!(tune::run(&p, &|_| Ok(()), &NoProgress).is_err());
}
