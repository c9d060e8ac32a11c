//! `herdless get URL`: one logical GET with retries; the body on stdout (or
//! `--output FILE`), streamed as it arrives.
//!
//! ```text
//! herdless get URL [--header 'K: V']... [--timeout DUR] [--idempotency-key] [--output FILE] [--ignore-plan] [policy flags]
//! ```
//!
//! Statuses are classified by the library's retryable and terminal sets (fail closed), `Retry-After` is
//! honored but clamped (`--max-retry-after`) and spread, a plan of waves
//! (`Herdless-Plan`) followed unless `--ignore-plan`; connection errors and
//! per-attempt timeouts (`--timeout`, default 10 s) are retried. The body is
//! streamed inside the attempt ([`HttpRetry::send_to`]), in constant memory:
//! a body that breaks off before its first byte was written is retried; after
//! it, a retry restarts `--output FILE` (truncated) but cannot take back what
//! went to stdout, so the call ends there (exit 3, the bytes written named).
//! Retry events go to stderr (`--log-format text|json`). Exit codes: 0
//! success, 2 usage, 3 terminal status or error (a body broken off after its
//! first byte went to stdout included), 4 budget exhausted, 1 stdout or
//! `--output` not writable (a closed stdout included) or runtime failure.

mod output;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Args;
use herdless::adapters::reqwest::{HttpRetry, NotRetried, ReqwestClassifier, SendError};
use herdless::guard::waves::WaveGuard;
use herdless::{Jitter, Retry};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::shared::error::{CliError, CliResult};
use crate::shared::events_out::{EventFilter, StderrEvents};
use crate::shared::exit;
use crate::shared::http::{client_error, parse_url};
use crate::shared::policy_args::PolicyArgs;
use crate::shared::values::parse_duration;

/// `herdless get` flags.
#[derive(Debug, Clone, Args)]
pub(crate) struct GetArgs {
    /// The URL (http:// or https://).
    pub(crate) url: String,
    /// A request header, 'Name: value' (repeatable).
    #[arg(long = "header", short = 'H', value_name = "K: V")]
    pub(crate) headers: Vec<String>,
    /// Per-attempt timeout (connect to end of body, the time the body takes
    /// to be written included).
    #[arg(long, value_parser = parse_duration, value_name = "DUR", default_value = "10s")]
    pub(crate) timeout: Duration,
    /// Write the body to FILE instead of stdout (created or truncated at
    /// start; a retry after a partial body starts it over).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    /// Send an Idempotency-Key header, the same on every attempt.
    #[arg(long)]
    pub(crate) idempotency_key: bool,
    /// Ignore a plan of waves the server announces (`Herdless-Plan`): by
    /// default the retry comes in this client's own wave, computed from
    /// its X-Worker-Id header (`-H 'X-Worker-Id: ID'`), else `--task-id`,
    /// else a random id.
    #[arg(long)]
    pub(crate) ignore_plan: bool,
    /// Retry policy.
    #[command(flatten)]
    pub(crate) policy: PolicyArgs,
}

/// Parses `--header` values into a map.
///
/// # Errors
///
/// A message naming the bad header.
pub(crate) fn parse_headers(raw: &[String]) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    for h in raw {
        let (k, v) = h
            .split_once(':')
            .ok_or_else(|| format!("--header {h:?}: expected 'Name: value'"))?;
        let name = HeaderName::from_bytes(k.trim().as_bytes())
            .map_err(|_| format!("--header {h:?}: invalid header name {:?}", k.trim()))?;
        let value = HeaderValue::from_str(v.trim())
            .map_err(|_| format!("--header {h:?}: invalid header value"))?;
        map.append(name, value);
    }
    Ok(map)
}

/// The id a plan of waves places this client by: what the server names it
/// by (`X-Worker-Id`), else the task id, else a random one.
fn client_id(headers: &HeaderMap, task_id: Option<&str>) -> Vec<u8> {
    match (headers.get("x-worker-id"), task_id) {
        (Some(v), _) => v.as_bytes().to_vec(),
        (None, Some(t)) => t.as_bytes().to_vec(),
        (None, None) => herdless::IdempotencyKey::random().to_string().into_bytes(),
    }
}

