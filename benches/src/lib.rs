//! Benchmarks only: see `benches/*.rs` and `docs/performance.md`.
