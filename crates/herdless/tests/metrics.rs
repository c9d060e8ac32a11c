//! Metrics (feature `metrics`): values recorded after known sequences, each
//! test with its own `DebuggingRecorder` installed for the test's thread only.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use herdless::engine::{Context, Engine, metrics as m};
use herdless::{
    AlwaysRetry, Breaker, Classification, ManualTimer, Policy, Retry, RetryBudget, RetryCause, Rng,
};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};

/// What a run recorded: `name` or `name{label=value}` to its value.
#[derive(Debug, Default)]
struct Recorded(BTreeMap<String, DebugValue>);

impl Recorded {
    fn counter(&self, key: &str) -> u64 {
        match self.0.get(key) {
            Some(DebugValue::Counter(n)) => *n,
            None => 0,
            other => panic!("{key}: not a counter: {other:?}"),
        }
    }
    fn gauge(&self, key: &str) -> Option<f64> {
        match self.0.get(key) {
            Some(DebugValue::Gauge(v)) => Some(v.into_inner()),
            None => None,
            other => panic!("{key}: not a gauge: {other:?}"),
        }
    }
    fn histogram(&self, key: &str) -> Vec<f64> {
        match self.0.get(key) {
            Some(DebugValue::Histogram(v)) => v.iter().map(|x| x.into_inner()).collect(),
            None => Vec::new(),
            other => panic!("{key}: not a histogram: {other:?}"),
        }
    }
}

/// Runs `f` with a fresh recorder local to this thread.
fn record<R>(f: impl FnOnce() -> R) -> (R, Recorded) {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let out = metrics::with_local_recorder(&recorder, f);
    let mut map = BTreeMap::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let key = key.key();
        let labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        let name = if labels.is_empty() {
            key.name().to_owned()
        } else {
            format!("{}{{{}}}", key.name(), labels.join(","))
        };
        map.insert(name, value);
    }
    (out, Recorded(map))
}

fn give_ups(reason: &str) -> String {
    format!("{}{{reason={reason}}}", m::GIVE_UPS)
}

#[test]
fn two_failures_then_a_success() {
    let timer = ManualTimer::new();
    let (out, rec) = record(|| {
        Retry::builder()
            .policy(Policy::default())
            .classifier(AlwaysRetry)
            .timer(timer.clone())
            .seed(7)
            .build()
            .call(|a| if a.number() < 3 { Err("503") } else { Ok(()) })
    });
    assert_eq!(out, Ok(()));
    assert_eq!(rec.counter(m::ATTEMPTS), 3);
    assert_eq!(rec.counter(m::RETRIES), 2);
    assert_eq!(rec.counter(m::RETRY_SUCCESSES), 1);
    for reason in ["terminal", "max_attempts", "max_elapsed", "retry_budget"] {
        assert_eq!(rec.counter(&give_ups(reason)), 0, "{reason}");
    }
    let sleeps: Vec<f64> = timer.sleeps().iter().map(Duration::as_secs_f64).collect();
    assert_eq!(sleeps.len(), 2);
    assert_eq!(rec.histogram(m::RETRY_SLEEP), sleeps);
    assert_eq!(rec.gauge(m::BUDGET_TOKENS), None); // no budget, no gauge
    assert_eq!(rec.gauge(m::BREAKER_OPEN), None);
}

#[test]
fn a_first_try_success_counts_one_attempt_only() {
    let (_, rec) = record(|| Retry::new(Policy::default(), AlwaysRetry).call(|_| Ok::<_, ()>(1)));
    assert_eq!(rec.counter(m::ATTEMPTS), 1);
    assert_eq!(rec.counter(m::RETRIES), 0);
    assert_eq!(rec.counter(m::RETRY_SUCCESSES), 0);
    assert!(rec.histogram(m::RETRY_SLEEP).is_empty());
}

#[test]
fn a_terminal_error() {
    let (_, rec) = record(|| {
        Retry::builder()
            .policy(Policy::default())
            .classifier(|_: &u16| Classification::terminal())
            .timer(ManualTimer::new())
            .build()
            .call(|_| Err::<(), _>(404))
    });
    assert_eq!(rec.counter(m::ATTEMPTS), 1);
    assert_eq!(rec.counter(m::RETRIES), 0);
    assert_eq!(rec.counter(&give_ups("terminal")), 1);
}

#[test]
fn attempts_run_out() {
    let policy = Policy::builder().max_attempts(4).build().unwrap();
    let timer = ManualTimer::new();
    let (_, rec) = record(|| {
        Retry::builder()
            .policy(policy)
            .classifier(AlwaysRetry)
            .timer(timer.clone())
            .build()
            .call(|_| Err::<(), _>("503"))
    });
    assert_eq!(rec.counter(m::ATTEMPTS), 4);
    assert_eq!(rec.counter(m::RETRIES), 3);
    assert_eq!(rec.counter(&give_ups("max_attempts")), 1);
    assert_eq!(rec.histogram(m::RETRY_SLEEP).len(), 3);
}

