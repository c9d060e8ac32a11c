//! `herdless exec [policy flags] [options] -- CMD [ARGS...]`: retry any command.
//!
//! Operators wrap a flaky mount, scanner tool or checksum step in a shell loop
//! with `sleep 5`: a fixed interval that brings every host back at the same
//! instant, a storm of its own. `exec` runs the
//! command, classifies a failure by its exit status, and retries it with the
//! policy (same flags, policy files and JSON events as the other subcommands).
//!
//! # Design
//!
//! * **Default jitter: equal.** A lone cron job gains nothing
//!   from randomness and wants a predictable minimum gap, which equal jitter keeps
//!   (each delay is at least half its ceiling) while still de-synchronizing when
//!   the same job runs on many hosts. Fleet-facing subcommands keep full jitter.
//! * **Classification by exit status** ([`Classes`]): an exit status carries no
//!   standard meaning beyond "126: found but not executable", "127: not found"
//!   and "128+N: killed by signal N", so by default every failure is retried
//!   except 126 and 127, which no retry can fix and which are never retried,
//!   and 141 (killed by `SIGPIPE`: whoever read its output has gone, as in
//!   `herdless exec -- yes | head -1`), terminal unless `--retry-on` lists it.
//!   `--retry-on` turns that into an allowlist (fail closed: every other status is
//!   terminal), recommended when the command documents its codes (sysexits'
//!   `EX_TEMPFAIL` 75, qmail's 111); `--terminal-on` is a denylist.
//! * **One attempt = one process group**, ended as a whole on timeout or
//!   interrupt (see `shared/process/child.rs`, shared with `worker`).
//! * **The engine is the library's** [`Retry::call_async`] on a current-thread
//!   tokio runtime: the same budget, jitter and events as every executor. Signals
//!   are handled beside it in one `select!`: while a child runs they are
//!   forwarded to its group; while herdless sleeps they drop the call future,
//!   which cancels the sleep at once (no child exists then).
//! * **Exit status** is the child's last status on terminal or exhausted (so
//!   scripts see the real error), 124 when the last attempt timed out, 128+N
//!   when herdless was interrupted by signal N (0 if the attempt that received
//!   the forwarded signal still succeeded: its work is done), and 125/126/127 for
//!   herdless's own failures (see [`exit`]).

mod attempt;
mod events;
pub(crate) mod stdin;

use attempt::attempt_once;
use events::ExecEvents;

use std::cell::{Cell, RefCell};
use std::ffi::OsString;
use std::io;
use std::rc::Rc;
use std::time::Duration;

use clap::Args;
use herdless::{IdempotencyKey, Retry, RetryError};
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use tokio::signal::unix::{SignalKind, signal};

use crate::shared::classes::Classes;
use crate::shared::error::{CliError, CliResult};
use crate::shared::events_out::{EventFilter, LogFormat};
use crate::shared::exit;
use crate::shared::policy_args::PolicyArgs;
use crate::shared::process::{AttemptArgs, DEFAULT_JITTER, Failure, child, classify};
use stdin::{StdinMode, StdinSource};

/// `herdless exec` arguments.
#[derive(Debug, Clone, Args)]
#[command(
    override_usage = "herdless exec [POLICY FLAGS] [OPTIONS] -- CMD [ARGS]...",
    about = "Run a command, retrying failures with backoff and jitter (default jitter: equal)",
    long_about = "Run CMD; when it fails, classify its exit status and retry it with the policy.\n\n\
Default jitter is EQUAL, not full: a lone cron job gains nothing from randomness and wants a \
predictable minimum gap between attempts (each delay is at least half its ceiling), while the \
random half still spreads the same job running on many hosts. Fleet-facing subcommands keep full \
jitter. Pass --jitter to choose.\n\n\
Classification: every non-zero status is retried except 126 (not executable) and 127 (not found), \
which are never retried, and 141 (killed by SIGPIPE: the reader went away), terminal unless \
--retry-on lists it. --retry-on makes an allowlist (every other status is terminal); \
--terminal-on a denylist. A child killed by signal N has status 128+N.\n\n\
The child runs in its own process group with HERDLESS_ATTEMPT (1, 2, ...) and \
HERDLESS_IDEMPOTENCY_KEY (the same on every attempt) in its environment. SIGINT, SIGTERM, SIGHUP \
and SIGQUIT are forwarded to that group while it runs (no further attempt follows; a second \
one sends SIGKILL to the group); between attempts they stop herdless at once.\n\n\
Exit status: 0 on success; the child's last status when it failed terminally or the budget ran \
out; 124 when the last attempt timed out; 128+N when interrupted by signal N; 125 for usage or \
policy-file errors; 126/127 when CMD cannot be executed / is not found."
)]
pub(crate) struct ExecArgs {
    /// Policy flags (files, env, flags; default jitter for exec: equal).
    #[command(flatten)]
    pub(crate) policy: PolicyArgs,
    /// Exit-status classes and per-attempt limits.
    #[command(flatten)]
    pub(crate) attempt: AttemptArgs,
    /// What each attempt reads on stdin: auto (terminal, empty input or a file: as is; a pipe: read to the end, then replayed to every attempt), first (as is to the first attempt, /dev/null after), null.
    #[arg(long, value_enum, default_value_t = StdinMode::Auto, value_name = "MODE")]
    pub(crate) stdin: StdinMode,
    /// Idempotency key for HERDLESS_IDEMPOTENCY_KEY (e.g. a redelivered task's) instead of a fresh one.
    #[arg(long, value_name = "UUID")]
    pub(crate) idempotency_key: Option<IdempotencyKey>,
    /// The command and its arguments (after --).
    #[arg(required = true, trailing_var_arg = true, value_name = "CMD")]
    pub(crate) command: Vec<OsString>,
}

