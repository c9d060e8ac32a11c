//! Server-guided pushback over real sockets: `herdless fleet` against
//! `herdless stub --outage T --capacity C`, with (adaptive) pushback and
//! without.
//!
//! The simulator's claim is an ordering: after an outage, full
//! jitter plus server pushback drains close to the physical limit `T + N / C`
//! with about two calls per client, while plain full jitter keeps probing
//! during the outage and trickles back long after. This test checks the same
//! ordering on 127.0.0.1 with the real binary (debug build) and the real stub.
//!
//! It is alone in its test binary on purpose: cargo runs test binaries one
//! after the other, so no other test competes with its 2,000 workers for the
//! two cores.

use serde_json::Value;

#[allow(dead_code)] // each test binary uses part of it
mod support;
use support::{last_served_s, outage_fleet, start_stub};

/// What one run showed.
#[derive(Debug)]
struct Run {
    report: Value,
    calls_per_worker: f64,
    /// The clients whose first try arrived during the outage (stub's clock).
    hit: usize,
    /// Their mean number of calls.
    calls_per_hit_client: f64,
    /// The last 200 served, on the stub's clock (which starts the outage).
    drain_s: f64,
}

const N: u64 = 2_000;
const T_S: f64 = 2.0;
const C: f64 = 500.0;

async fn run(stub_flags: &[&str]) -> Run {
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
    let drain_s = last_served_s(&arrivals);
    assert_eq!(
        arrivals.iter().filter(|a| a.status == 200).count() as u64,
        count("succeeded")
    );
    // Per client: its first arrival and its number of calls.
    let mut per: std::collections::HashMap<&str, (f64, u64)> = std::collections::HashMap::new();
    for a in &arrivals {
        let e = per
            .entry(a.worker.as_deref().unwrap_or(""))
            .or_insert((a.t_s, 0));
        e.1 += 1;
    }
    let mut first: Vec<f64> = per.values().map(|v| v.0).collect();
    first.sort_by(f64::total_cmp);
    let hit: Vec<u64> = per.values().filter(|v| v.0 < T_S).map(|v| v.1).collect();
    let calls_per_hit_client = hit.iter().sum::<u64>() as f64 / hit.len().max(1) as f64;
    eprintln!(
        "{stub_flags:?}: first tries at {:.2} / {:.2} / {:.2} s (min / median / max); \
         {} clients hit by the outage, {calls_per_hit_client:.2} calls each",
        first[0],
        first[first.len() / 2],
        first[first.len() - 1],
        hit.len()
    );
    Run {
        hit: hit.len(),
        calls_per_hit_client,
        calls_per_worker: report["calls_per_worker"].as_f64().unwrap(),
        drain_s,
        report,
    }
}

