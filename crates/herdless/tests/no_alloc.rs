//! The success path allocates nothing: a counting global allocator sees zero
//! allocations across thousands of first-try successes, blocking and async.
//! (This test binary has a single test, so no other test's allocations interfere;
//! only allocations made on this thread while counting are counted.)
//!
//! Built with every feature of the library on (the package's dev-dependency on
//! itself turns them on, and `cargo test --workspace` unifies the rest): a
//! feature must not put an allocation on the path of calls that do not use it
//! (`metrics` with no recorder installed among them). The assertion below
//! stops the build if one is missing.

#![allow(unsafe_code)] // the counting allocator implements `GlobalAlloc`

const _: () = assert!(
    cfg!(feature = "tokio")
        && cfg!(feature = "http")
        && cfg!(feature = "grpc")
        && cfg!(feature = "tower")
        && cfg!(feature = "reqwest")
        && cfg!(feature = "reqwest-middleware")
        && cfg!(feature = "tonic")
        && cfg!(feature = "nats")
        && cfg!(feature = "metrics")
        && cfg!(feature = "serde"),
    "no_alloc.rs runs with every feature of the library on"
);

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use herdless::{AlwaysRetry, ManualTimer, Policy, Retry, SystemTimer};

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: delegates every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.with(|a| a.set(a.get() + 1));
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.with(|a| a.set(a.get() + 1));
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_during(f: impl FnOnce()) -> u64 {
    ALLOCATIONS.with(|a| a.set(0));
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.with(Cell::get)
}

fn poll_once<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("a first-try success completes in one poll"),
    }
}

#[test]
fn success_path_does_not_allocate() {
    let policy = Policy::default();
    // Warm up thread-locals (fastrand's generator) outside the counted region.
    let _ = Retry::new(policy, AlwaysRetry).call(|_| Ok::<_, ()>(0));

    let blocking = allocations_during(|| {
        for i in 0..10_000u64 {
            let out = Retry::builder()
                .policy(policy)
                .classifier(AlwaysRetry)
                .task_id("hot-path")
                .timer(SystemTimer)
                .build()
                .call(|a| Ok::<_, ()>(i + u64::from(a.number())));
            assert_eq!(out, Ok(i + 1));
        }
    });
    assert_eq!(blocking, 0, "blocking success path allocated");

    let timer = ManualTimer::new();
    let asynchronous = allocations_during(|| {
        for i in 0..10_000u64 {
            let retry = Retry::builder()
                .policy(policy)
                .classifier(AlwaysRetry)
                .timer(&timer)
                .build();
            let out = poll_once(
                retry.call_async(|a| async move { Ok::<_, ()>(i + u64::from(a.number())) }),
            );
            assert_eq!(out, Ok(i + 1));
        }
    });
    assert_eq!(asynchronous, 0, "async success path allocated");

    // The counter itself works: an allocation is seen.
    let seen = allocations_during(|| drop(std::hint::black_box(vec![1u8; 64])));
    assert_eq!(seen, 1);
}
