//! The network namespaces of a test cluster (see `nats_cluster.rs`): three
//! for the servers, one holding the bridge between them, and a veth from
//! the host to that bridge for the test and its workers. Every command is
//! `ip`'s (iproute2); a failure is an `Err` naming it, and the caller falls
//! back to 127.0.0.1. The CLI's tests keep a copy
//! (`crates/herdless-cli/tests/nats_server/nats_netns.rs`, checked identical
//! by `.ci/run`).

#![allow(dead_code)]

use std::process::{Command, Stdio};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The namespaces of one cluster: `PREFIX-sw` holds the bridge, `PREFIX-0`
/// to `PREFIX-2` a server each; the host side of the test's veth is `PREFIXh`.
pub(crate) struct Net {
    pub(crate) prefix: String,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn ip_out(args: &[&str]) -> String {
    Command::new("ip")
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// Removes the namespaces of earlier runs whose process is gone, ending the
/// processes left in them by their pids.
fn sweep_leftovers() {
    for line in ip_out(&["netns", "list"]).lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        let Some(pid) = name
            .strip_prefix("hlc")
            .and_then(|r| r.split('x').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if std::path::Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        for p in ip_out(&["netns", "pids", name]).split_whitespace() {
            if let Ok(p) = p.parse::<i32>() {
                let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
            }
        }
        let _ = ip(&["netns", "del", name]);
    }
}

impl Net {
    /// The namespaces, the bridge and the veths; the subnet's third octet.
    pub(crate) fn create(prefix: &str, run: u32) -> Result<(Net, u8), String> {
        if std::env::var_os("HERDLESS_TEST_NO_NETNS").is_some() {
            return Err("HERDLESS_TEST_NO_NETNS is set".into());
        }
        sweep_leftovers();
        // Clusters started at once by one process take different subnets
        // by their run numbers; other processes' (and leftovers') show in
        // the host's addresses.
        let used = ip_out(&["-4", "-o", "addr", "show"]);
        let seed = std::process::id() as usize * 7 + run as usize * 53;
        let subnet = (0..256)
            .map(|k| ((seed + k * 17) % 256) as u8)
            .find(|x| !used.contains(&format!("198.18.{x}.")))
            .ok_or("no free 198.18.X.0/24")?;
        let net = Net {
            prefix: prefix.to_owned(),
        };
        let sw = format!("{prefix}-sw");
        ip(&["netns", "add", &sw])?;
        ip(&["-n", &sw, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &sw, "link", "set", "dev", "br0", "up"])?;
        for i in 0..3 {
            let ns = format!("{prefix}-{i}");
            let port = format!("s{i}");
            ip(&["netns", "add", &ns])?;
            ip(&[
                "-n", &sw, "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns",
                &ns,
            ])?;
            ip(&[
                "-n", &sw, "link", "set", "dev", &port, "master", "br0", "up",
            ])?;
            let addr = format!("198.18.{subnet}.{}/24", i + 1);
            ip(&["-n", &ns, "addr", "add", &addr, "dev", "eth0"])?;
            ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        }
        let host = format!("{prefix}h");
        ip(&[
            "link", "add", &host, "type", "veth", "peer", "name", "hv", "netns", &sw,
        ])?;
        ip(&["-n", &sw, "link", "set", "dev", "hv", "master", "br0", "up"])?;
        ip(&[
            "addr",
            "add",
            &format!("198.18.{subnet}.254/24"),
            "dev",
            &host,
        ])?;
        ip(&["link", "set", &host, "up"])?;
        Ok((net, subnet))
    }

    pub(crate) fn set_port(&self, i: usize, state: &str) {
        let sw = format!("{}-sw", self.prefix);
        ip(&["-n", &sw, "link", "set", "dev", &format!("s{i}"), state])
            .expect("set the server's link");
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        // Deleting a namespace deletes its veths, and with them their peers.
        for suffix in ["-0", "-1", "-2", "-sw"] {
            let _ = ip(&["netns", "del", &format!("{}{suffix}", self.prefix)]);
        }
        let _ = ip(&["link", "del", &format!("{}h", self.prefix)]);
    }
}
