//! The server side's decision, what `PushbackLayer` does for every request
//! before the service sees it: the allocator's answer under the layer's lock
//! (admit, refuse with a slot, hold), and a held request's release, each
//! from one thread and from two threads at once on one shared layer
//! (`cargo bench -p herdless-benches --bench allocator`), beside the
//! peers' decisions from one thread and two (`governor`'s limiter, a `tokio`
//! semaphore's permit).
//!
//! The two-thread cases report the time per decision of both threads
//! together (wall time over the decisions of both): a ratio of one-thread
//! time to two-thread time of 2 is perfect scaling, 1 is none.
#![allow(missing_docs)] // criterion_group! defines undocumented functions

use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use std::future::Future;

use criterion::{Criterion, criterion_group, criterion_main};
use herdless::SystemTimer;
use herdless::adapters::tower::PushbackLayer;
use herdless::pushback::{AdaptiveAllocator, Allocator, SlotAllocator};
use tower::Layer;

/// A layer on the system clock, as deployed (each decision reads it).
fn layer<A: Allocator>(alloc: A) -> PushbackLayer<SystemTimer, A> {
    PushbackLayer::new(alloc)
}

type Case = Box<dyn Fn() + Send + Sync>;
type MakeCase = fn() -> Case;

fn decide_with<A: Allocator>(alloc: A) -> Case {
    let l = layer(alloc);
    Box::new(move || {
        black_box(l.decide());
    })
}

/// The cases: each a layer whose `decide` answers the same way every time
/// (an outage's refusals are booked from its end at a billion a second, so
/// the horizon never fills during a run).
fn cases() -> Vec<(&'static str, MakeCase)> {
    const HORIZON: Duration = Duration::from_secs(60);
    vec![
        ("admit_slots", || {
            decide_with(SlotAllocator::new(1e9, HORIZON).expect("valid"))
        }),
        ("admit_adaptive", || {
            decide_with(AdaptiveAllocator::new(1e9, HORIZON).expect("valid"))
        }),
        ("refuse_slots", || {
            decide_with(SlotAllocator::new(1e9, HORIZON).expect("valid").outage())
        }),
        ("refuse_adaptive", || {
            let alloc = AdaptiveAllocator::new(1e9, HORIZON).expect("valid");
            decide_with(alloc.outage_until(Duration::from_secs(3600)))
        }),
        // Held, then cancelled by the layer (nothing waits for it): a hold
        // and its cancellation under one lock.
        ("hold_adaptive", || {
            let alloc = AdaptiveAllocator::builder()
                .estimate(1e9)
                .hold()
                .build()
                .expect("valid");
            decide_with(alloc.outage_until(Duration::from_secs(3600)))
        }),
    ]
}

