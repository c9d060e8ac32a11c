//! herdless against backon, in the same run (compare the ratios, not the absolute
//! numbers: the machines here are shared and noisy).
//!
//! * `success_first_try/*`: the overhead of wrapping an operation that succeeds at
//!   once, blocking and async, against the bare call. herdless reads the
//!   monotonic clock once per call (its elapsed budget includes the operation's
//!   own time) and draws an idempotency key; backon does neither, so
//!   `backon_*_plus_clock` adds the clock read a backon caller needs for the same
//!   budget, and `std_instant_now` / `idempotency_key` show what those cost here.
//! * `delay/*`: one delay computation per jitter mode (herdless) against backon's
//!   exponential backoff with jitter (its only jitter).
//! * `retry_path/*`: fail three times then succeed, 1 ns delays, no sleep:
//!   herdless unseeded (each call's own generator from `Rng::fresh`) and
//!   seeded, against backon's blocking retry with a no-op sleeper.
//!
//! Run: `cargo bench -p herdless --bench core` (blocking and delay groups), and
//! `cargo bench -p herdless --features tokio --bench core -- async` (the async
//! pair). The blocking group runs without the `tokio` feature on purpose: the
//! crate's dev-dependencies enable tokio's `test-util`, whose clock indirection
//! (`tokio::time::Instant::now`) production builds do not pay.
#![allow(missing_docs)] // criterion_group! defines undocumented functions

use std::hint::black_box;
use std::time::Duration;

use backon::{BackoffBuilder, BlockingRetryable, ExponentialBuilder};
use criterion::{criterion_group, criterion_main, Criterion};
use herdless::{AlwaysRetry, Jitter, Policy, Retry, Rng, Schedule};

fn op() -> Result<u64, std::io::Error> {
    Ok(black_box(42))
}

#[cfg(feature = "tokio")]
async fn op_async() -> Result<u64, std::io::Error> {
    Ok(black_box(42))
}

fn success_first_try(c: &mut Criterion) {
    let mut g = c.benchmark_group("success_first_try");
    let policy = Policy::default();
    g.bench_function("bare_call", |b| b.iter(|| black_box(op())));
    g.bench_function("std_instant_now", |b| {
        b.iter(|| black_box(std::time::Instant::now()))
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

#[cfg(feature = "tokio")]
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
    let mut backoff = ExponentialBuilder::default()
        .with_jitter()
        .with_min_delay(Duration::from_millis(500))
        .with_max_delay(Duration::from_secs(30))
        .without_max_times()
        .build();
    g.bench_function("backon_exponential_jitter", |b| {
        b.iter(|| black_box(backoff.next()))
    });
    g.finish();
}

/// A timer that reads the real monotonic clock and does not sleep: the retry
/// path's own cost, without the waiting.
#[derive(Debug, Clone, Copy)]
struct NoSleep;

impl herdless::Clock for NoSleep {
    fn now(&self) -> std::time::Instant {
        std::time::Instant::now()
    }
}

impl herdless::Sleep for NoSleep {
    fn sleep(&self, _: Duration) {}
}

/// Fails three times, then succeeds.
fn flaky() -> impl FnMut() -> Result<u64, std::io::Error> {
    let mut left = 3;
    move || {
        if left > 0 {
            left -= 1;
            Err(std::io::Error::from(std::io::ErrorKind::TimedOut))
        } else {
            Ok(black_box(42))
        }
    }
}

/// Fail ×3 then succeed, 1 ns delays, no sleep: what the retry path itself
/// costs per call (classify, limits, draw, events, budget bookkeeping), with a
/// generator of its own per call (unseeded) or a seeded one, against backon's
/// retry loop with a no-op sleeper.
fn retry_path(c: &mut Criterion) {
    let mut g = c.benchmark_group("retry_path");
    let ns = Duration::from_nanos(1);
    let policy = Policy::builder().base(ns).cap(ns).build().unwrap();
    let unseeded = Retry::new(policy, AlwaysRetry).timer(NoSleep);
    g.bench_function("herdless_blocking_unseeded", |b| {
        b.iter(|| {
            let mut op = flaky();
            black_box(unseeded.call(|_| op()))
        })
    });
    let seeded = Retry::new(policy, AlwaysRetry).timer(NoSleep).seed(7);
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
        b.iter(|| {
            let op = flaky();
            black_box(
                op.retry(
                    ExponentialBuilder::default()
                        .with_jitter()
                        .with_min_delay(ns)
                        .with_max_delay(ns),
                )
                .sleep(|_| {})
                .call(),
            )
        })
    });
    g.finish();
}

#[cfg(not(feature = "tokio"))]
fn success_first_try_async(_: &mut Criterion) {}

criterion_group!(
    benches,
    success_first_try,
    success_first_try_async,
    delay,
    retry_path
);
criterion_main!(benches);
