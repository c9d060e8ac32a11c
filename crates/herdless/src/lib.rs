//! # herdless: retries without the thundering herd
//!
//! When a shared device (a scanner controller, a storage array, a payment
//! endpoint) times out, the danger is what a fleet of workers does about it at
//! the same instant. herdless retries with **bounded exponential backoff with
//! jitter**, guarded by a **classifier that fails closed**, a **budget on
//! attempts and on elapsed time** (monotonic clock), **server-supplied delays
//! honored but clamped**, and **structured events** — in blocking and async
//! code, with time and randomness injectable for deterministic tests — plus
//! fleet-level guards (a shared retry budget, a half-open breaker, an escape
//! lane) and server-side pushback.
//!
//! ## The front door
//!
//! One line, the classifier picked by the error's type (`std::io::Error`, and
//! with their features `reqwest::Error`, `http::StatusCode`, `tonic::Status`):
//!
//! ```
//! use herdless::prelude::*;
//!
//! fn scan() -> std::io::Result<u32> { Ok(12) }
//!
//! let pages = (|| scan()).retry(Policy::default())?;         // blocking
//! # assert_eq!(pages, 12);
//! # #[cfg(feature = "tokio")]
//! # tokio::runtime::Builder::new_current_thread().enable_time().build()?.block_on(async {
//! # async fn fetch() -> std::io::Result<u32> { Ok(1) }
//! let page = fetch.retry(Policy::default()).await?;          // async (feature `tokio`)
//! # assert_eq!(page, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(()) })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Your own error type gets a classifier; a policy its bounds; a retrier its
//! task id and shared guards ([`Retry::builder`]). An error type with no
//! classifier does not compile: herdless never retries what it cannot classify.
//!
//! ```
//! use std::time::Duration;
//! use herdless::prelude::*;
//!
//! #[derive(Debug)]
//! enum DeviceError { Timeout, Busy { retry_after_s: f64 }, Unauthorized }
//!
//! let policy = Policy::builder()
//!     .base(Duration::from_millis(1))     // first retry waits up to 1 ms
//!     .cap(Duration::from_millis(20))     // no single wait is longer
//!     .max_attempts(6)                    // 1 call + 5 retries
//!     .max_elapsed(Duration::from_secs(2))
//!     .jitter(Jitter::Full)
//!     .build()?;                          // typed error naming the field
//!
//! let retry = Retry::builder()
//!     .policy(policy)
//!     .classify(|e| match e {
//!         DeviceError::Timeout => Classification::retryable(),
//!         DeviceError::Busy { retry_after_s } => Classification::retry_after_secs(*retry_after_s),
//!         DeviceError::Unauthorized => Classification::terminal(),
//!     })
//!     .task_id("capture-0042")
//!     .build();
//!
//! let mut replies = vec![Ok("page"), Err(DeviceError::Busy { retry_after_s: 0.002 }), Err(DeviceError::Timeout)];
//! let page = retry.call(|attempt| {
//!     let _key = attempt.idempotency_key(); // the same on every attempt of this call
//!     replies.pop().unwrap()
//! });
//! assert_eq!(page.unwrap(), "page");
//! # Ok::<(), herdless::PolicyError>(())
//! ```
//!
//! ## Where things are
//!
//! | concept | module |
//! |---|---|
//! | policy, validating builder, jitter math, server delays (clamp and spread), the delay envelope | [`policy`] |
//! | the sans-IO decision engine: every decision, time passed in (the core) | [`engine`] |
//! | [`Retry`], its builder and executors, the front door, the call's error | [`retry`] |
//! | structured events, their levels, the notify hook, metrics | [`events`] |
//! | retryable / terminal classification, by closure or by the error's type | [`classify`] |
//! | client guards: shared retry budget, breaker, escape lane, throttle, wave guard | [`guard`] |
//! | hedged requests (the latency tail), bounded by the budget and the breaker | [`hedge`] |
//! | server-side load shedding: pushback slot allocators, static and adaptive; the wave planner | [`pushback`] |
//! | HTTP and gRPC protocol knowledge: statuses, `Retry-After`, `grpc-retry-pushback-ms` | `http`, `grpc` |
//! | adapters: tower, reqwest (and reqwest-middleware), tonic, NATS JetStream | [`adapters`] |
//! | retries by a broker's redelivery: the engine's state in message headers | [`redelivery`] |
//! | long-lived backoff with a reset policy (reconnect loops) | [`backoff`] |
//! | per-retrier randomness, idempotency keys | [`rng`] |
//! | injectable clock and sleep | [`timer`] |
//!
//! ## Features
//!
//! This is the one list; the README and the guides link here. With no
//! feature, herdless depends on `tracing`, `fastrand` and `getrandom`, plus
//! `coarsetime` (the coarse monotonic clock) on Linux, Android, macOS and
//! FreeBSD.
//!
//! | feature | what | adds |
//! |---|---|---|
//! | `tokio` | the default [`SystemTimer`] reads tokio's clock and sleeps with `tokio::time::sleep` in the async executors (so `tokio::time::pause` makes async tests instant). Without it, async calls need a timer of your own (`RetryBuilder::timer`); with the default `SystemTimer` they do not compile, and the error names this feature | `tokio` (`time`) |
//! | `http` | `http`: status classifier (retryable and terminal sets that fail closed), a hostile-input-safe `Retry-After` parser, `Retry-After-Ms`, the `Herdless-Plan` header's name; `http::StatusCode` is [`Retryable`] | `http`, `httpdate` |
//! | `grpc` | `grpc`: status-code classifier (`UNAVAILABLE` plus configured codes; unknown codes fail closed), `grpc-retry-pushback-ms` under the gRPC retry design (negative or unparseable: [`GiveUp::DoNotRetry`]) | nothing |
//! | `tower` | `adapters::tower`: client-side retry as a `tower::retry::Policy` driving the engine, [`RetryBudget`] as tower's `Budget`, response classifiers for `http::Response` (and `grpc-status` with `grpc`), the budgeted hedging `Layer`, request timeouts from the attempt's deadline (`grpc-timeout` with `grpc`), the pushback `Layer` for axum and hyper; implies `http` and `tokio` | `tower` (`retry`), `pin-project-lite` |
//! | `reqwest` | `adapters::reqwest`: a retrying `reqwest` sender (idempotent methods only by default, refuses bodies it cannot clone, optional `Idempotency-Key`); `reqwest::Error` is [`Retryable`]; with `tower`, `reqwest::Client` in a `RetryLayer`. reqwest's default features are off: no TLS backend is forced, enable one on your own `reqwest` dependency; implies `http` and `tokio` | `reqwest` 0.13, `bytes` |
//! | `reqwest-middleware` | `adapters::reqwest::middleware`: a `reqwest_middleware::Middleware` driving the engine; implies `reqwest` | `reqwest-middleware` 0.5, `async-trait` |
//! | `tonic` | `adapters::tonic`: `tonic::Status` is [`Retryable`] by the gRPC rules; implies `grpc` | `tonic` 0.13 (default features off) |
//! | `nats` | `adapters::nats`: retries by redelivery from a NATS JetStream pull consumer (ack on success, NAK with the engine's delay, dead letters, in-progress acks); `KvShared`, pushback replicas sharing their reports through a key-value bucket; implies `tokio` | `async-nats` (JetStream, key-value), `futures-util`, `bytes`, `base64`, `serde` and `serde_json` (all already async-nats's own) |
//! | `metrics` | counters, a histogram and gauges through the `metrics` facade, recorded on the engine's event path (names in [`events::metrics`]) | `metrics` |
//! | `serde` | `Serialize`/`Deserialize` for [`Policy`] (through the builder's validation: an invalid value is an error naming the field), `PolicyConfig` (a partial policy for layering), [`RetryBudget`] and [`Breaker`] settings; human durations (`"500ms"`) | `serde`, `humantime` |

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc(test(attr(deny(warnings), allow(dead_code))))]

