//! A pushback server that overestimates its capacity twice, over real
//! sockets: `herdless fleet` (2,000 workers) against `herdless stub --outage
//! 5s --capacity 500 --capacity-estimate 2`, with the adaptive allocator
//! (the default, told nothing about the outage) and with the static one
//! (`--pushback static`, told 1,000/s and recovered at the outage's end, as an
//! operator would), in the same test.
//!
//! Alone in its test binary, as `fleet_pushback.rs`: cargo runs test
//! binaries one after the other, so no other test competes with its 2,000
//! workers for the two cores.

use serde_json::Value;

#[allow(dead_code)] // each test binary uses part of it
mod support;
use support::{last_served_s, outage_fleet, start_stub};

const N: u64 = 2_000;
const T_S: f64 = 5.0;
const C: f64 = 500.0;

/// What one run showed, on the stub's clock.
#[derive(Debug)]
struct Run {
    report: Value,
    /// The last request served.
    drain_s: f64,
    /// The largest fixed 100 ms bucket of arrivals at or after T, over C / 10
    /// (the simulator's `peak_over_capacity`).
    peak: f64,
    /// The busiest sliding 100 ms window at or after T, over C / 10.
    peak_sliding: f64,
}

async fn run(stub_flags: &[&str]) -> Run {
    let (stub, url) = start_stub(stub_flags);
    let report = outage_fleet(N, &url).await;
    let stats = stub.stats();
    assert_eq!(stats.dropped, 0, "every arrival kept");
    let arrivals = stats.arrivals;
    assert_eq!(arrivals.len() as u64, report["calls"].as_u64().unwrap());
    let drain_s = last_served_s(&arrivals);
    // Arrivals (a held request's is when it came, before its answer).
    let mut after: Vec<f64> = arrivals
        .iter()
        .map(|a| a.t_s)
        .filter(|&t| t >= T_S)
        .collect();
    after.sort_by(f64::total_cmp);
    let per_bucket = C * 0.1;
    let mut buckets = std::collections::HashMap::new();
    for t in &after {
        *buckets.entry((t * 10.0) as u64).or_insert(0u64) += 1;
    }
    let peak = buckets.values().copied().max().unwrap_or(0) as f64 / per_bucket;
    let mut lo = 0;
    let mut sliding = 0;
    for (hi, &t) in after.iter().enumerate() {
        while t - after[lo] >= 0.1 {
            lo += 1;
        }
        sliding = sliding.max(hi + 1 - lo);
    }
    Run {
        report,
        drain_s,
        peak,
        peak_sliding: sliding as f64 / per_bucket,
    }
}

/// The stub flags every run here shares: a 5 s outage, 500 requests/s, the
/// allocator told twice that.
const COMMON: [&str; 6] = [
    "--outage",
    "5s",
    "--capacity",
    "500",
    "--capacity-estimate",
    "2",
];

/// Two runs, each against a fresh stub with [`COMMON`] and its own extra
/// flags, one after the other; prints both.
async fn pair(first: (&str, &[&str]), second: (&str, &[&str])) -> (Run, Run) {
    let limit = T_S + N as f64 / C;
    let mut runs = Vec::new();
    for (name, extra) in [first, second] {
        let flags: Vec<&str> = COMMON.iter().chain(extra).copied().collect();
        let r = run(&flags).await;
        eprintln!(
            "{name}: drain {:.2} s ({:.2}x the {limit} s limit), peak after T {:.2}x capacity \
             (sliding window {:.2}x), {} calls per worker, {} exhausted",
            r.drain_s,
            r.drain_s / limit,
            r.peak,
            r.peak_sliding,
            r.report["calls_per_worker"],
            r.report["exhausted"],
        );
        runs.push(r);
    }
    let second = runs.pop().expect("two runs");
    (runs.pop().expect("two runs"), second)
}

/// Both allocators, adaptive first, each against a fresh stub.
async fn both() -> (Run, Run) {
    pair(("adaptive", &[]), ("static", &["--pushback", "static"])).await
}

/// N = 2,000 workers, a T = 5 s outage (the simulator's default length),
/// then C = 500 requests/s; the allocators start from twice that. Full
/// jitter with the simulator's outage policy and a 300 ms base, seed 7.
/// Physical limit L = T + N / C = 9 s.
///
/// The adaptive allocator finds the outage from the stub's refusals and holds
/// every caller at least 2 s, then as long as the outage has lasted: the first
/// wave comes back from 2 s at 0.9 times the (wrong) estimate, is rebooked
/// further out, and when a probe finds the stub back at 5 s the callers
/// arrive at about the capacity. The static allocator, told 1,000/s, books
/// everyone at 1,000/s and admits as much after the outage: the stub refuses
/// half, without a slot, and those callers fall back on their own backoff.
///
/// Measured with the debug binaries this test runs (load average 3–8): the
/// adaptive allocator drains at 10.4–10.8 s (1.16–1.20 L), 3.1 calls per
/// worker, none exhausted; its peak after T is 1.4–2.1x capacity, because a
/// debug fleet on a loaded machine needs ~2 s for its first tries and bunches
/// its wake-ups (arrivals of up to 1,900/s where the allocator books at most
/// 900/s). The static allocator: peak 3.2–4.1x, 220–280 exhausted, drain
/// 11.8–11.9 s. Bounds: adaptive drain within 1.5 L, nobody exhausted, and
/// the static peak at least 1.5 times the adaptive one; the peak bound of
/// the claim (1.5x) is checked with the release binary by
/// [`with_the_release_binary_the_peak_stays_within_1_5_capacity`].
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overestimate_of_two_drains_within_1_5_the_limit_and_floods_only_the_static_allocator() {
    let limit = T_S + N as f64 / C;
    let (adaptive, fixed) = both().await;
    assert_eq!(adaptive.report["exhausted"], 0, "{}", adaptive.report);
    assert!(
        adaptive.drain_s <= 1.5 * limit,
        "adaptive drained at {:.2} s, limit {limit} s",
        adaptive.drain_s
    );
    assert!(
        fixed.peak >= 1.5 * adaptive.peak,
        "static peak {:.2} vs adaptive {:.2}",
        fixed.peak,
        adaptive.peak
    );
}

