//! `herdless worker` keeps "completed once" when the worker itself dies or
//! freezes: each attempt's supervisor (`herdless fence`) ends the command
//! when the worker's pipe closes (`kill -9`) or its extensions stop coming
//! (`SIGSTOP` past the lease), before another worker can take the task's
//! claim over. Real binary, real `nats-server` on 127.0.0.1 (a port it
//! picks), real signals; every process ended by its id.

mod nats_server;
mod worker_support;

use std::time::Duration;

use nats_server::{NatsServer, consumer_state, dead_letters, publish, task_streams};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::process::Child;
use worker_support::*;

/// SIGTERM, then the worker's output (its summary), awaited.
async fn stop(child: Child) -> std::process::Output {
    kill(Pid::from_raw(child.id().unwrap() as i32), Signal::SIGTERM).unwrap();
    tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the worker ends after SIGTERM")
        .unwrap()
}

/// Each line of `$DIR/markers`.
fn markers(dir: &tempfile::TempDir) -> Vec<String> {
    std::fs::read_to_string(dir.path().join("markers"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Attempt 1 announces its pid and runs for 10 s (longer than the 3 s
/// lease and the takeover after it); later attempts announce themselves
/// and end at once. Each writes "started PID" and, at its end, "finished
/// PID" to `markers`, and logs its key as `LOG_ATTEMPT`.
const MARKED: &str = r#"echo "started $$" >> markers; echo "$HERDLESS_ATTEMPT $$" > "$FIFO"; if [ "$HERDLESS_ATTEMPT" = 1 ]; then sleep 10; fi; echo "finished $$" >> markers"#;

#[tokio::test]
async fn a_worker_frozen_past_its_lease_has_its_command_killed_before_the_takeover() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    let consumer = task_streams(&js, Duration::from_secs(3)).await;
    let seq = publish(&js, "tasks.scan", "page-1", None).await;
    let dir = tempfile::tempdir().unwrap();
    let mut fifo = mkfifo(&dir);
    let script = format!("{MARKED}; {LOG_ATTEMPT}");
    let frozen = worker(&server, &dir, &[], &script).spawn().unwrap();
    let frozen_pid = Pid::from_raw(frozen.id().unwrap() as i32);
    let first = announced(&mut fifo).await;
    let (attempt, command) = first.split_once(' ').unwrap();
    assert_eq!(attempt, "1");
    let command: i32 = command.parse().unwrap();
    kill(frozen_pid, Signal::SIGSTOP).unwrap();
    // The second worker gets the task once the ack wait passes, and takes
    // its claim over a lease and a margin later.
    let other = worker(&server, &dir, &[], &script).spawn().unwrap();
    let second = announced(&mut fifo).await;
    assert!(second.starts_with("2 "), "{second}");
    assert!(
        ended(command),
        "the frozen worker's command still runs beside the takeover"
    );
    kill(frozen_pid, Signal::SIGCONT).unwrap();
    // The takeover's attempt ends at once; its worker settles it on SIGTERM.
    let taken_over = second.split_once(' ').unwrap().1.to_owned();
    assert!(ends_within(taken_over.parse().unwrap(), Duration::from_secs(10)).await);
    let (s_other, _) = summary(&stop(other).await);
    let (s_frozen, _) = summary(&stop(frozen).await);
    assert_eq!(s_other["acked"], 1);
    assert_eq!(s_frozen["acked"], 0);
    assert_eq!(s_frozen["lease_lost"], 1, "{s_frozen}");
    let finished: Vec<_> = markers(&dir)
        .into_iter()
        .filter(|m| m.starts_with("finished"))
        .collect();
    assert_eq!(finished, [format!("finished {taken_over}")]);
    let seen = attempts(&dir);
    assert_eq!(seen.len(), 1, "the key is recorded once: {seen:?}");
    assert_eq!(consumer_state(&consumer).await, (0, 0, seq));
    assert!(dead_letters(&js).await.is_empty());
}

#[tokio::test]
async fn a_timeout_still_ends_the_command_with_sigterm_first_under_its_supervisor() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    let consumer = task_streams(&js, Duration::from_secs(5)).await;
    let seq = publish(&js, "tasks.scan", "page-1", None).await;
    let dir = tempfile::tempdir().unwrap();
    // Attempt 1 outlives its timeout and says when SIGTERM reaches it;
    // attempt 2 succeeds.
    let script = format!(
        r#"if [ "$HERDLESS_ATTEMPT" = 1 ]; then trap 'echo term >> markers; kill $!; exit 7' TERM; sleep 30 & wait; fi; {LOG_ATTEMPT}"#
    );
    let out = run(worker(
        &server,
        &dir,
        &[
            "--exit-when-idle",
            "--timeout",
            "500ms",
            "--kill-after",
            "20s",
        ],
        &script,
    ))
    .await;
    let (s, events) = summary(&out);
    assert_eq!(markers(&dir), ["term"], "SIGTERM reached the command");
    assert_eq!(
        (s["retried"].as_u64(), s["acked"].as_u64()),
        (Some(1), Some(1))
    );
    assert!(events.contains(&"retry_scheduled".to_owned()));
    assert_eq!(attempts(&dir).len(), 1);
    assert_eq!(consumer_state(&consumer).await, (0, 0, seq));
}

#[tokio::test]
async fn a_killed_workers_command_ends_without_a_completion_record_too() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    let consumer = task_streams(&js, Duration::from_millis(500)).await;
    let seq = publish(&js, "tasks.scan", "page-1", None).await;
    let dir = tempfile::tempdir().unwrap();
    let mut fifo = mkfifo(&dir);
    let script = format!("{MARKED}; {LOG_ATTEMPT}");
    let flags = ["--no-completion-record"];
    let mut first = worker(&server, &dir, &flags, &script).spawn().unwrap();
    let line = announced(&mut fifo).await;
    let command: i32 = line.split_once(' ').unwrap().1.parse().unwrap();
    kill(Pid::from_raw(first.id().unwrap() as i32), Signal::SIGKILL).unwrap();
    first.wait().await.unwrap();
    assert!(
        ends_within(command, Duration::from_secs(5)).await,
        "the dead worker's command still runs"
    );
    let next = [flags[0], "--exit-when-idle"];
    let (s, _) = summary(&run(worker(&server, &dir, &next, &script)).await);
    assert_eq!(s["acked"], 1);
    assert_eq!(attempts(&dir).len(), 1, "the key is recorded once");
    let finished = markers(&dir)
        .iter()
        .filter(|m| m.starts_with("finished"))
        .count();
    assert_eq!(finished, 1);
    assert_eq!(consumer_state(&consumer).await, (0, 0, seq));
}
