//! `herdless worker` when the dead-letter stream is gone as a task fails
//! terminally: the dead letter is asked again while the delivery is kept,
//! and stored once the stream is back — the task is not run again (before,
//! it was left to its ack wait and ran again on every redelivery, up to its
//! attempts, its dead letter then saying `max_attempts`).
//! Real binary, real `nats-server` on 127.0.0.1 (a port it picks).

mod nats_server;
mod worker_support;

use std::time::Duration;

use async_nats::jetstream::stream;
use nats_server::{NatsServer, consumer_state, dead_letters, header, publish, task_streams};
use tokio::io::AsyncBufReadExt;
use worker_support::*;

#[tokio::test]
async fn a_terminal_task_waits_for_its_dead_letter_instead_of_running_again() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    let consumer = task_streams(&js, Duration::from_secs(1)).await;
    let seq = publish(&js, "tasks.scan", "page-1", None).await;
    let dir = tempfile::tempdir().unwrap();
    let mut fifo = mkfifo(&dir);
    // The attempt announces itself, then waits for the test's go: the
    // stream is deleted while it runs (a worker refuses to start without it).
    let script = format!(
        r#"echo "$HERDLESS_IDEMPOTENCY_KEY" > "$FIFO"; while [ ! -e go ]; do sleep 0.02; done; {LOG_ATTEMPT}; exit 3"#
    );
    let mut child = worker(
        &server,
        &dir,
        &["--exit-when-idle", "--terminal-on", "3"],
        &script,
    )
    .spawn()
    .unwrap();
    announced(&mut fifo).await;
    js.delete_stream("DEAD").await.unwrap();
    std::fs::write(dir.path().join("go"), "").unwrap();
    // Once the worker says it asks again, the stream comes back.
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let asking = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("asking again") {
                return line;
            }
        }
        panic!("the worker ended without asking again");
    };
    let line = tokio::time::timeout(Duration::from_secs(30), asking)
        .await
        .expect("the worker asks again for its dead letter");
    assert!(line.contains("dead letter not stored yet"), "{line}");
    js.create_stream(stream::Config {
        name: "DEAD".into(),
        subjects: vec!["dead.>".into()],
        ..Default::default()
    })
    .await
    .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let (s, _) = summary(&out);
    assert_eq!(s["dead_lettered"], 1, "{s}");
    assert_eq!(attempts(&dir).len(), 1, "the terminal task ran once");
    let dead = dead_letters(&js).await;
    assert_eq!(dead.len(), 1);
    assert_eq!(header(&dead[0], "Herdless-Reason"), "terminal");
    assert_eq!(header(&dead[0], "Herdless-Attempts"), "1");
    assert_eq!(consumer_state(&consumer).await, (0, 0, seq));
}
