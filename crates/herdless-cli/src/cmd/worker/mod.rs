//! `herdless worker --nats URL --stream NAME --consumer NAME -- CMD`: run a
//! command for each task of a NATS JetStream consumer, retries handed to the
//! broker as jittered redeliveries.
//!
//! The worker is the library's [`herdless::adapters::nats::Worker`]; this
//! module resolves the flags (the policy stack and the exit-status lists
//! exactly as `exec` does: [`AttemptArgs`](crate::shared::process::AttemptArgs),
//! [`crate::shared::process::classify`]), runs each attempt (`worker/attempt.rs`),
//! handles the signals and prints the summary ([`render`]).
//!
//! # Design
//!
//! * **Default jitter: full.** A worker belongs to a fleet, and the point of
//!   the subcommand is that a fleet's failed tasks do not come back together.
//! * **Signals.** The first SIGINT or SIGTERM stops taking tasks; running
//!   attempts finish and are settled as usual (ack, NAK with the engine's
//!   delay, dead letter), then the summary is printed and the worker exits 0.
//!   A second one ends the running attempts' process groups (SIGKILL) and
//!   hands their tasks back to the broker at once (their delivery counts).
//! * **Output.** Retry events on stderr (`--log-format`, `--quiet`,
//!   `RUST_LOG`), as the other subcommands; the worker's own warnings (a pull
//!   that failed, a dead letter that could not be stored) on stderr; the
//!   summary on stdout, last. CMD's own stdout and stderr are the worker's.

mod args;
pub(crate) mod attempt;
mod lookup;
mod render;

pub(crate) use args::WorkerArgs;

use std::cell::Cell;
use std::time::Instant;

use herdless::Jitter;
use herdless::adapters::nats::{NatsError, Worker};
use nix::sys::signal::Signal;
use tokio::signal::unix::{SignalKind, signal};

use crate::shared::error::{CliError, CliResult};
use crate::shared::events_out::{EventFilter, StderrEvents};
use crate::shared::exit;
use crate::shared::process::{Failure, Limits, classify};
use attempt::Command;

/// The default jitter for `worker`.
pub(crate) const DEFAULT_JITTER: Jitter = Jitter::Full;

/// Runs `herdless worker`: 0 after a stop (signal or `--exit-when-idle`).
///
/// # Errors
///
/// Usage, policy-file and consumer errors (exit 2); a broker that cannot be
/// reached (exit 1).
pub(crate) fn run(args: &WorkerArgs) -> CliResult {
    if args.policy.task_id.is_some() {
        return Err(CliError::usage(
            "--task-id (or HERDLESS_TASK_ID) does not apply to worker: each task's id is \
             STREAM:SEQUENCE, from the broker",
        ));
    }
    let resolved = args
        .policy
        .resolve_layered(DEFAULT_JITTER)
        .map_err(|e| CliError::usage(e.to_string()))?;
    let Limits {
        classes,
        notes,
        timeout,
        kill_after,
    } = args.attempt.resolve(&resolved).map_err(CliError::usage)?;
    for note in &notes {
        eprintln!("herdless worker: {note}");
    }
    if resolved.task_id.is_some() {
        eprintln!(
            "herdless worker: the policy file's task_id is not used: each task's id is \
             STREAM:SEQUENCE"
        );
    }
    let mut command = args.command.iter().cloned();
    let program = command
        .next()
        .ok_or_else(|| CliError::usage("no command given"))?;
    let cmd = Command {
        program,
        args: command.collect(),
        timeout,
        kill_after,
        policy: resolved.policy,
    };
    let events = StderrEvents {
        format: args.policy.log_format,
        filter: EventFilter::from_env(args.policy.quiet),
    };
    let mut worker = Worker::new(resolved.policy, move |f: &Failure| classify(&classes, f))
        .notify(events)
        .exit_when_idle(args.exit_when_idle)
        .completion_record(!args.no_completion_record)
        .concurrency(usize::from(args.concurrency))
        .map_err(|e| CliError::usage(e.to_string()))?;
    if let Some(subject) = &args.dead_letter {
        worker = worker.dead_letter(subject.clone());
    }
    if let Some(seed) = resolved.seed {
        worker = worker.seed(seed);
    }
    show_worker_warnings();
    let rt = crate::shared::descriptors::build_runtime(
        tokio::runtime::Builder::new_current_thread().enable_all(),
    )
    .map_err(|e| CliError::new(exit::FAILURE, format!("cannot start the runtime: {e}")))?;
    rt.block_on(serve(args, &worker, &cmd))
}

/// The library's own warnings (target `herdless`, not retry events, which
/// the hook writes) on stderr.
fn show_worker_warnings() {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    let only_warnings = tracing_subscriber::filter::filter_fn(|meta| {
        meta.target() == "herdless"
            && meta.fields().field("event").is_none()
            && *meta.level() <= tracing::Level::WARN
    });
    use std::io::IsTerminal;
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .without_time()
        .with_filter(only_warnings);
    let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer));
}

async fn serve<C, N>(args: &WorkerArgs, worker: &Worker<C, N>, cmd: &Command) -> CliResult
where
    C: herdless::Classify<Failure>,
    N: herdless::Notify,
{
    let started = Instant::now();
    // One URL or several, comma-separated: the client also learns the
    // cluster's other servers from the one it reaches.
    let urls: Vec<&str> = args.nats.split(',').map(str::trim).collect();
    let client = herdless::adapters::nats::connect_options()
        .connect(urls.as_slice())
        .await
        .map_err(|e| {
            CliError::new(
                exit::FAILURE,
                format!("cannot connect to {}: {e}", args.nats),
            )
        })?;
    let js = async_nats::jetstream::new(client);
    let consumer = lookup::consumer(&js, &args.stream, &args.consumer).await?;
    let (mut int, mut term) = match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(i), Ok(t)) => (i, t),
        (Err(e), _) | (_, Err(e)) => {
            return Err(CliError::new(
                exit::FAILURE,
                format!("cannot handle signals: {e}"),
            ));
        }
    };
    let stopped_by = Cell::new(None::<Signal>);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (abort_tx, abort_rx) = tokio::sync::oneshot::channel::<()>();
    let signals = async {
        let mut stop_tx = Some(stop_tx);
        let mut abort_tx = Some(abort_tx);
        loop {
            let sig = tokio::select! {
                _ = int.recv() => Signal::SIGINT,
                _ = term.recv() => Signal::SIGTERM,
            };
            if let Some(tx) = stop_tx.take() {
                stopped_by.set(Some(sig));
                eprintln!(
                    "herdless worker: {sig}: taking no new task; running attempts finish \
                     (again to hand them back now)"
                );
                let _ = tx.send(());
            } else if let Some(tx) = abort_tx.take() {
                eprintln!("herdless worker: {sig} again: handing running attempts back");
                let _ = tx.send(());
            }
        }
    };
    let op = |task| attempt::run(cmd, task);
    let result = tokio::select! {
        result = worker.run(&js, &consumer, op, stop_rx, abort_rx) => result,
        () = signals => unreachable!("the signal loop never ends"),
    };
    let summary = result.map_err(|e| match e {
        NatsError::Config(m) => CliError::usage(m),
        other => CliError::new(exit::FAILURE, other.to_string()),
    })?;
    let stop = stopped_by.get().map_or("idle", |s| s.as_str());
    crate::shared::output::print(&render::summary(
        &summary,
        stop,
        started.elapsed(),
        args.policy.log_format,
    ))?;
    Ok(exit::SUCCESS)
}
