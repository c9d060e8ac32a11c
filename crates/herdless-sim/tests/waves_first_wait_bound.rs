//! In the reactivation scenario with an announced plan, an honoring
//! client's wait before its first call (`WaveGuard::first_wait`) is bounded
//! as the engine bounds a plan's delay: clamped to the policy's
//! `max_retry_after` (60 s) and counted against `max_elapsed` (120 s) from
//! the client's intended send time. Before, a plan of about 700 s made
//! clients succeed 702 s after they meant to call.

use herdless_sim::scenario::reactivation::{Fleet, ReactivationParams, run_one};

#[test]
fn an_announced_plans_first_wait_stays_within_the_policys_bounds() {
    // 20,000 clients at 30 calls/s: a plan of about 700 s.
    let p = ReactivationParams {
        clients: 20_000,
        capacity: 30,
        burst: 3,
        ..Default::default()
    };
    let f = run_one(&p, Fleet::AllHonor, "full+waves".parse().unwrap(), 1).unwrap();
    let bound = p.policy.max_elapsed().as_secs_f64() + 0.01;
    let max = f.latency_max_s.expect("some client succeeded");
    assert!(
        max <= bound,
        "a client succeeded {max} s after its intended send time, past max_elapsed {bound} s"
    );
}
