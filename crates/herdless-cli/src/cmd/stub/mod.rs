//! `herdless stub`: a real HTTP stub device on 127.0.0.1, to point a fleet at.
//!
//! ```text
//! herdless stub [--port P] [--fail-first K] [--fail-every K] [--outage DUR] [--capacity N]
//!               [--pushback on|static|off] [--capacity-estimate FACTOR]
//!               [--outage-end known|unknown] [--horizon DUR] [--hold-max N] [--hold-for DUR]
//!               [--retry-after VALUE] [--fail-status CODE] [--waves N|counted]
//!               [--wave-spacing DUR]
//! herdless stub --upstream URL [--upstream-timeout DUR] [--capacity N [pushback and hold flags]]
//!               [--coordinate nats://HOST:PORT [--replica-id ID]]
//! ```
//!
//! With `--upstream` the stub is a gateway replica: its pushback layer and
//! hold in front of another HTTP endpoint instead of its own device
//! (`gateway.rs` for the flags, `relay.rs` for the forwarding,
//! `coordinate.rs` for the reports shared through NATS).
//!
//! Every path except `/stats` is "the device". The first stdout line is
//! `listening on 127.0.0.1:PORT` (port 0, the default, picks a free one);
//! SIGINT, SIGTERM or SIGHUP shut it down within a bounded grace (`server.rs`).
//!
//! # The library's layer, and what a stub adds
//!
//! With `--capacity` the device is served through
//! `herdless::adapters::tower::PushbackLayer`, the layer users put in front
//! of their own axum handlers: the adaptive allocator by default (it learns
//! the capacity from the device's 503s and finds an outage and its end),
//! the static one with `--pushback static`, each rejection answered `503`
//! with its own slot (`Retry-After`, `Retry-After-Ms`), and with
//! `--hold-max`/`--hold-for` the layer's hold (a capacity-aware reconnect
//! queue). So the real-socket tests of this crate prove the layer as
//! deployed (`front.rs`). The stub adds only what a stub needs:
//!
//! * the device behind the layer (`device.rs`): the outage, fail-first,
//!   fail-every and the capacity, the simulator's token bucket, so a fleet
//!   cannot drain before `outage + fleet / capacity`;
//! * the book (`book.rs`): every arrival recorded exactly once in `/stats`,
//!   with its status, how long it was held, and whether its client left
//!   first (`abandoned`); it sits in front of the layer, so the layer's own
//!   refusals are recorded too;
//! * with `--waves`, the library's wave planner as the layer's allocator
//!   (`waves.rs`): every refusal announces a plan of waves;
//! * bounds for careless or hostile clients: an `X-Worker-Id` over 256 bytes
//!   is answered 431, fail-first remembers at most 100,000 clients, `/stats`
//!   keeps the last 100,000 arrivals (`total` counts all), a request head
//!   must arrive within 30 s, and a shutdown takes at most 2 s.
//!
//! Without pushback (`--pushback off`, or a fixed `--retry-after VALUE`:
//! one value for everyone, which is what pushback avoids) the device
//! answers alone, every refusal carrying `--retry-after` verbatim when
//! given (hostile values included, that is the point).
//!
//! Layout: `args.rs` (the flags), `plan.rs` (flags to device and layer),
//! `device.rs`, `front.rs` (the layer in front of the device or the
//! relay), `gateway.rs` (a gateway's flags), `relay.rs` (forwarding to the
//! upstream), `coordinate.rs` (the reports shared through NATS), `book.rs`
//! (the recorder and `/stats`), `server.rs` (the accept loop); this file
//! is the command's entry, [`run()`], and the handle tests drive, [`Stub`].

mod args;
mod book;
mod coordinate;
mod device;
mod front;
mod gateway;
mod plan;
mod relay;
mod server;
mod waves;

pub(crate) use args::StubArgs;
pub use book::{ARRIVALS_KEPT, ArrivalOutcome, ArrivalRecord, StubStats};
pub use server::{GRACE, HEADER_TIMEOUT, StubOptions};

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use tokio::sync::watch;