/// The peers' decisions, for the same one-thread/two-thread ratio: the
/// GCRA under `tower_governor` (`governor`'s direct limiter on its default
/// clock: one atomic word, updated by compare-and-swap), allowing and
/// denying; and what tower's `ConcurrencyLimitLayer` does per request (a
/// permit of a `tokio` semaphore taken and given back).
fn peers() -> Vec<(&'static str, MakeCase)> {
    use governor::{Quota, RateLimiter};
    use std::num::NonZeroU32;
    vec![
        ("allow_governor", || {
            let limiter = RateLimiter::direct(Quota::per_second(NonZeroU32::MAX));
            Box::new(move || {
                black_box(limiter.check().is_ok());
            })
        }),
        ("deny_governor", || {
            let limiter = RateLimiter::direct(Quota::per_hour(NonZeroU32::MIN));
            assert!(limiter.check().is_ok(), "the one allowed");
            Box::new(move || {
                black_box(limiter.check().is_err());
            })
        }),
        ("permit_semaphore", || {
            let semaphore = tokio::sync::Semaphore::new(1 << 20);
            Box::new(move || {
                black_box(semaphore.try_acquire().is_ok());
            })
        }),
    ]
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("decide");
    for (name, make) in cases().into_iter().chain(peers()) {
        let one = make();
        g.bench_function(format!("{name}/1_thread"), |b| b.iter(&one));
        let shared = make();
        g.bench_function(format!("{name}/2_threads"), |b| {
            b.iter_custom(|iters| two_threads(iters, &*shared))
        });
    }
    g.finish();

    // A request through the layer's service, its response future polled to
    // its end (the handler a ready future): the layer's whole cost per
    // request, admitted or refused, beside the bare handler.
    let mut g = c.benchmark_group("service");
    let handler = || {
        tower::service_fn(|_: http::Request<()>| {
            std::future::ready(Ok::<_, std::convert::Infallible>(http::Response::new(())))
        })
    };
    let mut bare = handler();
    g.bench_function("bare_handler", |b| b.iter(|| ready(&mut bare)));
    let horizon = Duration::from_secs(60);
    let mut admit = layer(SlotAllocator::new(1e9, horizon).expect("valid")).layer(handler());
    g.bench_function("admit_slots", |b| b.iter(|| ready(&mut admit)));
    let mut admit = layer(AdaptiveAllocator::new(1e9, horizon).expect("valid")).layer(handler());
    g.bench_function("admit_adaptive", |b| b.iter(|| ready(&mut admit)));
    let alloc = SlotAllocator::new(1e9, horizon).expect("valid").outage();
    let mut refuse = layer(alloc).layer(handler());
    g.bench_function("refuse_slots", |b| b.iter(|| ready(&mut refuse)));
    let alloc = AdaptiveAllocator::new(1e9, horizon).expect("valid");
    let mut refuse = layer(alloc.outage_until(Duration::from_secs(3600))).layer(handler());
    g.bench_function("refuse_adaptive", |b| b.iter(|| ready(&mut refuse)));
    // The same from two threads at once, each with its own clone of one
    // service (as a server's connections have): the decision as the layer
    // makes it for a request, lock, header reads and answer included; the
    // bare handler from two threads is the control (nothing shared: the
    // scaling the machine gives at its load).
    let bare = handler();
    g.bench_function("bare_handler/2_threads", |b| {
        b.iter_custom(|iters| two_services(iters, &bare))
    });
    let admit = layer(SlotAllocator::new(1e9, horizon).expect("valid")).layer(handler());
    g.bench_function("admit_slots/2_threads", |b| {
        b.iter_custom(|iters| two_services(iters, &admit))
    });
    let admit = layer(AdaptiveAllocator::new(1e9, horizon).expect("valid")).layer(handler());
    g.bench_function("admit_adaptive/2_threads", |b| {
        b.iter_custom(|iters| two_services(iters, &admit))
    });
    g.finish();

    // Held requests released (the driver's side of a hold, on the allocator
    // alone): a thousand held during an outage, released at its end.
    c.bench_function("release_adaptive/1_thread", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let n = left.min(1_000);
                let mut a = AdaptiveAllocator::builder()
                    .estimate(1e9)
                    .hold_max(1_000)
                    .build()
                    .expect("valid")
                    .outage_until(Duration::from_secs(1));
                for _ in 0..n {
                    assert!(a.decide(Duration::ZERO).is_hold());
                }
                let end = Duration::from_secs(1);
                let t = Instant::now();
                for i in 0..n {
                    let released = a.release(end + Duration::from_micros(i));
                    debug_assert!(released.is_some_and(|r| r.allotment.is_admit()));
                    black_box(released);
                }
                total += t.elapsed();
                left -= n;
            }
            total
        })
    });
}

/// One request through `svc`, its response future polled once (every
/// answer here is ready at once).
fn ready<S>(svc: &mut S) -> http::StatusCode
where
    S: tower::Service<http::Request<()>, Response = http::Response<()>>,
{
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(svc.poll_ready(&mut cx).is_ready());
    let future = std::pin::pin!(svc.call(http::Request::new(())));
    match future.poll(&mut cx) {
        std::task::Poll::Ready(Ok(response)) => black_box(response.status()),
        _ => panic!("a ready answer"),
    }
}

/// `iters` calls of `f`, half on each of two threads started together; the
/// wall time of both (so the time per call is of the two together).
fn two_threads(iters: u64, f: &(dyn Fn() + Send + Sync)) -> Duration {
    let start = Barrier::new(3);
    let half = iters / 2;
    std::thread::scope(|s| {
        for n in [half, iters - half] {
            let start = &start;
            s.spawn(move || {
                start.wait();
                for _ in 0..n {
                    f();
                }
            });
        }
        start.wait();
        let t = Instant::now();
        // The scope joins both threads before it returns.
        t
    })
    .elapsed()
}

/// [`two_threads`] for a service: each thread calls its own clone of `svc`.
fn two_services<S>(iters: u64, svc: &S) -> Duration
where
    S: tower::Service<http::Request<()>, Response = http::Response<()>> + Clone + Send,
{
    let start = Barrier::new(3);
    let half = iters / 2;
    std::thread::scope(|s| {
        for n in [half, iters - half] {
            let start = &start;
            let mut svc = svc.clone();
            s.spawn(move || {
                start.wait();
                for _ in 0..n {
                    ready(&mut svc);
                }
            });
        }
        start.wait();
        Instant::now()
    })
    .elapsed()
}

criterion_group!(benches, bench);
criterion_main!(benches);
