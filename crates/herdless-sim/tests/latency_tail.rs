//! The latency-tail scenario: hedging cuts the healthy p99, the budget
//! stops the hedges (and retries) of an overload, runs are deterministic.

use herdless::Jitter;
use herdless_sim::scenario::tail::{self, TailParams};
use herdless_sim::{Config, Report, Scenario, Simulation, StrategyKind};

fn params() -> TailParams {
    TailParams {
        calls: 6_000,
        overload_start: std::time::Duration::from_secs(2),
        overload: std::time::Duration::from_secs(2),
        ..TailParams::default()
    }
}

#[test]
fn hedging_cuts_the_healthy_p99_and_the_budget_stops_the_overloads_hedges() {
    let p = params();
    let full = tail::run(&p, StrategyKind::Backoff(Jitter::Full), 3).unwrap();
    let hedge = tail::run(&p, StrategyKind::Hedge, 3).unwrap();
    let budget = tail::run(&p, StrategyKind::HedgeBudget, 3).unwrap();
    // 5 % of answers take 1 s: without hedging that is the p99.
    assert!(full.p99_s >= 0.99, "{full:?}");
    assert_eq!(full.hedges, 0);
    for f in [&hedge, &budget] {
        assert!(f.p99_s * 5.0 <= full.p99_s, "{f:?}");
        // p95 hedging: about one hedge in ten calls while healthy.
        assert!(f.healthy_requests_per_call <= 1.15, "{f:?}");
        assert!(f.hedge_wins > 0 && f.hedge_wins <= f.hedges, "{f:?}");
    }
    // In the overload, the budget stops hedges and retries alike.
    assert!(budget.overload_requests_per_call < 1.2, "{budget:?}");
    assert!(hedge.overload_requests_per_call > 2.0 * budget.overload_requests_per_call);
    assert!(hedge.overload_requests_per_call >= full.overload_requests_per_call);
}

#[test]
fn a_run_is_deterministic_and_reports_its_scenario() {
    let sim = Simulation::new(Config::LatencyTail(params())).seed(9);
    let a = sim.run().unwrap();
    assert_eq!(a.to_json(), sim.clone().threads(1).run().unwrap().to_json());
    let v: serde_json::Value = serde_json::from_str(&a.to_json()).unwrap();
    assert_eq!(v["scenario"], "latency-tail");
    let names: Vec<_> = v["strategies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["strategy"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["full", "hedge", "hedge+budget"]);
    let Report::LatencyTail(r) = &a else {
        panic!("not a latency-tail report")
    };
    assert!(a.table().contains("healthy: p99"), "{}", a.table());
    assert_eq!(r.parameters.calls, 6_000);
    assert_eq!(
        "latency-tail".parse::<Scenario>(),
        Ok(Scenario::LatencyTail)
    );
}

#[test]
fn hedging_runs_in_latency_tail_only_and_latency_tail_takes_no_guard() {
    let outage = Simulation::new(Config::default_for(Scenario::Outage))
        .strategies(vec![StrategyKind::Hedge]);
    let err = outage.run().unwrap_err().to_string();
    assert!(err.contains("latency-tail"), "{err}");
    let guarded =
        Simulation::new(Config::LatencyTail(params())).strategies(vec![StrategyKind::GUARDED[0]]);
    let err = guarded.run().unwrap_err().to_string();
    assert!(err.contains("latency-tail"), "{err}");
    let bad = TailParams {
        calls: 0,
        ..params()
    };
    assert!(bad.validate().is_err());
}
