//! Retries by redelivery: the wait is the broker's, not a sleeping worker's.
//!
//! A worker that sleeps between attempts holds its task for the whole chain,
//! which must then fit inside the broker's visibility (ack) timeout, and a
//! crash loses the chain's progress. Here the worker fails the attempt, tells
//! the broker "redeliver this in D" (D decided by the [engine]: classified,
//! jittered, limited, budgeted) and is free; the broker holds the backlog
//! across machines, restarts and crashes. Brokers' own redelivery delays are
//! fixed lists (JetStream's consumer `BackOff`, one TTL per retry queue),
//! which bring a fleet's tasks back together; the engine's are jittered per
//! task.
//!
//! # What travels, and where
//!
//! A broker redelivers the message it stored: a negative acknowledgement
//! sets *when*, never the headers. So the engine's per-call state travels in
//! two parts, the broker's and the message's:
//!
//! | state | carried by | why |
//! |---|---|---|
//! | attempts made | the broker's delivery count, plus the header's `a` (attempts made before the message was published) | the only count that a worker killed mid-attempt still advances, and one a message cannot lower: a floor |
//! | first attempt's time | the broker's timestamp of the stored message, or the header's `t` when it is earlier | a wall clock, because a monotonic clock does not cross machines; the broker's, because it is the only time every worker can read whatever happened before (a worker that died mid-attempt wrote nothing) |
//! | schedule (decorrelated modes) | replayed from the seed ([`Engine::replay`]) | each decision's generator is a pure function of the seed and the attempt ([`rng_for`]), so any worker redraws the earlier delays |
//! | generator | derived, never stored | as above: no generator state in the message |
//! | idempotency key | the header's `k`, else derived from the message's identity ([`Delivery::identity_of`]; for JetStream: the stream's name, its creation time and the sequence) | the same on every delivery, on every worker; never the same for two tasks, across brokers, streams recreated under one name and time |
//!
//! Two consequences, both on the side of granting less:
//!
//! * **`max_elapsed` is the task's age.** Elapsed time runs from when the
//!   broker stored the task, so time queued before the first attempt counts.
//!   The first attempt always runs however old the task is (it spends no
//!   retry); a retry that would pass the limit does not. Elapsed time is
//!   the worker's wall clock minus the broker's timestamp: clock skew between
//!   them shifts it by the skew, a clock behind the broker's reads zero, never
//!   less.
//! * **Every delivery counts as an attempt**, including one that a crashed
//!   worker never started, one the breaker sent back, and one handed back at
//!   shutdown: the broker cannot tell them apart, and counting them is the
//!   safe side.
//!
//! # Bad state grants nothing
//!
//! The header ([`STATE_HEADER`], format in [`TaskState`]) is written by
//! publishers that know more than the broker: one that tried the task once
//! inline before queueing it (`a=1`, `t` = that attempt's start, its own
//! key), or a dead letter carrying the chain it ran. [`TaskState::decode`]
//! never panics and refuses anything but the exact format (a property test
//! feeds it arbitrary and mutated input). A refused header counts as none:
//! the task resumes from the broker's facts with a `retry_state_invalid`
//! warning. An accepted one cannot grant more either: `a` only adds to the
//! delivery count, a `t` later than the broker's timestamp is ignored, and
//! before each retry [`Engine::redelivered`] gives up once the attempts or
//! the elapsed time are spent, whatever the message said.
//!
//! # Drivers
//!
//! [`Resumed`] rebuilds the chain at a delivery from the header and a
//! [`Delivery`]; the driver then asks the engine as any driver does
//! (`redelivered`, `begin`, `succeeded` / `failed`) and turns the decision
//! into the broker's verbs. With the `nats` feature, [`adapters::nats`](crate::adapters) is
//! that driver for NATS JetStream pull consumers.
//!
//! [engine]: crate::engine
//! [`Engine::replay`]: crate::engine::Engine::replay
//! [`Engine::redelivered`]: crate::engine::Engine::redelivered

#[cfg(feature = "nats")]
pub(crate) mod claim;
mod state;
mod task;

pub use state::{MAX_STATE_LEN, STATE_HEADER, STATE_VERSION, StateError, TaskState};
pub use task::{Delivery, Resumed, rng_for, unix_now};
