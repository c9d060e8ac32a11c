//! The flags of `herdless worker`.

use std::ffi::OsString;

use clap::Args;

use crate::shared::policy_args::PolicyArgs;
use crate::shared::process::AttemptArgs;

/// `herdless worker` arguments.
#[derive(Debug, Clone, Args)]
#[command(
    mut_arg("task_id", |a| a.hide(true)),
    override_usage = "herdless worker --nats URL --stream NAME --consumer NAME [--dead-letter SUBJECT] \
[POLICY FLAGS] [OPTIONS] -- CMD [ARGS]...",
    about = "Run CMD for each task of a NATS JetStream consumer; retries are jittered redeliveries",
    long_about = "Take tasks from a durable pull consumer of NATS JetStream and run CMD for each, \
the message's payload on its stdin. A failed attempt is not retried in place: the worker tells the \
broker to redeliver the task after the engine's delay (classified, jittered, limited; default \
jitter: full) and takes the next task. A task that succeeds is acked; one that fails terminally \
or runs out of attempts or time is published to --dead-letter with its headers and the reason, \
attempts and elapsed time, then acked (without --dead-letter it is terminated with +TERM).\n\n\
Exit statuses are classified as in `herdless exec`: every non-zero status is retried except 126, \
127 and 141 (SIGPIPE) unless listed; --retry-on makes an allowlist, --terminal-on a denylist.\n\n\
CMD runs in its own process group with HERDLESS_ATTEMPT (continued across workers, crashes and \
restarts: the broker's delivery count is its floor) and HERDLESS_IDEMPOTENCY_KEY (the same on \
every attempt of a task) in its environment. The task's elapsed time runs from when the broker \
stored it (see docs/broker.md).\n\n\
SIGINT or SIGTERM: take no new task, let running attempts finish and settle, print the summary, \
exit 0. A second one ends the running attempts (SIGKILL to their groups) and hands their tasks \
back to the broker at once.\n\n\
Exit status: 0 after a stop or --exit-when-idle; 1 when the broker cannot be reached or the \
consumer read; 2 for usage errors and for a consumer or dead-letter subject it refuses."
)]
pub(crate) struct WorkerArgs {
    /// The NATS server (nats://HOST:PORT), or several, comma-separated (servers of one cluster).
    #[arg(long, env = "NATS_URL", value_name = "URL")]
    pub(crate) nats: String,
    /// The JetStream stream holding the tasks (1-255 bytes; no whitespace, '.', '*', '>', '/', '\\').
    #[arg(long, value_name = "NAME", value_parser = name)]
    pub(crate) stream: String,
    /// A durable pull consumer of that stream (explicit acks, max_deliver -1 or at least max_attempts, no BackOff; named as streams are).
    #[arg(long, value_name = "NAME", value_parser = name)]
    pub(crate) consumer: String,
    /// Where tasks that give up go (a subject a stream stores, at most 1024 bytes, no wildcard); without it they are terminated (+TERM).
    #[arg(long, value_name = "SUBJECT", value_parser = subject)]
    pub(crate) dead_letter: Option<String>,
    /// Policy flags (files, env, flags; default jitter for worker: full).
    #[command(flatten)]
    pub(crate) policy: PolicyArgs,
    /// Exit-status classes and per-attempt limits.
    #[command(flatten)]
    pub(crate) attempt: AttemptArgs,
    /// Tasks run at once (1-4096).
    #[arg(long, default_value_t = 1, value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=4096))]
    pub(crate) concurrency: u16,
    /// Exit once the consumer is idle: nothing to deliver, nothing awaiting an ack or a redelivery.
    #[arg(long)]
    pub(crate) exit_when_idle: bool,
    /// Do not claim tasks or record completions: by default each delivery claims its task under its idempotency key in the stream's key-value bucket herdless_done_STREAM before running it and records its success there before acking, so a copy delivered while another runs, or after the task succeeded, does not run (see docs/broker.md).
    #[arg(long)]
    pub(crate) no_completion_record: bool,
    /// The command and its arguments (after --).
    #[arg(required = true, trailing_var_arg = true, value_name = "CMD")]
    pub(crate) command: Vec<OsString>,
}

/// A stream or consumer name JetStream accepts.
fn name(s: &str) -> Result<String, String> {
    herdless::adapters::nats::check_name(s).map(|()| s.to_owned())
}

/// A subject to publish to.
fn subject(s: &str) -> Result<String, String> {
    herdless::adapters::nats::check_subject(s).map(|()| s.to_owned())
}
