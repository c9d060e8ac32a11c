//! The JetStream worker over a three-server cluster.

#[path = "support/nats_cluster.rs"]
mod nats_cluster;

use std::time::Duration;

use nats_cluster::{NatsCluster, cluster_streams};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smoke() {
    let t0 = std::time::Instant::now();
    let mut cluster = NatsCluster::start();
    println!("started {:?}", t0.elapsed());
    let js = cluster.jetstream().await;
    println!("meta {:?}", t0.elapsed());

    let _c = cluster_streams(&js, Duration::from_secs(2)).await;
    println!("streams {:?}", t0.elapsed());
    let l = cluster.stream_leader("TASKS").await;
    println!("leader {l} {:?}", t0.elapsed());
    cluster.kill(l);
    let t1 = std::time::Instant::now();
    loop {
        let n = cluster.stream_leader("TASKS").await;
        if n != l {
            println!("new leader {n} after {:?}", t1.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cluster.restart(l);
    cluster.await_current("TASKS").await;
    println!("current after {:?}", t1.elapsed());
    let l = cluster.stream_leader("TASKS").await;
    cluster.cut(l);
    let t1 = std::time::Instant::now();
    loop {
        let n = cluster.stream_leader("TASKS").await;
        if n != l {
            println!("new leader {n} after cut {:?}", t1.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cluster.heal(l);
    cluster.await_current("TASKS").await;
    println!("current after heal {:?}", t1.elapsed());
}
