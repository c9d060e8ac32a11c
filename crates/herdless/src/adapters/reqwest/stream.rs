//! Streaming a response body to a [`BodySink`] inside each attempt
//! ([`HttpRetry::send_to`]; the rules are in the [module
//! documentation](super#streaming-a-body)).
//!
//! The sink is lent to the running attempt (attempts never overlap), and
//! what it wrote is kept for the next one, which restarts the sink first. A
//! sink error ends the call without asking the engine: the attempt's future
//! records it and never completes, and the poll wrapping the engine's call
//! sees it right after that poll and drops the call, so no retry event
//! claims a decision that was never made.

use std::future::Future;
use std::io;
use std::pin::pin;
use std::sync::Mutex;
use std::task::Poll;
use std::time::Instant;

use reqwest::{RequestBuilder, StatusCode};

use crate::adapters::reqwest::{
    AttemptRecord, HttpError, HttpRetry, Kind, NotRetried, SendError, is_transport_timeout,
};
use crate::events::Notify;
use crate::retry::Attempt;
use crate::timer::AsyncSleep;

/// Where [`HttpRetry::send_to`] writes a response body, chunk by chunk, as it
/// arrives.
///
/// ```
/// use std::io;
/// use herdless::adapters::reqwest::BodySink;
///
/// /// Counts lines, keeps nothing.
/// struct Lines(u64);
/// impl BodySink for Lines {
///     async fn write(&mut self, chunk: &[u8]) -> io::Result<()> {
///         self.0 += chunk.iter().filter(|b| **b == b'\n').count() as u64;
///         Ok(())
///     }
///     fn can_restart(&self) -> bool { true }
///     async fn restart(&mut self) -> io::Result<()> { self.0 = 0; Ok(()) }
/// }
/// ```
pub trait BodySink: Send {
    /// Writes the next chunk of the body (never empty).
    fn write(&mut self, chunk: &[u8]) -> impl Future<Output = io::Result<()>> + Send;

    /// Whether what was written can be discarded, so that an attempt that
    /// fails mid-body may be retried (default: no).
    fn can_restart(&self) -> bool {
        false
    }

    /// Discards what an earlier attempt wrote; called before a retried
    /// attempt writes, only when [`can_restart`](Self::can_restart) said yes
    /// and something was written (default: nothing to do).
    fn restart(&mut self) -> impl Future<Output = io::Result<()>> + Send {
        async { Ok(()) }
    }

    /// The body ended: flush what is pending (default: nothing to do).
    fn finish(&mut self) -> impl Future<Output = io::Result<()>> + Send {
        async { Ok(()) }
    }
}

/// A sink that keeps nothing and counts the bytes: the body is read to its
/// end (as a load generator must, to measure the whole response) in
/// constant memory.
///
/// ```
/// let d = herdless::adapters::reqwest::Discard::default();
/// assert_eq!(d.bytes(), 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Discard {
    bytes: u64,
}

impl Discard {
    /// Bytes read by the attempt that wrote last.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl BodySink for Discard {
    async fn write(&mut self, chunk: &[u8]) -> io::Result<()> {
        self.bytes = self.bytes.saturating_add(chunk.len() as u64);
        Ok(())
    }

    fn can_restart(&self) -> bool {
        true
    }

    async fn restart(&mut self) -> io::Result<()> {
        self.bytes = 0;
        Ok(())
    }
}

/// The whole body in memory (what [`HttpRetry::send_buffered`] uses):
/// restartable, without a size limit.
impl BodySink for Vec<u8> {
    async fn write(&mut self, chunk: &[u8]) -> io::Result<()> {
        self.extend_from_slice(chunk);
        Ok(())
    }

    fn can_restart(&self) -> bool {
        true
    }

    async fn restart(&mut self) -> io::Result<()> {
        self.clear();
        Ok(())
    }
}

/// A successful response whose body went to a sink
/// ([`HttpRetry::send_to`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Streamed {
    /// The status (below 400).
    pub status: StatusCode,
    /// The HTTP version.
    pub version: reqwest::Version,
    /// The response headers.
    pub headers: reqwest::header::HeaderMap,
    /// The final URL (after redirects).
    pub url: reqwest::Url,
    /// The body's length: bytes written to the sink by the attempt that
    /// succeeded.
    pub body_bytes: u64,
}

/// What the attempts share: the sink (lent to the running attempt), what
/// the last attempt wrote, and a sink error that ends the call.
struct Shared<'s, S> {
    sink: Option<&'s mut S>,
    written: u64,
    failed: Option<io::Error>,
}

