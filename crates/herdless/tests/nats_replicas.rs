//! `KvShared` over a real `nats-server`: two replicas hear each other
//! through the bucket; with the server killed, each keeps the other's last
//! report until it is STALE, then hears nobody; with the server back (same
//! port; the in-memory bucket lost with it), they find each other again.

#[path = "support/nats_server.rs"]
mod nats_server;

use std::time::Duration;

use herdless::adapters::nats::{KvShared, connect_options, replicas_bucket};
use herdless::pushback::replicas::{PERIOD, STALE};
use herdless::pushback::{PeerReport, ReplicaReport, SharedState};
use nats_server::NatsServer;
use tokio::time::{Instant, sleep};

fn report(held: u64) -> ReplicaReport {
    ReplicaReport {
        served_per_s: 150.5,
        refused: 3,
        arrivals_per_s: 400.0,
        estimate: 166.7,
        held,
        down: false,
    }
}

async fn replica(url: &str, id: &str) -> KvShared {
    let client = connect_options()
        .retry_on_initial_connect()
        .connect(url)
        .await
        .expect("a client");
    KvShared::start(client, "gateways", id).expect("started")
}

/// Publishes each replica's report once a period, as the layer does, until
/// `until` holds of their peers or `within` passes; returns when it held
/// (since the call), or `None`.
async fn publish_until(
    replicas: &[(&KvShared, ReplicaReport)],
    within: Duration,
    until: impl Fn(&[Vec<PeerReport>]) -> bool,
) -> Option<Duration> {
    let start = Instant::now();
    let mut next = start;
    while start.elapsed() < within {
        if Instant::now() >= next {
            for (r, report) in replicas {
                r.publish(report);
            }
            next += PERIOD;
        }
        let peers: Vec<Vec<PeerReport>> = replicas.iter().map(|(r, _)| r.peers()).collect();
        if until(&peers) {
            return Some(start.elapsed());
        }
        sleep(Duration::from_millis(20)).await;
    }
    None
}

/// Each replica hears exactly the other's report.
fn both_heard(peers: &[Vec<PeerReport>], a: &ReplicaReport, b: &ReplicaReport) -> bool {
    peers[0].len() == 1
        && peers[0][0].report == *b
        && peers[1].len() == 1
        && peers[1][0].report == *a
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_hear_each_other_lose_each_other_with_the_server_and_find_each_other_again() {
    let mut server = NatsServer::start();
    let (a, b) = (
        replica(server.url(), "gw-a").await,
        replica(server.url(), "gw-b").await,
    );
    assert_eq!(a.bucket(), replicas_bucket("gateways"));
    assert_eq!(a.bucket(), "herdless_replicas_gateways");
    let (ra, rb) = (report(10), report(2_000));
    let both = [(&a, ra), (&b, rb)];

    let heard = publish_until(&both, Duration::from_secs(15), |p| both_heard(p, &ra, &rb)).await;
    let heard = heard.expect("the replicas hear each other through the bucket");
    eprintln!("heard each other after {heard:?}");
    // Ages are from the arrival here, a period at most between two reports.
    let age = a.peers()[0].age;
    assert!(age <= STALE, "{age:?}");

    // The server dies: the last reports stay until STALE, then nothing.
    // (Publishing goes on, as a layer's would: nothing reaches anyone.)
    server.stop();
    let killed = Instant::now();
    let heard_after = a.peers();
    assert_eq!(heard_after.len(), 1, "what was heard stays at first");
    let gone = publish_until(&both, 2 * STALE, |p| p.iter().all(Vec::is_empty))
        .await
        .expect("peers go stale without the server");
    eprintln!("alone {gone:?} after the kill");
    // The last report arrived at most about a period before the kill.
    assert!(
        gone + PERIOD + Duration::from_millis(500) >= STALE,
        "stale after {gone:?}: too early"
    );
    assert!(gone <= STALE + Duration::from_millis(500), "{gone:?}");
    assert!(killed.elapsed() >= gone);

    // Back on the same port (its in-memory bucket gone): found again.
    server.restart();
    let again = publish_until(&both, Duration::from_secs(30), |p| both_heard(p, &ra, &rb))
        .await
        .expect("the replicas find each other again");
    eprintln!("found each other {again:?} after the restart");

    // A replica dropped stops reporting: the other hears nobody once STALE.
    drop(b);
    let alone = publish_until(&[(&a, ra)], 3 * STALE, |p| p[0].is_empty())
        .await
        .expect("a dropped replica goes stale");
    assert!(
        alone + PERIOD + Duration::from_millis(500) >= STALE,
        "{alone:?}"
    );
}

#[tokio::test]
async fn an_invalid_replica_id_or_no_runtime_is_a_clear_error() {
    let server = NatsServer::start();
    let client = async_nats::connect(server.url()).await.unwrap();
    let e = KvShared::start(client.clone(), "gateways", "gw:8080").unwrap_err();
    assert!(e.to_string().contains("\"gw:8080\""), "{e}");
    assert!(e.to_string().contains("':'"), "{e}");
    let e = std::thread::spawn(move || KvShared::start(client, "gateways", "gw-1").unwrap_err())
        .join()
        .unwrap();
    assert!(e.to_string().contains("tokio runtime"), "{e}");
}
