//! A real `nats-server` for the broker tests: 127.0.0.1, a port the server
//! picks itself (`-p -1`, read back from its log), JetStream on, a temporary
//! store. One place for the library's broker tests; the CLI's tests keep a
//! copy (`crates/herdless-cli/tests/nats_server/mod.rs`, checked identical by
//! `.ci/run`) so that each package's tests compile on their own. A machine without `nats-server` fails the tests
//! with a message saying how to install it; `.ci/run` installs it.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};

/// A running server; killed when dropped.
pub(crate) struct NatsServer {
    child: Child,
    url: String,
    store: tempfile::TempDir,
}

impl NatsServer {
    /// Starts a server and waits (reading its log, no polling) until it
    /// accepts clients.
    pub(crate) fn start() -> NatsServer {
        NatsServer::start_with(&[])
    }

    /// Starts a server with a configuration file holding `config` lines
    /// (`max_payload: 4096`, …).
    pub(crate) fn start_with(config: &[&str]) -> NatsServer {
        let store = tempfile::tempdir().expect("a temporary JetStream store");
        let conf = store.path().join("server.conf");
        std::fs::write(&conf, config.join("\n")).expect("the server's configuration");
        let (child, url) = spawn(store.path(), "-1");
        NatsServer { child, url, store }
    }

    /// Starts the server again after [`stop`](Self::stop), on the same port
    /// with the same configuration and store, and waits until it accepts
    /// clients.
    pub(crate) fn restart(&mut self) {
        self.stop();
        let port = self.url.rsplit(':').next().expect("a port").to_owned();
        let (child, url) = spawn(self.store.path(), &port);
        assert_eq!(url, self.url, "the same address");
        self.child = child;
    }

    /// Ends the server now (SIGKILL to its pid) and reaps it.
    pub(crate) fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// `nats://127.0.0.1:PORT`.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// A JetStream context on a new connection.
    pub(crate) async fn jetstream(&self) -> jetstream::Context {
        let client = async_nats::connect(&self.url)
            .await
            .expect("connect to nats-server");
        jetstream::new(client)
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `nats-server` on 127.0.0.1:`port` (`-1`: one it picks) with the
/// configuration and store under `dir`; returns it and its URL once it
/// accepts clients (read from its log, no polling).
fn spawn(dir: &std::path::Path, port: &str) -> (Child, String) {
    let mut child = Command::new("nats-server")
        .arg("-c")
        .arg(dir.join("server.conf"))
        .args(["-a", "127.0.0.1", "-p", port, "-js", "-sd"])
        .arg(dir.join("js"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start nats-server ({e}): the broker tests need it on PATH \
                 (Debian: apt-get install -y nats-server; .ci/run installs it)"
            )
        });
    let mut lines = BufReader::new(child.stderr.take().expect("piped stderr")).lines();
    let (mut url, mut log) = (None, Vec::new());
    for line in lines.by_ref() {
        let line = line.expect("nats-server's log");
        if let Some(addr) = line.split("Listening for client connections on ").nth(1) {
            url = Some(format!("nats://{}", addr.trim()));
        }
        if line.contains("Server is ready") {
            break;
        }
        log.push(line);
    }
    let Some(url) = url else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("nats-server did not start:\n{}", log.join("\n"));
    };
    // Keep reading its log so the server never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (child, url)
}

/// The work stream `TASKS` (`tasks.>`, work-queue retention), the dead-letter
/// stream `DEAD` (`dead.>`), and a durable pull consumer `workers` on
/// `TASKS` with explicit acks, the given ack wait and unlimited deliveries.
pub(crate) async fn task_streams(
    js: &jetstream::Context,
    ack_wait: Duration,
) -> consumer::PullConsumer {
    let tasks = js
        .create_stream(stream::Config {
            name: "TASKS".into(),
            subjects: vec!["tasks.>".into()],
            retention: stream::RetentionPolicy::WorkQueue,
            ..Default::default()
        })
        .await
        .expect("the TASKS stream");
    js.create_stream(stream::Config {
        name: "DEAD".into(),
        subjects: vec!["dead.>".into()],
        ..Default::default()
    })
    .await
    .expect("the DEAD stream");
    tasks
        .create_consumer(consumer::pull::Config {
            durable_name: Some("workers".into()),
            ack_policy: consumer::AckPolicy::Explicit,
            ack_wait,
            max_deliver: -1,
            ..Default::default()
        })
        .await
        .expect("the workers consumer")
}

