//! Three `nats-server`s with JetStream as one cluster, for the fault tests:
//! their own ports, routes between them, their own store directories (kept
//! across restarts). Where the machine allows it (root, `ip netns`), each
//! server runs in a network namespace of its own, joined to the others by a
//! bridge in a fourth namespace, so that one can be cut off for real; the
//! test reaches them through a veth of its own (198.18.X.0/24, the range set
//! aside for network benchmarks, on links that exist only inside the
//! namespaces made here). Otherwise the servers listen on 127.0.0.1 and a
//! cut is a SIGSTOP, which [`NatsCluster::isolated`] and the start's message
//! say (`HERDLESS_TEST_NO_NETNS=1` forces it). Names carry the test
//! process's pid and a counter, so parallel tests and the leftovers of a
//! killed run do not collide (leftovers whose process is gone are removed). Every server is ended by its pid, when asked and on
//! drop (a panicking test included); the namespaces are deleted on drop.
//! The namespaces are `nats_netns.rs`. The CLI's tests keep a copy of both
//! (`crates/herdless-cli/tests/nats_server/cluster.rs` and `nats_netns.rs`,
//! checked identical by `.ci/run`).

#![allow(dead_code)]

use std::fs::OpenOptions;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, consumer, stream};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

#[path = "nats_netns.rs"]
mod netns;
use netns::Net;

/// How long a server may take to start, a leader to be elected, a stream to
/// be created: generous, for a loaded 2-core machine, and bounded.
pub(crate) const SETTLE: Duration = Duration::from_secs(60);

/// How long one question to the cluster may take before it is asked again
/// (of whichever server the connection reaches by then).
const ASK: Duration = Duration::from_millis(500);

/// `stream`'s info as the server at `url` reports it, on a connection of
/// its own, or `None` when no answer comes within [`ASK`].
async fn stream_info(url: &str, stream: &str) -> Option<stream::Info> {
    let ask = async {
        let client = async_nats::ConnectOptions::new()
            .connection_timeout(ASK)
            .connect(url)
            .await
            .ok()?;
        let js = jetstream::new(client);
        js.get_stream(stream).await.ok()?.info().await.ok().cloned()
    };
    tokio::time::timeout(ASK, ask).await.ok().flatten()
}

static RUNS: AtomicU32 = AtomicU32::new(0);

/// One server of the cluster.
struct Node {
    name: String,
    conf: PathBuf,
    log: PathBuf,
    child: Option<Child>,
    url: String,
    /// How many times its log said "Server is ready".
    started: usize,
    /// Killed, stopped, frozen or cut: not to be asked.
    away: bool,
}

/// Three servers as one JetStream cluster; ended on drop.
pub(crate) struct NatsCluster {
    nodes: Vec<Node>,
    net: Option<Net>,
    _dir: tempfile::TempDir,
}

/// A free port on 127.0.0.1 (the listener is closed before the server binds it).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    l.local_addr().unwrap().port()
}

impl NatsCluster {
    /// Starts the three servers (in namespaces if the machine allows) and
    /// waits until each accepts clients; then [`NatsCluster::jetstream`]
    /// waits for the meta leader.
    pub(crate) fn start() -> NatsCluster {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let run = RUNS.fetch_add(1, Ordering::Relaxed);
        let prefix = format!("hlc{}x{run}", std::process::id());
        let (net, hosts, ports) = match Net::create(&prefix, run) {
            Ok((net, subnet)) => {
                let hosts: Vec<String> = (1..=3).map(|i| format!("198.18.{subnet}.{i}")).collect();
                (Some(net), hosts, vec![(4222, 6222); 3])
            }
            Err(why) => {
                println!(
                    "nats cluster: network namespaces unavailable ({why}): the servers share \
                     127.0.0.1 and a cut is a SIGSTOP of the server"
                );
                let ports = (0..3).map(|_| (free_port(), free_port())).collect();
                (None, vec!["127.0.0.1".to_owned(); 3], ports)
            }
        };
        if net.is_some() {
            println!("nats cluster: each server in its own network namespace ({prefix}-0..2)");
        }
        let mut nodes = Vec::new();
        for i in 0..3 {
            let (port, cport) = ports[i];
            let routes: Vec<String> = (0..3)
                .filter(|&j| j != i)
                .map(|j| format!("\"nats-route://{}:{}\"", hosts[j], ports[j].1))
                .collect();
            let store = dir.path().join(format!("n{i}"));
            let conf = dir.path().join(format!("n{i}.conf"));
            let text = format!(
                "server_name: n{i}\nlisten: \"{h}:{port}\"\n\
                 jetstream {{ store_dir: \"{store}\" }}\n\
                 cluster {{ name: herdless\n listen: \"{h}:{cport}\"\n routes: [{routes}] }}\n",
                h = hosts[i],
                store = store.display(),
                routes = routes.join(", ")
            );
            std::fs::write(&conf, text).expect("a server's configuration");
            nodes.push(Node {
                name: format!("n{i}"),
                conf,
                log: dir.path().join(format!("n{i}.log")),
                child: None,
                url: format!("nats://{}:{port}", hosts[i]),
                started: 0,
                away: false,
            });
        }
        let mut cluster = NatsCluster {
            nodes,
            net,
            _dir: dir,
        };
        for i in 0..3 {
            cluster.spawn(i);
        }
        for i in 0..3 {
            cluster.await_ready(i);
        }
        cluster
    }