fn lock<'a, T>(m: &'a Mutex<T>) -> std::sync::MutexGuard<'a, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Told as each attempt of [`HttpRetry::send_to_watched`] starts and ends.
pub trait AttemptWatch: Send {
    /// Attempt `number` (1-based) starts at `at` (the retrier's clock): its
    /// request is about to be sent.
    fn started(&mut self, number: u32, at: Instant);
    /// The attempt ended: what it did.
    fn ended(&mut self, record: &AttemptRecord);
    /// The request of the attempt about to start, which the watch may
    /// change: a client-side balancer points each attempt at its next
    /// endpoint here (`herdless fleet URL URL...` does). Called just before
    /// [`started`](Self::started); nothing by default. What it changes is
    /// the attempt's alone: the next attempt starts again from the call's
    /// request.
    fn sending(&mut self, request: &mut reqwest::Request) {
        let _ = request;
    }
}

impl<W: AttemptWatch + ?Sized> AttemptWatch for &mut W {
    fn started(&mut self, number: u32, at: Instant) {
        (**self).started(number, at);
    }

    fn sending(&mut self, request: &mut reqwest::Request) {
        (**self).sending(request);
    }

    fn ended(&mut self, record: &AttemptRecord) {
        (**self).ended(record);
    }
}

/// An `observe` hook: told only as attempts end.
struct Ended<F>(F);

impl<F: FnMut(&AttemptRecord) + Send> AttemptWatch for Ended<F> {
    fn started(&mut self, _: u32, _: Instant) {}

    fn ended(&mut self, record: &AttemptRecord) {
        (self.0)(record);
    }
}

/// How one attempt ended, before it is told to the engine.
enum Step {
    Done(Streamed),
    Failed(Option<u16>, Kind, Option<NotRetried>),
    SinkFailed(io::Error),
}

impl<T: AsyncSleep, N: Notify> HttpRetry<T, N> {
    /// Sends the request, retrying per the policy, and streams the body of
    /// the successful response to `sink` **inside** the attempt (see the
    /// [module documentation](crate::adapters::reqwest#streaming-a-body) for a failure after the first byte).
    ///
    /// # Errors
    ///
    /// As for [`send`](Self::send), and [`SendError::Sink`] when the sink
    /// failed (the call stopped there).
    ///
    /// ```no_run
    /// use herdless::adapters::reqwest::{Discard, HttpRetry};
    /// # async fn run() -> Result<(), herdless::adapters::reqwest::SendError> {
    /// let mut sink = Discard::default();
    /// let got = HttpRetry::new(herdless::Policy::default())
    ///     .send_to(reqwest::Client::new().get("http://127.0.0.1:8080/"), &mut sink)
    ///     .await?;
    /// assert_eq!(got.body_bytes, sink.bytes());
    /// # Ok(()) }
    /// ```
    pub async fn send_to<S: BodySink>(
        &self,
        request: RequestBuilder,
        sink: &mut S,
    ) -> Result<Streamed, SendError> {
        self.send_to_observed(request, sink, |_| {}).await
    }

    /// Like [`send_to`](Self::send_to), calling `observe` after every
    /// attempt.
    ///
    /// # Errors
    ///
    /// As for [`send_to`](Self::send_to).
    pub async fn send_to_observed<S: BodySink>(
        &self,
        request: RequestBuilder,
        sink: &mut S,
        observe: impl FnMut(&AttemptRecord) + Send,
    ) -> Result<Streamed, SendError> {
        self.send_to_watched(request, sink, Ended(observe)).await
    }

