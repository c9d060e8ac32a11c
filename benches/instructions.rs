//! Instruction counts for the comparisons in `core.rs`, immune to machine load:
//! each case runs `N` times in a binary that does nothing else, under
//! `valgrind --tool=callgrind`; the count of a run with `N = 0` (start-up) is
//! subtracted and the rest divided by `N`.
//!
//! ```sh
//! cargo bench -p herdless-benches --bench instructions --no-run
//! scripts/instructions.sh          # every case, a table of instructions per call
//! ```
//!
//! Built with the package's `metrics` feature (the library's, and a recorder)
//! the binary has three more cases, `*_recorder`: the same calls with a
//! recorder installed ([`recorder::RegistryRecorder`]); `scripts/instructions.sh`
//! builds both and prints the two columns side by side.
//!
//! Run one case by hand: `valgrind --tool=callgrind BENCH_BINARY CASE N`
//! (the `Collected` line is the total). `BENCH_BINARY --list` names the cases;
//! `BENCH_BINARY --time N` times every case, interleaved, 31 rounds of `N`
//! calls, and prints each case's fastest round per call (wall time, so
//! load-sensitive, but the interleaving keeps the ratios fair).
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use backon::{BlockingRetryable, ExponentialBuilder, Retryable};
use herdless::adapters::tower::PushbackLayer;
use herdless::policy::Schedule;
use herdless::pushback::{AdaptiveAllocator, SlotAllocator};
use herdless::timer::CoarseClock;
use herdless::{AlwaysRetry, Clock, Policy, Retry, Rng, SystemTimer};
use herdless_benches::{
    NoSleep, NoSleepTokioClock, backon_delays, backon_ns, flaky, flaky_async, op, op_async,
};
use tower::Layer;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

const CASES: &[&str] = &[
    "bare_call",
    "instant_now",
    "system_timer_now",
    "coarse_clock_now",
    "herdless_blocking",
    "backon_blocking",
    "herdless_async",
    "backon_async",
    "retry_herdless_blocking_unseeded",
    "retry_herdless_blocking_seeded",
    "retry_backon_blocking",
    "retry_herdless_async_unseeded",
    "retry_herdless_async_tokio_clock",
    "retry_backon_async",
    "delay_herdless_full",
    "delay_backon",
    "pushback_bare_handler",
    "pushback_admit_slots",
    "pushback_admit_adaptive",
    "pushback_refuse_slots",
    "pushback_refuse_adaptive",
];

/// The cases with a recorder installed (the `metrics` feature only).
#[cfg(feature = "metrics")]
const RECORDER_CASES: &[&str] = &[
    "herdless_blocking_recorder",
    "retry_herdless_blocking_recorder",
    "retry_herdless_async_recorder",
];
#[cfg(not(feature = "metrics"))]
const RECORDER_CASES: &[&str] = &[];

/// A recorder as an exporter builds one (the Prometheus exporter's is this
/// registry with generational storage): each registration a lookup in a
/// sharded hash map, each handle an atomic.
#[cfg(feature = "metrics")]
mod recorder {
    use metrics::{
        Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit,
    };
    use metrics_util::registry::{AtomicStorage, Registry};

    pub(crate) struct RegistryRecorder(Registry<Key, AtomicStorage>);

    impl RegistryRecorder {
        pub(crate) fn new() -> Self {
            RegistryRecorder(Registry::atomic())
        }
    }

    impl Recorder for RegistryRecorder {
        fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
        fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
            self.0
                .get_or_create_counter(key, |c| Counter::from_arc(c.clone()))
        }
        fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
            self.0
                .get_or_create_gauge(key, |g| Gauge::from_arc(g.clone()))
        }
        fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
            self.0
                .get_or_create_histogram(key, |h| Histogram::from_arc(h.clone()))
        }
    }
}

