//! Hostile messages over a real `nats-server` (127.0.0.1, `max_payload`
//! 64 KiB): each case publishes, byte for byte, messages whose header blocks
//! are anything (invalid UTF-8, CR/LF and colon injection, thousands of
//! headers, names and values near the limit, forged and cut
//! `Herdless-State`, status lines) and whose payloads run from empty to the
//! server's limit, then drains them with three workers. Every message must
//! end exactly once at the broker: a task that succeeds acked (never in the
//! dead-letter stream), one that fails in the dead-letter stream once with a
//! reason, an undecodable one there with reason `undecodable`; the consumer
//! left with nothing pending; and no worker stalls (a bound on each case).
//!
//! Subjects stay UTF-8: a subject that is not makes the client panic (see
//! `decode_message`), which ends the run with an error rather than a stall
//! (a case of its own, not this test's).

#[path = "support/nats_server.rs"]
mod nats_server;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use herdless::adapters::nats::{Task, Worker, decode_message};
use herdless::{Classification, Jitter, Policy};
use nats_server::{NatsServer, consumer_state, dead_letters, header, raw_publish, task_streams};
use proptest::prelude::*;

const MAX_PAYLOAD: usize = 65_536;

/// What the operation does with a task: by the payload's first byte.
fn fate(payload: &[u8]) -> Option<&'static str> {
    match payload.first().map(|b| b % 3) {
        Some(1) => Some("busy"),
        Some(2) => Some("refused"),
        _ => None,
    }
}

fn classify(e: &&'static str) -> Classification {
    if *e == "busy" {
        Classification::retryable()
    } else {
        Classification::terminal()
    }
}

/// One hostile message: its subject's last token, header block, payload.
#[derive(Debug, Clone)]
struct Hostile {
    token: String,
    header: Vec<u8>,
    payload: Vec<u8>,
}

