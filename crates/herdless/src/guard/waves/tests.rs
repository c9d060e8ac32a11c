use std::time::Duration;

use super::*;
use crate::engine::{Context, Decision, Engine};
use crate::{Classification, Policy, RetryCause};

const S: Duration = Duration::from_secs(1);

/// A guard whose client falls in wave `wave` of `plan`.
fn guard_in(plan: WavePlan, wave: u32) -> WaveGuard {
    (0..)
        .map(|i| WaveGuard::new(format!("c-{i}")))
        .find(|g| plan.wave_of(g.key()) == wave)
        .unwrap()
}

fn plan(start_ms: i64) -> WavePlan {
    WavePlan::new(start_ms, 5, 1_000, 1234).unwrap()
}

#[test]
fn before_its_wave_a_client_draws_within_it() {
    let g = guard_in(plan(500), 3);
    let mut rng = Rng::with_seed(1);
    for _ in 0..1_000 {
        g.lock().followed = None;
        let d = g.next(plan(500), &mut rng);
        assert!(
            d >= Duration::from_millis(3_500) && d < Duration::from_millis(4_500),
            "{d:?}"
        );
    }
}

#[test]
fn learning_the_plan_in_its_wave_a_client_draws_within_the_rest_of_it() {
    // The plan began 3.7 s ago: wave 3 has 0.3 s left.
    let g = guard_in(plan(-3_700), 3);
    let mut rng = Rng::with_seed(2);
    let d = g.next(plan(-3_700), &mut rng);
    assert!(d < Duration::from_millis(300), "{d:?}");
}

#[test]
fn a_client_that_missed_its_wave_rejoins_the_next_one() {
    // Learned 4.2 s in: its wave (1) is over, wave 4 is on; it joins wave 5.
    let g = guard_in(plan(-4_200), 1);
    let mut rng = Rng::with_seed(3);
    let d = g.next(plan(-4_200), &mut rng);
    assert!(
        d >= Duration::from_millis(800) && d < Duration::from_millis(1_800),
        "{d:?}"
    );
}

#[test]
fn turned_away_again_under_the_same_plan_it_rejoins_the_next_wave() {
    let g = guard_in(plan(0), 2);
    let mut rng = Rng::with_seed(4);
    let first = g.next(plan(0), &mut rng);
    assert!(first >= 2 * S && first < 3 * S);
    // Refused when it came, in its wave: the plan again, seen then.
    let again = plan(0).later(first);
    let d = g.next(again, &mut rng);
    assert!(first + d >= 3 * S && first + d < 4 * S, "{:?}", first + d);
    // Another plan (another salt): judged afresh.
    let other = WavePlan::new(0, 5, 1_000, 99).unwrap();
    let w = other.wave_of(g.key());
    let d = g.next(other, &mut rng);
    assert!(d >= S * w && d < S * (w + 1));
}

#[test]
fn draws_fill_the_wave_evenly() {
    let g = guard_in(plan(0), 0);
    let mut rng = Rng::with_seed(5);
    let mut tenths = [0u32; 10];
    for _ in 0..20_000 {
        g.lock().followed = None;
        let d = g.next(plan(0), &mut rng);
        tenths[(d.as_millis() / 100) as usize] += 1;
    }
    // 2,000 expected per tenth; chi-square with 9 degrees of freedom, 1 %: 21.67.
    let chi: f64 = tenths
        .iter()
        .map(|&n| (f64::from(n) - 2_000.0).powi(2) / 2_000.0)
        .sum();
    assert!(chi < 21.67, "{tenths:?} {chi}");
}

