//! `decode_message` against the NATS client itself: a fake server on
//! 127.0.0.1 hands the real `async-nats` client a message with a given
//! subject and header block, then a plain marker message. The client either
//! delivers the first (and then its headers must be what `decode_message`
//! read) or drops the connection (and `decode_message` must refuse it).
//! No nats-server is needed: this is the client's parser alone.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::StreamExt;
use herdless::adapters::nats::{Decoded, decode_message};
use proptest::prelude::*;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// One connection: the handshake, then the two messages once the client
/// subscribes.
async fn serve(socket: tokio::net::TcpStream, port: u16, header: Vec<u8>) {
    let (read, mut write) = socket.into_split();
    let info = format!(
        "INFO {{\"server_id\":\"fake\",\"server_name\":\"fake\",\"version\":\"2.9.10\",\
         \"go\":\"go1\",\"host\":\"127.0.0.1\",\"port\":{port},\"headers\":true,\
         \"max_payload\":1048576,\"proto\":1}}\r\n"
    );
    write.write_all(info.as_bytes()).await.unwrap();
    let mut lines = BufReader::new(read).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.starts_with("PING") {
            let _ = write.write_all(b"PONG\r\n").await;
        } else if let Some(sid) = line.strip_prefix("SUB t ") {
            let sid = sid.trim();
            let mut m =
                format!("HMSG t {sid} {} {}\r\n", header.len(), header.len() + 1).into_bytes();
            m.extend_from_slice(&header);
            m.extend_from_slice(b"x\r\n");
            m.extend_from_slice(format!("MSG t {sid} 5\r\nafter\r\n").as_bytes());
            let _ = write.write_all(&m).await;
        }
    }
}

/// What the client made of the message: `Some` headers (by name, values in
/// order) with the status, or `None` when it dropped the connection.
type Seen = Option<(BTreeMap<String, Vec<String>>, Option<u16>, Option<String>)>;

/// Serves the client `HMSG` with `header` on its subscription, then `MSG
/// after`; returns what the client delivered, or `None` once it reconnects
/// (it dropped the connection).
async fn client_reads(header: &[u8]) -> Seen {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let header = header.to_vec();
    let (closed_tx, closed) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        let serving = tokio::spawn(serve(socket, port, header));
        // A second connection is the client's reconnect: it dropped the first.
        let _second = listener.accept().await;
        let _ = closed_tx.send(());
        serving.abort();
    });
    let client = async_nats::ConnectOptions::new()
        // One reconnect: the fake server takes it as the sign, then the test ends.
        .max_reconnects(Some(1))
        .connect(format!("127.0.0.1:{port}"))
        .await
        .unwrap();
    let mut sub = client.subscribe("t").await.unwrap();
    let first = tokio::select! {
        m = sub.next() => m,
        _ = closed => None,
    };
    let seen = match first {
        Some(m) if &m.payload[..] == b"x" => {
            let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for (name, values) in m.headers.iter().flat_map(|h| h.iter()) {
                by_name
                    .entry(name.to_string())
                    .or_default()
                    .extend(values.iter().map(|v| v.as_str().to_owned()));
            }
            let next = tokio::time::timeout(Duration::from_secs(5), sub.next()).await;
            assert!(matches!(next, Ok(Some(ref m)) if &m.payload[..] == b"after"));
            Some((by_name, m.status.map(|s| s.as_u16()), m.description))
        }
        // The connection closed, or the marker came alone.
        _ => None,
    };
    drop(sub);
    drop(client);
    server.abort();
    seen
}

fn as_seen(d: Decoded) -> Seen {
    let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (n, v) in d.headers {
        by_name.entry(n).or_default().push(v);
    }
    Some((by_name, d.status, d.description))
}

async fn agree(header: &[u8]) {
    let ours = decode_message(b"t", Some(header)).ok().and_then(as_seen);
    let theirs = client_reads(header).await;
    assert_eq!(
        ours,
        theirs,
        "header block {:?}",
        String::from_utf8_lossy(header)
    );
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn the_named_cases_agree_with_the_client() {
    let rt = runtime();
    for header in [
        &b"NATS/1.0\r\nX-Origin: caf\xe9\r\n\r\n"[..],
        b"NATS/1.0\r\nX-Origin: cafe\r\n\r\n",
        b"NATS/1.0\r\nno colon\r\n\r\n",
        b"NATS/1.0 abc\r\n\r\n",
        b"NATS/1.0 503 No Responders\r\n\r\n",
        b"HTTP/1.0\r\n\r\n",
        b"NATS/1.0\r\nBad Name: v\r\n\r\n",
        "NATS/1.0\r\n\u{141}x: v\r\n\r\n".as_bytes(),
        b"NATS/1.0\r\n: empty name\r\n\r\n",
        b"NATS/1.0\r\nA:   one  \r\n two\r\n\tthree\r\nB:\r\n\r\n",
        b"NATS/1.0\nA: 1\nB: 2",
        b"NATS/1.0\r\nA: x\ry\r\n\r\n",
        b"NATS/1.0\r\nA: 1\r\nA: 2\r\n\r\n",
        b"NATS/1.0\r\na\x7f: v\r\n\r\n",
        b"NATS/1.0\r\na\x01: v\r\n\r\n",
        "NATS/1.0\r\n\u{17f}: v\r\n\r\n".as_bytes(),
    ] {
        rt.block_on(agree(header));
    }
}

/// Header blocks near the format: lines of printable bytes, colons, spaces,
/// CR, LF, high bytes and UTF-8, after a version line that is usually right.
fn header_block() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        4 => proptest::char::range('!', '~').prop_map(|c| vec![c as u8]),
        1 => Just(b":".to_vec()),
        1 => Just(b" ".to_vec()),
        1 => Just(b"\t".to_vec()),
        1 => Just(b"\r".to_vec()),
        1 => Just(b"\n".to_vec()),
        1 => any::<u8>().prop_map(|b| vec![b]),
        1 => any::<char>().prop_map(|c| c.to_string().into_bytes()),
        1 => proptest::char::range('\u{0}', '\u{17f}').prop_map(|c| c.to_string().into_bytes()),
    ];
    let line = proptest::collection::vec(byte, 0..24).prop_map(|parts| parts.concat());
    let version = prop_oneof![
        6 => Just(b"NATS/1.0".to_vec()),
        1 => (100u16..1000).prop_map(|s| format!("NATS/1.0 {s} Desc").into_bytes()),
        1 => proptest::collection::vec(any::<u8>(), 0..12),
    ];
    (version, proptest::collection::vec(line, 0..6)).prop_map(|(v, lines)| {
        let mut out = v;
        out.extend_from_slice(b"\r\n");
        for l in lines {
            out.extend_from_slice(&l);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_header_block_is_read_as_the_client_reads_it(header in header_block()) {
        runtime().block_on(agree(&header));
    }
}
