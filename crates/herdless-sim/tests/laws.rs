//! The laws a retry simulator must obey (no strategy beats the physical limit,
//! jitter removes the spikes, backoff beats no backoff under contention), checked on the
//! simulator's own runs with fixed seeds.

use herdless::Jitter;
use herdless_sim::endpoint::OutageEnd;
use herdless_sim::report::{ContentionReport, OutageReport, SpreadReport};
use herdless_sim::{
    Config, ContentionParams, OutageParams, Report, RobustnessParams, Scenario, Simulation,
    SpreadParams, StrategyKind,
};
use proptest::prelude::*;

const NONE: StrategyKind = StrategyKind::Backoff(Jitter::None);
const FULL: StrategyKind = StrategyKind::Backoff(Jitter::Full);

fn spread(seed: u64, kinds: Vec<StrategyKind>) -> SpreadReport {
    let sim = Simulation::new(Config::Spread(SpreadParams::default()))
        .strategies(kinds)
        .seed(seed);
    match sim.run().unwrap() {
        Report::Spread(r) => r,
        other => panic!("{other:?}"),
    }
}

fn outage(params: OutageParams, seed: u64) -> OutageReport {
    outage_with(params, Scenario::Outage.default_strategies(), seed)
}

fn outage_with(params: OutageParams, kinds: Vec<StrategyKind>, seed: u64) -> OutageReport {
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

fn contention(params: ContentionParams, kinds: Vec<StrategyKind>, seed: u64) -> ContentionReport {
    let sim = Simulation::new(Config::Contention(params))
        .strategies(kinds)
        .seed(seed);
    match sim.run().unwrap() {
        Report::Contention(r) => r,
        other => panic!("{other:?}"),
    }
}

/// Without jitter the fleet retries in three spikes, each holding
/// every worker, at the library's ceilings 0.5 s, 0.5 + 1 s, 0.5 + 1 + 2 s;
/// with full jitter no 100 ms bucket holds more than a small fraction.
#[test]
fn spread_no_jitter_spikes_hold_the_whole_fleet_and_full_jitter_does_not() {
    for seed in [1, 2, 3] {
        let r = spread(seed, vec![NONE, FULL]);
        let (none, full) = (&r.strategies[0], &r.strategies[1]);
        let w = r.parameters.workers;

        assert_eq!(none.max_bucket_share, 1.0);
        let spikes: Vec<(usize, u32)> = none
            .retries_per_100ms
            .iter()
            .copied()
            .enumerate()
            .filter(|&(_, c)| c > 0)
            .collect();
        assert_eq!(spikes, vec![(5, w), (15, w), (35, w)], "seed {seed}");

        assert!(
            full.max_bucket_share < 0.5,
            "seed {seed}: full jitter's largest bucket holds {}",
            full.max_bucket_share
        );
        let occupied = full.retries_per_100ms.iter().filter(|&&c| c > 0).count();
        assert!(occupied >= 15, "seed {seed}: only {occupied} buckets used");
        assert_eq!(full.calls_total, none.calls_total, "same work, spread out");
    }
}

/// The AWS experiment: full jitter needs far fewer write calls than
/// exponential backoff without jitter, and finishes far sooner.
#[test]
fn contention_full_jitter_needs_far_fewer_calls_and_far_less_time_than_no_jitter() {
    let params = ContentionParams {
        clients: vec![50, 100],
        trials: 20,
        ..ContentionParams::default()
    };
    let r = contention(params, vec![NONE, FULL], 11);
    let (none, full) = (&r.strategies[0], &r.strategies[1]);
    for (n, f) in none.points.iter().zip(&full.points) {
        assert!(
            f.calls < 0.7 * n.calls,
            "{} clients: full {} vs none {} write calls",
            n.clients,
            f.calls,
            n.calls
        );
        assert!(
            f.completion_s < 0.25 * n.completion_s,
            "{} clients: full {} s vs none {} s",
            n.clients,
            f.completion_s,
            n.completion_s
        );
    }
}

/// Every client writes exactly once, so the number of write calls is at least
/// the number of clients, and the version ends at the number of clients.
#[test]
fn contention_every_client_writes_once() {
    let params = ContentionParams {
        clients: vec![1, 7, 30],
        trials: 5,
        ..ContentionParams::default()
    };
    let r = contention(
        params,
        vec![
            StrategyKind::NoBackoff,
            NONE,
            FULL,
            StrategyKind::Backoff(Jitter::DecorrelatedWindow),
        ],
        5,
    );
    for s in &r.strategies {
        for p in &s.points {
            assert!(p.calls >= f64::from(p.clients), "{} {:?}", s.strategy, p);
            assert!(p.completion_s > 0.0);
        }
        assert_eq!(s.points[0].calls, 1.0, "a lone client never conflicts");
    }
}

fn assert_within_limit(r: &OutageReport) {
    let p = &r.parameters;
    for s in &r.strategies {
        // Clients served by time t ≥ T are at most C · (t − T): the successes
        // alone need T + succeeded / C, whatever the strategy.
        let floor = p.outage_s + s.succeeded as f64 / f64::from(p.capacity_per_s);
        if s.succeeded > 0 {
            assert!(
                s.last_success_s >= floor - 1e-9,
                "{} drained {} clients by {} s, faster than the limit {} s",
                s.strategy,
                s.succeeded,
                s.last_success_s,
                floor
            );
        }
        assert!(s.completion_s >= s.last_success_s);
        if s.gave_up == 0 {
            assert!(s.completion_s >= r.physical_limit_s);
        }
        assert_eq!(s.succeeded + s.gave_up, u64::from(p.clients));
        // Only a run where every client succeeded drained, and its drain is
        // never below the limit.
        assert_eq!(s.drained, s.gave_up == 0, "{}", s.strategy);
        assert_eq!(s.drain_s.is_some(), s.drained, "{}", s.strategy);
        if let (Some(d), Some(x)) = (s.drain_s, s.drain_vs_limit) {
            assert!(
                d >= r.physical_limit_s - 1e-9,
                "{} drained at {d}",
                s.strategy
            );
            assert!(x >= 1.0 - 1e-9, "{}: {x}x the limit", s.strategy);
        } else {
            assert_eq!(s.drain_vs_limit, None, "{}", s.strategy);
        }
    }
    assert_table_obeys_limit(r);
}

/// The law as the table prints it: every cell of the `completion (s)` and
/// `x physical limit` rows is either "-" (the run did not drain) or at least
/// the limit.
fn assert_table_obeys_limit(r: &OutageReport) {
    let table = Report::Outage(r.clone()).table();
    for (label, floor) in [
        ("completion (s)", r.physical_limit_s),
        ("x physical limit", 1.0),
    ] {
        let line = table
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label} row in\n{table}"));
        let cells: Vec<&str> = line[label.len()..].split_whitespace().collect();
        assert_eq!(cells.len(), r.strategies.len() + 1, "{line}");
        for (cell, s) in cells.iter().zip(&r.strategies) {
            if s.drained {
                let v: f64 = cell.parse().unwrap();
                // Printed rounded: allow the last printed digit.
                assert!(v >= floor - 0.01, "{}: {cell} in {line}", s.strategy);
            } else {
                assert_eq!(*cell, "-", "{} gave up {}: {line}", s.strategy, s.gave_up);
            }
        }
    }
    if r.strategies.iter().any(|s| !s.drained) {
        assert!(table.contains("did not drain"), "{table}");
    }
}

