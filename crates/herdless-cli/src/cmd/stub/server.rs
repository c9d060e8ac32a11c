//! The HTTP server: accepts on 127.0.0.1, serves each connection (HTTP/1.1)
//! through the router, and shuts down within a bounded grace.
//!
//! Its own accept loop rather than `axum::serve`, for three settings a stub
//! facing hostile or careless clients needs:
//!
//! * **slow headers time out**: a request head not complete within
//!   [`StubOptions::header_timeout`] (default [`HEADER_TIMEOUT`], 30 s) ends its
//!   connection, so half-sent requests do not pile up;
//! * **half-closed clients are answered**: a client that sends its request
//!   and shuts down its sending side still gets the answer (hyper's
//!   `half_close`: hyper then no longer reads while a request is in
//!   flight). So that a request held in the pushback layer whose client is
//!   gone still leaves the hold, the connection's socket is shared with the
//!   recorder ([`Peer`]), which watches it while the request waits: an end
//!   of input (a peek of 0 bytes) or an error means the client left;
//! * **shutdown is bounded**: on the shutdown signal the stub stops
//!   accepting, held requests are answered `503` with `Retry-After` (the
//!   recorder, `book.rs`), connections close once their request is answered,
//!   and whatever is still open after [`StubOptions::grace`] (default [`GRACE`],
//!   2 s: a half-sent request, a client reading slowly) is dropped.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tower::ServiceExt;

/// The longest a client may take to send a request head (also the longest
/// an idle keep-alive connection is kept).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the stub waits, once told to shut down, for its connections to
/// finish before it drops them.
pub const GRACE: Duration = Duration::from_secs(2);

/// The server's limits (the defaults: [`HEADER_TIMEOUT`], [`GRACE`],
/// `/stats` keeping [`ARRIVALS_KEPT`](super::book::ARRIVALS_KEPT)).
#[derive(Debug, Clone, Copy)]
pub struct StubOptions {
    /// The longest a request head may take to arrive.
    pub header_timeout: Duration,
    /// The bound on a shutdown.
    pub grace: Duration,
    /// How many arrivals `/stats` keeps (at least 1).
    pub keep: usize,
}

impl Default for StubOptions {
    fn default() -> Self {
        StubOptions {
            header_timeout: HEADER_TIMEOUT,
            grace: GRACE,
            keep: super::book::ARRIVALS_KEPT,
        }
    }
}

/// The socket of a request's connection, in each request's extensions, to
/// watch for the client's end of input while the request waits.
#[derive(Debug, Clone)]
pub(crate) struct Peer(Arc<TcpStream>);

impl Peer {
    /// Completes when the client has ended its input (half-closed or hung
    /// up) or its connection failed. Bytes it sent after its request (a
    /// pipelined one) are left for hyper and looked at again 100 ms later.
    pub(crate) async fn closed(&self) {
        let mut byte = [0u8; 1];
        loop {
            match self.0.peek(&mut byte).await {
                Ok(0) | Err(_) => return,
                Ok(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }
}

/// Binds 127.0.0.1:`port` (0: a free port) with a deep accept backlog.
pub(crate) fn bind(port: u16) -> io::Result<TcpListener> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(SocketAddr::from(([127, 0, 0, 1], port)))?;
    // The kernel caps this at net.core.somaxconn; a fleet connects all at once.
    socket.listen(65_535)
}

/// Serves `app` on `listener` until `shutdown` completes, then tells every
/// request (`stop`), waits for the connections at most `options.grace`, and
/// drops the rest.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()>,
    stop: watch::Sender<bool>,
    options: StubOptions,
) -> io::Result<()> {
    let mut connections = JoinSet::new();
    let mut shutdown = pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(connection(stream, app.clone(), stop.subscribe(), options));
                }
                Err(e) => accept_error(e).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    let _ = stop.send(true);
    let drained = async { while connections.join_next().await.is_some() {} };
    let _ = tokio::time::timeout(options.grace, drained).await;
    connections.abort_all();
    Ok(())
}

/// A failed accept: a connection that went away is skipped; anything else
/// (out of descriptors) is waited out for a moment, as `axum::serve` does.
async fn accept_error(e: io::Error) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if !matches!(
        e.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One connection: HTTP/1.1 with the head timeout and half-close, each
/// request given the connection's [`PeerEof`]; on `stop`, keep-alive ends
/// (the connection closes once its request is answered).
async fn connection(
    stream: TcpStream,
    app: Router,
    mut stop: watch::Receiver<bool>,
    options: StubOptions,
) {
    let stream = Arc::new(stream);
    let io = TokioIo::new(Shared(Arc::clone(&stream)));
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(Peer(Arc::clone(&stream)));
        app.clone().oneshot(request)
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(options.header_timeout)
        .half_close(true);
    let mut conn = pin!(builder.serve_connection(io, service));
    tokio::select! {
        _ = conn.as_mut() => return,
        _ = stop.wait_for(|s| *s) => conn.as_mut().graceful_shutdown(),
    }
    let _ = conn.await;
}

/// A TCP stream hyper reads and writes while the recorder can watch it
/// ([`Peer`]): tokio's readiness API on a shared stream (`&TcpStream`).
struct Shared(Arc<TcpStream>);

impl AsyncRead for Shared {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            ready!(self.0.poll_read_ready(cx))?;
            match self.0.try_read(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for Shared {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.0.poll_write_ready(cx))?;
            match self.0.try_write(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                done => return Poll::Ready(done),
            }
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.0.poll_write_ready(cx))?;
            match self.0.try_write_vectored(bufs) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                done => return Poll::Ready(done),
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let shut = socket2::SockRef::from(&*self.0).shutdown(std::net::Shutdown::Write);
        Poll::Ready(match shut {
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(()),
            other => other,
        })
    }
}

/// Completes on SIGINT, SIGTERM or SIGHUP (the terminal that started the
/// stub closed: its held clients get their 503 rather than a reset).
pub(crate) async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let on = |kind: SignalKind| async move {
        match signal(kind) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = ctrl_c => {},
        () = on(SignalKind::terminate()) => {},
        () = on(SignalKind::hangup()) => {},
    }
}