impl ExecArgs {
    /// `exec -- CMD [ARGS]...`: every flag at its default (as clap sets it with
    /// no `HERDLESS_*` variable), `command` as given.
    pub(crate) fn plain(command: Vec<OsString>) -> Self {
        ExecArgs {
            policy: PolicyArgs::default(),
            attempt: AttemptArgs {
                retry_on: None,
                terminal_on: None,
                timeout: None,
                kill_after: None,
            },
            stdin: StdinMode::Auto,
            idempotency_key: None,
            command,
        }
    }
}

/// What an `exec` run needs, resolved and validated.
#[derive(Debug)]
struct Plan {
    policy: herdless::Policy,
    task_id: Option<String>,
    seed: Option<u64>,
    classes: Classes,
    timeout: Option<Duration>,
    kill_after: Duration,
    key: Option<IdempotencyKey>,
    format: LogFormat,
    /// Which retry events reach stderr (`--quiet`, `RUST_LOG`).
    filter: EventFilter,
    program: OsString,
    args: Vec<OsString>,
    /// Notes for stderr before the first attempt.
    notes: Vec<String>,
}

fn plan(args: &ExecArgs) -> Result<Plan, String> {
    let resolved = args
        .policy
        .resolve_layered(DEFAULT_JITTER)
        .map_err(|e| e.to_string())?;
    let limits = args.attempt.resolve(&resolved)?;
    let mut command = args.command.iter().cloned();
    let program = command
        .next()
        .ok_or("no command given (usage: herdless exec [OPTIONS] -- CMD [ARGS...])")?;
    Ok(Plan {
        policy: resolved.policy,
        task_id: resolved.task_id,
        seed: resolved.seed,
        classes: limits.classes,
        timeout: limits.timeout,
        kill_after: limits.kill_after,
        key: args.idempotency_key,
        format: args.policy.log_format,
        filter: EventFilter::from_env(args.policy.quiet),
        program,
        args: command.collect(),
        notes: limits.notes,
    })
}

/// Runs `herdless exec`: the child's last status, 124 when its last attempt
/// timed out, 128 + N when interrupted by signal N.
///
/// # Errors
///
/// Usage and policy-file errors, a stdin or runtime it cannot set up (exit 125).
pub(crate) fn run(args: &ExecArgs) -> CliResult {
    let usage = |message: String| CliError::new(exit::EXEC_USAGE, message);
    let plan = plan(args).map_err(|e| usage(e.to_string()))?;
    for note in &plan.notes {
        eprintln!("herdless exec: {note}");
    }
    let stdin = StdinSource::open(args.stdin).map_err(|e| usage(e.to_string()))?;
    let rt = crate::shared::descriptors::build_runtime(
        tokio::runtime::Builder::new_current_thread().enable_all(),
    )
    .map_err(|e| usage(format!("cannot start the runtime: {e}")))?;
    let code = rt.block_on(execute(plan, stdin));
    // The process exits next (the caller is `cli::run`, whose caller is `main`):
    // the runtime's teardown (its epoll and event descriptors, the signal socket
    // pair, the timer wheel) is left to the exit, about 0.05 ms of the 2.7 ms of
    // `exec -- true`. Nothing runs on it past `block_on`: `execute` spawns no
    // task and reaps every child it starts.
    std::mem::forget(rt);
    Ok(code)
}

/// Shared between the attempt future, the signal loop and the event hook.
#[derive(Debug, Default)]
struct State {
    /// The running attempt's process group.
    running: Cell<Option<Pid>>,
    /// The signal that interrupted herdless, if any.
    interrupted: Cell<Option<Signal>>,
    /// Raised by an attempt that ended after an interrupt.
    stop: tokio::sync::Notify,
    /// The last failed attempt's exit status and whether it timed out (for events).
    last: Cell<Option<(i32, bool)>>,
}

/// The signals herdless forwards or stops on.
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
    quit: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> io::Result<Self> {
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
            quit: signal(SignalKind::quit())?,
        })
    }

    async fn next(&mut self) -> Signal {
        tokio::select! {
            _ = self.int.recv() => Signal::SIGINT,
            _ = self.term.recv() => Signal::SIGTERM,
            _ = self.hup.recv() => Signal::SIGHUP,
            _ = self.quit.recv() => Signal::SIGQUIT,
        }
    }
}

