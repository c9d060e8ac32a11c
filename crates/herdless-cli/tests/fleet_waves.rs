//! Cohort-based reactivation over real sockets: 2,000 `herdless fleet`
//! workers come back at once (the fleet's start is the mass reconnect:
//! every worker's first try goes out as it starts) to `herdless stub
//! --capacity 500 --waves 2000`, beside plain full jitter (`--pushback off`,
//! the same token bucket) in the same test. Physical limit: `N / C` = 4 s
//! from the first arrival.
//!
//! The stub's planner is told the population (2,000) and turns away what
//! its 500 requests/s cannot take with a plan of waves (`Herdless-Plan`);
//! each worker's guard computes its wave from its `X-Worker-Id` and comes
//! back within it. Figures on the stub's clock: the drain (the last request
//! served, from the first arrival), and the busiest sliding 100 ms of
//! arrivals after the reconnect storm (from the last first try on) over
//! `C / 10`.
//!
//! Two tests, because timing on a loaded 2-core machine is not a claim:
//! the default one (debug build, any load) asserts the ordering against
//! plain full jitter with margins; the `#[ignore]`d one (release build, a
//! quiet machine: `cargo test --release -p herdless-cli --test fleet_waves
//! -- --ignored --nocapture`) asserts the goals, drain within 1.2x and peak
//! within 1.3x the capacity (the peak goal is missed at this scale: see
//! that test). It is alone in its binary: cargo runs test
//! binaries one after the other, so no other test competes with its 2,000
//! workers.

use serde_json::Value;

#[allow(dead_code)] // each test binary uses part of it
mod support;
use support::{busiest_100ms, last_served_s, outage_fleet, start_stub};

const N: u64 = 2_000;
const C: f64 = 500.0;

#[derive(Debug)]
struct Run {
    report: Value,
    calls_per_worker: f64,
    /// The last request served, seconds after the first arrival.
    drain_s: f64,
    /// When the last first try arrived, seconds after the first arrival.
    storm_s: f64,
    /// The busiest sliding 100 ms of arrivals from then on, over `C / 10`.
    peak: f64,
    /// Workers whose budget ran out.
    exhausted: u64,
}

async fn run(stub_flags: &[&str], c: f64) -> Run {
    let (stub, url) = start_stub(stub_flags);
    let report = outage_fleet(N, &url).await;
    let count = |k: &str| report[k].as_u64().unwrap();
    assert_eq!(
        count("succeeded") + count("terminal") + count("exhausted"),
        N,
        "nothing is lost: {report}"
    );
    assert_eq!(count("terminal"), 0, "{report}");
    let arrivals = stub.stats().arrivals;
    assert_eq!(
        arrivals.len() as u64,
        count("calls"),
        "the stub saw every call"
    );
    let t0 = arrivals.iter().map(|a| a.t_s).fold(f64::MAX, f64::min);
    let mut first: std::collections::HashMap<&str, f64> = std::collections::HashMap::new();
    for a in &arrivals {
        let e = first
            .entry(a.worker.as_deref().unwrap_or(""))
            .or_insert(a.t_s);
        *e = e.min(a.t_s);
    }
    let storm = first.values().copied().fold(0.0, f64::max);
    let after: Vec<f64> = arrivals
        .iter()
        .map(|a| a.t_s)
        .filter(|&t| t >= storm)
        .collect();
    let (busiest, at) = busiest_100ms(&after);
    if std::env::var_os("WAVES_DEBUG").is_some() {
        let mut b = vec![0u32; 100];
        let mut ok = vec![0u32; 100];
        for a in &arrivals {
            let i = (((a.t_s - t0) * 10.0) as usize).min(99);
            b[i] += 1;
            if a.status == 200 {
                ok[i] += 1;
            }
        }
        eprintln!("arrivals {:?}\nserved {:?}", b, ok);
    }
    // The simulator's measure beside it (reported, not asserted): the
    // largest 100 ms bucket on a fixed grid from the first arrival, from
    // the first whole bucket after the storm on.
    let mut grid = vec![0u64; 1 + ((last_served_s(&arrivals) - t0) * 10.0) as usize];
    for &t in &after {
        if let Some(b) = grid.get_mut(((t - t0) * 10.0) as usize) {
            *b += 1;
        }
    }
    let first_whole = ((storm - t0) * 10.0).ceil() as usize;
    let grid_peak = grid.iter().skip(first_whole).copied().max().unwrap_or(0);
    let run = Run {
        calls_per_worker: report["calls_per_worker"].as_f64().unwrap(),
        drain_s: last_served_s(&arrivals) - t0,
        storm_s: storm - t0,
        peak: busiest as f64 / (c / 10.0),
        exhausted: count("exhausted"),
        report,
    };
    eprintln!(
        "{stub_flags:?}: drain {:.2} s ({:.2}x N/C), {:.2} calls/worker, {} exhausted, \
         storm over at {:.2} s, busiest 100 ms after it {:.2}x C at {:.2} s (fixed 100 ms \
         buckets: {:.2}x)",
        run.drain_s,
        run.drain_s / (N as f64 / c),
        run.calls_per_worker,
        run.exhausted,
        run.storm_s,
        run.peak,
        at - t0,
        grid_peak as f64 / (c / 10.0)
    );
    run
}

