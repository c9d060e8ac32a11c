//! Fleet-level guards: what one process (or one server) does so that a fleet
//! of retrying callers does not become a storm.
//!
//! Per-call backoff de-synchronizes a fleet; it does not bound it. These
//! pieces are shared across calls and consulted by the [engine](crate::engine)
//! on every decision:
//!
//! | guard | what it bounds | module |
//! |---|---|---|
//! | shared retry budget (gRPC retry throttling, AWS retry quota) | a process's retry traffic | [`budget`] |
//! | half-open probe breaker | probing of a dead endpoint: one probe at a time | [`breaker`] |
//! | escape lane | starvation of urgent calls by the two above | [`escape_lane`] |
//! | server pushback (slot allocator) | a recovering server's arrival rate: each rejection gets its own slot | [`pushback`] |
//! | adaptive pushback | the same, learning the capacity and the outage's end, robust to callers that ignore their slot | [`adaptive`] |
//! | either allocator behind one interface, for front ends | | [`allocator`] |
//! | the same as a tower `Layer` (feature `tower`), with either allocator | | `pushback_layer` |
//!
//! None of them reads a clock or sleeps: callers own their waiting, so the
//! executors, the simulator and hand-written drivers share one implementation.

pub mod adaptive;
pub mod allocator;
pub mod breaker;
pub mod budget;
pub mod escape_lane;
pub mod pushback;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod pushback_layer;

pub use adaptive::{AdaptiveAllocator, AdaptiveBuilder};
pub use allocator::Allocator;
pub use breaker::{Admission, Breaker, BreakerBuilder, BreakerError, Probe};
pub use budget::{Denied, RetryBudget, RetryBudgetBuilder, RetryBudgetError, RetryCause, Spent};
pub use escape_lane::Urgent;
pub use pushback::{Allotment, PushbackError, SlotAllocator};
#[cfg(feature = "tower")]
pub use pushback_layer::PushbackLayer;