/// A run where every client gave up (an outage longer than any budget) is
/// done early but did not drain: no cell reads as beating the limit, and the
/// JSON says `drained: false` with no drain time.
#[test]
fn a_fleet_that_gave_up_did_not_drain() {
    let params = OutageParams {
        clients: 2_000,
        capacity: 500,
        burst: 50,
        outage: std::time::Duration::from_secs(3_600),
        ..OutageParams::default()
    };
    let kinds = vec![FULL, "full+pushback".parse::<StrategyKind>().unwrap()];
    let r = match Simulation::new(Config::Outage(params))
        .strategies(kinds)
        .seed(1)
        .run()
        .unwrap()
    {
        Report::Outage(r) => r,
        other => panic!("{other:?}"),
    };
    for s in &r.strategies {
        assert_eq!(s.gave_up, 2_000, "{}: nobody outlasts an hour", s.strategy);
        assert!(
            s.completion_s < r.physical_limit_s,
            "done early, by giving up"
        );
        assert_eq!(
            s.vs_limit, None,
            "no ratio below 1 for a fleet that gave up"
        );
        assert!(!s.drained);
        assert_eq!((s.drain_s, s.drain_vs_limit), (None, None));
    }
    assert_within_limit(&r);
    let json: serde_json::Value =
        serde_json::from_str(&Report::Outage(r.clone()).to_json()).unwrap();
    for s in json["strategies"].as_array().unwrap() {
        assert_eq!(s["drained"], false, "{s}");
        assert!(s["drain_s"].is_null() && s["drain_vs_limit"].is_null());
        assert!(s["vs_limit"].is_null(), "{s}");
    }
}