fn waves_flags() -> [&'static str; 4] {
    ["--capacity", "500", "--waves", "2000"]
}

/// Robust on a loaded machine: waves drain at least 0.5 s before plain
/// full jitter with at least 0.5 calls per worker fewer, and nobody gives up
/// with them (measured figures in docs/fleet-protection.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waves_drain_before_plain_full_jitter_with_fewer_calls() {
    let waves = run(&waves_flags(), C).await;
    let plain = run(&["--capacity", "500", "--pushback", "off"], C).await;
    assert_eq!(waves.exhausted, 0, "{}", waves.report);
    assert!(
        waves.drain_s + 0.5 <= plain.drain_s,
        "waves {:.2} s, plain {:.2} s",
        waves.drain_s,
        plain.drain_s
    );
    assert!(
        waves.calls_per_worker + 0.5 <= plain.calls_per_worker,
        "waves {:.2}, plain {:.2}",
        waves.calls_per_worker,
        plain.calls_per_worker
    );
    assert!(waves.drain_s >= N as f64 / C - 0.05, "nobody beats N / C");
}

/// The goals at `c` requests/s, on a quiet machine with a release build:
/// drain within 1.2x `N / c` and the busiest 100 ms after the storm within
/// 1.3x the capacity.
async fn goals_at(c: f64) {
    let cap = c.to_string();
    let waves = run(&["--capacity", &cap, "--waves", "2000"], c).await;
    let plain = run(&["--capacity", &cap, "--pushback", "off"], c).await;
    let limit = N as f64 / c;
    assert_eq!(waves.exhausted, 0, "{}", waves.report);
    assert!(waves.drain_s <= 1.2 * limit, "drain {:.2} s", waves.drain_s);
    assert!(waves.peak <= 1.3, "peak {:.2}x", waves.peak);
    assert!(waves.drain_s < plain.drain_s);
}

/// At 500 requests/s the peak goal sits inside the noise of random
/// placement: a 100 ms window holds about 47 arrivals, and the busiest
/// sliding window of 2,000 uniform draws alone is 1.36x at the median
/// (1.30x to 1.46x, `scripts/uniform-peak.py`), so this test fails more
/// often than not on the peak whatever the plan does (measured: drain
/// 1.09x to 1.15x, peak 1.40x to 1.64x sliding). It stays, as set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "timing: a release build on a quiet machine (see the module documentation)"]
async fn waves_meet_their_goals_over_real_sockets() {
    goals_at(C).await;
}

/// The same fleet at 1,000 requests/s, where the busiest 100 ms of uniform
/// draws is 1.21x at the median (1.16x to 1.27x): a scale at which the
/// peak goal can be judged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "timing: a release build on a quiet machine (see the module documentation)"]
async fn waves_meet_their_goals_over_real_sockets_at_1000_per_s() {
    goals_at(1000.0).await;
}
