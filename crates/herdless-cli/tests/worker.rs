//! `herdless worker` end to end: the real binary, a real `nats-server`
//! (127.0.0.1, a port it picks, a temporary store), real processes and
//! signals. Every task published is counted at the end: acked once after a
//! success, or in the dead-letter stream with its reason.
//!
//! Nothing sleeps to wait: workers run with `--exit-when-idle` and are
//! awaited; an attempt announces itself through a FIFO the test reads.

mod nats_server;
mod worker_support;

use std::time::Duration;

use nats_server::{
    NatsServer, consumer_state, dead_letters, header, publish, raw_publish, task_streams,
};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use worker_support::*;

#[tokio::test]
async fn fails_twice_then_succeeds_acked_once() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    let consumer = task_streams(&js, Duration::from_secs(5)).await;
    let seq = publish(&js, "tasks.scan", "page-1", None).await;
    let dir = tempfile::tempdir().unwrap();
    let script = format!(r#"{LOG_ATTEMPT}; [ "$HERDLESS_ATTEMPT" -ge 3 ]"#);
    let out = run(worker(
        &server,
        &dir,
        &["--exit-when-idle", "--max-attempts", "5"],
        &script,
    ))
    .await;
    let (s, events) = summary(&out);
    let seen = attempts(&dir);
    assert_eq!(seen.iter().map(|a| a.0).collect::<Vec<_>>(), [1, 2, 3]);
    assert!(
        seen.iter().all(|a| a.1 == seen[0].1 && a.2 == "page-1"),
        "{seen:?}"
    );
    assert_eq!(
        (s["acked"].as_u64(), s["retried"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(s["dead_lettered"], 0);
    assert_eq!(s["stopped_by"], "idle");
    assert_eq!(events.iter().filter(|e| *e == "retry_scheduled").count(), 2);
    assert!(events.contains(&"retry_succeeded".to_owned()));
    assert_eq!(consumer_state(&consumer).await, (0, 0, seq));
    assert!(dead_letters(&js).await.is_empty());
}

#[tokio::test]
async fn terminal_statuses_are_dead_lettered_with_the_reason() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    let consumer = task_streams(&js, Duration::from_secs(5)).await;
    publish(&js, "tasks.a", "listed", None).await;
    let last = publish(&js, "tasks.b", "not-found", None).await;
    let dir = tempfile::tempdir().unwrap();
    // Payload "listed": exit 3 (--terminal-on); "not-found": 127 (never retried).
    let script = format!(r#"{LOG_ATTEMPT}; [ "$p" = listed ] && exit 3; exit 127"#);
    let out = run(worker(
        &server,
        &dir,
        &["--exit-when-idle", "--terminal-on", "3"],
        &script,
    ))
    .await;
    let (s, events) = summary(&out);
    assert_eq!(attempts(&dir).len(), 2, "no retry of a terminal status");
    assert_eq!(s["dead_lettered"], 2);
    assert_eq!(s["by_reason"]["terminal"], 2);
    assert_eq!(
        events
            .iter()
            .filter(|e| *e == "retry_abandoned_terminal")
            .count(),
        2
    );
    let dead = dead_letters(&js).await;
    let errors: Vec<&str> = dead.iter().map(|d| header(d, "Herdless-Error")).collect();
    assert_eq!(errors, ["exit status 3", "exit status 127"]);
    for d in &dead {
        assert_eq!(header(d, "Herdless-Reason"), "terminal");
        assert_eq!(header(d, "Herdless-Attempts"), "1");
    }
    assert_eq!(consumer_state(&consumer).await, (0, 0, last));
}

#[tokio::test]
async fn an_exhausted_budget_is_dead_lettered() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    let consumer = task_streams(&js, Duration::from_secs(5)).await;
    let seq = publish(&js, "tasks.scan", "always-busy", None).await;
    let dir = tempfile::tempdir().unwrap();
    let script = format!("{LOG_ATTEMPT}; exit 75");
    let out = run(worker(&server, &dir, &["--exit-when-idle"], &script)).await;
    let (s, events) = summary(&out);
    assert_eq!(
        attempts(&dir).iter().map(|a| a.0).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_eq!(
        (s["retried"].as_u64(), s["dead_lettered"].as_u64()),
        (Some(2), Some(1))
    );
    assert!(events.contains(&"retry_budget_exhausted".to_owned()));
    let dead = dead_letters(&js).await;
    assert_eq!(dead.len(), 1);
    assert_eq!(header(&dead[0], "Herdless-Reason"), "max_attempts");
    assert_eq!(header(&dead[0], "Herdless-Attempts"), "3");
    assert_eq!(header(&dead[0], "Herdless-Error"), "exit status 75");
    assert_eq!(&dead[0].payload[..], b"always-busy");
    assert_eq!(consumer_state(&consumer).await, (0, 0, seq));
}

#[tokio::test]
async fn a_worker_killed_mid_attempt_leaves_the_count_to_the_next() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    // A short ack wait: the dead worker's task comes back quickly.
    let consumer = task_streams(&js, Duration::from_millis(500)).await;
    let seq = publish(&js, "tasks.scan", "page-9", None).await;
    let dir = tempfile::tempdir().unwrap();
    let mut fifo = mkfifo(&dir);
    // Attempt 1 announces its process group and key, then hangs; later
    // attempts log and succeed.
    let script = format!(
        r#"if [ "$HERDLESS_ATTEMPT" = 1 ]; then echo "$$ $HERDLESS_IDEMPOTENCY_KEY" > "$FIFO"; exec sleep 60; fi; {LOG_ATTEMPT}"#
    );
    let mut first: Child = worker(&server, &dir, &[], &script).spawn().unwrap();
    let line = announced(&mut fifo).await;
    let (command, key) = line.split_once(' ').unwrap();
    kill(Pid::from_raw(first.id().unwrap() as i32), Signal::SIGKILL).unwrap();
    first.wait().await.unwrap();
    // The attempt's supervisor ends the command once the worker is gone.
    assert!(
        ends_within(command.parse().unwrap(), Duration::from_secs(5)).await,
        "the dead worker's command still runs"
    );
    let out = run(worker(&server, &dir, &["--exit-when-idle"], &script)).await;
    let (s, _) = summary(&out);
    let seen = attempts(&dir);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0, 2, "the attempt count continues");
    assert_eq!(seen[0].1, key, "and the key stays");
    assert_eq!(s["acked"], 1);
    assert_eq!(consumer_state(&consumer).await, (0, 0, seq));
    assert!(dead_letters(&js).await.is_empty());
}

#[tokio::test]
async fn a_garbled_state_header_is_bounded_by_the_delivery_count() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    let consumer = task_streams(&js, Duration::from_secs(5)).await;
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Herdless-State", "1;a=lots;t=never");
    let seq = publish(&js, "tasks.scan", "forged", Some(headers)).await;
    let dir = tempfile::tempdir().unwrap();
    let script = format!("{LOG_ATTEMPT}; exit 1");
    let out = run(worker(&server, &dir, &["--exit-when-idle"], &script)).await;
    let (s, events) = summary(&out);
    assert_eq!(
        attempts(&dir).iter().map(|a| a.0).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| *e == "retry_state_invalid")
            .count(),
        3
    );
    assert_eq!(s["by_reason"]["max_attempts"], 1);
    let dead = dead_letters(&js).await;
    assert_eq!(header(&dead[0], "Herdless-Attempts"), "3");
    assert!(header(&dead[0], "Herdless-State").starts_with("1;a=3;"));
    assert_eq!(consumer_state(&consumer).await, (0, 0, seq));
}

