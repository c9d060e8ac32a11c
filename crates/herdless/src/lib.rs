//! # herdless: retries without the thundering herd
//!
//! When a shared device (a scanner controller, a storage array, a payment
//! endpoint) times out, the danger is what a fleet of workers does about it at
//! the same instant. herdless retries with **bounded exponential backoff with
//! jitter**, guarded by a **classifier that fails closed**, a **budget on
//! attempts and on elapsed time** (monotonic clock), **server-supplied delays
//! honored but clamped**, and **structured events** — in blocking and async
//! code, with time and randomness injectable for deterministic tests.
//!
//! ```
//! use std::time::Duration;
//! use herdless::{Classification, Jitter, Policy, Retry};
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
//!     .build()?;
//!
//! let retry = Retry::builder()
//! .policy(policy)
//! .classifier(|e: &DeviceError| match e {
//!     DeviceError::Timeout => Classification::retryable(),
//!     DeviceError::Busy { retry_after_s } => Classification::retry_after_secs(*retry_after_s),
//!     DeviceError::Unauthorized => Classification::terminal(),
//! })
//! .task_id("capture-0042")
//! .build();
//!
//! let mut replies = vec![Ok("page"), Err(DeviceError::Busy { retry_after_s: 0.002 }), Err(DeviceError::Timeout)];
//! let page = retry.call(|_attempt| {
//!     // attempt.idempotency_key() is the same on every attempt of this call
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
//! | policy, validating builder, jitter math, server delays (clamp and spread) | [`policy`] |
//! | the sans-IO decision engine, `Retry` and its blocking / async executors, errors, events, event levels, metrics | [`engine`] |
//! | retryable / terminal classification | [`classify`] |
//! | fleet-level guards: shared retry budget, breaker, escape lane, pushback | [`fleet`] |
//! | HTTP statuses, `Retry-After`, `Retry-After-Ms`, `reqwest`, reqwest-middleware (features `http`, `reqwest`, `reqwest-middleware`) | `http` |
//! | gRPC status codes (`UNAVAILABLE` by default), `grpc-retry-pushback-ms` (feature `grpc`; tower flavour with `tower`) | `grpc` |
//! | tower client-side retry (`RetryPolicy`, a `tower::retry::Policy` over the engine) and `RetryBudget` as tower's `Budget` (feature `tower`; HTTP flavour with `http`) | `integrations` |
//! | retries by a broker's redelivery: the engine's state in message headers; NATS JetStream (feature `nats`) | [`redelivery`] |
//! | long-lived backoff with a reset policy (reconnect loops) | [`backoff`] |
//! | per-retrier randomness, idempotency keys | [`rng`] |
//! | injectable clock and sleep | [`timer`] |
//!
//! ## Features
//!
//! * `tokio`: the default [`SystemTimer`] reads tokio's clock and sleeps with
//!   `tokio::time::sleep` in [`Retry::call_async`], so `tokio::time::pause`
//!   makes async tests instant.
//!
//! * `tower`: `fleet::PushbackLayer`, the server side of [`fleet::pushback`]
//!   as a tower `Layer`, and the client side: `integrations::RetryPolicy`, a
//!   `tower::retry::Policy` driving the engine, and `RetryBudget` as tower's
//!   `Budget` (adds `tower` with its `retry` module, `http`,
//!   `pin-project-lite`; implies `tokio`). With `http` too:
//!   `integrations::HttpClassifier` (statuses, `Retry-After`).
//! * `http`: [`http`] — the HTTP status classifier (retryable and terminal sets that
//!   fail closed) and a hostile-input-safe `Retry-After` parser (adds `httpdate`).
//! * `grpc`: `grpc` — the gRPC status-code classifier (`UNAVAILABLE` plus
//!   configured codes; unknown codes fail closed) and `grpc-retry-pushback-ms`
//!   under the gRPC retry design (a negative or unparseable value stops the
//!   retries: `GiveUp::ServerPushback`). Adds no dependency. With `tower` too:
//!   `integrations::GrpcClassifier` (`grpc-status` of trailers-only responses).
//! * `reqwest`: `http::client` — a retrying `reqwest` sender: idempotent
//!   methods only by default, refuses bodies it cannot clone, optional
//!   `Idempotency-Key` (adds `reqwest` 0.13 with its default features off: no
//!   TLS backend is forced, the application enables one on its own `reqwest`
//!   dependency; implies `http` and `tokio`). With `tower` too:
//!   `reqwest::Client` in a `tower::retry::RetryLayer`, classified by
//!   `http::client::HttpClassifier`.
//! * `reqwest-middleware`: `http::middleware::RetryMiddleware`, a
//!   `reqwest_middleware::Middleware` that drives the engine with an
//!   `HttpRetry`'s configuration (adds `reqwest-middleware` and `async-trait`;
//!   implies `reqwest`).
//! * `metrics`: counters, a histogram and gauges through the `metrics`
//!   crate's facade, recorded on the engine's event path (names and labels in
//!   [`engine::metrics`]; adds `metrics`).
//!
//! * `serde`: `Serialize`/`Deserialize` for [`Policy`] and [`Jitter`], with
//!   human durations (`"500ms"`, `"2m"`) and jitter names; deserializing
//!   validates through [`PolicyBuilder`], so an invalid value is an error
//!   naming the field. `PolicyConfig` is the partial form for layered
//!   configuration (`policy::serde`; adds `serde` and `humantime`). The
//!   shared guards' settings too: [`RetryBudget`] (a preset and its knobs) and
//!   [`Breaker`] (threshold, probe wait), validated by [`RetryBudgetBuilder`]
//!   and [`BreakerBuilder`].
//!
//! The default build depends on `tracing`, `fastrand` and `getrandom`, plus
//! `coarsetime` (the coarse monotonic clock) on Linux, Android, macOS and FreeBSD.

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc(test(attr(deny(warnings), allow(dead_code))))]

pub mod adapters;
pub mod backoff;
pub mod classify;
pub mod engine;
pub mod fleet;
#[cfg(feature = "grpc")]
#[cfg_attr(docsrs, doc(cfg(feature = "grpc")))]
pub mod grpc;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
pub mod policy;
pub mod pushback;
pub mod redelivery;
pub mod rng;
pub mod timer;

pub use backoff::{Backoff, ResetPolicy};
pub use classify::{
    AlwaysRetry, ByTrait, Classification, Classify, RetryCause, Retryable, WithTimeouts,
};
pub use engine::{
    Attempt, EventLevels, EventValue, GiveUp, NoNotify, Notify, Retry, RetryBuilder, RetryError,
    RetryEvent,
};
pub use fleet::{
    Breaker, BreakerBuilder, BreakerError, Denied, RetryBudget, RetryBudgetBuilder,
    RetryBudgetError, Spent, Urgent,
};
pub use policy::{
    Envelope, EnvelopeRow, Jitter, ParseJitterError, Policy, PolicyBuilder, PolicyError,
    PolicyField, QuantileSource, Schedule, UnknownPolicyField, MAX_DURATION,
};
pub use rng::{IdempotencyKey, ParseIdempotencyKeyError, Rng};
pub use timer::{AsyncSleep, Clock, CoarseClock, ManualTimer, Sleep, SystemTimer};

#[cfg(feature = "serde")]
pub use policy::serde::PolicyConfig;
