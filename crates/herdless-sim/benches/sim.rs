//! Simulator throughput: simulated calls (attempts) per second on one core.
//!
//! `cargo bench -p herdless-sim --bench sim`
//!
//! * `outage/<strategy>`: one strategy of the default outage scenario (40,000
//!   clients) on the calling thread; throughput = simulated calls (a breaker
//!   wait is an event but not a call, so it is not counted).
//! * `outage/all-strategies-1-thread`: the whole default run on one thread.
//! * `contention/full-200-clients`: one contention trial at 200 clients.
//! * `queue/*`: the timing wheel against `std::collections::BinaryHeap` on the
//!   same hold workload (40,000 pending events; pop one, push it back later).
#![allow(missing_docs)] // criterion_group! defines undocumented functions

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use herdless::{Jitter, Rng};
use herdless_sim::queue::EventQueue;
use herdless_sim::scenario::{contention, outage};
use herdless_sim::{Config, ContentionParams, OutageParams, Report, Simulation, StrategyKind};

fn outage_benches(c: &mut Criterion) {
    let params = OutageParams::default();
    let mut g = c.benchmark_group("outage");
    g.sample_size(10).measurement_time(Duration::from_secs(4));
    for kind in [
        StrategyKind::Backoff(Jitter::None),
        StrategyKind::Backoff(Jitter::Full),
        StrategyKind::FixedInterval,
    ]
    .into_iter()
    .chain(StrategyKind::GUARDED)
    {
        let calls = outage::run(&params, kind, 1).unwrap().calls_total;
        g.throughput(Throughput::Elements(calls));
        g.bench_function(kind.name(), |b| {
            b.iter(|| outage::run(black_box(&params), kind, 1).unwrap())
        });
    }
    let sim = Simulation::new(Config::Outage(params)).threads(1);
    let Report::Outage(r) = sim.run().unwrap() else {
        unreachable!()
    };
    let calls: u64 = r.strategies.iter().map(|s| s.calls_total).sum();
    g.throughput(Throughput::Elements(calls));
    g.bench_function("all-strategies-1-thread", |b| b.iter(|| sim.run().unwrap()));
    g.finish();
}

fn contention_benches(c: &mut Criterion) {
    let params = ContentionParams::default();
    let s = StrategyKind::Backoff(Jitter::Full).resolve(&params.policy);
    let writes = contention::run_trial(&params, 200, &s, 1).writes;
    let mut g = c.benchmark_group("contention");
    g.throughput(Throughput::Elements(writes));
    g.bench_function("full-200-clients", |b| {
        b.iter(|| contention::run_trial(black_box(&params), 200, &s, 1))
    });
    g.finish();
}

const PENDING: u32 = 40_000;
const OPS: u64 = 1_000_000;

fn queue_benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("queue");
    g.throughput(Throughput::Elements(OPS));
    g.bench_function("timing-wheel-hold-40k", |b| {
        b.iter(|| {
            let mut rng = Rng::with_seed(1);
            let mut q = EventQueue::new();
            for i in 0..PENDING {
                q.push(rng.next_u64() % 1_000_000_000, i);
            }
            for _ in 0..OPS {
                let e = q.pop().unwrap();
                q.push(e.at_ns + rng.next_u64() % 2_000_000_000, e.client);
            }
            q.len()
        })
    });
    g.bench_function("binary-heap-hold-40k", |b| {
        b.iter(|| {
            let mut rng = Rng::with_seed(1);
            let mut q = BinaryHeap::new();
            for i in 0..PENDING {
                q.push(Reverse((rng.next_u64() % 1_000_000_000, i)));
            }
            for _ in 0..OPS {
                let Reverse((t, i)) = q.pop().unwrap();
                q.push(Reverse((t + rng.next_u64() % 2_000_000_000, i)));
            }
            q.len()
        })
    });
    g.finish();
}

criterion_group!(benches, outage_benches, contention_benches, queue_benches);
criterion_main!(benches);
