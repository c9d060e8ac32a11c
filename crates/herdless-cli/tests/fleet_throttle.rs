//! The client-side throttle over real sockets: `herdless fleet --throttle`
//! (one `guard::Throttle` shared by the process's workers) against
//! `herdless stub --outage T --capacity C --pushback off` (no server help),
//! beside the same fleet without it.
//!
//! Alone in its test binary (cargo runs test binaries one after the other),
//! so no other test competes with its workers for the cores.

use serde_json::Value;

#[allow(dead_code)] // each test binary uses part of it
mod support;
use support::{last_served_s, outage_fleet_with, start_stub};

const N: u64 = 500;
const C: &str = "100";

async fn run(throttle: bool) -> (Value, f64, u64) {
    let (stub, url) = start_stub(&["--outage", "2s", "--capacity", C, "--pushback", "off"]);
    let extra: &[&str] = if throttle { &["--throttle"] } else { &[] };
    let report = outage_fleet_with(N, &url, extra).await;
    let count = |k: &str| report[k].as_u64().unwrap();
    assert_eq!(
        count("succeeded") + count("terminal") + count("exhausted"),
        N,
        "nothing is lost: {report}"
    );
    assert_eq!(count("terminal"), 0, "{report}");
    assert_eq!(report["strategy"]["throttle"], throttle);
    let arrivals = stub.stats().arrivals;
    assert_eq!(
        arrivals.len() as u64,
        count("calls"),
        "the stub saw every call"
    );
    (report, last_served_s(&arrivals), arrivals.len() as u64)
}

/// N = 500 workers of one process, a 2 s outage, then C = 100 requests/s
/// (physical limit 7 s), the simulator's outage policy at a 300 ms base
/// (full jitter, 6 attempts). Plain full jitter spends its attempts in the
/// outage and against the refusals after it (clients give up); the throttle
/// probes while the stub refuses everything (its workers wait at the gate,
/// not in attempts), then ramps: nobody gives up and the fleet makes fewer
/// calls. One process holds the whole fleet here: its ramp starts from the
/// calls it has waiting (about 500 / 40 s, not one call per probe interval),
/// so it drains within 1.6x the physical limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_throttle_loses_nobody_and_calls_less_than_plain_full_jitter() {
    let (throttled, t_drain, t_calls) = run(true).await;
    let (plain, p_drain, p_calls) = run(false).await;
    eprintln!(
        "throttle: drain {t_drain:.2} s, {t_calls} calls, {} exhausted; plain: drain {p_drain:.2} s, \
         {p_calls} calls, {} exhausted (limit 7 s)",
        throttled["exhausted"], plain["exhausted"]
    );
    assert_eq!(throttled["exhausted"].as_u64(), Some(0), "{throttled}");
    assert!(t_drain <= 1.6 * 7.0, "throttle drained at {t_drain:.2} s");
    assert!(plain["exhausted"].as_u64().unwrap() > 0, "{plain}");
    assert!(
        t_calls < p_calls,
        "throttle {t_calls} vs plain {p_calls} calls"
    );
}