#[test]
fn an_exhausted_shared_budget_and_its_gauge() {
    let budget = Arc::new(
        RetryBudget::builder()
            .aws()
            .max_tokens(12.0)
            .spread(0.0)
            .build()
            .unwrap(),
    );
    let (out, rec) = record(|| {
        Retry::builder()
            .policy(Policy::default())
            .classifier(AlwaysRetry)
            .timer(ManualTimer::new())
            .budget(budget.clone())
            .build()
            .call(|_| Err::<(), _>("503"))
    });
    assert_eq!(out.unwrap_err().attempts(), 3); // two retries at 5 tokens, then 2 < 5
    assert_eq!(rec.counter(m::ATTEMPTS), 3);
    assert_eq!(rec.counter(m::RETRIES), 2);
    assert_eq!(rec.counter(&give_ups("retry_budget")), 1);
    assert_eq!(rec.gauge(m::BUDGET_TOKENS), Some(budget.tokens()));
    assert_eq!(budget.tokens(), 2.0);
}

#[test]
fn the_breaker_gauge_follows_its_state() {
    let breaker = Arc::new(Breaker::new(1));
    let once = Policy::builder().max_attempts(1).build().unwrap();
    let retry = Retry::builder()
        .policy(once)
        .classifier(AlwaysRetry)
        .timer(ManualTimer::new())
        .breaker(breaker.clone())
        .build();
    let (_, opened) = record(|| retry.call(|_| Err::<(), _>("503")));
    assert_eq!(opened.gauge(m::BREAKER_OPEN), Some(1.0));
    assert_eq!(opened.counter(&give_ups("max_attempts")), 1);
    let (_, closed) = record(|| retry.call(|_| Ok::<_, ()>(())));
    assert_eq!(closed.gauge(m::BREAKER_OPEN), Some(0.0));
    assert_eq!(closed.counter(m::ATTEMPTS), 1);
}

#[test]
fn a_hand_written_driver_records_through_the_context_unless_turned_off() {
    let policy = Policy::default();
    let drive = |cx: &Context<'_>| {
        let mut call = Engine::new(Duration::ZERO);
        call.begin();
        let mut rng = Rng::with_seed(1);
        call.failed(
            cx,
            Duration::ZERO,
            Classification::retryable(),
            RetryCause::Error,
            &mut rng,
        );
        call.begin();
        call.succeeded(cx, Duration::from_secs(1));
    };
    let (_, on) = record(|| drive(&Context::new(&policy)));
    assert_eq!(on.counter(m::ATTEMPTS), 2);
    assert_eq!(on.counter(m::RETRY_SUCCESSES), 1);
    let (_, off) = record(|| drive(&Context::new(&policy).metrics(false)));
    assert!(off.0.is_empty(), "{off:?}");
}

#[test]
fn a_give_up_waiting_on_the_breaker_counts_no_attempt() {
    let policy = Policy::builder()
        .max_elapsed(Duration::from_secs(1))
        .build()
        .unwrap();
    let breaker = Breaker::new(1).probe_wait(Duration::from_secs(5));
    let (gate, rec) = record(|| {
        let cx = Context::new(&policy).breaker(&breaker);
        let mut rng = Rng::with_seed(3);
        let mut prober = Engine::new(Duration::ZERO);
        prober.begin();
        let mut call = Engine::new(Duration::ZERO);
        call.begin();
        let d = call.failed(
            &cx,
            Duration::ZERO,
            Classification::retryable(),
            RetryCause::Error,
            &mut rng,
        );
        assert!(matches!(d, herdless::engine::Decision::Retry { .. }));
        // The breaker is open: the other call takes the probe, this one waits.
        assert_eq!(
            prober.ready(&cx, Duration::ZERO, &mut rng),
            herdless::engine::Gate::Go
        );
        call.ready(&cx, Duration::from_secs(1), &mut rng)
    });
    assert!(matches!(gate, herdless::engine::Gate::GiveUp(_)));
    assert_eq!(rec.counter(m::ATTEMPTS), 1);
    assert_eq!(rec.counter(m::RETRIES), 1);
    assert_eq!(rec.counter(&give_ups("max_elapsed")), 1);
    assert_eq!(rec.gauge(m::BREAKER_OPEN), Some(1.0));
}

#[test]
fn a_hedge_counts_when_sent_and_when_it_wins() {
    use herdless::engine::{CopyFailed, HedgeGate, Hedging};
    use herdless::hedge::Hedge;
    let ms = Duration::from_millis;
    let policy = Policy::default();
    let hedge = Hedge::builder()
        .delay(ms(10))
        .max_hedges(2)
        .build()
        .unwrap();
    let ((), rec) = record(|| {
        let cx = Context::new(&policy);
        let mut rng = Rng::with_seed(1);
        let mut call = Engine::new(Duration::ZERO);
        let mut hedging = Hedging::new();
        hedging.round(&mut call);
        for at in [10, 20] {
            let gate = hedging.send(&mut call, &cx, &hedge, ms(at), true, &mut rng);
            assert!(matches!(gate, HedgeGate::Send { .. }));
        }
        // Copy 2 fails while the others are out; copy 3 wins.
        assert_eq!(
            hedging.failed(&cx, ms(22), Classification::retryable()),
            CopyFailed::Wait
        );
        hedging.won(&mut call, &cx, &hedge, ms(25), 3, ms(20));
    });
    assert_eq!(rec.counter(m::HEDGES), 2);
    assert_eq!(rec.counter(m::HEDGE_WINS), 1);
    // The failed copy and the winner ended; the dropped one did not.
    assert_eq!(rec.counter(m::ATTEMPTS), 2);
    assert_eq!(rec.counter(m::RETRIES), 0);
}