/// Runs a `*_recorder` case: its case without the suffix, with a recorder
/// installed for this thread. False when there is no such case.
#[cfg(feature = "metrics")]
fn run_recorded(case: &str, n: u64, rt: &tokio::runtime::Runtime) -> bool {
    let Some(plain) = case.strip_suffix("_recorder") else {
        return false;
    };
    let plain = match plain {
        "retry_herdless_async" => "retry_herdless_async_unseeded",
        "retry_herdless_blocking" => "retry_herdless_blocking_unseeded",
        other => other,
    };
    let recorder = recorder::RegistryRecorder::new();
    metrics::with_local_recorder(&recorder, || run(plain, n, rt))
}
#[cfg(not(feature = "metrics"))]
fn run_recorded(_: &str, _: u64, _: &tokio::runtime::Runtime) -> bool {
    false
}

/// Runs `case` `n` times; false when there is no such case.
fn run(case: &str, n: u64, rt: &tokio::runtime::Runtime) -> bool {
    let policy = Policy::default();
    let ns = Duration::from_nanos(1);
    let fast = Policy::builder().base(ns).cap(ns).build().unwrap();
    match case {
        "bare_call" => (0..n).for_each(|_| {
            let _ = black_box(op());
        }),
        "instant_now" => (0..n).for_each(|_| {
            black_box(std::time::Instant::now());
        }),
        "system_timer_now" => (0..n).for_each(|_| {
            black_box(SystemTimer.now());
        }),
        "coarse_clock_now" => (0..n).for_each(|_| {
            black_box(CoarseClock.now());
        }),
        "herdless_blocking" => (0..n).for_each(|_| {
            let _ = black_box(Retry::new(policy, AlwaysRetry).call(|_| op()));
        }),
        "backon_blocking" => (0..n).for_each(|_| {
            let _ = black_box(op.retry(ExponentialBuilder::default().with_jitter()).call());
        }),
        "herdless_async" => rt.block_on(async {
            for _ in 0..n {
                let _ = black_box(
                    Retry::new(policy, AlwaysRetry)
                        .call_async(|_| op_async())
                        .await,
                );
            }
        }),
        "backon_async" => rt.block_on(async {
            for _ in 0..n {
                let _ = black_box(
                    op_async
                        .retry(ExponentialBuilder::default().with_jitter())
                        .await,
                );
            }
        }),
        "retry_herdless_blocking_unseeded" => {
            let r = Retry::builder()
                .policy(fast)
                .classifier(AlwaysRetry)
                .timer(NoSleep)
                .build();
            (0..n).for_each(|_| {
                let mut op = flaky();
                let _ = black_box(r.call(|_| op()));
            })
        }
        "retry_herdless_blocking_seeded" => {
            let r = Retry::builder()
                .policy(fast)
                .classifier(AlwaysRetry)
                .timer(NoSleep)
                .seed(7)
                .build();
            (0..n).for_each(|_| {
                let mut op = flaky();
                let _ = black_box(r.call(|_| op()));
            })
        }
        "retry_backon_blocking" => (0..n).for_each(|_| {
            let _ = black_box(flaky().retry(backon_ns()).sleep(|_| {}).call());
        }),
        "retry_herdless_async_unseeded" => {
            let r = Retry::builder()
                .policy(fast)
                .classifier(AlwaysRetry)
                .timer(NoSleep)
                .build();
            rt.block_on(async {
                for _ in 0..n {
                    let mut op = flaky_async();
                    let _ = black_box(r.call_async(|_| op()).await);
                }
            })
        }
        "retry_herdless_async_tokio_clock" => {
            let r = Retry::builder()
                .policy(fast)
                .classifier(AlwaysRetry)
                .timer(NoSleepTokioClock)
                .build();
            rt.block_on(async {
                for _ in 0..n {
                    let mut op = flaky_async();
                    let _ = black_box(r.call_async(|_| op()).await);
                }
            })
        }
        "retry_backon_async" => rt.block_on(async {
            for _ in 0..n {
                let _ = black_box(
                    flaky_async()
                        .retry(backon_ns())
                        .sleep(|_| std::future::ready(()))
                        .await,
                );
            }
        }),
        // One delay, as `core.rs`'s `delay` group: the first 8 retry indices in
        // turn (below and at the cap), from a generator that lives on.
        "delay_herdless_full" => {
            let mut rng = Rng::with_seed(1);
            (0..n).for_each(|i| {
                let mut s = Schedule::at(black_box((i & 7) as u32));
                black_box(policy.next_delay(&mut s, &mut rng));
            })
        }
        "delay_backon" => {
            let mut backoff = backon_delays();
            (0..n).for_each(|_| {
                black_box(backoff.next());
            })
        }
        // The server side: one request through `PushbackLayer`'s service to
        // a handler whose answer is ready at once, its response future polled
        // to its end; beside the bare handler (benches/allocator.rs times the
        // same calls).
        "pushback_bare_handler" => {
            let mut svc = pushback::handler();
            (0..n).for_each(|_| pushback::one(&mut svc))
        }
        "pushback_admit_slots" => {
            let alloc = SlotAllocator::new(1e9, HORIZON).expect("valid");
            let mut svc = PushbackLayer::new(alloc).layer(pushback::handler());
            (0..n).for_each(|_| pushback::one(&mut svc))
        }
        "pushback_admit_adaptive" => {
            let alloc = AdaptiveAllocator::new(1e9, HORIZON).expect("valid");
            let mut svc = PushbackLayer::new(alloc).layer(pushback::handler());
            (0..n).for_each(|_| pushback::one(&mut svc))
        }
        "pushback_refuse_slots" => {
            let alloc = SlotAllocator::new(1e9, HORIZON).expect("valid").outage();
            let mut svc = PushbackLayer::new(alloc).layer(pushback::handler());
            (0..n).for_each(|_| pushback::one(&mut svc))
        }
        "pushback_refuse_adaptive" => {
            let alloc = AdaptiveAllocator::new(1e9, HORIZON).expect("valid");
            let alloc = alloc.outage_until(Duration::from_secs(3600));
            let mut svc = PushbackLayer::new(alloc).layer(pushback::handler());
            (0..n).for_each(|_| pushback::one(&mut svc))
        }
        _ => return false,
    }
    true
}

