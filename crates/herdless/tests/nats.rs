//! The JetStream worker over a real `nats-server` (127.0.0.1, a port it
//! picks, a temporary store): every task ends acked once after a success or
//! in the dead-letter stream with its reason, counted.

#[path = "support/nats_server.rs"]
mod nats_server;
#[path = "support/nats_worker.rs"]
mod nats_worker;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use herdless::Classification;
use herdless::adapters::nats::{Task, Worker};
use nats_server::{
    NatsServer, consumer_state, dead_letters, header, publish, raw_publish, task_streams,
};
use nats_worker::*;

#[tokio::test]
async fn fails_twice_then_succeeds_acked_once_after_the_engines_delays() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    let consumer = task_streams(&js, Duration::from_secs(5)).await;
    let seq = publish(&js, "tasks.scan", "page-1", None).await;
    let (summary, seen, sleeps, _) = run_worker(&server, worker(5), |_, attempt| {
        (attempt < 3).then_some(Fault::Busy)
    })
    .await;
    assert_eq!(
        seen.iter().map(|s| s.attempt).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert!(
        seen.iter().all(|s| s.key == seen[0].key),
        "one key for the task"
    );
    assert_eq!(
        (summary.acked, summary.retried, summary.dead_lettered),
        (1, 2, 0)
    );
    assert_eq!(summary.deliveries, 3);
    assert_eq!(sleeps.len(), 2);
    for (k, sleep) in sleeps.iter().enumerate() {
        let gap = seen[k + 1].started - seen[k].ended;
        assert!(
            gap >= *sleep,
            "redelivery {k} after {gap:?}, before the engine's {sleep:?}"
        );
    }
    // Acked: nothing pending, nothing awaiting an ack, the floor past the task.
    assert_eq!(consumer_state(&consumer).await, (0, 0, seq));
    assert!(dead_letters(&js).await.is_empty());
}

#[tokio::test]
async fn a_terminal_error_is_dead_lettered_with_its_reason() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    let consumer = task_streams(&js, Duration::from_secs(5)).await;
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Trace-Id", "t-77");
    let seq = publish(&js, "tasks.scan", "page-2", Some(headers)).await;
    let (summary, seen, _, _) = run_worker(&server, worker(5), |_, _| Some(Fault::Refused)).await;
    assert_eq!(seen.len(), 1, "a terminal error is not retried");
    assert_eq!((summary.acked, summary.dead_lettered), (0, 1));
    assert_eq!(summary.by_reason.get("terminal"), Some(&1));
    let dead = dead_letters(&js).await;
    assert_eq!(dead.len(), 1);
    let d = &dead[0];
    assert_eq!(&d.payload[..], b"page-2");
    assert_eq!(d.subject.as_str(), "dead.tasks");
    assert_eq!(header(d, "Herdless-Reason"), "terminal");
    assert_eq!(header(d, "Herdless-Attempts"), "1");
    assert_eq!(header(d, "Herdless-Error"), "request refused");
    assert_eq!(header(d, "Herdless-Subject"), "tasks.scan");
    assert_eq!(header(d, "Herdless-Sequence"), seq.to_string());
    assert_eq!(
        header(d, "Trace-Id"),
        "t-77",
        "the task's own headers travel"
    );
    assert!(header(d, "Herdless-State").contains(&format!("k={}", seen[0].key)));
    assert_eq!(consumer_state(&consumer).await, (0, 0, seq));
}

#[tokio::test]
async fn an_exhausted_budget_is_dead_lettered_after_max_attempts() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    let consumer = task_streams(&js, Duration::from_secs(5)).await;
    let seq = publish(&js, "tasks.scan", "page-3", None).await;
    let (summary, seen, _, _) = run_worker(&server, worker(3), |_, _| Some(Fault::Busy)).await;
    assert_eq!(
        seen.iter().map(|s| s.attempt).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_eq!((summary.retried, summary.dead_lettered), (2, 1));
    let dead = dead_letters(&js).await;
    assert_eq!(dead.len(), 1);
    assert_eq!(header(&dead[0], "Herdless-Reason"), "max_attempts");
    assert_eq!(header(&dead[0], "Herdless-Attempts"), "3");
    assert_eq!(header(&dead[0], "Herdless-Error"), "device busy");
    assert_eq!(consumer_state(&consumer).await, (0, 0, seq));
}

