//! A real nats-server with JetStream for a test: a free loopback port, a
//! temporary store directory, its own process group, killed on drop.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where the server binary is: `A2E_NATS_SERVER`, else `nats-server` on the
/// path, else Debian's `/usr/sbin/nats-server`.
pub fn server_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("A2E_NATS_SERVER") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/local/sbin")])
        .map(|d| d.join("nats-server"))
        .find(|p| p.is_file())
}

/// A running server.
pub struct NatsServer {
    child: Option<Child>,
    /// The loopback port it listens on.
    pub port: u16,
    /// Its JetStream store, removed when the server is dropped.
    pub store: tempfile::TempDir,
    binary: PathBuf,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl NatsServer {
    /// Starts a server, or says why not: `None` after printing `SKIPPED`
    /// when the binary is missing, a panic instead under `CI`.
    pub fn start() -> Option<Self> {
        let Some(binary) = server_binary() else {
            if std::env::var_os("CI").is_some() {
                panic!("nats-server is missing (install it with .ci/install-nats.sh)");
            }
            crate::skip::skipped("nats-server is not installed (Debian package `nats-server`)");
            return None;
        };
        let mut server = Self {
            child: None,
            port: free_port(),
            store: tempfile::tempdir().unwrap(),
            binary,
        };
        server.spawn();
        Some(server)
    }

    fn spawn(&mut self) {
        let child = Command::new(&self.binary)
            .args([
                "-js",
                "-a",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-sd",
                self.store.path().to_str().unwrap(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        self.child = Some(child);
        wait_for_port(self.port);
    }

    /// `nats://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// The JetStream store's directory.
    pub fn store_dir(&self) -> &Path {
        self.store.path()
    }

    /// Kills the server (its whole process group) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pgid = child.id() as i32;
            // The whole group: the server and anything it started.
            if pgid > 1 {
                let _ = Command::new("kill")
                    .args(["-s", "KILL", "--", &format!("-{pgid}")])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops and starts the server again on the same port and store.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn wait_for_port(port: u16) {
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "nats-server did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
