//! The adaptive throttle as the executors drive it: a gate before every
//! attempt, the first included, on the timer's clock (a `ManualTimer`).

use std::sync::Arc;
use std::time::Duration;

use herdless::engine::{Context, Engine, Gate};
use herdless::guard::Throttle;
use herdless::{AlwaysRetry, GiveUp, Jitter, ManualTimer, Policy, Retry, Rng};

fn policy(max_attempts: u32) -> Policy {
    Policy::builder()
        .base(Duration::from_millis(10))
        .cap(Duration::from_millis(10))
        .jitter(Jitter::None)
        .max_attempts(max_attempts)
        .max_elapsed(Duration::from_secs(60))
        .build()
        .unwrap()
}

/// A throttle that probes after 3 refusals, every 100 ms doubling to 400 ms.
fn probing() -> Throttle {
    Throttle::builder()
        .probe_min(Duration::from_millis(100))
        .probe_max(Duration::from_millis(400))
        .threshold(3)
        .build()
        .unwrap()
}

#[test]
fn a_first_attempt_waits_for_the_processes_turn() {
    let timer = ManualTimer::new();
    let throttle = Arc::new(Throttle::builder().initial(1).build().unwrap());
    let retry = Retry::builder()
        .policy(policy(3))
        .classifier(AlwaysRetry)
        .timer(timer.clone())
        .throttle(throttle.clone())
        .build();
    // The one initial call goes at once.
    let first = retry.call(|a| Ok::<_, &str>(a.elapsed())).unwrap();
    assert_eq!(first, Duration::ZERO);
    assert!(timer.sleeps().is_empty());
    // The next call's first attempt waits its turn (10 per second).
    let second = retry
        .call(|a| Ok::<_, &str>((a.number(), a.elapsed())))
        .unwrap();
    assert_eq!(timer.sleeps(), [Duration::from_millis(100)]);
    assert_eq!(second, (1, Duration::from_millis(100)));
}

#[test]
fn without_a_throttle_nothing_waits_before_a_first_attempt() {
    let timer = ManualTimer::new();
    let retry = Retry::builder()
        .policy(policy(3))
        .classifier(AlwaysRetry)
        .timer(timer.clone())
        .build();
    for _ in 0..100 {
        retry.call(|_| Ok::<_, &str>(())).unwrap();
    }
    assert!(timer.sleeps().is_empty());
}

#[test]
fn a_dead_endpoint_is_probed_at_the_probe_interval_not_at_the_backoff() {
    let timer = ManualTimer::new();
    let throttle = probing();
    let retry = Retry::builder()
        .policy(policy(12))
        .classifier(AlwaysRetry)
        .timer(timer.clone())
        .throttle(throttle)
        .build();
    let mut at = Vec::new();
    let err = retry
        .call(|a| {
            at.push(a.elapsed());
            Err::<(), _>("503")
        })
        .unwrap_err();
    assert_eq!(err.reason(), GiveUp::MaxAttempts);
    assert_eq!(err.attempts(), 12);
    // Three refusals 10 ms apart (the backoff), then probes 100, 200, 400,
    // 400... ms apart (the throttle), each interval jittered in its upper
    // half.
    let gaps: Vec<u128> = at.windows(2).map(|w| (w[1] - w[0]).as_millis()).collect();
    assert_eq!(gaps[..2], [10, 10]);
    let full = [100, 200, 400, 400, 400, 400, 400, 400, 400];
    for (gap, full) in gaps[2..].iter().zip(full) {
        assert!((full / 2..=full).contains(gap), "{gaps:?}");
    }
    assert_eq!(gaps.len(), 2 + full.len());
}

/// The gate before a first attempt makes the call's generator when nothing
/// has yet: from the seed, so a seeded call's throttled waits (the probes'
/// jitter) repeat run after run.
#[test]
fn a_seeded_throttled_call_repeats_its_waits() {
    let run = || {
        let timer = ManualTimer::new();
        let throttle = probing();
        let retry = Retry::builder()
            .policy(policy(12))
            .classifier(AlwaysRetry)
            .timer(timer.clone())
            .throttle(throttle)
            .seed(42)
            .build();
        let _ = retry.call(|_| Err::<(), _>("503"));
        timer.sleeps()
    };
    let first = run();
    assert!(
        first.iter().any(|d| *d > Duration::from_millis(10)),
        "the throttle's jittered waits beside the backoff: {first:?}"
    );
    assert_eq!(first, run());
}

#[test]
fn a_shared_throttle_paces_every_retrier_holding_it() {
    let timer = ManualTimer::new();
    let throttle = Arc::new(Throttle::builder().initial(2).build().unwrap());
    let make = || {
        Retry::builder()
            .policy(policy(3))
            .classifier(AlwaysRetry)
            .timer(timer.clone())
            .throttle(throttle.clone())
            .build()
    };
    let (a, b) = (make(), make());
    a.call(|_| Ok::<_, &str>(())).unwrap();
    b.call(|_| Ok::<_, &str>(())).unwrap();
    assert!(timer.sleeps().is_empty(), "two tokens for two calls");
    a.call(|_| Ok::<_, &str>(())).unwrap();
    assert_eq!(timer.sleeps(), [Duration::from_millis(50)]); // 20 per second
}

#[test]
fn the_async_executor_gates_its_first_attempt_too() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let timer = ManualTimer::new();
    let retry = Retry::builder()
        .policy(policy(3))
        .classifier(AlwaysRetry)
        .timer(timer.clone())
        .throttle(Throttle::builder().initial(1).build().unwrap())
        .build();
    rt.block_on(async {
        retry
            .call_async(|_| async { Ok::<_, &str>(()) })
            .await
            .unwrap();
        let n = retry
            .call_async(|a| async move { Ok::<_, &str>(a.number()) })
            .await
            .unwrap();
        assert_eq!(n, 1);
    });
    assert_eq!(timer.sleeps(), [Duration::from_millis(100)]);
}

#[test]
fn the_engine_gates_a_first_attempt_and_never_gives_it_up() {
    let p = Policy::builder()
        .max_elapsed(Duration::from_millis(30))
        .build()
        .unwrap();
    let t = Throttle::builder().initial(1).build().unwrap();
    let cx = Context::new(&p).throttle(&t);
    let mut rng = Rng::with_seed(1);
    let mut a = Engine::new(Duration::ZERO);
    assert_eq!(a.ready(&cx, Duration::ZERO, &mut rng), Gate::Go);
    let mut b = Engine::new(Duration::ZERO);
    // Its turn is 100 ms away, past the 30 ms limit: it waits what is left...
    assert_eq!(
        b.ready(&cx, Duration::ZERO, &mut rng),
        Gate::Wait(Duration::from_millis(30))
    );
    // ...and at the limit it goes.
    assert_eq!(b.ready(&cx, Duration::from_millis(30), &mut rng), Gate::Go);
}
