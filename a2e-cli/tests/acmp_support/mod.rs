//! Real `a2e` hosts for the ACMP tests: providers serving `--acmp-ws` (or
//! `--mcp-http`) on free loopback ports, a buyer running `a2e run`, a direct Layer 1 connection.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use a2e_host::acmp::ws::WsConnector;
use acmp_dag::remote::{Connection, Connector};

/// The examples' workspace (tools, the `aggregate_stats` skill).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/workspace")
}

/// The examples' text pipeline DAG.
pub fn example_dag() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/dags/text-pipeline.json")
}

/// One capability line of a provider's configuration.
pub fn capability(tag: &str, target: &str, price: f64) -> String {
    format!(
        "[[acmp.provider.capabilities]]\ncapability = \"{tag}\"\n{target}\nprice_cu = {price}\n"
    )
}

/// A provider's configuration file in `dir`; its path and bearer token.
pub fn provider_config(
    dir: &Path,
    name: &str,
    capabilities: &str,
    heartbeat_ms: u64,
    extra: &str,
) -> (PathBuf, String) {
    let token = format!("token-{name}");
    let config = format!(
        "data_dir = \"{data}\"\n[journal]\nenabled = false\n[acmp.provider]\nprovider_id = \"agent:{name}:local\"\ntoken = \"{token}\"\nheartbeat_interval_ms = {heartbeat_ms}\n{extra}\n{capabilities}",
        data = dir.join("data").display(),
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, config).unwrap();
    (path, token)
}

/// A provider host serving `--acmp-ws` on a free loopback port, in its own
/// process group (killed with it when dropped).
pub struct ProviderHost {
    pub name: String,
    pub token: String,
    pub url: String,
    child: Child,
    log: Arc<Mutex<Vec<String>>>,
    _dir: tempfile::TempDir,
}

impl ProviderHost {
    /// Starts a provider named `name` offering `capabilities` (TOML lines)
    /// with heartbeats every `heartbeat_ms`.
    pub fn start(name: &str, capabilities: &str, heartbeat_ms: u64, extra: &str) -> Self {
        Self::start_on("--acmp-ws", name, capabilities, heartbeat_ms, extra)
    }

    /// [`ProviderHost::start`] serving MCP Streamable HTTP (`--mcp-http`) with
    /// the provider's token as the host's `auth_token`; `url` is its `/mcp`.
    pub fn start_mcp_http(name: &str, capabilities: &str, heartbeat_ms: u64, extra: &str) -> Self {
        Self::start_on("--mcp-http", name, capabilities, heartbeat_ms, extra)
    }

    fn start_on(
        transport: &str,
        name: &str,
        capabilities: &str,
        heartbeat_ms: u64,
        extra: &str,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (path, token) = provider_config(dir.path(), name, capabilities, heartbeat_ms, extra);
        if transport == "--mcp-http" {
            let config = std::fs::read_to_string(&path).unwrap();
            std::fs::write(&path, format!("auth_token = \"{token}\"\n{config}")).unwrap();
        }
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
        cmd.arg("--config")
            .arg(&path)
            .arg("--root")
            .arg(workspace())
            .args(["--allow-command", "sh", "serve", transport, "127.0.0.1:0"])
            .env("A2E_LOG", "acmp_dag=debug,a2e=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = cmd.spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let lines = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                for scheme in ["ws", "http"] {
                    if let Some(at) = line.split(&format!("on {scheme}://")).nth(1) {
                        let _ = tx.send(format!("{scheme}://{}", at.trim()));
                    }
                }
                lines.lock().unwrap().push(line);
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("provider {name} did not start: {:?}", log.lock().unwrap()));
        Self {
            name: name.to_owned(),
            token,
            url,
            child,
            log,
            _dir: dir,
        }
    }

    /// The provider's log lines so far.
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Whether a log line contains every one of `parts`.
    pub fn logged(&self, parts: &[&str]) -> bool {
        self.log()
            .iter()
            .any(|l| parts.iter().all(|p| l.contains(p)))
    }

    /// Waits until a log line contains every one of `parts`.
    pub fn wait_logged(&self, parts: &[&str], within: Duration) {
        let start = Instant::now();
        while !self.logged(parts) {
            assert!(
                start.elapsed() < within,
                "{}: no log line with {parts:?} in {:?}",
                self.name,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The `[[acmp.providers]]` entry of a buyer for this provider.
    pub fn entry(&self) -> String {
        format!(
            "[[acmp.providers]]\nname = \"{}\"\nurl = \"{}\"\ntoken = \"{}\"\n",
            self.name, self.url, self.token
        )
    }

    /// The process group id (the provider's pid).
    pub fn pgid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Sends `signal` to the provider's process group.
    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(self.pgid()), signal);
    }

    /// Kills the process group and reaps the provider.
    pub fn kill(&mut self) {
        self.signal(nix::sys::signal::Signal::SIGCONT);
        self.signal(nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }

    /// Whether the provider process still exists (not reaped).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// A Layer 1 connection to it.
    pub async fn connect(&self) -> Arc<Connection> {
        WsConnector::new(&self.url, Some(self.token.clone()))
            .connect()
            .await
            .unwrap()
    }
}

impl Drop for ProviderHost {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A buyer's configuration file with `providers` (their entries) and `extra`.
pub fn buyer_config(dir: &Path, providers: &[&ProviderHost], extra: &str) -> PathBuf {
    let mut config = format!(
        "data_dir = \"{}\"\n[journal]\nenabled = false\n[acmp]\n{extra}\n",
        dir.join("data").display()
    );
    for p in providers {
        config.push_str(&p.entry());
    }
    let path = dir.join("buyer.toml");
    std::fs::write(&path, config).unwrap();
    path
}

/// `a2e run FILE` on a buyer configured with `config`, as a child process.
pub fn buyer_run(config: &Path, file: &Path, root: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.arg("--config")
        .arg(config)
        .arg("--root")
        .arg(root)
        .arg("run")
        .arg(file)
        .env("A2E_LOG", "acmp_dag=info,warn")
        .stdin(Stdio::null());
    cmd
}
