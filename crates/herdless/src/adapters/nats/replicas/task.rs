//! The background task of a [`KvShared`](super::KvShared): opens the
//! bucket (creating it if missing), puts each new report of this replica,
//! watches everyone's, and starts over a period later when any of it
//! fails (see [`KvShared`](super::KvShared) for the bounds).

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, kv, stream};
use futures_util::StreamExt;
use tokio::sync::watch;
use tokio::time::{Instant, sleep, timeout};

use super::Inner;
use crate::pushback::ReplicaReport;
use crate::pushback::replicas::{PERIOD, STALE};

/// The most a put or an opening may take before the bucket is taken to be
/// out of reach.
const WAIT: Duration = PERIOD;

/// What the task works with.
pub(super) struct Task {
    pub(super) inner: Arc<Inner>,
    pub(super) js: jetstream::Context,
    pub(super) bucket: String,
    pub(super) key: String,
    pub(super) reports: watch::Receiver<Option<ReplicaReport>>,
}

/// Why serving the bucket stopped.
enum Stop {
    /// The handle is gone: the task ends.
    Dropped,
    /// The bucket is out of reach (or the watch failed): open it again.
    Lost(String),
}

/// Runs until the [`KvShared`](super::KvShared) is dropped.
pub(super) async fn run(mut task: Task) {
    let mut reached = true;
    loop {
        let stop = match open(&task).await {
            Ok((store, entries)) => {
                if !reached {
                    tracing::info!(target: "herdless", bucket = %task.bucket, "replica reports: the bucket is reachable again");
                    reached = true;
                }
                serve(&mut task, &store, entries).await
            }
            Err(why) => Stop::Lost(why),
        };
        match stop {
            Stop::Dropped => return,
            Stop::Lost(why) => {
                if reached {
                    tracing::warn!(
                        target: "herdless",
                        bucket = %task.bucket,
                        error = %why,
                        "replica reports: the bucket is out of reach; peers' reports are used \
                         until {} s old, then this replica runs on its own view",
                        STALE.as_secs()
                    );
                    reached = false;
                }
            }
        }
        sleep(PERIOD).await;
    }
}

/// The bucket (created if missing) and a watch of every key, each key's
/// latest value first. The bucket's stream is created as a key-value
/// bucket's is, by hand: the client's own `create_key_value` reads account
/// details a 2.9 server does not send.
async fn open(task: &Task) -> Result<(kv::Store, kv::Watch), String> {
    let config = stream::Config {
        name: format!("KV_{}", task.bucket),
        description: Some("herdless: pushback replicas' reports".into()),
        subjects: vec![format!("$KV.{}.>", task.bucket)],
        max_messages_per_subject: 1,
        max_age: STALE,
        // The duplicate window may not pass max_age.
        duplicate_window: STALE,
        max_message_size: 1_024,
        storage: stream::StorageType::Memory,
        discard: stream::DiscardPolicy::New,
        allow_rollup: true,
        deny_delete: true,
        allow_direct: true,
        num_replicas: 1,
        ..Default::default()
    };
    match timeout(WAIT, task.js.get_or_create_stream(config)).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(format!("opening the bucket: {e}")),
        Err(_) => return Err("opening the bucket: timed out".into()),
    }
    let store = match timeout(WAIT, task.js.get_key_value(&task.bucket)).await {
        Ok(Ok(store)) => store,
        Ok(Err(e)) => return Err(format!("opening the bucket: {e}")),
        Err(_) => return Err("opening the bucket: timed out".into()),
    };
    match timeout(WAIT, store.watch_with_history(">")).await {
        Ok(Ok(entries)) => Ok((store, entries)),
        Ok(Err(e)) => Err(format!("watching the bucket: {e}")),
        Err(_) => Err("watching the bucket: timed out".into()),
    }
}

/// Puts this replica's new reports and keeps the others', until the
/// handle is dropped or the bucket is lost. A put that does not come back
/// through the watch within two periods means the watch stopped
/// delivering (a server restart it did not survive): lost.
async fn serve(task: &mut Task, store: &kv::Store, mut entries: kv::Watch) -> Stop {
    let mut check = tokio::time::interval(PERIOD);
    let mut echo_due: Option<Instant> = None;
    loop {
        tokio::select! {
            changed = task.reports.changed() => {
                if changed.is_err() {
                    return Stop::Dropped;
                }
                let Some(report) = *task.reports.borrow_and_update() else {
                    continue;
                };
                let value = match serde_json::to_vec(&report) {
                    Ok(v) => v,
                    // Only a non-finite number fails: nothing to tell.
                    Err(_) => continue,
                };
                match timeout(WAIT, store.put(&task.key, value.into())).await {
                    Ok(Ok(_)) => {
                        echo_due.get_or_insert(Instant::now() + 2 * PERIOD);
                    }
                    Ok(Err(e)) => return Stop::Lost(format!("putting a report: {e}")),
                    Err(_) => return Stop::Lost("putting a report: timed out".into()),
                }
            }
            entry = entries.next() => match entry {
                Some(Ok(entry)) if entry.key == task.key => echo_due = None,
                Some(Ok(entry)) => heard(task, &entry),
                Some(Err(e)) => return Stop::Lost(format!("watching the bucket: {e}")),
                None => return Stop::Lost("the watch ended".into()),
            },
            _ = check.tick() => {
                if echo_due.is_some_and(|due| Instant::now() >= due) {
                    return Stop::Lost("the watch stopped delivering".into());
                }
            }
        }
    }
}

/// A peer's entry in the watch.
fn heard(task: &Task, entry: &kv::Entry) {
    let mut heard = task.inner.heard();
    match entry.operation {
        kv::Operation::Put => {
            heard.put(&entry.key, &entry.value, Instant::now());
        }
        kv::Operation::Delete | kv::Operation::Purge => heard.remove(&entry.key),
    }
}
