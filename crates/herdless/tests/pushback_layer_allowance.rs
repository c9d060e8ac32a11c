//! The tower layer's allowances (each thread admitting from admissions its
//! allocator granted ahead of time): counts stay exact, an outage or a
//! refusal takes every allowance back at once, and threads together never
//! admit more than the allocator would alone.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Barrier;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use herdless::ManualTimer;
use herdless::adapters::tower::PushbackLayer;
use herdless::pushback::{AdaptiveAllocator, Allocator, SlotAllocator};
use http::{Request, Response, StatusCode};
use tower::{Layer, Service};

/// A handler answering `status` at once.
fn handler(
    status: StatusCode,
    calls: &AtomicU32,
) -> impl Service<Request<()>, Response = Response<()>, Error = Infallible, Future: Unpin> + Clone + '_
{
    tower::service_fn(move |_: Request<()>| {
        calls.fetch_add(1, Ordering::Relaxed);
        let mut r = Response::new(());
        *r.status_mut() = status;
        std::future::ready(Ok::<_, Infallible>(r))
    })
}

/// One request through `svc`, its future polled to its end (every answer
/// here is ready at once): the status the caller sees.
fn one<S>(svc: &mut S) -> StatusCode
where
    S: Service<Request<()>, Response = Response<()>>,
    S::Error: std::fmt::Debug,
{
    let mut cx = Context::from_waker(Waker::noop());
    assert!(svc.poll_ready(&mut cx).is_ready());
    let future = std::pin::pin!(svc.call(Request::new(())));
    match future.poll(&mut cx) {
        Poll::Ready(Ok(r)) => r.status(),
        other => panic!("a ready answer, got {:?}", other.is_ready()),
    }
}

#[test]
fn every_request_admitted_on_an_allowance_is_counted_once() {
    let timer = ManualTimer::new();
    let alloc = AdaptiveAllocator::new(1e6, Duration::from_secs(60)).unwrap();
    let layer = PushbackLayer::with_clock(alloc, timer.clone());
    let calls = AtomicU32::new(0);
    let mut svc = layer.layer(handler(StatusCode::OK, &calls));
    for i in 0..5_000u64 {
        if i % 100 == 0 {
            timer.advance(Duration::from_micros(300));
        }
        assert_eq!(one(&mut svc), StatusCode::OK);
    }
    assert_eq!(calls.load(Ordering::Relaxed), 5_000);
    assert_eq!(layer.counts(), (5_000, 0));
    let counts = layer.inspect(|a| a.counts());
    assert_eq!((counts.arrivals, counts.served), (5_000, 5_000));
}

#[test]
fn an_outage_started_by_hand_takes_every_allowance_back() {
    // After any number of admissions (this thread's allowance at any point of
    // its growth, some of it left or none), the outage holds at once.
    for n in 1..=40 {
        let alloc = SlotAllocator::new(1e6, Duration::from_secs(60)).unwrap();
        let layer = PushbackLayer::with_clock(alloc, ManualTimer::new());
        for _ in 0..n {
            assert!(layer.decide().is_admit());
        }
        layer.start_outage(None);
        assert!(
            !layer.decide().is_admit(),
            "admitted from an allowance in an outage after {n}"
        );
        layer.recover();
        assert!(layer.decide().is_admit());
    }
}

#[test]
fn the_services_refusals_reach_the_allocator_as_they_would_without_allowances() {
    // A service refusing everything: the allocator alone admits a few,
    // learns the service is down, and turns the rest away. Through the
    // layer (allowances and all) the service sees exactly as many, however
    // many refusals mean "down".
    for down_after in 1..=12 {
        let alloc = || {
            AdaptiveAllocator::builder()
                .estimate(1e6)
                .down_after(down_after)
                .build()
                .unwrap()
        };
        let mut alone = alloc();
        let mut expected = 0;
        for _ in 0..200 {
            if alone.decide(Duration::ZERO).is_admit() {
                expected += 1;
                let _ = Allocator::refused(&mut alone, Duration::ZERO, None);
            }
        }
        assert!((1..200).contains(&expected), "{expected}");

        let layer = PushbackLayer::with_clock(alloc(), ManualTimer::new());
        let calls = AtomicU32::new(0);
        let mut svc = layer.layer(handler(StatusCode::SERVICE_UNAVAILABLE, &calls));
        for _ in 0..200 {
            assert_eq!(one(&mut svc), StatusCode::SERVICE_UNAVAILABLE);
        }
        assert_eq!(
            calls.load(Ordering::Relaxed),
            expected,
            "down after {down_after}"
        );
    }
}

#[test]
fn two_threads_admit_no_more_than_the_burst_between_them() {
    // Time stands still: the allocator alone admits its burst, then nothing.
    let burst = 1_000;
    let timer = ManualTimer::new();
    let alloc = SlotAllocator::new(10_000.0, Duration::from_secs(60))
        .unwrap()
        .burst(burst);
    let layer = PushbackLayer::with_clock(alloc, timer);
    let admitted = AtomicU32::new(0);
    let start = Barrier::new(2);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                start.wait();
                for _ in 0..20_000 {
                    if layer.decide().is_admit() {
                        admitted.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert_eq!(admitted.load(Ordering::Relaxed), burst);
    assert_eq!(
        layer.counts(),
        (u64::from(burst), 40_000 - u64::from(burst))
    );
}