/// No strategy beats the physical limit T + N / C (default
/// scenario: 40,000 clients, 5 s, 10,000 calls/s: 9 s), the fleet-level ones
/// (budget, breaker, pushback, throttle, the CUBIC baseline, waves alone and
/// beside the throttle) included, and capped exponential backoff
/// without jitter is far from it.
#[test]
fn outage_no_strategy_beats_the_physical_limit() {
    let r = outage(OutageParams::default(), 1);
    assert_eq!(r.physical_limit_s, 9.0);
    let names: Vec<&str> = r.strategies.iter().map(|s| s.strategy.as_str()).collect();
    assert_eq!(
        names[5..],
        ["fixed-1s", "full+budget", "full+breaker", "full+pushback"]
    );
    assert_within_limit(&r);
    // The client-side throttle and the CUBIC baseline, over the plain endpoint.
    let paced = outage_with(
        OutageParams::default(),
        vec![
            "full+throttle".parse().unwrap(),
            "full+cubic".parse().unwrap(),
            "full+waves".parse().unwrap(),
            "full+waves+throttle".parse().unwrap(),
        ],
        1,
    );
    assert_within_limit(&paced);
    let none = &r.strategies[0];
    let full = &r.strategies[1];
    assert_eq!(none.strategy, "none");
    assert!(
        none.completion_s > 2.0 * r.physical_limit_s,
        "no jitter is done at {} s, past twice the limit",
        none.completion_s
    );
    assert!(none.peak_over_capacity > 10.0, "the storm's spikes");
    assert!(full.peak_over_capacity < 2.0, "full jitter's smear");
    assert!(
        full.gave_up * 10 < none.gave_up,
        "jitter saves most give-ups"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// The same law over random small outages, capacities and policies, for
    /// every strategy (both pushback allocators and the wave planner included), with a random
    /// share of clients honoring Retry-After, a random capacity estimate and
    /// the end known or not.
    #[test]
    fn outage_limit_holds_for_random_parameters(
        clients in 1u32..3_000,
        outage_ms in 0u64..8_000,
        capacity in 50u32..3_000,
        burst_share in 1u32..50,
        base_ms in 10u64..2_000,
        attempts in 2u32..12,
        per_process in 1u32..300,
        honor in 0.0f64..=1.0,
        estimate in 0.25f64..4.0,
        known in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let params = OutageParams {
            clients,
            outage: std::time::Duration::from_millis(outage_ms),
            capacity,
            burst: (capacity * burst_share / 100).max(1),
            policy: herdless::Policy::builder()
                .base(std::time::Duration::from_millis(base_ms))
                .max_attempts(attempts)
                .build()
                .unwrap(),
            guards: herdless_sim::guard::GuardParams {
                clients_per_process: per_process,
                ..Default::default()
            },
            honor,
            capacity_estimate: estimate,
            outage_end: if known { OutageEnd::Known } else { OutageEnd::Unknown },
            ..OutageParams::default()
        };
        let mut kinds = Scenario::Outage.default_strategies();
        kinds.push("full+static-pushback".parse().unwrap());
        kinds.push("full+throttle".parse().unwrap());
        kinds.push("full+cubic".parse().unwrap());
        kinds.push("full+waves".parse().unwrap());
        kinds.push("full+waves+throttle".parse().unwrap());
        let r = outage_with(params, kinds, seed);
        assert_eq!(r.strategies.len(), 14, "every strategy, the guarded ones included");
        assert_within_limit(&r);
        for s in &r.strategies {
            // The honoring clients are some of the clients: their drain obeys
            // the same floor (T + honoring / C), their calls are counted.
            assert!(s.honoring_clients <= u64::from(clients));
            if let Some(d) = s.honoring_completion_s {
                let floor = outage_ms as f64 / 1e3 + s.honoring_clients as f64 / f64::from(capacity);
                assert!(d >= floor - 1e-9, "{}: honoring drained at {d} < {floor}", s.strategy);
                assert_eq!(s.honoring_gave_up, 0);
            }
        }
    }
}

/// The robustness matrix runs the outage scenario cell by cell: every cell
/// obeys its own physical limit (`T + N/C` for that cell's true capacity),
/// a cell's verdicts are its figures against the goals, and each cell is
/// compared with plain full jitter at its own capacity and outage.
#[test]
fn robustness_cells_obey_the_limit_and_their_verdicts_follow_the_goals() {
    let params = RobustnessParams {
        base: OutageParams {
            clients: 4_000,
            capacity: 1_000,
            burst: 100,
            ..OutageParams::default()
        },
        ..RobustnessParams::default()
    };
    let r = match Simulation::new(Config::Robustness(params))
        .seed(3)
        .run()
        .unwrap()
    {
        Report::Robustness(r) => r,
        other => panic!("{other:?}"),
    };
    // Three strategies, each 18 cells and 8 long rows (default and long
    // policy); 7 baselines (3
    // capacities at 5 s, the 20 s and 60 s outages at C = E, each policy).
    assert_eq!(r.cells.len(), 78);
    assert_eq!(
        r.strategies,
        ["full+hold", "full+pushback", "full+throttle"]
    );
    assert_eq!(r.baselines.len(), 7);
    assert!(r.baselines.iter().all(|b| b.strategy == "full"));
    assert_eq!(r.passed, r.cells.iter().filter(|c| c.passed).count());
    let capacities: Vec<u32> = r.cells.iter().map(|c| c.capacity_per_s).collect();
    assert!([500, 1_000, 2_000].iter().all(|c| capacities.contains(c)));
    for c in &r.cells {
        // The server is told 1,000/s whatever the truth.
        assert!((c.capacity_estimate * f64::from(c.capacity_per_s) - 1_000.0).abs() < 1e-6);
        let limit = c.outage_s + 4_000.0 / f64::from(c.capacity_per_s);
        assert!((c.physical_limit_s - limit).abs() < 1e-9, "{c:?}");
        if let Some(d) = c.honoring_completion_s {
            let honoring = c.honor * 4_000.0;
            // At least the honoring clients' own share of the capacity after T.
            let floor = c.outage_s + 0.9 * honoring / f64::from(c.capacity_per_s);
            assert!(d >= floor, "{c:?}");
        }
        // The honoring clients' arrivals are some of the arrivals, all of
        // them when every client honors; the peak goal is theirs.
        assert!(
            c.honoring_peak_over_capacity <= c.peak_over_capacity,
            "{c:?}"
        );
        if c.honor >= 1.0 {
            assert_eq!(c.honoring_peak_over_capacity, c.peak_over_capacity, "{c:?}");
        }
        assert_eq!(
            c.checks.peak,
            c.honoring_peak_over_capacity <= r.goals.peak,
            "{c:?}"
        );
        assert_eq!(
            c.checks.service_peak,
            c.service_peak_over_capacity <= r.goals.service_peak
        );
        assert_eq!(
            c.checks.calls,
            c.long || c.honoring_calls <= r.goals.honoring_calls
        );
        assert_eq!(c.checks.no_give_up, c.honoring_gave_up == 0);
        let exact_known = c.capacity_over_estimate == 1.0 && !c.long && c.outage_end == "known";
        let goal = if exact_known {
            r.goals.known_vs_limit
        } else {
            r.goals.honoring_vs_limit
        };
        assert_eq!(
            c.checks.drain,
            c.honoring_vs_limit.is_some_and(|x| x <= goal)
        );
        assert_eq!(c.passed, c.checks.all());
        // Only a hold holds.
        assert_eq!(c.max_held > 0, c.strategy == "full+hold", "{c:?}");
    }
    let table = Report::Robustness(r.clone()).table();
    assert!(
        table.contains(&format!("cells meeting every goal: {} of 78", r.passed)),
        "{table}"
    );
}

/// Same seed, same output, for every scenario; another seed, another output.
#[test]
fn same_seed_same_output() {
    let configs = [
        Config::Spread(SpreadParams::default()),
        Config::Outage(OutageParams {
            clients: 5_000,
            capacity: 1_000,
            burst: 100,
            ..OutageParams::default()
        }),
        Config::Contention(ContentionParams {
            clients: vec![10, 40],
            trials: 4,
            ..ContentionParams::default()
        }),
    ];
    for config in configs {
        let run = |seed, threads| {
            Simulation::new(config.clone())
                .seed(seed)
                .threads(threads)
                .run()
                .unwrap()
                .to_json()
        };
        let a = run(42, 1);
        assert_eq!(a, run(42, 1), "{config:?}");
        assert_eq!(a, run(42, 3), "threads change nothing: {config:?}");
        assert_ne!(a, run(43, 1), "the seed matters: {config:?}");
    }
}
