//! The cluster tests' parts: nats-server, hosts over the binary, chains of
//! shell commands that record their side effects.
#![allow(dead_code)]

pub use a2e_test_kit::nats_server;

use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use a2e_host::proc::pids_with_arg;
use conformance::child::HostProcess;
use nats_server::NatsServer;
use serde_json::{Value, json};

pub use crate::durable_support::{effects, handshake, kill_marked};

/// One cluster test at a time: each starts a server and several hosts on a
/// small machine.
pub static SERIAL: Mutex<()> = Mutex::new(());

pub struct Host {
    pub process: HostProcess,
    pub name: String,
}

pub struct Cluster {
    pub nats: NatsServer,
    pub root: tempfile::TempDir,
    pub logs: tempfile::TempDir,
    pub started: usize,
}

impl Cluster {
    pub fn start() -> Option<Self> {
        let nats = NatsServer::start()?;
        Some(Self {
            nats,
            root: tempfile::tempdir().unwrap(),
            logs: tempfile::tempdir().unwrap(),
            started: 0,
        })
    }

    /// A host serving `serve` (TOML list), its stderr in the log directory.
    pub fn host(&mut self, serve: &str, max_deliver: u32) -> Host {
        let (cmd, name) = self.command(serve, max_deliver);
        let mut process = HostProcess::spawn(cmd).unwrap();
        handshake(&mut process, "cluster-agent");
        Host { process, name }
    }

    /// [`Cluster::host`] with `extra` appended to its configuration.
    pub fn host_with(&mut self, serve: &str, max_deliver: u32, extra: &str) -> Host {
        let (cmd, name) = self.command(serve, max_deliver);
        let config = self.logs.path().join(format!("{name}.toml"));
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str(extra);
        std::fs::write(&config, text).unwrap();
        let mut process = HostProcess::spawn(cmd).unwrap();
        handshake(&mut process, "cluster-agent");
        Host { process, name }
    }

    /// The command of a host serving `serve`, and its name.
    pub fn command(&mut self, serve: &str, max_deliver: u32) -> (Command, String) {
        self.started += 1;
        let name = format!("host{}", self.started);
        let config = self.logs.path().join(format!("{name}.toml"));
        std::fs::write(
            &config,
            format!(
                "[cluster]\nnats_url = \"{}\"\nname = \"{name}\"\nserve = {serve}\n\
                 workers = 2\nlease_ttl_secs = 2\nack_wait_secs = 2\nmax_deliver = {max_deliver}\n",
                self.nats.url()
            ),
        )
        .unwrap();
        let log = self.logs.path().join(format!("{name}.log"));
        let mut cmd = Command::new("sh");
        cmd.env("A2E_LOG", "info,a2e_host=debug")
            .arg("-c")
            .arg(format!("exec \"$0\" \"$@\" 2>>'{}'", log.display()))
            .arg(env!("CARGO_BIN_EXE_a2e"))
            .args(["serve", "--stdio", "--allow-command", "sh", "--config"])
            .arg(&config)
            .arg("--root")
            .arg(self.root.path());
        (cmd, name)
    }

    pub fn effects(&self) -> Vec<String> {
        effects(self.root.path())
    }

    /// Every host's log, for a failed assertion.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for i in 1..=self.started {
            let path = self.logs.path().join(format!("host{i}.log"));
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(40).collect();
            out.push_str(&format!("--- host{i}\n"));
            for line in tail.into_iter().rev() {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }
}

/// A chain of `run_command` nodes, each `(id, script)`, one after the other.
pub fn chain(req_id: &str, nodes: &[(&str, String)]) -> Value {
    chain_named(req_id, "cluster", nodes)
}

/// [`chain`] with its `chain_id`.
pub fn chain_named(req_id: &str, chain_id: &str, nodes: &[(&str, String)]) -> Value {
    let list: Vec<Value> = nodes
        .iter()
        .enumerate()
        .map(|(i, (id, script))| {
            let mut node = json!({
                "node_id": id, "kind": "tool", "name": "run_command",
                "input": {"argv": ["sh", "-c", script], "timeout": 120},
            });
            if let Some((next, _)) = nodes.get(i + 1) {
                node["next_node"] = json!(next);
            }
            node
        })
        .collect();
    json!({
        "type": "chain/req", "id": req_id, "chain_id": chain_id,
        "entry_node": nodes[0].0, "nodes": list, "streaming": true, "timeout": 300,
    })
}

pub fn append(id: &str) -> String {
    format!("echo {id} >> effects")
}

pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The index of the host among `hosts` whose process runs `pid` (an
/// ancestor of it).
pub fn owner(hosts: &[Host], pid: u32) -> Option<usize> {
    let mut p = pid;
    for _ in 0..16 {
        if let Some(i) = hosts.iter().position(|h| h.process.pid() == p) {
            return Some(i);
        }
        p = parent_of(p)?;
        if p <= 1 {
            return None;
        }
    }
    None
}

/// Waits for a process with argument `mark` run by one of `hosts`; its
/// host's index.
pub fn wait_marked(hosts: &[Host], mark: &str, within: Duration) -> Option<usize> {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if let Some(i) = pids_with_arg(mark)
            .into_iter()
            .find_map(|p| owner(hosts, p))
        {
            return Some(i);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

pub fn count(effects: &[String], id: &str) -> usize {
    effects.iter().filter(|e| *e == id).count()
}

pub fn seqs(events: &[Value]) -> Vec<u64> {
    events.iter().map(|e| e["seq"].as_u64().unwrap()).collect()
}
