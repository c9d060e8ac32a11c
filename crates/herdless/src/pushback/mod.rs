//! Server-guided pushback: admit at most the capacity, and tell each rejected
//! caller *when* to come back so that the returns arrive at a rate the server
//! can serve.
//!
//! Client-side jitter can only guess how much capacity the server has; the
//! server knows. A [`SlotAllocator`] is the server's half of the "Capacity-Aware
//! Reconnect Queue": it admits requests up to a configured rate and answers
//! the excess with a delay that is a **slot** in the capacity to come.
//!
//! * **Admission** is a GCRA (generic cell rate algorithm, the continuous form
//!   of a token bucket): at most `capacity` requests per second on average,
//!   with a `burst` of back-to-back admissions tolerated (default: 100 ms worth
//!   of capacity, at least 1). In any window of length `T`, at most
//!   `burst + capacity · T` requests are admitted, at every capacity the
//!   constructor accepts (up to 10⁹ per second).
//! * **Slot interval.** Time is counted in whole nanoseconds, so the interval
//!   between slots is `1 / capacity` rounded **up** to a whole nanosecond. The
//!   allocator therefore never admits or books faster than the capacity; at
//!   capacities where `10⁹ / capacity` is not a whole number it runs a little
//!   below it (noticeably only at very high rates: 7·10⁸/s gives a 2 ns
//!   interval, 5·10⁸/s).
//! * **Rejection** books the next free slot: slots are one interval apart,
//!   start after the capacity already promised to admitted requests, and each
//!   rejection gets a slot strictly later than the previous one. A rejected
//!   caller is told `slot − now`. A fleet of `N` rejected callers is thus spread
//!   evenly over the next `N / capacity` seconds — exactly the rate the server
//!   can serve — instead of all being told the same number. Callers that add a
//!   small *positive* spread (herdless clients do, see
//!   [`Policy::retry_after_spread`](crate::Policy::retry_after_spread)) arrive a
//!   little later than their slot, never earlier, so the arrival rate stays at
//!   or below the capacity.
//! * **Horizon.** No delay exceeds the configured horizon. When more callers
//!   are rejected than `horizon · capacity` slots can hold, the schedule is
//!   full and the allocator *overbooks*: it makes another pass over the
//!   horizon, each pass offset by a fraction of a slot (golden-ratio steps),
//!   so extra load is spread evenly over the window instead of piling onto its
//!   end. Slots are strictly increasing until the horizon is full.
//! * **Outage mode** sheds everything. With a known end
//!   ([`outage_until`](SlotAllocator::outage_until)) the slots start at the end
//!   of the outage, so the whole fleet is booked onto the recovered server at
//!   its capacity — a drain at the physical limit (outage + N / capacity). With
//!   an unknown end ([`outage`](SlotAllocator::outage)) the slots start now and
//!   are spread the same way; callers that return during the outage are
//!   rebooked behind the others.
//! * **Time is a parameter.** Every method takes `now` as a [`Duration`](std::time::Duration) since
//!   an epoch the caller chooses (process start, simulation start), so the
//!   allocator has no clock, no lock and no async runtime: the simulator drives
//!   it with virtual time, the tower layer
//!   ([`PushbackLayer`](crate::adapters::tower::PushbackLayer), feature `tower`)
//!   with a [`Clock`](crate::Clock) behind a mutex.
//!
//! ## On the wire
//!
//! HTTP's `Retry-After` carries whole seconds (RFC 9110 `delay-seconds`), far
//! coarser than slots `1 / capacity` apart. [`Allotment::retry_after_secs`]
//! rounds **up** (a caller is never told to come before its slot; at least 1),
//! and the layer also sends `Retry-After-Ms` ([`RETRY_AFTER_MS`](crate::http::RETRY_AFTER_MS), feature `http`) with the
//! slot in whole milliseconds, rounded up, which clients should prefer when
//! present (the same header name Azure services use). A client that reads only
//! `Retry-After` still never comes early; it loses only the sub-second spread.
//!
//! ```
//! use std::time::Duration;
//! use herdless::pushback::{Allotment, SlotAllocator};
//!
//! // 1000 requests/s, no delay beyond 30 s, 10 admitted back to back.
//! let mut alloc = SlotAllocator::new(1000.0, Duration::from_secs(30))?.burst(10);
//! let now = Duration::from_secs(1);
//! let decisions: Vec<Allotment> = (0..13).map(|_| alloc.decide(now)).collect();
//! assert!(decisions[..10].iter().all(|d| d.is_admit()));
//! let delays: Vec<Duration> = decisions[10..].iter().filter_map(|d| d.retry_after()).collect();
//! assert!(delays.windows(2).all(|w| w[0] < w[1])); // each rejection gets the next slot
//! assert!(delays[1] - delays[0] == Duration::from_millis(1)); // 1 / capacity apart
//! # Ok::<(), herdless::pushback::PushbackError>(())
//! ```
//!
//! | piece | what | module |
//! |---|---|---|
//! | [`SlotAllocator`] | the static allocator: told its capacity and, optionally, the outage's end | `slots.rs` |
//! | [`AdaptiveAllocator`] | learns the capacity and the outage's end, robust to callers that ignore their slot; optionally holds requests open (a capacity-aware reconnect queue) | [`adaptive`] |
//! | [`Ticket`], [`Released`] | a held request's name, and what happens to it when its turn comes | [`ticket`] |
//! | [`WavePlanner`](waves::WavePlanner), [`WavePlan`](waves::WavePlan) | plans the callers it turns away in waves, each caller's wave a salted hash of its id: no booking, no state per caller | [`waves`] |
//! | [`Allocator`] | any of them behind one interface, for front ends | [`allocator`] |
//! | [`Allowance`] | admissions granted ahead of time, so a server's threads need not share a lock while it passes requests through | [`allowance`] |
//! | the tower `Layer` over either (feature `tower`) | | [`PushbackLayer`](crate::adapters::tower::PushbackLayer) |
//!
//! None of them reads a clock or sleeps: the server's front end owns time, so
//! the simulator, the tower layer and `herdless stub` share one implementation.

pub mod adaptive;
pub mod allocator;
mod allotment;
pub mod allowance;
pub mod replicas;
mod slots;
pub mod ticket;
pub(crate) mod tuning;
pub mod waves;

pub use adaptive::{AdaptiveAllocator, AdaptiveBuilder};
pub use allocator::Allocator;
pub use allotment::Allotment;
pub use allowance::Allowance;
pub use replicas::{PeerReport, ReplicaReport, SharedState};
pub(crate) use slots::{GOLDEN, ns, slot_interval_ns};
pub use slots::{PushbackError, SlotAllocator};
pub use ticket::{Caller, Released, Ticket};
