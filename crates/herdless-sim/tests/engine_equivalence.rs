//! The simulator measures what ships: for the same seed and the same sequence
//! of failures, a simulated client and the blocking executor (`Retry::call`
//! with a `ManualTimer`) sleep the same durations and end the same way,
//! because both drive the library's one decision engine.

use std::cell::RefCell;
use std::time::Duration;

use herdless::rng::call_seed;
use herdless::{Classification, GiveUp, Jitter, ManualTimer, Policy, Retry};
use herdless_sim::endpoint::Endpoint;
use herdless_sim::event_loop::{FleetOutcome, run_fleet};
use herdless_sim::{Reply, StrategyKind};

/// The answers one client gets, in order (`None` once the script runs out:
/// success), and the times of the calls the simulator made.
struct Scripted {
    script: Vec<Option<Duration>>,
    calls_ns: Vec<u64>,
}

impl Endpoint for Scripted {
    fn call(&mut self, now_ns: u64, _client: u32, attempt: u32) -> Reply {
        self.calls_ns.push(now_ns);
        match self.script.get(attempt as usize - 1) {
            Some(&retry_after) => Reply::Rejected { retry_after },
            None => Reply::Ok,
        }
    }
}

/// How a call ended: `None` for a success, else the give-up reason.
fn sim_end(out: &FleetOutcome) -> Option<GiveUp> {
    match (
        out.succeeded,
        out.gave_up_max_attempts,
        out.gave_up_max_elapsed,
    ) {
        (1, 0, 0) => None,
        (0, 1, 0) => Some(GiveUp::MaxAttempts),
        (0, 0, 1) => Some(GiveUp::MaxElapsed),
        other => panic!("unexpected simulated outcome {other:?}"),
    }
}

fn simulate(
    policy: &Policy,
    script: &[Option<Duration>],
    seed: u64,
) -> (Vec<Duration>, Option<GiveUp>) {
    let strategy = StrategyKind::Backoff(policy.jitter()).resolve(policy);
    assert_eq!(strategy.policy(), policy);
    let mut endpoint = Scripted {
        script: script.to_vec(),
        calls_ns: Vec::new(),
    };
    // The executor's first call of a retrier seeded `seed` draws from `call_seed(seed, 0)`.
    let out = run_fleet(&[0], &mut endpoint, &strategy, call_seed(seed, 0)).unwrap();
    let sleeps = endpoint
        .calls_ns
        .windows(2)
        .map(|w| Duration::from_nanos(w[1] - w[0]))
        .collect();
    (sleeps, sim_end(&out))
}

fn execute(
    policy: &Policy,
    script: &[Option<Duration>],
    seed: u64,
) -> (Vec<Duration>, Option<GiveUp>) {
    let timer = ManualTimer::new();
    let retry = Retry::builder()
        .policy(*policy)
        .classifier(|after: &Option<Duration>| Classification::Retryable { after: *after })
        .seed(seed)
        .timer(timer.clone())
        .build();
    let answers = RefCell::new(script.iter());
    let result = retry.call(|_| match answers.borrow_mut().next() {
        Some(&after) => Err(after),
        None => Ok(()),
    });
    (timer.sleeps(), result.err().map(|e| e.reason()))
}

fn policies() -> Vec<Policy> {
    let short = |j: Jitter| {
        Policy::builder()
            .jitter(j)
            .base(Duration::from_millis(100))
            .cap(Duration::from_secs(2))
            .max_attempts(8)
            .max_elapsed(Duration::from_secs(5))
            .max_retry_after(Duration::from_secs(3))
            .build()
            .unwrap()
    };
    let mut all: Vec<Policy> = Jitter::ALL.into_iter().map(short).collect();
    all.extend(Jitter::ALL.map(|j| Policy::default().to_builder().jitter(j).build().unwrap()));
    all
}

fn scripts() -> Vec<Vec<Option<Duration>>> {
    let s = Duration::from_secs;
    vec![
        vec![None; 3],                            // fails 3 times, then succeeds
        vec![None; 40],                           // fails until a limit ends it
        vec![None, Some(s(2)), None, Some(s(1))], // Retry-After honored in between
        vec![Some(s(120)); 40],                   // a hostile Retry-After: clamped
        vec![Some(Duration::ZERO), None],         // a zero Retry-After: the jitter
    ]
}

#[test]
fn the_simulator_and_the_blocking_executor_make_the_same_decisions() {
    let mut compared = 0;
    for policy in policies() {
        for script in scripts() {
            for seed in 0..20 {
                let sim = simulate(&policy, &script, seed);
                let exec = execute(&policy, &script, seed);
                assert_eq!(
                    sim, exec,
                    "policy {policy:?}, script {script:?}, seed {seed}"
                );
                compared += sim.0.len();
            }
        }
    }
    assert!(compared > 1_000, "compared only {compared} sleeps");
}

#[test]
fn both_give_up_for_the_same_reasons() {
    let p = policies();
    // 8 attempts within 5 s of 100 ms..2 s delays (none jitter: 0.1+0.2+0.4+0.8
    // +1.6 = 3.1 s, then 2 s passes 5 s): the elapsed limit ends it first.
    assert_eq!(simulate(&p[0], &[None; 40], 0).1, Some(GiveUp::MaxElapsed));
    // With jitter, the attempt limit or the elapsed limit, depending on the
    // draws; both paths agree on which.
    let reasons: Vec<Option<GiveUp>> = (0..40)
        .map(|seed| simulate(&p[1], &[None; 40], seed).1)
        .collect();
    for (seed, r) in reasons.iter().enumerate() {
        assert_eq!(*r, execute(&p[1], &[None; 40], seed as u64).1);
    }
    // The default policy's 6 attempts end by the attempt limit.
    assert_eq!(simulate(&p[6], &[None; 40], 3).1, Some(GiveUp::MaxAttempts));
}