/// Publishes one task and waits for the stream to store it; returns its
/// stream sequence.
pub(crate) async fn publish(
    js: &jetstream::Context,
    subject: &str,
    payload: &str,
    headers: Option<async_nats::HeaderMap>,
) -> u64 {
    let ack = match headers {
        Some(h) => {
            js.publish_with_headers(subject.to_owned(), h, payload.to_owned().into())
                .await
        }
        None => {
            js.publish(subject.to_owned(), payload.to_owned().into())
                .await
        }
    };
    ack.expect("publish").await.expect("stored").sequence
}

/// Every message in the `DEAD` stream, in order.
pub(crate) async fn dead_letters(
    js: &jetstream::Context,
) -> Vec<jetstream::message::StreamMessage> {
    let mut dead = js.get_stream("DEAD").await.expect("the DEAD stream");
    let count = dead.info().await.expect("DEAD's info").state.messages;
    let mut out = Vec::new();
    for seq in 1..=count {
        out.push(dead.get_raw_message(seq).await.expect("a dead letter"));
    }
    out
}

/// Publishes one message byte for byte, over a raw connection (no client
/// library: its header block and subject may be anything), and waits for
/// the stream's acknowledgement; returns its stream sequence.
pub(crate) async fn raw_publish(url: &str, subject: &[u8], header: &[u8], payload: &[u8]) -> u64 {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
    let addr = url.trim_start_matches("nats://");
    let socket = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (read, mut write) = socket.into_split();
    let mut read = tokio::io::BufReader::new(read);
    let mut m = b"CONNECT {\"verbose\":false,\"headers\":true,\"protocol\":1}\r\n\
                  SUB _INBOX.raw 1\r\nHPUB "
        .to_vec();
    m.extend_from_slice(subject);
    let total = header.len() + payload.len();
    m.extend_from_slice(format!(" _INBOX.raw {} {total}\r\n", header.len()).as_bytes());
    m.extend_from_slice(header);
    m.extend_from_slice(payload);
    m.extend_from_slice(b"\r\n");
    write.write_all(&m).await.expect("publish");
    loop {
        let mut line = Vec::new();
        read.read_until(b'\n', &mut line)
            .await
            .expect("the server's reply");
        assert!(!line.is_empty(), "the server closed the connection");
        if line.starts_with(b"PING") {
            write.write_all(b"PONG\r\n").await.expect("pong");
        } else if line.starts_with(b"-ERR") {
            panic!("refused: {}", String::from_utf8_lossy(&line));
        } else if line.starts_with(b"MSG ") {
            let text = String::from_utf8_lossy(&line).into_owned();
            let n: usize = text.split_whitespace().last().unwrap().parse().unwrap();
            let mut body = vec![0; n + 2];
            read.read_exact(&mut body).await.expect("the ack");
            let ack: serde_json::Value = serde_json::from_slice(&body[..n]).expect("a JSON ack");
            return ack["seq"]
                .as_u64()
                .unwrap_or_else(|| panic!("not stored: {ack}"));
        }
    }
}

/// A header's value (empty when absent).
pub(crate) fn header<'a>(m: &'a jetstream::message::StreamMessage, name: &str) -> &'a str {
    m.headers.get(name).map(|v| v.as_str()).unwrap_or("")
}

/// The consumer's counts: (pending delivery, awaiting ack or redelivery, acked floor).
pub(crate) async fn consumer_state(consumer: &consumer::PullConsumer) -> (u64, usize, u64) {
    let info = consumer.get_info().await.expect("consumer info");
    (
        info.num_pending,
        info.num_ack_pending,
        info.ack_floor.stream_sequence,
    )
}