async fn execute(plan: Plan, stdin: StdinSource) -> i32 {
    let mut signals = match Signals::new() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("herdless exec: cannot handle signals: {e}");
            return exit::EXEC_USAGE;
        }
    };
    child::adopt_orphans();
    let state = Rc::new(State::default());
    let classes = plan.classes;
    let classify = move |f: &Failure| classify(&classes, f);
    let mut retry = Retry::builder()
        .policy(plan.policy)
        .classifier(classify)
        .notify(ExecEvents {
            format: plan.format,
            filter: plan.filter,
            state: Rc::clone(&state),
        })
        .task_id(plan.task_id.clone().unwrap_or_default());
    if let Some(seed) = plan.seed {
        retry = retry.seed(seed);
    }
    if let Some(key) = plan.key {
        retry = retry.idempotency_key(key);
    }
    let retry = retry.build();
    let stdin = RefCell::new(stdin);
    let call = retry.call_async(|attempt| attempt_once(&plan, attempt, &state, &stdin));
    tokio::pin!(call);
    loop {
        tokio::select! {
            biased;
            result = &mut call => return finish(result),
            () = state.stop.notified() => {
                let sig = state.interrupted.get().unwrap_or(Signal::SIGTERM);
                if plan.format == LogFormat::Text {
                    eprintln!("herdless exec: interrupted by {sig}; no further attempt");
                }
                return exit::SIGNAL_BASE + sig as i32;
            }
            sig = signals.next() => {
                let again = state.interrupted.get().is_some();
                state.interrupted.set(Some(sig));
                match state.running.get() {
                    // A second signal: the child's group had its chance (it
                    // may ignore the first); SIGKILL it.
                    Some(pgid) if again => child::signal_group(pgid, Signal::SIGKILL),
                    Some(pgid) => child::signal_group(pgid, sig),
                    // Between attempts: no child exists; dropping `call` cancels the sleep.
                    None => return exit::SIGNAL_BASE + sig as i32,
                }
            }
        }
    }
}

fn finish(result: Result<(), RetryError<Failure>>) -> i32 {
    match result {
        Ok(()) => exit::SUCCESS,
        Err(e) => e.last_error().exit_status(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::statuses::ExitStatuses;

    fn codes(s: &str) -> Option<ExitStatuses> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn default_retries_every_failure_but_126_127_and_sigpipe() {
        let c = Classes::new(None, None).unwrap();
        for s in [1, 2, 75, 125, 128, 137, 143, 255] {
            assert!(c.classify(s).is_retryable(), "{s}");
        }
        for s in [126, 127, 141] {
            assert!(!c.classify(s).is_retryable(), "{s}");
        }
        // SIGPIPE is retried when the allowlist names it.
        let pipe = Classes::new(codes("141"), None).unwrap();
        assert!(pipe.classify(141).is_retryable());
    }

    #[test]
    fn allowlist_denylist_and_their_validation() {
        let allow = Classes::new(codes("75,111,200-210"), None).unwrap();
        assert!(allow.classify(205).is_retryable());
        assert!(!allow.classify(1).is_retryable());
        let deny = Classes::new(None, codes("2,64-78")).unwrap();
        assert!(!deny.classify(70).is_retryable());
        assert!(deny.classify(1).is_retryable());
        let both = Classes::new(codes("1-10"), codes("20")).unwrap();
        assert!(both.classify(5).is_retryable() && !both.classify(20).is_retryable());
        assert!(
            Classes::new(codes("0,1"), None)
                .unwrap_err()
                .contains("0 is success")
        );
        assert!(
            Classes::new(codes("126-127"), None)
                .unwrap_err()
                .contains("126-127 can never be retried")
        );
        // A range spanning 126-127 keeps the rest, and says what it left out.
        let range = Classes::new(codes("1-255"), None).unwrap();
        assert!(range.classify(1).is_retryable() && range.classify(141).is_retryable());
        assert!(!range.classify(126).is_retryable() && !range.classify(127).is_retryable());
        assert_eq!(range.left_out(), codes("126-127"));
        assert_eq!(Classes::new(codes("75"), None).unwrap().left_out(), None);
        assert!(
            Classes::new(codes("1-5"), codes("5"))
                .unwrap_err()
                .contains("both list 5")
        );
    }

    #[test]
    fn the_reported_status_of_each_failure() {
        assert_eq!(Failure::Exit(9).exit_status(), 9);
        assert_eq!(Failure::TimedOut(143).exit_status(), exit::EXEC_TIMED_OUT);
        let start = Failure::Start {
            status: exit::EXEC_NOT_FOUND,
            error: io::Error::from(io::ErrorKind::NotFound),
        };
        assert_eq!(start.exit_status(), 127);
    }
}