const HORIZON: Duration = Duration::from_secs(60);

/// One request through a tower service whose answers are ready at once.
mod pushback {
    use std::hint::black_box;
    use std::task::{Context, Poll, Waker};

    use tower::Service;

    pub(crate) fn handler() -> impl Service<
        http::Request<()>,
        Response = http::Response<()>,
        Error = std::convert::Infallible,
        Future = std::future::Ready<Result<http::Response<()>, std::convert::Infallible>>,
    > + Clone {
        tower::service_fn(|_: http::Request<()>| std::future::ready(Ok(http::Response::new(()))))
    }

    pub(crate) fn one<S>(svc: &mut S)
    where
        S: Service<http::Request<()>, Response = http::Response<()>>,
    {
        let mut cx = Context::from_waker(Waker::noop());
        let _ = svc.poll_ready(&mut cx);
        let future = std::pin::pin!(svc.call(http::Request::new(())));
        match std::future::Future::poll(future, &mut cx) {
            Poll::Ready(Ok(response)) => {
                black_box(response.status());
            }
            _ => panic!("a ready answer"),
        }
    }
}

/// Interleaved timing: every case in turn, `rounds` times `n` calls each; the
/// fastest round per case (the one least disturbed by other processes).
fn time(n: u64, rounds: u32, rt: &tokio::runtime::Runtime) {
    let mut best = vec![f64::MAX; CASES.len()];
    for _ in 0..rounds {
        for (i, case) in CASES.iter().enumerate() {
            let t = std::time::Instant::now();
            run(case, n, rt);
            best[i] = best[i].min(t.elapsed().as_nanos() as f64 / n as f64);
        }
    }
    for (case, ns) in CASES.iter().zip(best) {
        println!("{case:36} {ns:8.1} ns");
    }
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let case = args.next().unwrap_or_default();
    let n: u64 = args.next().and_then(|n| n.parse().ok()).unwrap_or(0);
    let rt = rt();
    match case.as_str() {
        "" | "--list" => CASES
            .iter()
            .chain(RECORDER_CASES)
            .for_each(|c| println!("{c}")),
        "--time" => time(n.max(1), 31, &rt),
        _ => {
            if !run(&case, n, &rt) && !run_recorded(&case, n, &rt) {
                eprintln!("unknown case {case}; --list names them");
                std::process::exit(2);
            }
        }
    }
}
