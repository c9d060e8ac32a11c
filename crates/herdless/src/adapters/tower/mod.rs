//! tower (feature `tower`): client-side retry as a `tower::retry::Policy`,
//! budgeted hedging as a `Layer`, the shared budget as tower's `Budget`, and
//! server-side pushback as a `Layer`.
//!
//! # tower client-side retry
//!
//! [`RetryPolicy`] is a [`tower::retry::Policy`]: put it in a
//! [`tower::retry::RetryLayer`] in front of any client service (hyper-util's
//! client, a `service_fn`, a gRPC channel). It makes no decision of its own:
//! for every result it asks the [engine](crate::engine) — the same code as
//! [`Retry::call_async`](crate::Retry::call_async) — so the policy, the jitter,
//! the shared [`RetryBudget`](crate::RetryBudget), the [`Breaker`](crate::Breaker),
//! the escape lane and the `tracing` events (`retry_scheduled`,
//! `retry_succeeded`, `retry_abandoned_terminal`, `retry_budget_exhausted`)
//! behave exactly as in the executors.
//!
//! ## Why the clone holds the engine
//!
//! tower's `Retry` service clones its policy for every request and keeps the
//! clone in that request's response future. A clone of a `RetryPolicy` is
//! therefore *a new call*: it shares the configuration (a [`Retry`](crate::Retry),
//! behind an `Arc`: policy, classifier, timer, hook, task id, seed, budget,
//! breaker, urgency) and starts its own [`Engine`](crate::engine::Engine),
//! origin instant (read from the timer when the clone is made, i.e. when the
//! request is sent) and generator (created at the first failure, from the
//! seed or [`Rng::fresh`](crate::Rng::fresh)). No state leaks from one
//! request to the next, and no shared generator puts a fleet's retries in
//! step. Dropping the response future early settles the call (an admitted
//! retry is refunded, an outstanding probe released).
//!
//! `retry` classifies the result with a [`ClassifyResult`](crate::classify::ClassifyResult) (a closure over
//! `&Result<Res, E>`, [`ByError`](crate::classify::ByError) around any [`Classify`](crate::Classify),
//! [`HttpClassifier`] or [`GrpcClassifier`]) and asks `Engine::failed`; on
//! [`Decision::Retry`](crate::engine::Decision) it returns a [`RetryWait`]
//! future that sleeps the delay through the timer ([`SystemTimer`](crate::SystemTimer):
//! `tokio::time::sleep`, so `tokio::time::pause` works; or a
//! [`ManualTimer`](crate::ManualTimer)), then asks `Engine::ready`, sleeping
//! again while an open breaker's probe is out.
//!
//! One limit comes from tower's trait: once the wait future has been
//! returned, tower *will* send the retry. If, behind an open breaker, waiting
//! for the probe would pass the elapsed limit, the engine gives up (refunds
//! the retry, emits `retry_budget_exhausted` with `max_elapsed`), the future
//! ends, tower sends that one attempt, and its result is returned as it is,
//! whatever it is: no further retry.
//!
//! ## Requests that cannot be cloned
//!
//! tower retries a copy of the request, made by the policy's
//! [`CloneRequest`] before each attempt: [`Cloned`] (any `Req: Clone`, e.g.
//! `http::Request<Full<Bytes>>`), a closure, or [`CloneBody`] for
//! `http::Request<B>`. When it returns `None` (a streaming body that can only
//! be sent once), the request is **sent once and never retried**, whatever
//! the result: tower returns it as it came. The policy counts these
//! ([`RetryPolicy::not_clonable`]) and logs a `retry_not_clonable` event
//! (DEBUG, target `herdless`, with `task_id`). Buffer a body you need
//! retried.
//!
//! ## Timeouts from the deadline
//!
//! A tower policy cannot cut an attempt (tower polls the inner service's
//! future; the policy sees only its result), so attempt deadlines reach the
//! service through the request. [`RetryPolicy::with_request_timeout`] takes a
//! [`RequestTimeout`] and sets, on every retry's request, the time that retry
//! may take ([`Engine::remaining`](crate::engine::Engine::remaining) at the
//! time it is due: the policy's `attempt_timeout`, or what is left of
//! `max_elapsed`, whichever is smaller):
//!
//! * **gRPC**: [`GrpcTimeout`] writes it as `grpc-timeout` (feature `grpc`);
//!   the server, and every proxy on the way, then ends the attempt itself.
//! * **reqwest as the service** (`reqwest::Client` is a
//!   `Service<reqwest::Request>`): `|r: &mut reqwest::Request, d| *r.timeout_mut() = Some(d)`;
//!   reqwest ends the attempt, with an error its classifier calls a timeout.
//! * **`http::Request` to hyper** (hyper's client has no per-request
//!   timeout): put `tower::timeout::TimeoutLayer::new(attempt_timeout)`
//!   *inside* the retry layer, so each attempt's future is dropped after the
//!   attempt timeout, and classify its `Elapsed` error as a retryable
//!   timeout with [`HttpClassifier::errors`] (a
//!   [`WithTimeouts`](crate::classify::WithTimeouts)). That bounds every
//!   attempt by the timeout but not by what is left of `max_elapsed`; for
//!   that, carry the remaining time in the request (a closure that inserts
//!   it into `extensions_mut()`) to a layer of your own that reads it.
//!
//! Two limits come from tower: the first attempt is sent as the caller built
//! it (give it its timeout yourself: `min(attempt_timeout, max_elapsed)`),
//! and a retry held behind an open breaker's probe starts later than it was
//! due, by the probe wait, with the timeout reckoned from when it was due.
//! The [hedging layer](HedgeLayer) has neither limit: it builds every copy,
//! the first included, when it sends it.
//!
//! ## HTTP: statuses and Retry-After
//!
//! With the `http` feature, [`HttpClassifier`] classifies
//! `Result<http::Response<B>, E>` with the library's
//! [`StatusClassifier`](crate::http::StatusClassifier) and a server delay taken
//! from `Retry-After-Ms` (preferred) or `Retry-After`; the policy clamps it
//! to `max_retry_after`, spreads it, and counts it against `max_elapsed`
//! (see [`classify_response_ms`](crate::http::classify_response_ms)).
//!
//! ## gRPC: `grpc-status` and pushback
//!
//! With the `grpc` feature, [`GrpcClassifier`] classifies a gRPC channel's
//! `Result<http::Response<B>, E>` by its `grpc-status` header (trailers-only
//! responses: a call that failed before any message) and
//! `grpc-retry-pushback-ms` under the gRPC retry design: a valid pushback is a
//! server delay (clamped, spread, counted against `max_elapsed`), a negative
//! or unparseable one ends the call with
//! [`GiveUp::DoNotRetry`](crate::GiveUp::DoNotRetry). A status that
//! only arrives in the trailers after a message is not visible to a tower
//! policy: classify the final `tonic::Status` with
//! [`grpc::classify_status`](crate::grpc::classify_status) instead.
//!
//! # Hedging
//!
//! [`HedgeLayer`] sends a second copy of a slow request after a delay and
//! returns the first success: tower's `hedge` with the engine's guards, the
//! shared [`RetryBudget`](crate::RetryBudget) first (a hedge costs a retry's
//! tokens, so an outage drains the budget and stops the hedges). See
//! [`hedge`](crate::hedge) for the model and when it helps.
//!
//! # tower's `Budget`
//!
//! [`RetryBudget`](crate::RetryBudget) implements
//! [`tower::retry::budget::Budget`]; the mapping is in [`budget`].
//!
//! # Server side: pushback
//!
//! [`PushbackLayer`] puts a [`pushback`](crate::pushback) allocator in front of
//! a service (axum, hyper): see [`pushback`].
//!
//! | item | file |
//! |---|---|
//! | [`RetryPolicy`], [`RetryWait`] | `retry.rs` |
//! | [`RequestTimeout`], [`NoTimeout`] | `timeout.rs` |
//! | [`HedgeLayer`], [`HedgeService`], [`Idempotent`] | `hedge.rs` |
//! | [`CloneRequest`], [`Cloned`], [`NotCloned`] | `clone.rs` |
//! | [`HttpClassifier`], [`CloneBody`] | `http.rs` |
//! | [`GrpcClassifier`], [`GrpcTimeout`] (with `grpc`) | `grpc.rs` |
//! | `Budget for RetryBudget` | [`budget`] |
//! | [`PushbackLayer`], [`PushbackService`] | [`pushback`] |

pub mod budget;
mod clone;
#[cfg(feature = "grpc")]
mod grpc;
mod hedge;
mod http;
pub mod pushback;
mod retry;
mod timeout;

pub use clone::{CloneRequest, Cloned, NotCloned};
#[cfg(feature = "grpc")]
#[cfg_attr(docsrs, doc(cfg(feature = "grpc")))]
pub use grpc::{GrpcClassifier, GrpcTimeout};
pub use hedge::{HedgeLayer, HedgeService, Idempotent};
pub use http::{CloneBody, HttpClassifier};
pub use pushback::{PushbackLayer, PushbackService};
pub use retry::{RetryPolicy, RetryWait};
pub use timeout::{NoTimeout, RequestTimeout};