/// Runs `herdless get`: exit 0 with the body on stdout, 3 when a terminal
/// status ended it, 4 when the budget ran out.
///
/// # Errors
///
/// Usage errors (exit 2), a runtime or client that cannot start, a stdout that
/// cannot be written (exit 1).
pub(crate) fn run(args: &GetArgs) -> CliResult {
    let (policy, policy_args) = args
        .policy
        .resolve_with_args(Jitter::Full)
        .map_err(|e| CliError::usage(e.to_string()))?;
    let url = parse_url(&args.url).map_err(CliError::usage)?;
    let headers = parse_headers(&args.headers).map_err(CliError::usage)?;
    if args.timeout.is_zero() {
        return Err(CliError::usage("--timeout must be positive"));
    }
    // Before any descriptor is opened: with stdout closed, the next one
    // opened would take its number.
    let mut out = match &args.output {
        Some(path) => output::BodyOut::file(path),
        None => output::BodyOut::stdout(),
    }
    .map_err(CliError::failure)?;
    // The client first: it loads the TLS trust store (one file descriptor,
    // closed again) before the runtime holds its own descriptors.
    let redirects = Redirects::default();
    crate::shared::http::install_tls();
    let client = reqwest::Client::builder()
        .redirect(redirects.policy())
        .build()
        .map_err(|e| CliError::failure(client_error(&e)))?;
    let rt = crate::shared::descriptors::build_runtime(
        tokio::runtime::Builder::new_current_thread().enable_all(),
    )
    .map_err(|e| CliError::failure(format!("cannot start the runtime: {e}")))?;
    rt.block_on(async {
        let mut retry = Retry::builder()
            .policy(policy)
            .classifier(ReqwestClassifier::default())
            .notify(StderrEvents {
                format: policy_args.log_format,
                filter: EventFilter::from_env(policy_args.quiet),
            });
        if let Some(id) = &policy_args.task_id {
            retry = retry.task_id(id.clone());
        }
        if let Some(seed) = policy_args.seed {
            retry = retry.seed(seed);
        }
        if !args.ignore_plan {
            retry = retry.waves(WaveGuard::new(client_id(
                &headers,
                policy_args.task_id.as_deref(),
            )));
        }
        let http =
            HttpRetry::from_retry(retry.build()).idempotency_key_header(args.idempotency_key);
        let request = client.get(url).headers(headers).timeout(args.timeout);
        // The body is streamed inside each attempt: a reset or stall before
        // the first byte is retried (after it, see the module documentation).
        let sent = http
            .send_to_observed(request, &mut out, |_| redirects.attempt_done())
            .await;
        match sent {
            Ok(_) => Ok(exit::SUCCESS),
            Err(SendError::Retry(e)) => {
                let code = if e.is_terminal() {
                    exit::TERMINAL
                } else {
                    exit::EXHAUSTED
                };
                let mut message = redirects.explain(e.to_string());
                if e.last_error().not_retried() == Some(NotRetried::PartialBody) {
                    message = format!(
                        "the body broke off after {} bytes were written to {}, which cannot \
                         take them back: not retried (--output FILE can start over): {message}",
                        out.written(),
                        out.target(),
                    );
                }
                Err(CliError::new(code, message))
            }
            Err(SendError::Sink(e)) => Err(match out.target() {
                output::Target::Stdout => crate::shared::output::write_error(&e),
                output::Target::File(p) => {
                    CliError::failure(format!("cannot write to {}: {e}", p.display()))
                }
            }),
            Err(e) => Err(CliError::usage(e.to_string())),
        }
    })
}

/// The redirects each attempt followed, so that an error names the URL that
/// failed rather than the one asked for (reqwest reports a failure after a
/// redirect with the original URL).
#[derive(Debug, Clone, Default)]
struct Redirects {
    /// The current attempt's chain: the original URL, then each redirect's.
    current: Arc<Mutex<Vec<reqwest::Url>>>,
    /// The last finished attempt's chain.
    last: Arc<Mutex<Vec<reqwest::Url>>>,
}

/// Redirects followed per request at most (reqwest's default).
const MAX_REDIRECTS: usize = 10;

impl Redirects {
    fn policy(&self) -> reqwest::redirect::Policy {
        let current = Arc::clone(&self.current);
        reqwest::redirect::Policy::custom(move |attempt| {
            let mut chain = attempt.previous().to_vec();
            chain.push(attempt.url().clone());
            if let Ok(mut c) = current.lock() {
                *c = chain;
            }
            if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error("too many redirects")
            } else {
                attempt.follow()
            }
        })
    }

    /// An attempt ended: its chain becomes the last one.
    fn attempt_done(&self) {
        if let (Ok(mut current), Ok(mut last)) = (self.current.lock(), self.last.lock()) {
            *last = std::mem::take(&mut *current);
        }
    }

    /// `message` naming the URL that failed and the redirect chain, when the
    /// last attempt followed redirects.
    fn explain(&self, message: String) -> String {
        let chain = self.last.lock().map(|c| c.clone()).unwrap_or_default();
        let (Some(first), Some(failed)) = (chain.first(), chain.last()) else {
            return message;
        };
        if chain.len() < 2 {
            return message;
        }
        let message = message.replace(
            &format!("for url ({first})"),
            &format!("for url ({failed})"),
        );
        let hops: Vec<&str> = chain.iter().map(reqwest::Url::as_str).collect();
        format!(
            "{message} (the request to {failed} failed, after redirects: {})",
            hops.join(" -> ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_and_urls_are_validated() {
        let h = parse_headers(&["X-Worker-Id: 7".into(), "Accept:text/plain".into()]).unwrap();
        assert_eq!(h["x-worker-id"], "7");
        assert_eq!(h["accept"], "text/plain");
        assert!(
            parse_headers(&["no colon".into()])
                .unwrap_err()
                .contains("Name: value")
        );
        assert!(parse_headers(&["bad name: v".into()]).is_err());
        assert!(parse_url("ftp://x/").unwrap_err().contains("scheme"));
        assert!(parse_url("not a url").is_err());
        assert!(parse_url("http://127.0.0.1:1/").is_ok());
    }
}