#[tokio::test]
async fn a_garbled_state_header_is_bounded_by_the_delivery_count() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    task_streams(&js, Duration::from_secs(5)).await;
    for (i, state) in [
        "1;a=banana",
        "\u{7f}\u{0}",
        "9;a=0",
        "1;a=0;t=99999999999999",
    ]
    .into_iter()
    .enumerate()
    {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Herdless-State", state);
        publish(&js, "tasks.scan", &format!("forged-{i}"), Some(headers)).await;
    }
    let (summary, seen, _, events) = run_worker(&server, worker(3), |_, _| Some(Fault::Busy)).await;
    // The three refused headers warn on each of their deliveries; the valid
    // (forged) one does not.
    let warnings = events
        .iter()
        .filter(|n| *n == "retry_state_invalid")
        .count();
    assert_eq!(warnings, 3 * 3);
    for i in 0..4 {
        let attempts: Vec<u32> = seen
            .iter()
            .filter(|s| s.payload == format!("forged-{i}"))
            .map(|s| s.attempt)
            .collect();
        assert_eq!(attempts, [1, 2, 3], "task forged-{i}");
    }
    assert_eq!(summary.dead_lettered, 4);
    assert!(
        dead_letters(&js)
            .await
            .iter()
            .all(|d| header(d, "Herdless-Attempts") == "3")
    );
}

/// A long attempt is kept alive by in-progress acks: the broker does not
/// hand it to another worker under it.
#[tokio::test]
async fn a_long_attempt_is_not_redelivered_under_it() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    let consumer = task_streams(&js, Duration::from_millis(300)).await;
    let seq = publish(&js, "tasks.scan", "slow", None).await;
    // Two slots: a redelivery under the attempt would be taken by the second.
    let w = worker(3).concurrency(2).unwrap().exit_when_idle(true);
    let deliveries = Arc::new(Mutex::new(0));
    let op = |_task: Task| {
        let deliveries = Arc::clone(&deliveries);
        async move {
            *deliveries.lock().unwrap() += 1;
            // The work itself: four ack waits long.
            tokio::time::sleep(Duration::from_millis(1200)).await;
            Ok::<(), Fault>(())
        }
    };
    let summary = w
        .run(
            &js,
            &consumer,
            op,
            std::future::pending::<()>(),
            std::future::pending::<()>(),
        )
        .await
        .unwrap();
    assert_eq!(*deliveries.lock().unwrap(), 1);
    assert_eq!((summary.deliveries, summary.acked), (1, 1));
    assert_eq!(consumer_state(&consumer).await, (0, 0, seq));
}

/// Two workers, forty tasks of every kind: each ends acked or dead-lettered,
/// none twice, none lost.
#[tokio::test]
async fn nothing_is_lost_across_two_workers() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    let consumer = task_streams(&js, Duration::from_secs(5)).await;
    for i in 0..40 {
        publish(&js, "tasks.mixed", &i.to_string(), None).await;
    }
    // n % 4: 0 succeeds, 1 fails once, 2 is refused, 3 never succeeds.
    let fail = |payload: &str, attempt: u32| match payload.parse::<u32>().unwrap() % 4 {
        0 => None,
        1 => (attempt == 1).then_some(Fault::Busy),
        2 => Some(Fault::Refused),
        _ => Some(Fault::Busy),
    };
    let w = || worker(3).concurrency(4).unwrap();
    let ((a, seen_a, _, _), (b, seen_b, _, _)) = tokio::join!(
        run_worker(&server, w(), fail),
        run_worker(&server, w(), fail)
    );
    let acked = a.acked + b.acked;
    let dead = a.dead_lettered + b.dead_lettered;
    assert_eq!((acked, dead), (20, 20));
    let letters = dead_letters(&js).await;
    assert_eq!(letters.len(), 20);
    let mut payloads: Vec<u32> = letters
        .iter()
        .map(|d| std::str::from_utf8(&d.payload).unwrap().parse().unwrap())
        .collect();
    payloads.sort_unstable();
    assert_eq!(payloads, (0..40).filter(|n| n % 4 >= 2).collect::<Vec<_>>());
    let successes: Vec<&Seen> = seen_a
        .iter()
        .chain(&seen_b)
        .filter(|s| fail(&s.payload, s.attempt).is_none())
        .collect();
    assert_eq!(successes.len(), 20, "each good task succeeded once");
    assert_eq!(
        consumer_state(&consumer).await.0 + consumer_state(&consumer).await.1 as u64,
        0
    );
}

