//! What the server side costs a service: an axum service on 127.0.0.1 whose
//! handler does a fixed amount of work, alone or behind one limiter, for a
//! load generator (wrk) to saturate; and a probe that measures the latency
//! of the requests a service serves while wrk overloads it.
//!
//! ```sh
//! cargo bench -p herdless-benches --bench server --no-run
//! scripts/server-overhead.sh      # the rounds, the tables (docs/performance.md, "Server side")
//! SERVER serve --layer slots --limit 1000000 --work-us 50
//! SERVER probe http://127.0.0.1:PORT/ --rate 400 --secs 10
//! SERVER probe http://127.0.0.1:PORT/ http://127.0.0.1:PORT/alone --rate 5000   # in turn
//! ```
//!
//! `serve` prints `port N` on its first line and serves until it is killed:
//! the service behind the layer at `/`, and the same service alone at
//! `/alone` (for `scripts/server-latency.sh`'s paired runs).
//! The layers (`--layer`): `none`; `slots` (herdless's `PushbackLayer` with a
//! `SlotAllocator` of `--limit` per second); `adaptive` (an `AdaptiveAllocator`
//! starting from `--limit`); `hold` (the same with its hold); `concurrency`
//! (tower's `ConcurrencyLimitLayer` of `--limit` in flight); `governor`
//! (`tower_governor`, one global GCRA of `--limit` per second, bursts of a
//! tenth of it); `control`, a layer that only spins `--limit` microseconds
//! of CPU before each request (a known cost, for the latency script to
//! find). Cohort waves are not on this branch: their row is left for
//! when they land (`--layer waves` is refused until then).
//!
//! With `--outage-s S` the herdless layers start in an outage whose end (S
//! seconds after the start) they know: `hold` then holds every request
//! until then (`scripts/held-memory.sh` measures what a held request costs).
//!
//! The handler spins `--work-us` microseconds of CPU (calibrated at start)
//! and answers `ok`; with `--capacity C` it refuses (`503`, no work) what
//! goes past C per second (a GCRA of its own, as a service that sheds its
//! own excess), which is what the adaptive allocator learns from.
#![allow(missing_docs)]

use std::hint::black_box;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::routing::get;
use herdless::adapters::tower::PushbackLayer;
use herdless::pushback::{AdaptiveAllocator, SlotAllocator};
use herdless_benches::probe::in_range;

#[path = "server/clients.rs"]
mod clients;
use http::{Request, StatusCode};

struct Args {
    layer: String,
    limit: f64,
    work_us: f64,
    capacity: f64,
    threads: usize,
    /// Seconds from the start in which the herdless layers see an outage
    /// whose end they know (0: none): with `hold`, every request is held.
    outage_s: f64,
}

fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn number(args: &[String], name: &str, default: f64) -> f64 {
    flag(args, name).map_or(default, |v| {
        v.parse()
            .unwrap_or_else(|_| fail(&format!("{name}: not a number: {v}")))
    })
}

/// A number flag in `[1e-3, max]` (a rate, a duration, a count).
fn positive(args: &[String], name: &str, default: f64, max: f64) -> f64 {
    in_range(name, number(args, name, default), max).unwrap_or_else(|e| fail(&e))
}

fn fail(message: &str) -> ! {
    eprintln!("server bench: {message}");
    std::process::exit(2)
}

/// Iterations of [`spin`] per microsecond, measured now: the fastest of 50
/// short runs, so that one the scheduler did not interrupt is among them on
/// a loaded machine (a preempted calibration makes the work too short).
fn calibrate() -> f64 {
    let n = 200_000u64;
    let best = (0..50)
        .map(|_| {
            let t = Instant::now();
            black_box(spin(n));
            t.elapsed()
        })
        .min()
        .unwrap_or(Duration::from_millis(1));
    n as f64 / best.as_secs_f64() / 1e6
}

