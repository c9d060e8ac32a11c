//! herdless against backon, in the same run (compare the ratios, not the absolute
//! numbers: the machines here are shared and noisy).
//!
//! * `success_first_try/*`: the overhead of wrapping an operation that succeeds at
//!   once, blocking and async, against the bare call. herdless keeps an elapsed
//!   budget that includes the operation's own time: a blocking call reads the
//!   coarse monotonic clock once (`CoarseClock`); an async call's clock starts
//!   only when its first attempt waits, so a first-try success reads none.
//!   backon keeps no such budget; `backon_*_plus_clock` adds the
//!   `Instant::now()` a backon caller needs for one, and `std_instant_now` /
//!   `coarse_clock_now` / `idempotency_key` show what those cost here.
//! * `delay/*`: one delay computation per jitter mode (herdless) against backon's
//!   exponential backoff with jitter (its only jitter).
//! * `retry_path/*`: fail three times then succeed, 1 ns delays, a no-op sleep,
//!   blocking and async: herdless unseeded (each call's own generator from
//!   `Rng::fresh`) and seeded, reading the coarse clock (the default timer's
//!   blocking clock), against backon with a no-op sleeper;
//!   `herdless_async_unseeded_tokio_clock` reads tokio's clock instead, as the
//!   default timer does in async code with the `tokio` feature (so that
//!   `tokio::time::pause` moves it): a full `Instant::now()` per reading.
//!
//! Run: `cargo bench -p herdless-benches --bench core` (every group;
//! `-- retry_path` or `-- success` for one). The package builds the library
//! with its default features plus `tokio` and `http`, and tokio without
//! `test-util`, as a user's build would.
#![allow(missing_docs)] // criterion_group! defines undocumented functions

use std::hint::black_box;
use std::time::Duration;

use backon::{BlockingRetryable, ExponentialBuilder};
use criterion::{Criterion, criterion_group, criterion_main};
use herdless::policy::Schedule;
use herdless::timer::CoarseClock;
use herdless::{AlwaysRetry, Clock, Jitter, Policy, Retry, Rng};
use herdless_benches::{
    NoSleep, NoSleepTokioClock, backon_delays, backon_ns, flaky, flaky_async, op, op_async,
};

fn success_first_try(c: &mut Criterion) {
    let mut g = c.benchmark_group("success_first_try");
    let policy = Policy::default();
    g.bench_function("bare_call", |b| b.iter(|| black_box(op())));
    g.bench_function("std_instant_now", |b| {
        b.iter(|| black_box(std::time::Instant::now()))
    });
    g.bench_function("coarse_clock_now", |b| {
        b.iter(|| black_box(CoarseClock.now()))
    });
    g.bench_function("idempotency_key", |b| {
        b.iter(|| black_box(herdless::IdempotencyKey::random()))
    });
    g.bench_function("herdless_blocking", |b| {
        b.iter(|| black_box(Retry::new(policy, AlwaysRetry).call(|_| op())))
    });
    g.bench_function("backon_blocking", |b| {
        b.iter(|| black_box(op.retry(ExponentialBuilder::default().with_jitter()).call()))
    });
    // The same work as herdless: backon keeps no elapsed budget that includes the
    // operation's own time; a caller who needs one reads the clock at the start.
    g.bench_function("backon_blocking_plus_clock", |b| {
        b.iter(|| {
            let start = std::time::Instant::now();
            black_box((
                start,
                op.retry(ExponentialBuilder::default().with_jitter()).call(),
            ))
        })
    });
    g.finish();
}

fn success_first_try_async(c: &mut Criterion) {
    use backon::Retryable;
    let mut g = c.benchmark_group("async_success_first_try");
    let policy = Policy::default();

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    g.bench_function("herdless_async", |b| {
        b.to_async(&rt).iter(|| async {
            black_box(
                Retry::new(policy, AlwaysRetry)
                    .call_async(|_| op_async())
                    .await,
            )
        })
    });
    g.bench_function("backon_async_plus_clock", |b| {
        b.to_async(&rt).iter(|| async {
            let start = tokio::time::Instant::now();
            black_box((
                start,
                op_async
                    .retry(ExponentialBuilder::default().with_jitter())
                    .await,
            ))
        })
    });
    g.bench_function("backon_async", |b| {
        b.to_async(&rt).iter(|| async {
            black_box(
                op_async
                    .retry(ExponentialBuilder::default().with_jitter())
                    .await,
            )
        })
    });
    g.finish();
}