#[tokio::test]
async fn sigterm_lets_running_attempts_finish_and_a_second_hands_them_back() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    let consumer = task_streams(&js, Duration::from_secs(30)).await;
    let seq = publish(&js, "tasks.scan", "long", None).await;
    let dir = tempfile::tempdir().unwrap();
    let mut fifo = mkfifo(&dir);
    let script = format!(
        r#"if [ "$HERDLESS_ATTEMPT" = 1 ]; then echo "$$" > "$FIFO"; exec sleep 60; fi; {LOG_ATTEMPT}"#
    );
    let mut first = worker(&server, &dir, &[], &script).spawn().unwrap();
    let pid = Pid::from_raw(first.id().unwrap() as i32);
    let attempt_command = announced(&mut fifo).await;
    let mut stderr = BufReader::new(first.stderr.take().unwrap()).lines();
    kill(pid, Signal::SIGTERM).unwrap();
    // The second signal once the first is taken (two at once would be one).
    while let Some(line) = stderr.next_line().await.unwrap() {
        if line.contains("taking no new task") {
            break;
        }
    }
    kill(pid, Signal::SIGTERM).unwrap();
    let out = tokio::time::timeout(Duration::from_secs(30), first.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let (s, _) = summary(&out);
    assert_eq!(s["stopped_by"], "SIGTERM");
    assert_eq!(
        (s["handed_back"].as_u64(), s["acked"].as_u64()),
        (Some(1), Some(0))
    );
    // The abandoned attempt's command is gone.
    assert!(ends_within(attempt_command.parse().unwrap(), Duration::from_secs(5)).await);
    // Handed back at once, not after the 30 s ack wait, and counted.
    let out = run(worker(&server, &dir, &["--exit-when-idle"], &script)).await;
    let (s, _) = summary(&out);
    assert_eq!(s["acked"], 1);
    assert_eq!(attempts(&dir)[0].0, 2);
    assert_eq!(consumer_state(&consumer).await, (0, 0, seq));
}

