//! `--coordinate`: the gateway's pushback layer shares its reports through
//! the library's [`KvShared`] (see `gateway.rs` for the bucket's name).
//!
//! The layer is built before the NATS client exists (building a stub is
//! synchronous, connecting is not), so it gets a [`Deferred`] store: a
//! task connects (in the background: a NATS server out of reach at start
//! delays nothing, the client keeps trying) and then puts the
//! [`KvShared`] in place. Until then the store hears nobody, and the
//! replica runs on its own view, exactly as the library's allocator does
//! when the bucket is out of reach.

use std::sync::{Arc, OnceLock};

use herdless::adapters::nats::{KvShared, connect_options};
use herdless::pushback::{PeerReport, ReplicaReport, SharedState};

use super::gateway::Coordinate;

/// A [`SharedState`] whose [`KvShared`] comes once connected.
#[derive(Debug, Default)]
pub(crate) struct Deferred(OnceLock<KvShared>);

impl SharedState for Deferred {
    fn publish(&self, report: &ReplicaReport) {
        if let Some(kv) = self.0.get() {
            kv.publish(report);
        }
    }

    fn peers(&self) -> Vec<PeerReport> {
        self.0.get().map(KvShared::peers).unwrap_or_default()
    }
}

/// The store for `coordinate` as replica `replica`: connects and starts
/// sharing in the background (call it inside a tokio runtime), and says
/// on stderr where the reports go.
pub(crate) fn start(coordinate: &Coordinate, replica: String) -> Arc<Deferred> {
    let store = Arc::new(Deferred::default());
    let (server, name) = (coordinate.server.clone(), coordinate.name.clone());
    let filled = Arc::clone(&store);
    tokio::spawn(async move {
        let client = match connect_options()
            .name("herdless stub")
            .retry_on_initial_connect()
            .connect(server.as_str())
            .await
        {
            Ok(c) => c,
            Err(e) => {
                eprintln!(
                    "herdless stub: cannot use NATS at {server} ({e}): this replica runs on its \
                     own view"
                );
                return;
            }
        };
        match KvShared::start(client, &name, &replica) {
            Ok(kv) => {
                eprintln!(
                    "herdless stub: replica {replica} shares its reports in bucket {} on {server}",
                    kv.bucket()
                );
                let _ = filled.0.set(kv);
            }
            Err(e) => eprintln!("herdless stub: cannot share reports ({e})"),
        }
    });
    store
}
