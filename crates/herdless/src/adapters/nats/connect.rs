//! [`connect_options`]: the connection a worker wants on a cluster.
//!
//! # Why
//!
//! A server that is killed closes its connections, and the client
//! reconnects at once. One that freezes, or is cut off from the network,
//! leaves them open: the client notices only when its pings go unanswered.
//! async-nats pings every 60 s by default and gives up after two unanswered
//! ones; every second here, so an idle worker leaves such a server within
//! about three seconds. (A busy one would not: async-nats holds its ping
//! back while the client sends commands, which is why the worker also
//! probes its server itself, see `liveness.rs`.) A connection attempt to an
//! unreachable server gives up after [`CONNECT_TIMEOUT`] (the client's
//! default is 5 s) and tries the next. async-nats 0.46 bounds the TCP
//! connect only, not the server's greeting: a reconnect that reaches a
//! server whose process is stopped (it accepts the connection but says
//! nothing) waits until that server resumes or dies.

use std::time::Duration;

/// How often a worker's connection pings its server.
pub const PING_INTERVAL: Duration = Duration::from_secs(1);

/// How long a worker's connection attempt to one server may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Connection options for a worker: pings every [`PING_INTERVAL`], so that
/// a frozen or unreachable server is left within seconds, a connection
/// attempt bounded by [`CONNECT_TIMEOUT`] (see the module documentation),
/// and a name servers show (`herdless worker`).
///
/// ```no_run
/// # async fn demo() -> Result<(), async_nats::ConnectError> {
/// let client = herdless::adapters::nats::connect_options()
///     .connect(["nats://10.0.0.1:4222", "nats://10.0.0.2:4222"].as_slice())
///     .await?;
/// let js = async_nats::jetstream::new(client);
/// # drop(js);
/// # Ok(()) }
/// ```
pub fn connect_options() -> async_nats::ConnectOptions {
    async_nats::ConnectOptions::new()
        .name("herdless worker")
        .ping_interval(PING_INTERVAL)
        .connection_timeout(CONNECT_TIMEOUT)
}