/// The poison message: a header value with byte 0xE9. The client
/// cannot decode it and drops its connection at each delivery; the worker
/// sweeps it out, dead-lettered `undecodable`, and the three good tasks
/// published after it are acked, within a bound.
#[tokio::test]
async fn an_undecodable_message_is_dead_lettered_and_the_others_flow() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    // A short ack wait: the good tasks lost with the dropped connection come
    // back quickly.
    let consumer = task_streams(&js, Duration::from_secs(1)).await;
    let block = b"NATS/1.0\r\nX-Origin: caf\xe9\r\n\r\n";
    let poison = raw_publish(server.url(), b"tasks.scan", block, b"poison payload").await;
    let mut last = 0;
    for i in 0..3 {
        last = publish(&js, "tasks.scan", &format!("good-{i}"), None).await;
    }
    let started = Instant::now();
    let (summary, seen, _, _) = tokio::time::timeout(
        Duration::from_secs(30),
        run_worker(&server, worker(3).concurrency(4).unwrap(), |_, _| None),
    )
    .await
    .expect("the worker stalled");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let mut good: Vec<&str> = seen.iter().map(|s| s.payload.as_str()).collect();
    good.sort_unstable();
    assert_eq!(good, ["good-0", "good-1", "good-2"], "each acked once");
    assert_eq!((summary.acked, summary.undecodable), (3, 1));
    assert_eq!(summary.dead_lettered, 1);
    assert_eq!(summary.by_reason.get("undecodable"), Some(&1));
    assert_eq!(
        summary.deliveries + summary.undecodable,
        summary.acked + summary.retried + summary.dead_lettered + summary.unsettled
    );
    let dead = dead_letters(&js).await;
    assert_eq!(dead.len(), 1);
    let d = &dead[0];
    assert_eq!(&d.payload[..], b"poison payload");
    assert_eq!(header(d, "Herdless-Reason"), "undecodable");
    assert_eq!(header(d, "Herdless-Undecodable"), "header_not_utf8");
    assert_eq!(header(d, "Herdless-Sequence"), poison.to_string());
    assert_eq!(header(d, "Herdless-Subject"), "tasks.scan");
    use base64::Engine as _;
    let original = base64::engine::general_purpose::STANDARD
        .decode(header(d, "Herdless-Headers-Base64"))
        .unwrap();
    assert_eq!(
        &original[..],
        &block[..],
        "the original header block, byte for byte"
    );
    assert_eq!(consumer_state(&consumer).await, (0, 0, last));
}

/// The key of (stream `TASKS`, sequence 1) on two servers, and on one
/// server after the stream is deleted and created again: all different.
#[tokio::test]
async fn keys_differ_across_servers_and_recreated_streams() {
    let (a, b) = (NatsServer::start(), NatsServer::start());
    let mut keys = Vec::new();
    for server in [&a, &b] {
        let js = server.jetstream().await;
        task_streams(&js, Duration::from_secs(5)).await;
        assert_eq!(publish(&js, "tasks.scan", "one", None).await, 1);
        let (_, seen, _, _) = run_worker(server, worker(3), |_, _| None).await;
        keys.push(seen[0].key.clone());
    }
    let js = a.jetstream().await;
    js.delete_stream("TASKS").await.unwrap();
    js.delete_stream("DEAD").await.unwrap();
    task_streams(&js, Duration::from_secs(5)).await;
    assert_eq!(publish(&js, "tasks.scan", "one", None).await, 1);
    // Fails once: the redelivery keeps the key.
    let (_, seen, _, _) = run_worker(&a, worker(3), |_, attempt| {
        (attempt == 1).then_some(Fault::Busy)
    })
    .await;
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].key, seen[1].key, "a redelivery keeps its key");
    keys.push(seen[0].key.clone());
    assert_ne!(keys[0], keys[1], "two servers");
    assert_ne!(keys[0], keys[2], "a recreated stream");
    assert_ne!(keys[1], keys[2]);
}

