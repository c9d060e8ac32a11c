//! The stream and its consumer, looked up when the worker starts: asked
//! again, with the library's retrier, while the cluster cannot answer (no
//! answer in time, JetStream unavailable: a worker started during a leader
//! election, or on a loaded machine, exited with a usage error); any answer
//! the cluster gives (not found, a name it refuses) is a usage error at once.

use std::time::Duration;

use async_nats::jetstream::{self, consumer::PullConsumer};
use herdless::{Classification, Jitter, Policy, Retry};

use crate::shared::error::CliError;

/// How long the lookup is asked again before the worker gives up (exit 1).
pub(crate) const LOOKUP_FOR: Duration = Duration::from_secs(30);

/// Why a lookup failed: the cluster could not answer (asked again), or it
/// answered no (a usage error).
#[derive(Debug)]
enum Failed {
    Passing(String),
    Answered(String),
}

/// Whether a JetStream error is the cluster's "not now" (503) rather than an
/// answer.
fn unavailable(e: &async_nats::jetstream::Error) -> bool {
    e.code() == 503
}

async fn once(js: &jetstream::Context, stream: &str, name: &str) -> Result<PullConsumer, Failed> {
    use async_nats::jetstream::context::ConsumerInfoErrorKind as C;
    use async_nats::jetstream::context::GetStreamErrorKind as S;
    let s = js.get_stream(stream).await.map_err(|e| {
        let text = format!("stream {stream:?}: {e}");
        match e.kind() {
            S::Request => Failed::Passing(text),
            S::JetStream(j) if unavailable(&j) => Failed::Passing(text),
            _ => Failed::Answered(text),
        }
    })?;
    s.get_consumer(name).await.map_err(|e| {
        let text = format!("consumer {name:?} of stream {stream:?}: {e}");
        // The lookup's own error, or one converting what it found (a push
        // consumer): an answer.
        let info = e.downcast_ref::<async_nats::jetstream::context::ConsumerInfoError>();
        match info.map(|i| i.kind()) {
            Some(C::TimedOut | C::Request | C::NoResponders | C::Offline) => Failed::Passing(text),
            Some(C::JetStream(j)) if unavailable(&j) => Failed::Passing(text),
            _ => Failed::Answered(text),
        }
    })
}

/// The consumer `name` of `stream`.
///
/// # Errors
///
/// A usage error (exit 2) when the cluster answers that it has no such
/// stream or consumer; a failure (exit 1) when it did not answer within
/// [`LOOKUP_FOR`].
pub(crate) async fn consumer(
    js: &jetstream::Context,
    stream: &str,
    name: &str,
) -> Result<PullConsumer, CliError> {
    let policy = Policy::builder()
        .base(Duration::from_millis(200))
        .cap(Duration::from_secs(2))
        .jitter(Jitter::Full)
        .max_attempts(u32::MAX)
        .max_elapsed(LOOKUP_FOR)
        .build()
        .map_err(|e| CliError::failure(format!("the lookup's policy: {e}")))?;
    let retry = Retry::builder()
        .policy(policy)
        .classify(|e: &Failed| match e {
            Failed::Passing(_) => Classification::retryable(),
            Failed::Answered(_) => Classification::terminal(),
        })
        .task_id("worker-start")
        .build();
    retry
        .call_async(|_| once(js, stream, name))
        .await
        .map_err(|e| match e.last_error() {
            Failed::Answered(text) => CliError::usage(text.clone()),
            Failed::Passing(text) => CliError::failure(format!(
                "{text} (asked for {}s: the cluster did not answer)",
                LOOKUP_FOR.as_secs()
            )),
        })
}
