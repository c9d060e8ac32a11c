//! `herdless stub`: a real HTTP stub controller on 127.0.0.1, to point a fleet at.
//!
//! ```text
//! herdless stub [--port P] [--fail-first K] [--fail-every K] [--outage DUR] [--capacity N]
//!               [--pushback on|static|off] [--capacity-estimate FACTOR]
//!               [--outage-end known|unknown] [--horizon DUR]
//!               [--retry-after VALUE] [--fail-status CODE]
//! ```
//!
//! Every path except `/stats` is "the device". Each arrival is recorded (time
//! since start, `X-Worker-Id`, status returned) and `GET /stats` returns them
//! as JSON: `total` counts every arrival, `arrivals` keeps the most recent
//! [`ARRIVALS_KEPT`] (100,000; older ones are dropped, counted in `dropped`),
//! so a long run's memory stays bounded. The first stdout line is `listening on 127.0.0.1:PORT` (port 0,
//! the default, picks a free one); SIGINT or SIGTERM shut it down cleanly.
//!
//! # Admission rules are replaceable components
//!
//! Whether a request is served or rejected is decided by an [`Rule`]
//! implementation, nothing else: the handler records the arrival, asks the
//! admission, answers. The stub chains up to four ([`Chain`], first rejection
//! wins):
//!
//! 1. the outage: rejects everything for `--outage` after start;
//! 2. [`FailFirstPerWorker`]: rejects each client's first `--fail-first` requests (the
//!    client is named by `X-Worker-Id`; requests without it share one name);
//! 3. [`FailEvery`]: rejects every `--fail-every`-th request (a healthy
//!    endpoint with a small, steady error rate: 1 / K of all requests);
//! 4. the capacity ([`Capacity`]): admits at most `--capacity` requests per
//!    second and answers the rest 503.
//!
//! # The capacity model is the simulator's
//!
//! `--capacity N` is the simulator's token bucket
//! (`herdless_sim::endpoint::TokenBucket`, the bucket of its
//! `OutageEndpoint`) on the stub's clock in nanoseconds since start: it
//! refills at N tokens per second, holds at most a burst of 100 ms worth
//! (N / 10, at least 1) and **starts empty** at the end of `--outage` (or
//! when the stub starts). A request takes one whole token or is answered 503.
//! So at most `N · t` requests are served in the first `t` seconds after the
//! outage (a fleet of F cannot drain before `DUR + F / N`), and at most
//! `burst + N · w` in any window `w`: the same limit the simulated endpoint
//! enforces, in both modes below.
//!
//! # Server-guided pushback (the default with `--capacity`)
//!
//! With `--capacity N`, the outage and the capacity are fronted by one
//! [`Pushback`]: the library's `SlotAllocator` (the same allocator the
//! `herdless::adapters::tower::PushbackLayer` tower layer wraps), driven
//! by the stub's own clock (time since start). It admits at most N requests per
//! second (GCRA, a burst of 100 ms worth of capacity) and answers each rejected
//! request `503` with **its own slot**: `Retry-After` (whole seconds, rounded
//! up) and `Retry-After-Ms` (milliseconds, rounded up), each rejection the next
//! free slot `1 / N` after the previous one. During `--outage DUR` it sheds
//! everything and the slots start at the outage's end, so a fleet that honors
//! them is booked onto the recovered server at exactly its capacity: a drain
//! at the physical limit `DUR + fleet / N`. No slot is further than
//! `--horizon` (default 60 s) away. The requests it admits still meet the
//! capacity above (as the simulator's `PushbackEndpoint` puts the allocator in
//! front of its token bucket), so a request the allocator admits is answered a
//! plain 503 when the bucket is empty — e.g. the very first request after
//! start or after the outage.
//!
//! The stub answers through the [`Rule`] chain rather than by putting the
//! tower layer in front of the router because every arrival, rejected ones
//! included, must be recorded in `/stats` with the status it got — a layer
//! that answers before the handler would hide its rejections from the book.
//!
//! # Baselines without pushback
//!
//! `--pushback off`, or a fixed `--retry-after VALUE` (one value for everyone,
//! which is what pushback avoids), gives the plain endpoint: [`Outage`] and
//! [`Capacity`] (the token bucket above, nothing else), every
//! rejection carrying `--retry-after VALUE` verbatim when given (hostile values
//! included, that is the point) and nothing otherwise. `--pushback on`
//! together with `--retry-after` is a usage error (one value for everyone
//! cannot also be a slot each), and so is `--pushback on` without
//! `--capacity` (there is no capacity to spread over).
//!
//! Outage rejections use `--fail-status` (default 503) in both modes; capacity
//! rejections are always 503.
//!
//! # Layout
//!
//! `args.rs` (the flags: [`StubArgs`]), `admission.rs` (the [`Rule`]
//! trait and the simple admissions), `pushback.rs` ([`Pushback`]), `chain.rs`
//! (the chain the flags build: [`admission_from_args`]), `server.rs` (the
//! HTTP server and `/stats`: [`Stub`]); this file is the command's entry,
//! [`run()`].

mod admission;
mod args;
mod chain;
mod hold;
mod pushback;
mod server;

pub use admission::{Arrival, Capacity, FailEvery, FailFirstPerWorker, Outage, Rule, Verdict};
pub use args::{DEFAULT_HORIZON, PushbackMode, StubArgs, pushback_enabled};
pub use chain::{Chain, admission_from_args};
pub use pushback::{AdaptivePushback, Pushback};
pub use server::{ARRIVALS_KEPT, ArrivalRecord, Stats, Stub, shutdown_signal};

use crate::shared::error::{CliError, CliResult};
use crate::shared::{descriptors, exit};

/// Runs `herdless stub` until SIGINT or SIGTERM.
///
/// # Errors
///
/// Usage errors (exit 2), a port or runtime it cannot get (exit 1).
pub fn run(args: &StubArgs) -> CliResult {
    let admission = admission_from_args(args).map_err(CliError::usage)?;
    descriptors::raise_nofile_limit();
    let rt = descriptors::build_runtime(tokio::runtime::Builder::new_multi_thread().enable_all())
        .map_err(|e| CliError::failure(format!("cannot start the runtime: {e}")))?;
    rt.block_on(async {
        let listener = Stub::bind(args.port).map_err(|e| {
            CliError::failure(format!("cannot listen on 127.0.0.1:{}: {e}", args.port))
        })?;
        let (stub, task) = Stub::start(listener, admission, shutdown_signal())
            .map_err(|e| CliError::failure(e.to_string()))?;
        {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "listening on {}", stub.addr());
            let _ = out.flush();
        }
        match task.await {
            Ok(Ok(())) => {
                eprintln!(
                    "herdless stub: shut down after {} arrivals",
                    stub.stats().total
                );
                Ok(exit::SUCCESS)
            }
            Ok(Err(e)) => Err(CliError::failure(e.to_string())),
            Err(e) => Err(CliError::failure(format!("server task failed: {e}"))),
        }
    })
}