fn delay(c: &mut Criterion) {
    let mut g = c.benchmark_group("delay");
    for jitter in Jitter::ALL {
        let policy = Policy::builder().jitter(jitter).build().unwrap();
        let mut rng = Rng::with_seed(1);
        // Cycle through the first 8 retry indices (below and at the cap).
        let mut n = 0u32;
        g.bench_function(format!("herdless_{jitter}"), |b| {
            b.iter(|| {
                n = (n + 1) & 7;
                let mut s = Schedule::at(black_box(n));
                black_box(policy.next_delay(&mut s, &mut rng))
            })
        });
    }
    let mut backoff = backon_delays();
    g.bench_function("backon_exponential_jitter", |b| {
        b.iter(|| black_box(backoff.next()))
    });
    g.finish();
}

/// Fail ×3 then succeed, 1 ns delays, no sleep: what the retry path itself
/// costs per call (classify, limits, draw, events, budget bookkeeping), with a
/// generator of its own per call (unseeded) or a seeded one, against backon's
/// retry loop with a no-op sleeper.
fn retry_path(c: &mut Criterion) {
    let mut g = c.benchmark_group("retry_path");
    let ns = Duration::from_nanos(1);
    let policy = Policy::builder().base(ns).cap(ns).build().unwrap();
    let unseeded = Retry::builder()
        .policy(policy)
        .classifier(AlwaysRetry)
        .timer(NoSleep)
        .build();
    g.bench_function("herdless_blocking_unseeded", |b| {
        b.iter(|| {
            let mut op = flaky();
            black_box(unseeded.call(|_| op()))
        })
    });
    let seeded = Retry::builder()
        .policy(policy)
        .classifier(AlwaysRetry)
        .timer(NoSleep)
        .seed(7)
        .build();
    g.bench_function("herdless_blocking_seeded", |b| {
        b.iter(|| {
            let mut op = flaky();
            black_box(seeded.call(|_| op()))
        })
    });
    // What a call's own generator costs: a `getrandom` system call each, or
    // a draw from the per-thread generator (what unseeded calls use).
    g.bench_function("rng_from_entropy", |b| {
        b.iter(|| black_box(Rng::from_entropy()))
    });
    g.bench_function("rng_fresh", |b| b.iter(|| black_box(Rng::fresh())));
    g.bench_function("backon_blocking", |b| {
        b.iter(|| black_box(flaky().retry(backon_ns()).sleep(|_| {}).call()))
    });
    {
        use backon::Retryable;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        g.bench_function("herdless_async_unseeded", |b| {
            b.to_async(&rt).iter(|| async {
                let mut op = flaky_async();
                black_box(unseeded.call_async(|_| op()).await)
            })
        });
        g.bench_function("herdless_async_seeded", |b| {
            b.to_async(&rt).iter(|| async {
                let mut op = flaky_async();
                black_box(seeded.call_async(|_| op()).await)
            })
        });
        let tokio_clock = Retry::builder()
            .policy(policy)
            .classifier(AlwaysRetry)
            .timer(NoSleepTokioClock)
            .build();
        g.bench_function("herdless_async_unseeded_tokio_clock", |b| {
            b.to_async(&rt).iter(|| async {
                let mut op = flaky_async();
                black_box(tokio_clock.call_async(|_| op()).await)
            })
        });
        g.bench_function("backon_async", |b| {
            b.to_async(&rt).iter(|| async {
                black_box(
                    flaky_async()
                        .retry(backon_ns())
                        .sleep(|_| std::future::ready(()))
                        .await,
                )
            })
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    success_first_try,
    success_first_try_async,
    delay,
    retry_path
);
criterion_main!(benches);