    fn spawn(&mut self, i: usize) {
        let prefix = self.net.as_ref().map(|n| n.prefix.clone());
        let node = &mut self.nodes[i];
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&node.log)
            .expect("the server's log");
        let mut cmd = match prefix {
            Some(p) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &format!("{p}-{i}"), "nats-server"]);
                c
            }
            None => Command::new("nats-server"),
        };
        let child = cmd
            .arg("-c")
            .arg(&node.conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start nats-server ({e}): the broker tests need it on PATH \
                     (Debian: apt-get install -y nats-server; .ci/run installs it)"
                )
            });
        node.child = Some(child);
    }

    /// Waits until the server's log says it is ready once more than before.
    fn await_ready(&mut self, i: usize) {
        let deadline = Instant::now() + SETTLE;
        let node = &mut self.nodes[i];
        loop {
            let log = std::fs::read_to_string(&node.log).unwrap_or_default();
            if log.matches("Server is ready").count() > node.started {
                node.started += 1;
                return;
            }
            let exited = node
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            if exited.is_some() || Instant::now() > deadline {
                panic!("{} did not start ({exited:?}):\n{log}", node.name);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether each server is in a namespace of its own (a cut is real).
    pub(crate) fn isolated(&self) -> bool {
        self.net.is_some()
    }

    /// The client URL of server `i`.
    pub(crate) fn url(&self, i: usize) -> &str {
        &self.nodes[i].url
    }

    /// Server `i`'s pid.
    pub(crate) fn pid(&self, i: usize) -> Pid {
        let child = self.nodes[i].child.as_ref().expect("the server runs");
        Pid::from_raw(i32::try_from(child.id()).expect("a pid"))
    }

    /// `kill -9` of server `i`, reaped.
    pub(crate) fn kill(&mut self, i: usize) {
        self.nodes[i].away = true;
        if let Some(mut c) = self.nodes[i].child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM to server `i` (a clean shutdown), awaited (bounded by
    /// [`SETTLE`], then SIGKILL).
    pub(crate) fn stop(&mut self, i: usize) {
        self.nodes[i].away = true;
        let pid = self.pid(i);
        let _ = kill(pid, Signal::SIGTERM);
        let deadline = Instant::now() + SETTLE;
        let mut child = self.nodes[i].child.take().expect("the server runs");
        while child.try_wait().ok().flatten().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts server `i` again (same ports, same store) and waits until it
    /// accepts clients.
    pub(crate) fn restart(&mut self, i: usize) {
        assert!(self.nodes[i].child.is_none(), "server {i} still runs");
        self.spawn(i);
        self.await_ready(i);
        self.nodes[i].away = false;
    }

    /// SIGSTOP of server `i`.
    pub(crate) fn freeze(&mut self, i: usize) {
        self.nodes[i].away = true;
        kill(self.pid(i), Signal::SIGSTOP).expect("SIGSTOP");
    }

    /// SIGCONT of server `i`.
    pub(crate) fn thaw(&mut self, i: usize) {
        kill(self.pid(i), Signal::SIGCONT).expect("SIGCONT");
        self.nodes[i].away = false;
    }

    /// Cuts server `i` off from the others and from its clients (its link
    /// down), or, without namespaces, freezes it.
    pub(crate) fn cut(&mut self, i: usize) {
        match &self.net {
            Some(net) => net.set_port(i, "down"),
            None => self.freeze(i),
        }
        self.nodes[i].away = true;
    }

    /// Undoes [`NatsCluster::cut`].
    pub(crate) fn heal(&mut self, i: usize) {
        match &self.net {
            Some(net) => net.set_port(i, "up"),
            None => self.thaw(i),
        }
        self.nodes[i].away = false;
    }

    /// A JetStream context on a connection that knows every server, once the
    /// cluster has a meta leader.
    pub(crate) async fn jetstream(&self) -> jetstream::Context {
        let urls: Vec<&str> = self.nodes.iter().map(|n| n.url.as_str()).collect();
        let client = async_nats::ConnectOptions::new()
            .retry_on_initial_connect()
            // A server cut off leaves its connections open: notice in seconds.
            .ping_interval(Duration::from_secs(1))
            .connect(urls.as_slice())
            .await
            .expect("connect to the cluster");
        // The account's JetStream info answers without an error once the
        // cluster has a meta leader.
        let deadline = Instant::now() + SETTLE;
        loop {
            let reply = tokio::time::timeout(ASK, client.request("$JS.API.INFO", "".into())).await;
            let answer = reply.map(|r| r.map(|m| String::from_utf8_lossy(&m.payload).into_owned()));
            match answer {
                Ok(Ok(text)) if !text.contains("\"error\"") => break,
                other => assert!(Instant::now() < deadline, "no meta leader: {other:?}"),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        jetstream::new(client)
    }

    /// `stream`'s info from the first server not away that answers.
    async fn stream_info(&self, stream: &str) -> Option<stream::Info> {
        for node in self.nodes.iter().filter(|n| !n.away) {
            if let Some(info) = stream_info(&node.url, stream).await {
                return Some(info);
            }
        }
        None
    }

    /// The index of the server leading `stream` (awaited: bounded by [`SETTLE`]).
    pub(crate) async fn stream_leader(&self, stream: &str) -> usize {
        let deadline = Instant::now() + SETTLE;
        loop {
            if let Some(info) = self.stream_info(stream).await
                && let Some(leader) = info.cluster.as_ref().and_then(|c| c.leader.clone())
                && let Some(i) = self.nodes.iter().position(|n| n.name == leader)
            {
                return i;
            }
            assert!(Instant::now() < deadline, "{stream} has no leader");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The index of the server leading consumer `name` of `stream` (awaited:
    /// bounded by [`SETTLE`]).
    pub(crate) async fn consumer_leader(&self, stream: &str, name: &str) -> usize {
        let deadline = Instant::now() + SETTLE;
        loop {
            for node in self.nodes.iter().filter(|n| !n.away) {
                let ask = async {
                    let client = async_nats::ConnectOptions::new()
                        .connection_timeout(ASK)
                        .connect(node.url.as_str())
                        .await
                        .ok()?;
                    let js = jetstream::new(client);
                    let mut c: consumer::PullConsumer = js
                        .get_stream(stream)
                        .await
                        .ok()?
                        .get_consumer(name)
                        .await
                        .ok()?;
                    c.info().await.ok()?.cluster.clone()?.leader
                };
                if let Ok(Some(leader)) = tokio::time::timeout(ASK, ask).await
                    && let Some(i) = self.nodes.iter().position(|n| n.name == leader)
                {
                    return i;
                }
            }
            assert!(Instant::now() < deadline, "{stream}/{name} has no leader");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until `stream` has a leader and every replica is current.
    pub(crate) async fn await_current(&self, stream: &str) {
        let deadline = Instant::now() + SETTLE;
        loop {
            if let Some(info) = self.stream_info(stream).await
                && let Some(c) = &info.cluster
                && c.leader.is_some()
                && c.replicas.len() == 2
                && c.replicas.iter().all(|r| r.current && !r.offline)
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{stream}'s replicas never caught up"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl NatsCluster {
    /// Server `i`'s log so far.
    pub(crate) fn log(&self, i: usize) -> String {
        std::fs::read_to_string(&self.nodes[i].log).unwrap_or_default()
    }
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            if let Some(mut c) = node.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

/// The R3 work-queue stream `TASKS` (`tasks.>`), the R3 dead-letter stream
/// `DEAD` (`dead.>`), and the durable pull consumer `workers` (explicit
/// acks, `ack_wait`, unlimited deliveries), each created as soon as the
/// cluster can place it.
pub(crate) async fn cluster_streams(
    js: &jetstream::Context,
    ack_wait: Duration,
) -> consumer::PullConsumer {
    let deadline = Instant::now() + SETTLE;
    let tasks = stream::Config {
        name: "TASKS".into(),
        subjects: vec!["tasks.>".into()],
        retention: stream::RetentionPolicy::WorkQueue,
        num_replicas: 3,
        ..Default::default()
    };
    let dead = stream::Config {
        name: "DEAD".into(),
        subjects: vec!["dead.>".into()],
        num_replicas: 3,
        ..Default::default()
    };
    let consumer = consumer::pull::Config {
        durable_name: Some("workers".into()),
        ack_policy: consumer::AckPolicy::Explicit,
        ack_wait,
        max_deliver: -1,
        ..Default::default()
    };
    loop {
        let made = async {
            js.get_or_create_stream(dead.clone()).await?;
            let s = js.get_or_create_stream(tasks.clone()).await?;
            Ok::<_, async_nats::Error>(
                s.get_or_create_consumer("workers", consumer.clone())
                    .await?,
            )
        };
        match made.await {
            Ok(c) => return c,
            Err(e) => {
                assert!(Instant::now() < deadline, "the streams: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}