/// The same with the release binary (`cargo test --release -p herdless-cli
/// --test fleet_estimate -- --ignored --nocapture`): the adaptive allocator
/// keeps the peak after T within 1.5x capacity and drains within 1.5 L; the
/// static one peaks at least twice as high. Measured at load average 0.3–0.5,
/// three runs: adaptive drain 1.17 L, peak 1.14x, 1.14x and 1.46x (sliding
/// 1.26x, 1.26x, 1.46x), static 3.10x to 3.50x with 255 to 262 exhausted; at
/// load average 5.4–5.7, two runs: peak 1.20x and 1.56x (the second fails the
/// bound: the workers' wake-ups bunch on a busy machine). Much of the spread
/// between runs is sampling: about 45 arrivals are due per 100 ms after T,
/// and the spread every client adds to its slot (`retry_after_spread`, 10 %)
/// makes each bucket's count close to a Poisson draw, whose largest of 35
/// buckets is 1.18x capacity in the median and 1.40x once in a hundred
/// (simulated by drawing). A timing claim about the machine as much as the
/// allocator: run it on a quiet one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a timing claim: run with --release (see the doc comment)"]
async fn with_the_release_binary_the_peak_stays_within_1_5_capacity() {
    let limit = T_S + N as f64 / C;
    let (adaptive, fixed) = both().await;
    assert_eq!(adaptive.report["exhausted"], 0, "{}", adaptive.report);
    assert!(adaptive.drain_s <= 1.5 * limit, "{:.2} s", adaptive.drain_s);
    assert!(adaptive.peak <= 1.5, "adaptive peak {:.2}", adaptive.peak);
    assert!(
        fixed.peak >= 2.0 * adaptive.peak,
        "static {:.2}",
        fixed.peak
    );
}

/// The reconnect queue against slots alone, in the same run: the same fleet
/// and stub told twice its capacity, with the adaptive allocator's hold
/// (`--hold-for 5s`, half the workers' 10 s per-attempt timeout) and
/// without. Held requests are recorded by the stub when they are answered,
/// so the peak after T is the load that reached the service.
async fn hold_and_slots() -> (Run, Run) {
    pair(("hold", &["--hold-for", "5s"]), ("slots", &[])).await
}

/// With the debug binaries this test runs: the hold drains no later than
/// slots alone and within 1.5 L, with fewer calls, nobody exhausted.
/// Measured (load average 2–3): hold 9.00 s (1.00 L), 1.78 calls per worker,
/// peak of arrivals after T 1.56x capacity; slots alone 10.43 s (1.16 L),
/// 3.04 calls, 1.40x; none exhausted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hold_drains_no_later_than_slots_alone_with_fewer_calls() {
    let limit = T_S + N as f64 / C;
    let (hold, slots) = hold_and_slots().await;
    assert_eq!(hold.report["exhausted"], 0, "{}", hold.report);
    assert!(
        hold.drain_s <= 1.5 * limit,
        "hold drained at {:.2} s",
        hold.drain_s
    );
    assert!(
        hold.drain_s <= slots.drain_s + 0.5,
        "hold {:.2} s, slots {:.2} s",
        hold.drain_s,
        slots.drain_s
    );
    let calls = |r: &Run| r.report["calls_per_worker"].as_f64().unwrap();
    assert!(
        calls(&hold) < calls(&slots),
        "hold {} vs slots {}",
        calls(&hold),
        calls(&slots)
    );
}

/// The claim, with the release binary (`cargo test --release -p herdless-cli
/// --test fleet_estimate -- --ignored --nocapture`): the hold drains within
/// 1.3 L with the peak of arrivals after T within 1.5x capacity. Measured
/// at load average 2.2 (a build on the other core): hold 9.21 s (1.02 L),
/// peak 1.46x (sliding window 1.62x), 2.44 calls per worker; slots alone in
/// the same run 10.49 s (1.17 L), 1.30x, 3.11 calls; none exhausted. Again
/// after the release kept its starting rate for three windows (2026-12-06,
/// load average 3–5, helpers' builds running): hold 9.14 s (1.02 L), peak
/// 1.30x (sliding 1.50x), 2.38 calls; slots 10.47 s (1.16 L), 1.26x, 3.13.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a timing claim: run with --release (see the doc comment)"]
async fn with_the_release_binary_the_hold_drains_within_1_3_the_limit() {
    let limit = T_S + N as f64 / C;
    let (hold, _) = hold_and_slots().await;
    assert_eq!(hold.report["exhausted"], 0, "{}", hold.report);
    assert!(hold.drain_s <= 1.3 * limit, "{:.2} s", hold.drain_s);
    assert!(hold.peak <= 1.5, "hold peak {:.2}", hold.peak);
}