use crate::shared::error::{CliError, CliResult};
use crate::shared::{descriptors, exit};
use book::{Book, Recorder};
use front::Target;
use herdless::pushback::SharedState;
use plan::Plan;
use relay::Relay;

/// Runs `herdless stub` until SIGINT, SIGTERM or SIGHUP.
///
/// # Errors
///
/// Usage errors (exit 2), a port or runtime it cannot get (exit 1).
pub(crate) fn run(args: &StubArgs) -> CliResult {
    let plan = Plan::from_args(args).map_err(CliError::usage)?;
    descriptors::raise_nofile_limit();
    let rt = descriptors::build_runtime(tokio::runtime::Builder::new_multi_thread().enable_all())
        .map_err(|e| CliError::failure(format!("cannot start the runtime: {e}")))?;
    rt.block_on(async {
        let listener = server::bind(args.port).map_err(|e| {
            CliError::failure(format!("cannot listen on 127.0.0.1:{}: {e}", args.port))
        })?;
        let (stub, task) = Stub::serve(
            listener,
            plan,
            server::shutdown_signal(),
            StubOptions::default(),
        )
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

/// A running stub: its address and its arrivals.
#[derive(Clone)]
pub struct Stub {
    addr: SocketAddr,
    recorder: Arc<Recorder>,
}

impl std::fmt::Debug for Stub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stub").field("addr", &self.addr).finish()
    }
}

impl Stub {
    /// Binds 127.0.0.1:`port` (0: a free port) with a deep accept backlog.
    ///
    /// # Errors
    ///
    /// The bind error.
    pub fn bind(port: u16) -> io::Result<tokio::net::TcpListener> {
        server::bind(port)
    }

    /// Starts serving what `args` describe on `listener` until `shutdown`
    /// completes (call it inside a tokio runtime). Returns the stub and the
    /// server task, which ends within `options.grace` of the shutdown.
    ///
    /// # Errors
    ///
    /// The flags' usage error, or the listener's address error.
    pub fn start(
        listener: tokio::net::TcpListener,
        args: &StubArgs,
        shutdown: impl Future<Output = ()> + Send + 'static,
        options: StubOptions,
    ) -> Result<(Stub, tokio::task::JoinHandle<io::Result<()>>), String> {
        let plan = Plan::from_args(args)?;
        Stub::serve(listener, plan, shutdown, options).map_err(|e| e.to_string())
    }

    fn serve(
        listener: tokio::net::TcpListener,
        plan: Plan,
        shutdown: impl Future<Output = ()> + Send + 'static,
        options: StubOptions,
    ) -> io::Result<(Stub, tokio::task::JoinHandle<io::Result<()>>)> {
        let addr = listener.local_addr()?;
        let (stop, stopping) = watch::channel(false);
        let relay = plan.gateway.as_ref().map(|g| Arc::new(Relay::new(g)));
        let share = plan
            .gateway
            .as_ref()
            .and_then(|g| g.coordinate.as_ref())
            .map(|c| {
                let id = c
                    .replica
                    .clone()
                    .unwrap_or_else(|| gateway::default_replica_id(addr.port()));
                coordinate::start(c, id) as Arc<dyn SharedState>
            });
        let target = match &relay {
            Some(r) => Target::Relay(Arc::clone(r)),
            None => Target::Device(Box::new(plan.device)),
        };
        let (front, device) =
            front::build(target, plan.pushback, plan.outage_status, share.clone());
        let recorder = Arc::new(Recorder {
            book: Book::new(options.keep),
            front,
            relay,
            share,
            stopping,
        });
        let device = tower::ServiceBuilder::new()
            .layer(axum::middleware::from_fn_with_state(
                Arc::clone(&recorder),
                book::record,
            ))
            .service(device);
        let app = Router::new()
            .route("/stats", get(book::stats))
            .fallback_service(device)
            .with_state(Arc::clone(&recorder));
        let task = tokio::spawn(server::serve(listener, app, shutdown, stop, options));
        Ok((Stub { addr, recorder }, task))
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The arrivals so far (what `/stats` returns).
    pub fn stats(&self) -> StubStats {
        self.recorder.stats()
    }
}
