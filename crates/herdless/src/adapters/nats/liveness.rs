//! Leaving a server that no longer answers: a probe of the worker's own
//! server every [`PROBE_EVERY`], and a reconnect when it goes unanswered.
//!
//! # Why
//!
//! async-nats notices a dead connection by its pings, but it resets its ping
//! timer on every command the client sends: a worker that keeps asking (a
//! pull every second, in-progress acks, an ack asked again) never pings.
//! Measured on a three-server cluster: the workers connected to a server
//! frozen with SIGSTOP, or cut off from the network, stayed on it for the
//! whole fault (10 s), their tasks' acks and completion records stuck in
//! it, while the other servers elected new leaders and redelivered those
//! tasks to other workers, which ran them again. A killed server is not the
//! case: its connections close, and the client reconnects at once.
//!
//! So the worker asks its server itself: every [`PROBE_EVERY`] it publishes
//! an empty message to an inbox subject it subscribes to, which only the
//! server can send back (`flush` is no probe: it returns once the socket
//! took the bytes, which a frozen server's kernel still does). One not back
//! within [`PROBE_WAIT`] while the client says it is connected makes it
//! reconnect (`force_reconnect`), to another server of the cluster when
//! there is one. A server that is busy electing a JetStream leader still
//! routes core messages, so it is not left. A client that does not receive
//! its own messages (`no_echo`) never gets a probe back: the worker only
//! acts once one has come back on that client.

use std::time::Duration;

use async_nats::connection::State;

/// How often the worker probes its server.
pub const PROBE_EVERY: Duration = Duration::from_secs(1);

/// How long a probe waits for the server's answer.
pub const PROBE_WAIT: Duration = Duration::from_secs(2);

/// How long the client may stay without a connection before the worker
/// says so (once per outage).
const STUCK_AFTER: Duration = Duration::from_secs(10);

/// Probes `client`'s server for ever, reconnecting when it stops answering.
pub(super) async fn watch(client: async_nats::Client) {
    use futures_util::StreamExt;
    let subject = client.new_inbox();
    let Ok(mut echo) = client.subscribe(subject.clone()).await else {
        return std::future::pending().await;
    };
    let mut every = tokio::time::interval(PROBE_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut echoes = false;
    let mut down_since: Option<(tokio::time::Instant, bool)> = None;
    loop {
        every.tick().await;
        note_outage(&client, &mut down_since);
        // Probes answered late, or twice across a reconnect, are dropped.
        while let Some(Some(_)) = futures_util::FutureExt::now_or_never(echo.next()) {}
        if client.connection_state() != State::Connected
            || client
                .publish(subject.clone(), bytes::Bytes::new())
                .await
                .is_err()
        {
            continue;
        }
        if tokio::time::timeout(PROBE_WAIT, echo.next()).await.is_ok() {
            echoes = true;
            continue;
        }
        if !echoes || client.connection_state() != State::Connected {
            continue;
        }
        tracing::warn!(
            target: "herdless",
            wait_s = PROBE_WAIT.as_secs_f64(),
            "the broker did not answer in time: reconnecting (to another server of the \
             cluster when there is one)"
        );
        if let Err(e) = client.force_reconnect().await {
            tracing::warn!(target: "herdless", error = %e, "reconnecting failed");
        }
    }
}

/// Says once per outage that the client has had no connection for
/// [`STUCK_AFTER`]: async-nats 0.46 bounds a reconnect's TCP connect but not
/// the server's greeting, so a reconnect that reached a stopped server
/// process waits until it resumes or dies.
fn note_outage(client: &async_nats::Client, down_since: &mut Option<(tokio::time::Instant, bool)>) {
    if client.connection_state() == State::Connected {
        *down_since = None;
        return;
    }
    let (since, said) = down_since.get_or_insert_with(|| (tokio::time::Instant::now(), false));
    if !*said && since.elapsed() >= STUCK_AFTER {
        *said = true;
        tracing::warn!(
            target: "herdless",
            down_s = since.elapsed().as_secs_f64(),
            "no connection to the broker: still reconnecting (a server that accepts the \
             connection but does not answer, such as a stopped process, holds the client \
             until it resumes or dies)"
        );
    }
}