pub mod adapters;
pub mod backoff;
pub mod classify;
pub mod engine;
pub mod events;
#[deprecated(
    since = "0.1.0",
    note = "renamed `herdless::guard` (the client guards); this path goes in the next release"
)]
#[doc(hidden)]
pub mod fleet {
    //! The old path of [`guard`](crate::guard).
    pub use crate::guard::*;

    /// The old path of [`guard::urgent`](crate::guard::urgent).
    pub mod escape_lane {
        pub use crate::guard::urgent::*;
    }
}
#[cfg(feature = "grpc")]
#[cfg_attr(docsrs, doc(cfg(feature = "grpc")))]
pub mod grpc;
pub mod guard;
pub mod hedge;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
pub mod policy;
pub mod pushback;
pub mod redelivery;
pub mod retry;
pub mod rng;
pub mod timer;

pub use classify::{AlwaysRetry, ByTrait, Classification, Classify, RetryCause, Retryable};
pub use events::{GiveUp, Notify, RetryEvent};
pub use guard::{Breaker, RetryBudget, Urgent};
pub use policy::{Jitter, Policy, PolicyBuilder, PolicyError};
pub use retry::{Attempt, Retry, RetryAsync, RetryBlocking, RetryBuilder, RetryError};
pub use rng::{IdempotencyKey, Rng};
pub use timer::{AsyncSleep, Clock, ManualTimer, Sleep, SystemTimer};

/// The names most code needs: `use herdless::prelude::*;` brings the front
/// door (`.retry(...)` on closures) with the policy, the retrier, the
/// classification and the shared retry budget.
///
/// ```
/// use herdless::prelude::*;
/// let n = (|| Ok::<_, std::io::Error>(3)).retry(Policy::default()).unwrap();
/// assert_eq!(n, 3);
/// let _budget = RetryBudget::aws();
/// ```
pub mod prelude {
    pub use crate::classify::{Classification, Classify, Retryable};
    pub use crate::guard::RetryBudget;
    pub use crate::policy::{Jitter, Policy};
    pub use crate::retry::{Retry, RetryAsync, RetryBlocking, RetryError};
}

/// The repository's README: its Rust examples compile as written.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct RepositoryReadme;

/// This crate's README (crates.io's page): its example compiles as written.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct CrateReadme;
