//! The reqwest integration's bodies against a scripted HTTP/1.1 server on
//! 127.0.0.1: a body that breaks is retried when it can start over, a sink
//! that fails stops the call.

#[allow(dead_code)] // each test binary uses part of it
#[path = "support/scripted.rs"]
mod scripted;
#[path = "support/tls.rs"]
mod tls;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use herdless::adapters::reqwest::{HttpRetry, SendError};
use herdless::{GiveUp, Policy, Retry, RetryEvent};
use scripted::{TRUNCATE, scripted};

fn fast() -> Policy {
    Policy::builder()
        .base(Duration::from_millis(5))
        .cap(Duration::from_millis(20))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_body_that_breaks_is_retried_when_buffered() {
    let (url, seen) = scripted(vec![(200, TRUNCATE), (200, "")]).await;
    let client = tls::client();
    let mut statuses = Vec::new();
    let got = HttpRetry::new(fast())
        .send_buffered_observed(client.get(&url), |a| statuses.push(a.status))
        .await
        .unwrap();
    assert_eq!(got.status, 200);
    assert_eq!(&got.body[..], b"ok");
    assert_eq!(statuses, vec![Some(200), Some(200)]);
    assert_eq!(seen.lock().unwrap().len(), 2);

    // Unbuffered, the headers are the success; the broken body is the caller's.
    let (url, seen) = scripted(vec![(200, TRUNCATE), (200, "")]).await;
    let response = HttpRetry::new(fast()).send(client.get(&url)).await.unwrap();
    assert!(response.bytes().await.is_err());
    assert_eq!(seen.lock().unwrap().len(), 1);
}

/// A sink that cannot take back what it was given (a pipe), recording it;
/// `fail_at`: a write error once that many writes succeeded.
#[derive(Default)]
struct Pipe {
    got: Vec<u8>,
    writes: usize,
    fail_at: Option<usize>,
}

impl herdless::adapters::reqwest::BodySink for Pipe {
    async fn write(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        if self.fail_at == Some(self.writes) {
            return Err(std::io::ErrorKind::BrokenPipe.into());
        }
        self.writes += 1;
        self.got.extend_from_slice(chunk);
        Ok(())
    }
}

/// `send_to` streams the body inside the attempt: a break after bytes went
/// to a sink that cannot take them back is final (`PartialBody`, terminal,
/// one request); a restartable sink (`Vec`) is restarted and the break
/// retried, ending with exactly the second attempt's body; a break before
/// the first byte is retried whatever the sink.
#[tokio::test]
async fn a_streamed_body_that_breaks_is_retried_only_when_the_sink_can_start_over() {
    use herdless::adapters::reqwest::NotRetried;
    let client = tls::client();
    let (url, seen) = scripted(vec![(200, TRUNCATE), (200, "")]).await;
    let mut pipe = Pipe::default();
    let mut records = Vec::new();
    let err = HttpRetry::new(fast())
        .send_to_observed(client.get(&url), &mut pipe, |a| records.push(*a))
        .await
        .unwrap_err();
    let e = err.retry_error().unwrap();
    assert_eq!(e.reason(), GiveUp::Terminal, "{err}");
    assert_eq!(e.last_error().not_retried(), Some(NotRetried::PartialBody));
    assert!(err.to_string().contains("cannot be taken back"), "{err}");
    assert_eq!(pipe.got, b"ok", "the two bytes that came");
    assert_eq!(seen.lock().unwrap().len(), 1);
    assert_eq!((records.len(), records[0].body_bytes), (1, 2));

    let (url, seen) = scripted(vec![(200, TRUNCATE), (200, "")]).await;
    let mut buffer = Vec::new();
    let got = HttpRetry::new(fast())
        .send_to(client.get(&url), &mut buffer)
        .await
        .unwrap();
    assert_eq!((got.status.as_u16(), got.body_bytes), (200, 2));
    assert_eq!(buffer, b"ok", "restarted: not \"okok\"");
    assert_eq!(seen.lock().unwrap().len(), 2);

    // A 503 first (its body is not the sink's), then the body: to the pipe.
    let (url, _) = scripted(vec![(503, ""), (200, "")]).await;
    let mut pipe = Pipe::default();
    HttpRetry::new(fast())
        .send_to(client.get(&url), &mut pipe)
        .await
        .unwrap();
    assert_eq!(pipe.got, b"ok");
}

/// A sink that fails ends the call at once with `SendError::Sink`: no
/// other attempt, no retry event (it is not a retry decision).
#[tokio::test]
async fn a_failing_sink_stops_the_call_without_a_retry_or_an_event() {
    let (url, seen) = scripted(vec![(200, "")]).await;
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = events.clone();
    let retry = Retry::builder()
        .policy(fast())
        .classifier(Default::default())
        .notify(move |e: &RetryEvent<'_>| log.lock().unwrap().push(e.name()))
        .build();
    let mut pipe = Pipe {
        fail_at: Some(0),
        ..Pipe::default()
    };
    let err = HttpRetry::from_retry(retry)
        .send_to(tls::client().get(&url), &mut pipe)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, SendError::Sink(e) if e.kind() == std::io::ErrorKind::BrokenPipe),
        "{err}"
    );
    assert!(
        err.to_string()
            .starts_with("cannot write the response body")
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
    assert!(
        events.lock().unwrap().is_empty(),
        "{:?}",
        events.lock().unwrap()
    );
}