#[tokio::test]
async fn a_consumer_that_could_drop_tasks_is_refused() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    task_streams(&js, Duration::from_secs(5)).await;
    let dir = tempfile::tempdir().unwrap();
    // No stream stores the dead-letter subject.
    let cmd = worker(
        &server,
        &dir,
        &["--exit-when-idle", "--dead-letter", "nowhere.x"],
        "true",
    );
    let out = run(cmd).await;
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no stream stores the dead-letter subject"),
        "{stderr}"
    );
    // max_deliver below max_attempts.
    js.create_stream(async_nats::jetstream::stream::Config {
        name: "OTHER".into(),
        subjects: vec!["other.>".into()],
        ..Default::default()
    })
    .await
    .unwrap()
    .create_consumer(async_nats::jetstream::consumer::pull::Config {
        durable_name: Some("short".into()),
        ack_policy: async_nats::jetstream::consumer::AckPolicy::Explicit,
        max_deliver: 2,
        ..Default::default()
    })
    .await
    .unwrap();
    let extra = [
        "--exit-when-idle",
        "--stream",
        "OTHER",
        "--consumer",
        "short",
    ];
    let cmd = worker(&server, &dir, &extra, "true");
    let out = run(cmd).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("stops redelivering after 2"));
}

#[tokio::test]
async fn sigint_takes_no_new_task_and_lets_the_running_attempt_finish() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    let consumer = task_streams(&js, Duration::from_secs(30)).await;
    let first = publish(&js, "tasks.scan", "running", None).await;
    let dir = tempfile::tempdir().unwrap();
    let mut fifo = mkfifo(&dir);
    // The attempt announces itself, then works for a second and succeeds.
    let script = format!(r#"{LOG_ATTEMPT}; echo "$$" > "$FIFO"; sleep 1"#);
    let worker = worker(&server, &dir, &[], &script).spawn().unwrap();
    announced(&mut fifo).await;
    // Published while the attempt runs: the stopping worker must not take it.
    let waiting = publish(&js, "tasks.scan", "waiting", None).await;
    kill(Pid::from_raw(worker.id().unwrap() as i32), Signal::SIGINT).unwrap();
    let out = tokio::time::timeout(Duration::from_secs(30), worker.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let (s, _) = summary(&out);
    assert_eq!(s["stopped_by"], "SIGINT");
    assert_eq!(
        (s["deliveries"].as_u64(), s["acked"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(attempts(&dir).len(), 1);
    // The running task was acked; the waiting one is still the broker's.
    assert_eq!(consumer_state(&consumer).await, (1, 0, first));
    assert_eq!(waiting, first + 1);
}

/// The issue's case: one message with header `X-Origin: caf\xe9` before
/// three good tasks, `--concurrency 4`. The poison is dead-lettered
/// `undecodable` with a warning naming its sequence; the three are acked.
#[tokio::test]
async fn an_undecodable_message_is_dead_lettered_and_the_others_acked() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    let consumer = task_streams(&js, Duration::from_secs(1)).await;
    let block = b"NATS/1.0\r\nX-Origin: caf\xe9\r\n\r\n";
    let poison = raw_publish(server.url(), b"tasks.scan", block, b"poison").await;
    let mut last = 0;
    for i in 0..3 {
        last = publish(&js, "tasks.scan", &format!("ok-{i}"), None).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let extra = ["--exit-when-idle", "--concurrency", "4"];
    let started = std::time::Instant::now();
    let out = run(worker(&server, &dir, &extra, LOG_ATTEMPT)).await;
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let (s, _) = summary(&out);
    let mut payloads: Vec<String> = attempts(&dir).into_iter().map(|a| a.2).collect();
    payloads.sort();
    assert_eq!(payloads, ["ok-0", "ok-1", "ok-2"]);
    assert_eq!(
        (s["acked"].as_u64(), s["undecodable"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(s["dead_lettered"], 1);
    assert_eq!(s["by_reason"]["undecodable"], 1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("sequence={poison}")) && stderr.contains("cannot decode"),
        "{stderr}"
    );
    let dead = dead_letters(&js).await;
    assert_eq!(dead.len(), 1);
    assert_eq!(header(&dead[0], "Herdless-Reason"), "undecodable");
    assert_eq!(&dead[0].payload[..], b"poison");
    assert_eq!(consumer_state(&consumer).await, (0, 0, last));
}

/// SIGTERM with the broker gone and no attempt running: the worker exits
/// at once with its summary, not after its pull's expiry.
#[tokio::test]
async fn sigterm_with_the_broker_down_exits_promptly() {
    let mut server = NatsServer::start();
    let js = server.jetstream().await;
    let consumer = task_streams(&js, Duration::from_secs(5)).await;
    let dir = tempfile::tempdir().unwrap();
    let mut child = worker(&server, &dir, &[], "true").spawn().unwrap();
    // Running: its pull request waits at the server.
    tokio::time::timeout(Duration::from_secs(30), async {
        while consumer.clone().info().await.unwrap().num_waiting == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the worker never pulled");
    server.stop();
    let started = std::time::Instant::now();
    kill(Pid::from_raw(child.id().unwrap() as i32), Signal::SIGTERM).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("the worker did not exit")
        .unwrap();
    let took = started.elapsed();
    let mut stdout = String::new();
    use tokio::io::AsyncReadExt;
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert!(took < Duration::from_millis(500), "exit took {took:?}");
    let last: Value = serde_json::from_str(stdout.lines().last().expect("a summary")).unwrap();
    assert_eq!(last["stopped_by"], "SIGTERM");
    assert_eq!(last["deliveries"], 0);
}

/// `--task-id` does not apply to a worker, and names JetStream would refuse
/// are refused up front: exit 2 at once, the flag named.
#[tokio::test]
async fn a_task_id_and_bad_names_are_usage_errors() {
    let long = "S".repeat(10_000);
    for (args, flag) in [
        (vec!["--task-id", "t-1"], "--task-id"),
        (vec!["--stream", long.as_str()], "--stream"),
        (vec!["--stream", "a.b"], "--stream"),
        (vec!["--consumer", "x y"], "--consumer"),
        (vec!["--dead-letter", "dead.>"], "--dead-letter"),
    ] {
        let mut cmd = Command::new(BIN);
        cmd.env_remove("HERDLESS_TASK_ID")
            .args(["worker", "--nats", "nats://127.0.0.1:1"]);
        for (name, default) in [("--stream", "TASKS"), ("--consumer", "w")] {
            if !args.contains(&name) {
                cmd.args([name, default]);
            }
        }
        let started = std::time::Instant::now();
        let out = cmd.args(&args).args(["--", "true"]).output().await.unwrap();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
    }
}
