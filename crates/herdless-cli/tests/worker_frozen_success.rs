//! `herdless worker` stopped (`SIGSTOP`) while its attempt runs, for longer
//! than the lease and the takeover margin, its command succeeding inside
//! the fence meanwhile: on waking it records the success by creating the
//! task's next turn as `done` (no one took the task over), acks it, and
//! the task does not run again. (Before, it took the lapsed fence for a
//! stopped attempt, counted `lease_lost`, and the task ran a second time.)
//! Real binary, real `nats-server` on 127.0.0.1 (a port it picks), real
//! signals; every process ended by its id.

mod nats_server;
mod worker_support;

use std::time::Duration;

use nats_server::{NatsServer, consumer_state, dead_letters, publish, task_streams};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use worker_support::*;

#[tokio::test]
async fn a_success_inside_the_fence_of_a_stopped_worker_is_recorded_once() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    let lease = Duration::from_secs(2);
    let consumer = task_streams(&js, lease).await;
    let seq = publish(&js, "tasks.scan", "page-1", None).await;
    let dir = tempfile::tempdir().unwrap();
    let mut fifo = mkfifo(&dir);
    let script = format!(r#"echo "$HERDLESS_ATTEMPT" > "$FIFO"; sleep 0.3; {LOG_ATTEMPT}"#);
    let child = worker(&server, &dir, &["--exit-when-idle"], &script)
        .spawn()
        .unwrap();
    let pid = Pid::from_raw(child.id().unwrap() as i32);
    assert_eq!(announced(&mut fifo).await, "1");
    kill(pid, Signal::SIGSTOP).unwrap();
    // The command ends (with success) while the worker is stopped, inside
    // its supervisor's deadline.
    let logged = tokio::time::timeout(Duration::from_secs(30), async {
        while attempts(&dir).is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    // The worker stays stopped past its lease and the margin (1 s) a
    // contender would wait on top: the scenario itself, not a wait for
    // something that could be awaited.
    tokio::time::sleep(lease + Duration::from_secs(2)).await;
    kill(pid, Signal::SIGCONT).unwrap();
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the worker ends once idle")
        .unwrap();
    assert!(
        logged.is_ok(),
        "the command did not end while its worker was stopped"
    );
    let (s, _) = summary(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(attempts(&dir).len(), 1, "the task ran once: {stderr}");
    assert_eq!(s["acked"], 1, "{s} {stderr}");
    assert_eq!(s["lease_lost"], 0, "{s} {stderr}");
    assert!(!stderr.contains("the attempt was stopped"), "{stderr}");
    // The success is on record: the next turn, created as `done`.
    let bucket = js.get_key_value("herdless_done_TASKS").await.unwrap();
    let key = &attempts(&dir)[0].1;
    let done = bucket.get(format!("{key}.2")).await.unwrap();
    let done = String::from_utf8_lossy(done.as_deref().unwrap_or_default()).into_owned();
    assert!(done.starts_with("done;"), "{done:?}");
    assert_eq!(consumer_state(&consumer).await, (0, 0, seq));
    assert!(dead_letters(&js).await.is_empty());
}