fn spin(n: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for i in 0..n {
        h = (h ^ black_box(i)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The service's own admission: a GCRA of `rate` per second with bursts of
/// 10 ms of it, lock-free (one compare-and-swap a request).
struct OwnCapacity {
    interval_ns: u64,
    tolerance_ns: u64,
    tat: AtomicU64,
    epoch: Instant,
}

impl OwnCapacity {
    fn new(rate: f64) -> Self {
        let interval_ns = (1e9 / rate) as u64;
        OwnCapacity {
            interval_ns,
            tolerance_ns: 10_000_000,
            tat: AtomicU64::new(0),
            epoch: Instant::now(),
        }
    }

    fn admit(&self) -> bool {
        let now = self.epoch.elapsed().as_nanos() as u64;
        let mut tat = self.tat.load(Ordering::Relaxed);
        loop {
            let start = tat.max(now);
            if start > now + self.tolerance_ns {
                return false;
            }
            match self.tat.compare_exchange_weak(
                tat,
                start + self.interval_ns,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(seen) => tat = seen,
            }
        }
    }
}

/// The service at `path`: the handler spinning `iterations` of [`spin`].
fn app(args: &Args, iterations: u64, path: &str) -> Router {
    let own = (args.capacity > 0.0).then(|| Arc::new(OwnCapacity::new(args.capacity)));
    let handler = move || {
        let own = own.clone();
        async move {
            if let Some(own) = own
                && !own.admit()
            {
                return (StatusCode::SERVICE_UNAVAILABLE, "busy");
            }
            black_box(spin(iterations));
            (StatusCode::OK, "ok")
        }
    };
    Router::new().route(path, get(handler))
}

/// The service at `/` behind the layer, and the same service alone at
/// `/alone` (the same work, calibrated once): both in one server, so that a
/// probe sending to each in turn measures them on the same thread, queue and
/// CPU, request by request.
fn layered(args: &Args) -> Router {
    let per_us = calibrate();
    let iterations = (per_us * args.work_us) as u64;
    let alone = app(args, iterations, "/alone");
    with_layer(args, app(args, iterations, "/"), per_us).merge(alone)
}

/// `app` behind `args.layer`; `per_us`: iterations of [`spin`] a microsecond.
fn with_layer(args: &Args, app: Router, per_us: f64) -> Router {
    let limit = args.limit;
    let horizon = Duration::from_secs(60);
    let end = Duration::from_secs_f64(args.outage_s);
    let outage = args.outage_s > 0.0;
    match args.layer.as_str() {
        "none" => app,
        "slots" => {
            let alloc = SlotAllocator::new(limit, horizon).unwrap_or_else(|e| fail(&e.to_string()));
            app.layer(PushbackLayer::new(if outage {
                alloc.outage_until(end)
            } else {
                alloc
            }))
        }
        "adaptive" | "hold" => {
            let builder = AdaptiveAllocator::builder().estimate(limit);
            // Held through the outage, however many: the memory measurement.
            let builder = match (args.layer.as_str(), outage) {
                // Patient past the outage's end by a minute: time for the
                // queue ahead to drain (at the hold's starting rate, 0.6 of
                // `--limit`), so that none is turned away for want of it.
                ("hold", true) => builder
                    .hold_max(1_000_000)
                    .hold_for(end + Duration::from_secs(60)),
                ("hold", false) => builder.hold(),
                _ => builder,
            };
            let alloc = builder.build().unwrap_or_else(|e| fail(&e.to_string()));
            let layer = PushbackLayer::new(if outage {
                alloc.outage_until(end)
            } else {
                alloc
            });
            // How many requests the layer holds now, outside the layer: what
            // the held-request scripts check before they measure.
            let inspect = layer.clone();
            let held = move || {
                let n = inspect.inspect(herdless::pushback::Allocator::held);
                std::future::ready(n.to_string())
            };
            app.layer(layer)
                .merge(Router::new().route("/held", get(held)))
        }
        "concurrency" => app.layer(tower::limit::ConcurrencyLimitLayer::new(limit as usize)),
        "governor" => {
            use tower_governor::governor::GovernorConfigBuilder;
            use tower_governor::key_extractor::GlobalKeyExtractor;
            let config = GovernorConfigBuilder::default()
                .key_extractor(GlobalKeyExtractor)
                .per_nanosecond((1e9 / limit).max(1.0) as u64)
                .burst_size((limit / 10.0).max(1.0) as u32)
                .finish()
                .unwrap_or_else(|| fail("governor: a zero rate"));
            app.layer(tower_governor::GovernorLayer::new(config))
        }
        // The positive control: a layer that adds a known cost, `--limit`
        // microseconds of CPU before each request (what the latency script
        // must find).
        "control" => {
            let iterations = (per_us * limit) as u64;
            app.layer(tower::util::MapRequestLayer::new(
                move |request: Request<Body>| {
                    black_box(spin(iterations));
                    request
                },
            ))
        }
        "waves" => fail("cohort waves are not on this branch yet"),
        other => fail(&format!("unknown layer {other}")),
    }
}

fn serve(args: Args) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads)
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(&e.to_string()));
    rt.block_on(async {
        let app = layered(&args);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| fail(&e.to_string()));
        let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
        println!("port {port}");
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap_or_else(|e| fail(&e.to_string()));
    });
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    match args.first().map(String::as_str) {
        Some("serve") => serve(Args {
            layer: flag(&args, "--layer").unwrap_or_else(|| "none".into()),
            limit: number(&args, "--limit", 1e6),
            work_us: number(&args, "--work-us", 50.0),
            capacity: number(&args, "--capacity", 0.0),
            threads: number(&args, "--threads", 1.0) as usize,
            outage_s: number(&args, "--outage-s", 0.0),
        }),
        Some("probe") => clients::probe(
            &args[1..]
                .iter()
                .take_while(|a| !a.starts_with("--"))
                .cloned()
                .collect::<Vec<_>>(),
            positive(&args, "--rate", 400.0, 1e7),
            positive(&args, "--secs", 10.0, 86_400.0),
            positive(&args, "--conns", 4.0, 1e5) as usize,
        ),
        Some("hold-h2") => clients::hold_h2(
            args.get(1).map_or("http://127.0.0.1:8080/", String::as_str),
            positive(&args, "--n", 1000.0, 1e7) as usize,
            positive(&args, "--per-conn", 190.0, 1e5) as usize,
            args.iter().any(|a| a == "--release"),
        ),
        Some("calibrate") => println!("{:.1} iterations/us", calibrate()),
        // `cargo bench` runs every bench target: this one only on request.
        _ => eprintln!(
            "server bench: serve | probe URL... | hold-h2 URL --n N [--release] | calibrate (scripts/server-overhead.sh)"
        ),
    }
}
