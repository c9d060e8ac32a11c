//! What the fleet-level strategies must show, from the simulator's
//! own runs with fixed seeds: server pushback drains near the physical limit
//! with few calls, a shared budget never gives up while the endpoint is
//! healthy, and after a long outage its give-ups are spread in time.

use std::time::Duration;

use herdless::Jitter;
use herdless_sim::report::OutageReport;
use herdless_sim::{Config, OutageParams, Report, Simulation, StrategyKind};

const FULL: StrategyKind = StrategyKind::Backoff(Jitter::Full);

fn kind(name: &str) -> StrategyKind {
    name.parse().unwrap()
}

fn outage(params: OutageParams, kinds: Vec<StrategyKind>, seed: u64) -> OutageReport {
    match Simulation::new(Config::Outage(params))
        .strategies(kinds)
        .seed(seed)
        .run()
        .unwrap()
    {
        Report::Outage(r) => r,
        other => panic!("{other:?}"),
    }
}

/// The default outage (40,000 clients, 5 s, 10,000 calls/s; limit 9 s), seed
/// 1: full jitter + server pushback drains within 1.25x the limit with at most
/// 3.5 calls per client, no give-up and arrivals at about the capacity, where
/// plain full jitter needs more than twice the limit and more than twice the
/// calls.
#[test]
fn pushback_drains_near_the_physical_limit_and_plain_full_jitter_does_not() {
    let r = outage(
        OutageParams::default(),
        vec![FULL, kind("full+pushback")],
        1,
    );
    let (full, push) = (&r.strategies[0], &r.strategies[1]);
    assert_eq!(push.strategy, "full+pushback");
    let limit = r.physical_limit_s;
    assert!(
        push.completion_s <= 1.25 * limit,
        "pushback drained in {} s (limit {limit} s)",
        push.completion_s
    );
    assert!(push.completion_s >= limit, "nobody beats the limit");
    assert!(push.calls <= 3.5, "{} calls per client", push.calls);
    assert_eq!(push.gave_up, 0);
    assert!(
        push.peak_over_capacity <= 1.1,
        "pushback's returns arrive at the capacity, peak {}",
        push.peak_over_capacity
    );

    assert!(
        full.vs_limit >= 2.0,
        "plain full jitter drained at {}x the limit",
        full.vs_limit
    );
    assert!(
        full.calls >= 2.0 * push.calls,
        "full {} vs pushback {} calls per client",
        full.calls,
        push.calls
    );
}

/// A healthy endpoint (no outage) that is busy: 40,000 first calls within
/// 100 ms (400,000/s) against 300,000 calls/s, so thousands of calls get a
/// 503 and are retried. The shared budget must not give anybody up.
#[test]
fn the_budget_gives_nobody_up_while_the_endpoint_is_healthy() {
    let params = OutageParams {
        outage: Duration::ZERO,
        capacity: 300_000,
        burst: 30_000,
        ..OutageParams::default()
    };
    for seed in [1, 2, 3] {
        let r = outage(params, vec![kind("full+budget")], seed);
        let b = &r.strategies[0];
        let retries = b.calls_total - u64::from(params.clients);
        assert!(
            retries > 1_000,
            "seed {seed}: only {retries} 503s: not a test"
        );
        assert_eq!(b.gave_up_retry_budget, 0, "seed {seed}");
        assert_eq!(b.gave_up, 0, "seed {seed}");
    }
}

/// A long outage (60 s, longer than every client's attempts last): the budget
/// denies most retries, but the give-ups are spread over the outage — no
/// 100 ms bucket holds more than 5 % of them, and they span more than 20 s —
/// rather than one synchronized wave when the processes' buckets run dry.
#[test]
fn after_a_long_outage_budget_give_ups_are_spread_in_time() {
    let params = OutageParams {
        outage: Duration::from_secs(60),
        ..OutageParams::default()
    };
    let r = outage(params, vec![kind("full+budget")], 1);
    let b = &r.strategies[0];
    assert_eq!(b.gave_up, u64::from(params.clients), "nobody outlasts 60 s");
    assert!(
        b.gave_up_retry_budget * 2 > b.gave_up,
        "the budget ends most calls: {} of {}",
        b.gave_up_retry_budget,
        b.gave_up
    );
    assert!(
        b.give_up_max_bucket_share < 0.05,
        "largest 100 ms bucket holds {} of the give-ups",
        b.give_up_max_bucket_share
    );
    let occupied: Vec<usize> = b
        .give_ups_per_100ms
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(i, _)| i)
        .collect();
    let span_s = (occupied[occupied.len() - 1] - occupied[0]) as f64 / 10.0;
    assert!(span_s > 20.0, "give-ups span only {span_s} s");
}

/// The breaker cuts the calls made during the outage (waiting behind one
/// probe per process is not a call) without beating the limit.
#[test]
fn the_breaker_makes_fewer_calls_during_the_outage_than_plain_full_jitter() {
    let r = outage(OutageParams::default(), vec![FULL, kind("full+breaker")], 1);
    let during = |i: usize| -> u64 {
        r.strategies[i].arrivals_per_100ms[..50]
            .iter()
            .map(|&c| u64::from(c))
            .sum()
    };
    assert!(
        during(1) * 4 < during(0) * 3,
        "breaker {} vs full {} calls in the outage",
        during(1),
        during(0)
    );
    assert!(r.strategies[1].completion_s >= r.physical_limit_s);
}