/// N = 2,000 workers, a T = 2 s outage, then C = 500 requests/s; the policy
/// is the simulator's outage policy (full jitter, ×2, 6 attempts) with a base
/// of 300 ms, seed 7. The physical limit is L = T + N / C = 6 s.
///
/// Why this scale: the debug binaries on a loaded 2-core machine serve about
/// 1,000–1,500 requests/s in all, and need up to ~1.5 s to open 2,000
/// connections. C must sit well below the machine's own throughput (or the
/// machine, not the policy, is the bottleneck) and T must cover the fleet's
/// start-up burst (measured: the last first try arrives 0.7–1.6 s after the
/// stub starts). A client whose first try arrives after the outage never
/// saw it, so calls are compared over the clients the outage hit (first
/// arrival before T on the stub's clock; at least a quarter of the fleet is
/// required, all of it is typical); fleet-wide calls per client are printed
/// too. The whole test takes about 16 s on a
/// loaded machine, most of it the plain run's backoff tail.
///
/// Bounds, with pushback (`--capacity 500`, the default: the adaptive
/// allocator, told nothing about the outage):
/// * the allocator finds the outage from the stub's first refusals and holds
///   every caller at least 2 s, expected arrivals 1 / (0.9 C) apart; a
///   probe finds the stub back at T, and the callers, booked from ~2 s on,
///   come back at about 0.9 C: the last by T + N / (0.9 C) = 6.4 s plus its
///   spread (+10 % of its delay). The assertion allows 1.1 L + 1 s for a
///   loaded machine's lag (measured: 7.1 s).
/// * each client hit by the outage needs two calls (the rejected first try
///   and one at its slot); extra calls come only from arrivals the loaded
///   machine delivers in bunches, refused and re-booked behind the others
///   (measured: 2.0–2.1 calls per client). The bound is 2.75.
/// * a re-booked client could in principle be rejected six times and exhaust
///   its 6 attempts, so at most 1 % of the fleet may give up (measured: 0).
///
/// Without pushback (`--pushback off`: the same token bucket, no
/// Retry-After), full jitter keeps probing during the outage (expected waits
/// 0.15, 0.3, 0.6 s after a first try at ~1 s: two to three calls before T),
/// then competes for 500 admissions a second with ever longer waits (up to
/// U(0, 4.8 s) before the 6th attempt): measured 4.5–5.3 calls per client, a
/// drain at 8.7–9.7 s (1.45–1.6 L) and 40–130 workers exhausted. The
/// assertions are the ordering with margins: at least 0.5 calls per client
/// more (measured 2.4–3.2), and a drain at least 1 s later (measured 2.2–3.1 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_pushback_drains_near_the_physical_limit_with_fewer_calls_than_plain_full_jitter() {
    let limit = T_S + N as f64 / C;
    let pushback = run(&["--outage", "2s", "--capacity", "500"]).await;
    let plain = run(&["--outage", "2s", "--capacity", "500", "--pushback", "off"]).await;
    eprintln!(
        "physical limit {limit:.2} s; pushback: drain {:.2} s ({:.2}x), {:.2} calls/client, \
         {} exhausted; plain full jitter: drain {:.2} s ({:.2}x), {:.2} calls/client, {} exhausted",
        pushback.drain_s,
        pushback.drain_s / limit,
        pushback.calls_per_worker,
        pushback.report["exhausted"],
        plain.drain_s,
        plain.drain_s / limit,
        plain.calls_per_worker,
        plain.report["exhausted"],
    );
    assert!(
        pushback.report["exhausted"].as_u64().unwrap() <= N / 100,
        "{}",
        pushback.report
    );
    assert!(
        pushback.drain_s <= 1.1 * limit + 1.0,
        "pushback drained at {:.2} s, limit {limit} s",
        pushback.drain_s
    );
    // Calls are compared over the clients whose first try the outage hit:
    // how fast the loaded machine gets the fleet's first tries out varies
    // (measured 0.75–1.6 s for the last one), and a client that starts after
    // the outage never saw it. At least a quarter of the fleet must have been
    // hit for the means to say anything (measured: all of it, nearly always).
    for r in [&pushback, &plain] {
        assert!(
            r.hit as u64 >= N / 4,
            "only {} clients saw the outage",
            r.hit
        );
    }
    assert!(
        pushback.calls_per_hit_client <= 2.75,
        "pushback cost {} calls per client",
        pushback.calls_per_hit_client
    );
    assert!(
        plain.calls_per_hit_client >= pushback.calls_per_hit_client + 0.5,
        "plain {} vs pushback {} calls per client",
        plain.calls_per_hit_client,
        pushback.calls_per_hit_client
    );
    assert!(
        plain.drain_s >= pushback.drain_s + 1.0,
        "plain drained at {:.2} s, pushback at {:.2} s",
        plain.drain_s,
        pushback.drain_s
    );
    // The fleet's own report (its clock starts a little after the stub's) agrees.
    let fleet_drain = |r: &Run| r.report["drain_s"].as_f64().unwrap();
    assert!(fleet_drain(&plain) > fleet_drain(&pushback));
}