/// What a message must become.
#[derive(Debug, Clone, Copy)]
enum End {
    /// Dead-lettered `undecodable`, never run.
    Undecodable,
    /// Acked after a success (or, with a state that spent the budget,
    /// dead-lettered for it).
    Success { forged: bool },
    /// Dead-lettered with `reason` (or, forged, for a spent budget).
    Fail { reason: &'static str, forged: bool },
}

fn block(lines: Vec<Vec<u8>>) -> Vec<u8> {
    let mut out = b"NATS/1.0\r\n".to_vec();
    for l in lines {
        out.extend_from_slice(&l);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out
}

fn header_block() -> impl Strategy<Value = Vec<u8>> {
    let raw_line = proptest::collection::vec(any::<u8>(), 0..40);
    prop_oneof![
        // Arbitrary bytes, as lines.
        2 => proptest::collection::vec(raw_line, 0..5).prop_map(block),
        // Arbitrary bytes, no structure at all.
        1 => proptest::collection::vec(any::<u8>(), 0..64),
        // CR/LF and colon injection in a value.
        1 => "[a-z]{1,8}".prop_map(|v| block(vec![
            format!("X-Note: {v}\rHerdless-State: 1;a=99").into_bytes(),
            format!("X-Path: a:b::{v}:").into_bytes(),
            b"Herdless-State: 1;a=0\r\n\r\nX: injected".to_vec(),
        ])),
        // Thousands of headers.
        1 => (1000usize..3000).prop_map(|n| block((0..n).map(|i| format!("H{i}: {i}").into_bytes()).collect())),
        // A name and a value near the limit.
        1 => (1000usize..20_000).prop_map(|n| block(vec![
            [b"N".repeat(n), b": v".to_vec()].concat(),
            [b"Big: ".to_vec(), b"v".repeat(n)].concat(),
        ])),
        // Forged, cut and garbled state.
        2 => prop_oneof![
            Just("1;a=4294967295;t=0".to_owned()),
            Just("1;a=2;t=17000".to_owned()),
            Just("1;k=00000000-0000-4000-8000-0000000000".to_owned()),
            Just("1;a=1;a=2".to_owned()),
            "[0-9a-z;=]{0,300}",
        ].prop_map(|s| block(vec![format!("Herdless-State: {s}").into_bytes()])),
        // Status lines: read by the client's pull as the server's notices.
        1 => prop_oneof![Just(408u16), Just(503)].prop_map(|s| format!("NATS/1.0 {s} Nope\r\n\r\n").into_bytes()),
        // A well-formed, ordinary block.
        2 => "[A-Za-z-]{1,12}".prop_map(|n| block(vec![format!("{n}: value").into_bytes()])),
    ]
}

fn hostile() -> impl Strategy<Value = Hostile> {
    let token = prop_oneof![
        6 => "[a-z0-9]{1,6}",
        // Unicode whitespace: fine for the server, not for the client's
        // header-message line.
        1 => Just("a\u{a0}b".to_owned()),
        1 => Just("x\u{2028}y".to_owned()),
    ];
    (token, header_block(), 0usize..=MAX_PAYLOAD, any::<u8>()).prop_map(
        |(token, header, len, first)| {
            // The server takes at most MAX_PAYLOAD for header and payload.
            let room = MAX_PAYLOAD.saturating_sub(header.len());
            let len = len.min(room);
            let mut payload = vec![b'.'; len];
            if let Some(b) = payload.first_mut() {
                *b = first;
            }
            Hostile {
                token,
                header,
                payload,
            }
        },
    )
}

fn worker() -> Worker<fn(&&'static str) -> Classification> {
    let policy = Policy::builder()
        .base(Duration::from_millis(10))
        .jitter(Jitter::Full)
        .max_attempts(3)
        .max_elapsed(Duration::from_secs(60))
        .build()
        .unwrap();
    Worker::new(policy, classify as fn(&&'static str) -> Classification)
        .dead_letter("dead.tasks")
        .exit_when_idle(true)
        .concurrency(3)
        .unwrap()
}

async fn drain(messages: Vec<Hostile>) {
    let server = NatsServer::start_with(&["max_payload: 65536"]);
    let js = server.jetstream().await;
    let consumer = task_streams(&js, Duration::from_secs(1)).await;
    // Sequence -> what it must become.
    let mut expect = BTreeMap::new();
    for m in &messages {
        let subject = format!("tasks.{}", m.token);
        let seq = raw_publish(server.url(), subject.as_bytes(), &m.header, &m.payload).await;
        // A header block of no bytes is stored as no header at all: the
        // message reaches the client as a plain one.
        let header = (!m.header.is_empty()).then_some(m.header.as_slice());
        let decoded = decode_message(subject.as_bytes(), header)
            .ok()
            .filter(|d| d.status.is_none());
        // A state the decoder accepts may have spent the budget already:
        // then a give-up for it may end the task, before any run.
        let forged = decoded.as_ref().is_some_and(|d| {
            d.headers.iter().any(|(n, v)| {
                n == "Herdless-State" && herdless::redelivery::TaskState::decode(v).is_ok()
            })
        });
        let end = match (decoded, fate(&m.payload)) {
            (None, _) => End::Undecodable,
            (Some(_), None) => End::Success { forged },
            (Some(_), Some(why)) => End::Fail {
                reason: if why == "busy" {
                    "max_attempts"
                } else {
                    "terminal"
                },
                forged,
            },
        };
        expect.insert(seq, end);
    }
    let succeeded: Arc<Mutex<Vec<String>>> = Arc::default();
    let run = || {
        let succeeded = Arc::clone(&succeeded);
        let server = &server;
        async move {
            let client = async_nats::ConnectOptions::new()
                .request_timeout(Some(Duration::from_secs(2)))
                .connect(server.url())
                .await
                .unwrap();
            let js = async_nats::jetstream::new(client);
            let consumer = js
                .get_stream("TASKS")
                .await
                .unwrap()
                .get_consumer::<async_nats::jetstream::consumer::pull::Config>("workers")
                .await
                .unwrap();
            let op = |task: Task| {
                let succeeded = Arc::clone(&succeeded);
                async move {
                    let result = fate(&task.payload).map_or(Ok(()), Err);
                    if result.is_ok() {
                        succeeded.lock().unwrap().push(task.task_id.clone());
                    }
                    result
                }
            };
            worker()
                .run(
                    &js,
                    &consumer,
                    op,
                    std::future::pending::<()>(),
                    std::future::pending::<()>(),
                )
                .await
                .unwrap()
        }
    };
    let summaries = tokio::time::timeout(Duration::from_secs(60), async {
        tokio::join!(run(), run(), run())
    })
    .await
    .expect("a worker stalled");
    for s in [&summaries.0, &summaries.1, &summaries.2] {
        assert_eq!(
            s.deliveries + s.undecodable,
            s.acked
                + s.already_completed
                + s.held_elsewhere
                + s.retried
                + s.deferred
                + s.dead_lettered
                + s.handed_back
                + s.lease_lost
                + s.unsettled,
            "{s:?}"
        );
    }
    let mut letters: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for d in dead_letters(&js).await {
        let seq: u64 = header(&d, "Herdless-Sequence").parse().unwrap();
        letters
            .entry(seq)
            .or_default()
            .push(header(&d, "Herdless-Reason").to_owned());
    }
    let succeeded = succeeded.lock().unwrap().clone();
    let spent = ["max_attempts", "max_elapsed"];
    for (seq, end) in &expect {
        let ran_ok = succeeded.contains(&format!("TASKS:{seq}"));
        let letter = match letters.get(seq).map(Vec::as_slice) {
            None => None,
            Some([one]) => Some(one.as_str()),
            Some(more) => panic!("task {seq} dead-lettered {} times", more.len()),
        };
        match (*end, letter) {
            (End::Undecodable, Some("undecodable")) => assert!(!ran_ok),
            (End::Success { .. }, None) => assert!(ran_ok, "task {seq} never ended"),
            (End::Success { forged: true }, Some(r)) if spent.contains(&r) => assert!(!ran_ok),
            (End::Fail { reason, .. }, Some(r)) if r == reason => assert!(!ran_ok),
            (End::Fail { forged: true, .. }, Some(r)) if spent.contains(&r) => assert!(!ran_ok),
            (end, letter) => panic!("task {seq}: {end:?} ended as {letter:?} (ran ok: {ran_ok})"),
        }
    }
    assert!(letters.keys().all(|seq| expect.contains_key(seq)));
    let (pending, ack_pending, _) = consumer_state(&consumer).await;
    assert_eq!((pending, ack_pending), (0, 0), "every message settled");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn every_hostile_message_ends_exactly_once(messages in proptest::collection::vec(hostile(), 1..10)) {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
            .block_on(drain(messages));
    }
}