    /// Like [`send_to`](Self::send_to), telling `watch` as each attempt
    /// starts and ends: a caller dropped mid-attempt (a fleet interrupted)
    /// still knows the request it sent.
    ///
    /// # Errors
    ///
    /// As for [`send_to`](Self::send_to).
    ///
    /// ```no_run
    /// use std::time::Instant;
    /// use herdless::adapters::reqwest::{AttemptRecord, AttemptWatch, Discard, HttpRetry};
    ///
    /// /// Counts the requests sent, ended or not.
    /// #[derive(Default)]
    /// struct Sent(u32);
    /// impl AttemptWatch for Sent {
    ///     fn started(&mut self, _: u32, _: Instant) {
    ///         self.0 += 1;
    ///     }
    ///     fn ended(&mut self, _: &AttemptRecord) {}
    /// }
    /// # async fn run() -> Result<(), herdless::adapters::reqwest::SendError> {
    /// let mut sent = Sent::default();
    /// HttpRetry::new(herdless::Policy::default())
    ///     .send_to_watched(reqwest::Client::new().get("http://127.0.0.1:8080/"), &mut Discard::default(), &mut sent)
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn send_to_watched<S: BodySink>(
        &self,
        request: RequestBuilder,
        sink: &mut S,
        watch: impl AttemptWatch,
    ) -> Result<Streamed, SendError> {
        let (client, mut replay) = self.prepare(request)?;
        let not_retried = replay.not_retried();
        let bounded = self.retry.policy().attempt_timeout().is_some();
        let observe = Mutex::new(watch);
        let shared = Mutex::new(Shared {
            sink: Some(sink),
            written: 0,
            failed: None,
        });
        let call = self.retry.call_async(|attempt: Attempt| {
            let mut req = replay.request(&attempt, bounded);
            let (client, timer, observe, shared) = (&client, &self.retry.timer, &observe, &shared);
            async move {
                let started = timer.now();
                if let Ok(mut watch) = observe.lock() {
                    watch.sending(&mut req);
                    watch.started(attempt.number(), started);
                }
                let (sink, earlier) = {
                    let mut s = lock(shared);
                    (s.sink.take(), std::mem::take(&mut s.written))
                };
                let (step, wrote) = match sink {
                    Some(sink) => {
                        let ended = attempt_once(client, req, &mut *sink, earlier).await;
                        lock(shared).sink = Some(sink);
                        ended
                    }
                    None => (
                        Step::SinkFailed(io::Error::other("the body sink is gone")),
                        0,
                    ),
                };
                let record = AttemptRecord {
                    number: attempt.number(),
                    started,
                    finished: timer.now(),
                    status: match &step {
                        Step::Done(s) => Some(s.status.as_u16()),
                        Step::Failed(status, ..) => *status,
                        Step::SinkFailed(_) => None,
                    },
                    timed_out: matches!(&step, Step::Failed(_, Kind::Transport(e), _)
                        if is_transport_timeout(e)),
                    body_bytes: wrote,
                };
                if let Ok(mut watch) = observe.lock() {
                    watch.ended(&record);
                }
                lock(shared).written = wrote;
                match step {
                    Step::Done(s) => Ok(s),
                    Step::Failed(_, kind, why) => Err(HttpError::new(kind, why.or(not_retried))),
                    Step::SinkFailed(e) => {
                        // Not a retry decision: the call ends here. The poll
                        // below sees the error right after this poll and
                        // drops the call.
                        lock(shared).failed = Some(e);
                        std::future::pending().await
                    }
                }
            }
        });
        let mut call = pin!(call);
        let ended = std::future::poll_fn(|cx| match call.as_mut().poll(cx) {
            Poll::Ready(r) => Poll::Ready(Ok(r)),
            Poll::Pending => match lock(&shared).failed.take() {
                Some(e) => Poll::Ready(Err(e)),
                None => Poll::Pending,
            },
        })
        .await;
        match ended {
            Ok(result) => result.map_err(SendError::Retry),
            Err(e) => Err(SendError::Sink(e)),
        }
    }
}

/// One attempt: restarts the sink when an earlier attempt wrote to it, sends
/// the request, and streams a success's body to the sink. Returns how it
/// ended and the bytes it wrote.
async fn attempt_once<S: BodySink>(
    client: &reqwest::Client,
    request: reqwest::Request,
    sink: &mut S,
    earlier: u64,
) -> (Step, u64) {
    if earlier > 0 {
        if let Err(e) = sink.restart().await {
            return (Step::SinkFailed(e), 0);
        }
    }
    let mut response = match client.execute(request).await {
        Ok(r) if r.status().as_u16() < 400 => r,
        Ok(r) => {
            return (
                Step::Failed(Some(r.status().as_u16()), Kind::Status(r), None),
                0,
            );
        }
        Err(e) => return (Step::Failed(None, Kind::Transport(e), None), 0),
    };
    let mut wrote = 0u64;
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) if chunk.is_empty() => {}
            Ok(Some(chunk)) => {
                if let Err(e) = sink.write(&chunk).await {
                    return (Step::SinkFailed(e), wrote);
                }
                wrote = wrote.saturating_add(chunk.len() as u64);
            }
            Ok(None) => break,
            Err(e) => {
                // What was written stays written unless the sink can take it back.
                let why = (wrote > 0 && !sink.can_restart()).then_some(NotRetried::PartialBody);
                let status = Some(response.status().as_u16());
                return (Step::Failed(status, Kind::Transport(e), why), wrote);
            }
        }
    }
    if let Err(e) = sink.finish().await {
        return (Step::SinkFailed(e), wrote);
    }
    let streamed = Streamed {
        status: response.status(),
        version: response.version(),
        headers: response.headers().clone(),
        url: response.url().clone(),
        body_bytes: wrote,
    };
    (Step::Done(streamed), wrote)
}
