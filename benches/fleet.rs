//! Cost of the fleet-level pieces on the hot path.
//!
//! `cargo bench -p herdless-benches --bench fleet`
#![allow(missing_docs)] // criterion_group! defines undocumented functions

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use herdless::guard::breaker::Admission;
use herdless::pushback::SlotAllocator;
use herdless::{AlwaysRetry, Breaker, ManualTimer, Policy, Retry, RetryBudget, RetryCause};

fn budget(c: &mut Criterion) {
    let b = RetryBudget::aws();
    c.bench_function("retry_budget/try_retry+record_success", |bench| {
        bench.iter(|| {
            let s = b.try_retry(black_box(RetryCause::Error), black_box(0.5));
            b.record_success(s.ok());
        })
    });
    let plain = Retry::builder()
        .policy(Policy::default())
        .classifier(AlwaysRetry)
        .timer(ManualTimer::new())
        .build();
    let budgeted = Retry::builder()
        .policy(Policy::default())
        .classifier(AlwaysRetry)
        .timer(ManualTimer::new())
        .budget(Arc::new(RetryBudget::aws()))
        .breaker(Arc::new(Breaker::new(5)))
        .build();
    c.bench_function("call/first_try_success/plain", |bench| {
        bench.iter(|| plain.call(|_| Ok::<_, ()>(black_box(1))))
    });
    c.bench_function("call/first_try_success/budget+breaker", |bench| {
        bench.iter(|| budgeted.call(|_| Ok::<_, ()>(black_box(1))))
    });
}

fn breaker(c: &mut Criterion) {
    let b = Arc::new(Breaker::new(5));
    c.bench_function("breaker/admit_closed", |bench| {
        bench.iter(|| matches!(b.admit(), Admission::Closed))
    });
}

fn pushback(c: &mut Criterion) {
    let mut a = SlotAllocator::new(10_000.0, Duration::from_secs(60)).unwrap();
    let mut now = Duration::ZERO;
    c.bench_function("pushback/decide", |bench| {
        bench.iter(|| {
            now += Duration::from_micros(50); // 2x the capacity: half rejected
            black_box(a.decide(now))
        })
    });
}

criterion_group!(benches, budget, breaker, pushback);
criterion_main!(benches);
