//! Adapters: the engine driven from the stacks users run, one folder per
//! feature.
//!
//! | adapter | feature | what |
//! |---|---|---|
//! | [`tower`] | `tower` | client-side retry as a `tower::retry::Policy` ([`tower::RetryPolicy`]), [`RetryBudget`](crate::RetryBudget) as tower's `Budget`, server-side pushback as a `Layer` ([`tower::PushbackLayer`]) |
//! | [`reqwest`] | `reqwest` | a retrying sender ([`reqwest::HttpRetry`]), `reqwest::Error` as a [`Retryable`](crate::Retryable) error; with `reqwest-middleware`, a `reqwest_middleware::Middleware` |
//! | [`nats`] | `nats` | retries by redelivery over NATS JetStream ([`nats::Worker`]) |
//! | [`tonic`] | `tonic` | `tonic::Status` as a [`Retryable`](crate::Retryable) error (gRPC's retry rules) |
//!
//! None decides anything: each asks the [engine](crate::engine) (through
//! [`Retry`](crate::Retry) or [`Engine`](crate::engine::Engine) and
//! [`Context`](crate::engine::Context)), so the policy, the jitter, the
//! server-delay rules, the shared guards and the events are the same
//! everywhere. What they know of a protocol (statuses, `Retry-After`, gRPC
//! codes) comes from [`http`](crate::http) and [`grpc`](crate::grpc), which
//! depend on no adapter.

#[cfg(feature = "nats")]
#[cfg_attr(docsrs, doc(cfg(feature = "nats")))]
pub mod nats;
#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub mod reqwest;
#[cfg(feature = "tonic")]
#[cfg_attr(docsrs, doc(cfg(feature = "tonic")))]
pub mod tonic;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;