#[test]
fn the_engine_waits_for_the_wave_exactly_and_without_a_plan_as_before() {
    let policy = Policy::builder()
        .base(Duration::from_millis(10))
        .build()
        .unwrap();
    let g = guard_in(plan(1_000), 4);
    let cx = Context::new(&policy).waves(&g).trace(false);
    let mut rng = Rng::with_seed(6);
    let mut call = Engine::new(Duration::ZERO);
    call.begin();
    g.observe(Some(plan(1_000)));
    // The answer also said Retry-After 1 s: the wave wins, unspread.
    let d = call.failed(
        &cx,
        Duration::ZERO,
        Classification::retry_after(S),
        RetryCause::Error,
        &mut rng,
    );
    let Decision::Retry {
        delay,
        honored_retry_after,
    } = d
    else {
        panic!("{d:?}")
    };
    assert!(honored_retry_after);
    assert!(delay >= 5 * S && delay < 6 * S, "{delay:?}");
    assert!(g.pending().is_none(), "taken");
    // The next failure carried no plan: the policy's own jitter (≤ 20 ms).
    call.begin();
    let d = call.failed(
        &cx,
        delay,
        Classification::retryable(),
        RetryCause::Error,
        &mut rng,
    );
    let Decision::Retry {
        delay,
        honored_retry_after,
    } = d
    else {
        panic!("{d:?}")
    };
    assert!(!honored_retry_after && delay <= Duration::from_millis(20));
}

#[test]
fn a_wave_past_the_clamp_or_the_elapsed_limit_is_bounded_like_any_delay() {
    let policy = Policy::builder()
        .max_retry_after(Duration::from_secs(2))
        .max_elapsed(Duration::from_secs(30))
        .build()
        .unwrap();
    let far = WavePlan::new(60_000, 1, 1_000, 8).unwrap();
    let g = WaveGuard::new("x");
    let cx = Context::new(&policy).waves(&g).trace(false);
    let mut rng = Rng::with_seed(7);
    let mut call = Engine::new(Duration::ZERO);
    call.begin();
    g.observe(Some(far));
    let d = call.failed(
        &cx,
        Duration::ZERO,
        Classification::retryable(),
        RetryCause::Error,
        &mut rng,
    );
    assert_eq!(
        d,
        Decision::Retry {
            delay: 2 * S,
            honored_retry_after: true
        }
    );
    // Near the elapsed limit, a wave past it gives up before sleeping.
    call.begin();
    g.observe(Some(far));
    let d = call.failed(
        &cx,
        Duration::from_secs(29),
        Classification::retryable(),
        RetryCause::Error,
        &mut rng,
    );
    assert_eq!(d, Decision::GiveUp(crate::GiveUp::MaxElapsed));
}

/// A plan that had ended when its answer came (a stale or hostile
/// announcement: a planner never announces one) says nothing about when to
/// come: the engine decides as without it, instead of extrapolating waves
/// past the plan's end (a day-old plan of 1 ms waves would retry at once).
#[test]
fn an_ended_plan_is_ignored_and_the_failure_decided_as_without_it() {
    let policy = Policy::builder()
        .base(Duration::from_millis(400))
        .build()
        .unwrap();
    let ended = WavePlan::new(-86_400_000, 1, 1, 5).unwrap();
    let g = WaveGuard::new("w1");
    let cx = Context::new(&policy).waves(&g).trace(false);
    let mut rng = Rng::with_seed(8);
    let mut call = Engine::new(Duration::ZERO);
    call.begin();
    g.observe(Some(ended));
    // With a Retry-After of 1 s: that, spread as usual.
    let d = call.failed(
        &cx,
        Duration::ZERO,
        Classification::retry_after(S),
        RetryCause::Error,
        &mut rng,
    );
    let Decision::Retry { delay, .. } = d else {
        panic!("{d:?}")
    };
    assert!(delay >= S && delay <= S + S / 10, "{delay:?}");
    assert!(g.pending().is_none(), "taken all the same");
    // The first wait before a first call: none.
    g.observe(Some(ended));
    assert_eq!(
        g.first_wait(Duration::ZERO, &Policy::default(), &mut rng),
        None
    );
    // A plan ending exactly at its answer is over too; one that ends 1 ms
    // later is not (its next wave, past its end, is drawn).
    let just = WavePlan::new(-1_000, 1, 1_000, 5).unwrap();
    g.observe(Some(just));
    assert_eq!(
        g.first_wait(Duration::ZERO, &Policy::default(), &mut rng),
        None
    );
    let open = WavePlan::new(-999, 1, 1_000, 5).unwrap();
    g.observe(Some(open));
    assert!(
        g.first_wait(Duration::ZERO, &Policy::default(), &mut rng)
            .is_some()
    );
}