/// A task whose payload fills the server's `max_payload` fails terminally:
/// its dead letter (more headers) would not fit, so it is stored cut to the
/// limit and says so, and the task ends, once.
#[tokio::test]
async fn a_dead_letter_over_max_payload_is_stored_truncated() {
    const MAX: usize = 8192;
    let server = NatsServer::start_with(&["max_payload: 8192"]);
    let js = server.jetstream().await;
    assert_eq!(js.client().server_info().max_payload, MAX);
    let consumer = task_streams(&js, Duration::from_secs(1)).await;
    let payload = "p".repeat(MAX - 64);
    let seq = publish(&js, "tasks.big", &payload, None).await;
    let (summary, seen, _, _) = tokio::time::timeout(
        Duration::from_secs(30),
        run_worker(&server, worker(3), |_, _| Some(Fault::Refused)),
    )
    .await
    .expect("the terminal task ran again and again");
    assert_eq!(seen.len(), 1, "a terminal task runs once");
    assert_eq!((summary.dead_lettered, summary.unsettled), (1, 0));
    let dead = dead_letters(&js).await;
    assert_eq!(dead.len(), 1);
    let d = &dead[0];
    assert_eq!(header(d, "Herdless-Truncated"), payload.len().to_string());
    assert_eq!(header(d, "Herdless-Reason"), "terminal");
    assert!(d.payload.len() < payload.len() && d.payload.iter().all(|&b| b == b'p'));
    assert_eq!(consumer_state(&consumer).await, (0, 0, seq));
}

/// A subject that is not UTF-8 makes the client's connection task panic
/// (async-nats unwraps it): the client is gone. The worker ends with an
/// error naming that, at once, instead of pulling for ever.
#[tokio::test]
async fn a_subject_that_is_not_utf8_ends_the_run_with_an_error() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    task_streams(&js, Duration::from_secs(5)).await;
    raw_publish(server.url(), b"tasks.caf\xe9", b"NATS/1.0\r\n\r\n", b"p").await;
    let client = async_nats::connect(server.url()).await.unwrap();
    let js = async_nats::jetstream::new(client);
    let consumer = js
        .get_stream("TASKS")
        .await
        .unwrap()
        .get_consumer::<async_nats::jetstream::consumer::pull::Config>("workers")
        .await
        .unwrap();
    let w = worker(3).exit_when_idle(true);
    let run = w.run(
        &js,
        &consumer,
        |_task: Task| async { Ok::<(), Fault>(()) },
        std::future::pending::<()>(),
        std::future::pending::<()>(),
    );
    let ended = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("the worker kept pulling on a dead client");
    let e = ended.expect_err("the client is gone");
    assert!(e.to_string().contains("the NATS client has stopped"), "{e}");
}

/// Without a dead-letter subject an undecodable message takes the path of
/// every give-up: terminated (`+TERM`), counted, and the others flow.
#[tokio::test]
async fn without_a_dead_letter_subject_an_undecodable_message_is_terminated() {
    let server = NatsServer::start();
    let js = server.jetstream().await;
    let consumer = task_streams(&js, Duration::from_secs(1)).await;
    raw_publish(
        server.url(),
        b"tasks.scan",
        b"NATS/1.0\r\nno colon\r\n\r\n",
        b"x",
    )
    .await;
    let last = publish(&js, "tasks.scan", "good", None).await;
    let plain = Worker::new(policy(3), classify as fn(&Fault) -> Classification)
        .concurrency(2)
        .unwrap();
    let (summary, seen, _, _) = tokio::time::timeout(
        Duration::from_secs(30),
        run_worker(&server, plain, |_, _| None),
    )
    .await
    .expect("the worker stalled");
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (summary.acked, summary.undecodable, summary.dead_lettered),
        (1, 1, 1)
    );
    assert_eq!(summary.by_reason.get("undecodable"), Some(&1));
    assert!(dead_letters(&js).await.is_empty());
    assert_eq!(consumer_state(&consumer).await, (0, 0, last));
}
