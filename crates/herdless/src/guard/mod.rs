//! Client guards: what one process does so that a fleet of retrying
//! callers does not become a storm. (This module was `fleet` until the name
//! meant three things; `herdless::fleet` stays one release, deprecated.)
//!
//! Per-call backoff de-synchronizes a fleet; it does not bound it. These
//! pieces are shared across calls and consulted by the [engine](crate::engine)
//! on every decision:
//!
//! | guard | what it bounds | module |
//! |---|---|---|
//! | shared retry budget (gRPC retry throttling, AWS retry quota) | a process's retry traffic | [`budget`] |
//! | half-open probe breaker | probing of a dead endpoint: one probe at a time | [`breaker`] |
//! | escape lane ([`Urgent`]) | starvation of urgent calls by the two above | [`urgent`] |
//! | adaptive throttle | a process's call rate (first tries and retries), by what the endpoint answers | [`throttle`] |
//! | wave guard | when one client comes back after a server announced a plan of waves: in its own wave | [`waves`] |
//!
//! The server's side of the same problem, telling each rejected caller when
//! to come back, is [`pushback`](crate::pushback).
//!
//! None of them reads a clock or sleeps: callers own their waiting, so the
//! executors, the simulator and hand-written drivers share one implementation.
//! Every driver takes a shared guard as `impl Into<Arc<_>>` (the guard itself,
//! or an `Arc` already shared with other drivers); the sans-IO
//! [`Context`](crate::engine::Context) borrows it for one decision.
//!
//! Each guard's code is in its folder here; what the engine does with it is
//! in the engine's core, one file per guard where it is more than a call:
//! the throttle's gate before an attempt in `engine/call/throttle.rs`.

pub mod breaker;
pub mod budget;
pub mod throttle;
pub mod urgent;
pub mod waves;

pub use breaker::{Admission, Breaker, BreakerBuilder, BreakerError, Probe};
pub use budget::{Denied, RetryBudget, RetryBudgetBuilder, RetryBudgetError, Spent};
pub use throttle::{Throttle, ThrottleBuilder, ThrottleError};
pub use urgent::Urgent;
pub use waves::WaveGuard;
