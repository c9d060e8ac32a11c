//! The half-open probe breaker: exactly one probe at a time, under threads and
//! through the async executor.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use herdless::guard::breaker::Admission;
use herdless::{AlwaysRetry, AsyncSleep, Breaker, Clock, GiveUp, ManualTimer, Policy, Retry};

#[test]
fn exactly_one_probe_at_a_time_under_threads() {
    const THREADS: usize = 8;
    let breaker = Arc::new(Breaker::new(3));
    for _ in 0..3 {
        breaker.record_failure();
    }
    let in_probe = Arc::new(AtomicU32::new(0));
    let overlaps = Arc::new(AtomicU32::new(0));
    let probes = Arc::new(AtomicU64::new(0));
    let waits = Arc::new(AtomicU64::new(0));
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let (b, inp, ov, pr, wt, bar) = (
                breaker.clone(),
                in_probe.clone(),
                overlaps.clone(),
                probes.clone(),
                waits.clone(),
                barrier.clone(),
            );
            std::thread::spawn(move || {
                bar.wait();
                for i in 0..20_000u32 {
                    match b.admit() {
                        Admission::Probe(p) => {
                            if inp.fetch_add(1, Ordering::SeqCst) != 0 {
                                ov.fetch_add(1, Ordering::SeqCst);
                            }
                            pr.fetch_add(1, Ordering::SeqCst);
                            std::thread::yield_now(); // hold the probe a while
                            inp.fetch_sub(1, Ordering::SeqCst);
                            if i % 2 == 0 {
                                p.failed();
                            } else {
                                drop(p); // released without an outcome
                            }
                        }
                        Admission::Wait => {
                            wt.fetch_add(1, Ordering::SeqCst);
                        }
                        Admission::Closed => panic!("the breaker never closes in this test"),
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(overlaps.load(Ordering::SeqCst), 0, "two probes overlapped");
    assert!(probes.load(Ordering::SeqCst) > 100);
    assert!(waits.load(Ordering::SeqCst) > 0);
}

/// tokio's clock and sleep (works under `tokio::time::pause`) without
/// depending on the crate's `tokio` feature.
#[derive(Debug, Clone, Copy)]
struct Tokio;

impl Clock for Tokio {
    fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }
}

impl AsyncSleep for Tokio {
    type Sleep = tokio::time::Sleep;
    fn sleep(&self, d: Duration) -> Self::Sleep {
        tokio::time::sleep(d)
    }
}

#[tokio::test(start_paused = true)]
async fn executor_sends_one_probe_at_a_time_during_an_outage() {
    // 50 calls start together against an endpoint that is down for 10 s. Once
    // the breaker opens, at most one retry is in flight at any moment while the
    // endpoint is down; every call succeeds after recovery.
    let start = tokio::time::Instant::now();
    let down_until = start + Duration::from_secs(10);
    let breaker = Arc::new(Breaker::new(5).probe_wait(Duration::from_millis(200)));
    let policy = Policy::builder()
        .base(Duration::from_millis(100))
        .cap(Duration::from_secs(1))
        .max_attempts(1000)
        .max_elapsed(Duration::from_secs(60))
        .build()
        .unwrap();
    let retry = Arc::new(
        Retry::builder()
            .policy(policy)
            .classifier(AlwaysRetry)
            .timer(Tokio)
            .breaker(breaker.clone())
            .build(),
    );
    let retries_in_flight = Arc::new(AtomicU32::new(0));
    let overlap = Arc::new(AtomicBool::new(false));
    let retries_while_down = Arc::new(AtomicU32::new(0));
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let (retry, rif, ov, rwd) = (
            retry.clone(),
            retries_in_flight.clone(),
            overlap.clone(),
            retries_while_down.clone(),
        );
        tasks.push(tokio::spawn(async move {
            retry
                .call_async(|attempt| {
                    let (rif, ov, rwd) = (rif.clone(), ov.clone(), rwd.clone());
                    async move {
                        let down = tokio::time::Instant::now() < down_until;
                        let counted = down && attempt.is_retry();
                        if counted {
                            rwd.fetch_add(1, Ordering::SeqCst);
                            if rif.fetch_add(1, Ordering::SeqCst) != 0 {
                                ov.store(true, Ordering::SeqCst);
                            }
                        }
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        if counted {
                            rif.fetch_sub(1, Ordering::SeqCst);
                        }
                        if down { Err("503") } else { Ok(()) }
                    }
                })
                .await
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), Ok(()));
    }
    assert!(
        !overlap.load(Ordering::SeqCst),
        "two retries overlapped while down"
    );
    // One probe at a time for 10 s, each taking 50 ms plus a gap: far fewer
    // than the 50 calls × ~14 retries plain backoff would send.
    let n = retries_while_down.load(Ordering::SeqCst);
    assert!((10..=200).contains(&n), "{n} retries while down");
    assert!(!breaker.is_open());
}

#[test]
fn waiting_behind_a_probe_counts_against_max_elapsed() {
    let breaker = Arc::new(Breaker::new(1).probe_wait(Duration::from_secs(1)));
    breaker.record_failure();
    let Admission::Probe(held) = breaker.admit() else {
        panic!("probe")
    };
    let timer = ManualTimer::new();
    let policy = Policy::builder()
        .base(Duration::from_millis(100))
        .max_elapsed(Duration::from_secs(5))
        .build()
        .unwrap();
    let err = Retry::builder()
        .policy(policy)
        .classifier(AlwaysRetry)
        .timer(timer.clone())
        .breaker(breaker.clone())
        .build()
        .call(|_| Err::<(), _>("503"))
        .unwrap_err();
    assert_eq!(err.reason(), GiveUp::MaxElapsed);
    assert_eq!(
        err.attempts(),
        1,
        "never probed while another probe was out"
    );
    let sleeps = timer.sleeps();
    assert!(sleeps.len() >= 5, "it waited, jittered: {sleeps:?}");
    assert!(
        sleeps[1..]
            .iter()
            .all(|w| *w >= Duration::from_millis(500) && *w <= Duration::from_secs(1))
    );
    assert!(timer.elapsed() <= Duration::from_secs(5));
    drop(held);
}

/// `probe_wait(Duration::ZERO)` is raised to `Breaker::MIN_PROBE_WAIT` (1 ms):
/// a call parked behind a held probe for 20 ms re-checks at most 40 times
/// (each wait is at least 0.5 ms) instead of spinning.
#[test]
fn a_zero_probe_wait_does_not_spin_behind_a_held_probe() {
    let breaker = Arc::new(Breaker::new(1).probe_wait(Duration::ZERO));
    assert_eq!(breaker.probe_wait_time(), Breaker::MIN_PROBE_WAIT);
    breaker.record_failure();
    let Admission::Probe(held) = breaker.admit() else {
        panic!("probe")
    };
    let timer = ManualTimer::new();
    let policy = Policy::builder()
        .base(Duration::from_millis(1))
        .max_elapsed(Duration::from_millis(20))
        .build()
        .unwrap();
    let err = Retry::builder()
        .policy(policy)
        .classifier(AlwaysRetry)
        .timer(timer.clone())
        .breaker(breaker.clone())
        .build()
        .call(|_| Err::<(), _>("503"))
        .unwrap_err();
    assert_eq!(err.reason(), GiveUp::MaxElapsed);
    let sleeps = timer.sleeps();
    let waits = &sleeps[1..]; // the first sleep is the retry's own delay
    assert!(
        !waits.is_empty() && waits.len() <= 40,
        "{} waits in 20 ms",
        waits.len()
    );
    assert!(
        waits
            .iter()
            .all(|w| *w >= Duration::from_micros(500) && *w <= Duration::from_millis(1))
    );
    drop(held);
}

/// With a release window, the retries held behind the probe do not all go
/// at their next check once the probe succeeds: each waits a uniform share
/// of the rest of the window, so they come back spread over it.
#[test]
fn a_closing_breaker_releases_its_held_retries_over_the_window() {
    use herdless::engine::{Context, Engine, Gate};
    use herdless::{Breaker, Classification, Policy, RetryCause, Rng};
    use std::time::Duration;
    let policy = Policy::builder()
        .max_elapsed(Duration::from_secs(600))
        .build()
        .unwrap();
    let breaker = Breaker::new(1).release_window(Duration::from_secs(4));
    let cx = Context::new(&policy).breaker(&breaker).trace(false);
    let mut rng = Rng::with_seed(7);
    let secs = Duration::from_secs;
    // 200 calls fail once (the breaker opens); one probes, the others are held.
    let mut calls: Vec<Engine> = (0..200).map(|_| Engine::new(Duration::ZERO)).collect();
    for c in &mut calls {
        c.begin();
        let _ = c.failed(
            &cx,
            Duration::ZERO,
            Classification::retryable(),
            RetryCause::Error,
            &mut rng,
        );
    }
    let (probe, held) = calls.split_at_mut(1);
    assert_eq!(probe[0].ready(&cx, secs(1), &mut rng), Gate::Go);
    for c in held.iter_mut() {
        assert!(matches!(c.ready(&cx, secs(1), &mut rng), Gate::Wait(_)));
    }
    // The probe succeeds at 2 s: the breaker closes, the window runs to 6 s.
    probe[0].begin();
    probe[0].succeeded(&cx, secs(2));
    // Every held call re-checks at 2.5 s: each waits up to the window's end.
    let releases: Vec<Duration> = held
        .iter_mut()
        .map(
            |c| match c.ready(&cx, Duration::from_millis(2_500), &mut rng) {
                Gate::Wait(w) => Duration::from_millis(2_500) + w,
                other => panic!("{other:?}"),
            },
        )
        .collect();
    assert!(releases.iter().all(|r| *r <= secs(6)));
    let per_second = |from: u64| {
        releases
            .iter()
            .filter(|r| (secs(from)..secs(from + 1)).contains(*r))
            .count()
    };
    for s in 3..6 {
        assert!(
            (30..=75).contains(&per_second(s)),
            "{s} s: {}",
            per_second(s)
        );
    }
    // After that wait they go.
    for (c, r) in held.iter_mut().zip(&releases) {
        assert_eq!(c.ready(&cx, *r, &mut rng), Gate::Go);
    }
}
