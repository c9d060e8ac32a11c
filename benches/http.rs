//! Cost of the HTTP pieces on the failure path: parsing `Retry-After` and
//! classifying a response (`cargo bench -p herdless-benches --bench http`).
#![allow(missing_docs)] // criterion_group! defines undocumented functions

use std::hint::black_box;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use criterion::{Criterion, criterion_group, criterion_main};
use herdless::http::{StatusClassifier, classify_response, parse_retry_after};

fn bench(c: &mut Criterion) {
    let now: SystemTime = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let mut g = c.benchmark_group("retry_after");
    for (name, value) in [
        ("seconds", &b"120"[..]),
        ("huge", &b"99999999999999999999"[..]),
        ("imf_fixdate", &b"Tue, 14 Nov 2023 22:13:25 GMT"[..]),
        ("garbage", &b"soon, maybe"[..]),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| parse_retry_after(black_box(value), black_box(now)))
        });
    }
    let eight_kb = vec![b'x'; 8192];
    g.bench_function("8kb", |b| {
        b.iter(|| parse_retry_after(black_box(&eight_kb), black_box(now)))
    });
    g.finish();
    let statuses = StatusClassifier::new();
    c.bench_function("classify_response_503_with_date", |b| {
        b.iter(|| {
            classify_response(
                black_box(&statuses),
                black_box(503),
                Some(black_box(b"Tue, 14 Nov 2023 22:13:25 GMT")),
                now,
            )
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
