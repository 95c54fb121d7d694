//! What the suite's tests share: the `a2e` binary, the fixture host's
//! command and servers, runs of the host suite.
#![allow(dead_code)]

use a2e_test_kit::skip;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use conformance::check::CheckResult;
use conformance::expected::Tally;
use conformance::host::{Options, Target};
use conformance::runner::{self, HostReport, Selection};

/// The fixture host's shared secret.
pub const TOKEN: &str = "conformance-token";

/// This crate's `a2e-conformance` binary.
pub fn me() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_a2e-conformance"))
}

/// The `a2e` binary of the workspace: `A2E_BIN`, else the one beside
/// `a2e-conformance` in the target directory (built by `cargo build -p a2e-cli`,
/// and by `cargo test --workspace`). `None` (with `SKIPPED` on stderr) when
/// there is none; with `CI` set that is a failure.
pub fn a2e() -> Option<PathBuf> {
    let path = match std::env::var_os("A2E_BIN") {
        Some(p) => PathBuf::from(p),
        None => me().with_file_name("a2e"),
    };
    if path.is_file() {
        return Some(path);
    }
    let why = format!(
        "the `a2e` binary is not at {} (build it: cargo build -p a2e-cli, or set A2E_BIN)",
        path.display()
    );
    assert!(std::env::var_os("CI").is_none(), "{why}");
    skip::skipped(&why);
    None
}

/// `PATH` with this crate's binaries first (the fixture host runs `a2e-conformance fixture-plugin`).
pub fn path_env() -> String {
    let dir = me().parent().map(Path::to_path_buf).unwrap_or_default();
    let old = std::env::var("PATH").unwrap_or_default();
    format!("{}:{old}", dir.display())
}

/// `conformance/fixture-host.toml`.
pub fn fixture_config() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixture-host.toml")
        .display()
        .to_string()
}

/// `a2e serve --stdio` with the fixture profile, as a command (through `env`
/// to set its `PATH`).
pub fn stdio_command(a2e: &Path) -> Vec<String> {
    vec![
        "env".into(),
        format!("PATH={}", path_env()),
        a2e.display().to_string(),
        "serve".into(),
        "--stdio".into(),
        "--config".into(),
        fixture_config(),
    ]
}

/// A network host with the fixture profile; killed when dropped.
pub struct Server {
    child: Child,
    /// Its URL.
    pub url: String,
}

impl Server {
    /// `a2e serve --ws|--http 127.0.0.1:0 --config fixture-host.toml`, once it listens.
    pub fn start(a2e: &Path, flag: &str) -> Self {
        let mut child = Command::new(a2e)
            .args(["serve", flag, "127.0.0.1:0", "--config", &fixture_config()])
            .env("PATH", path_env())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("a2e starts");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(at) = line.find("ws://").or_else(|| line.find("http://")) {
                    let _ = tx.send(line[at..].trim().to_owned());
                }
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("a2e says where it listens");
        Self { child, url }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The check ids of `conformance/expected/<name>.txt`.
pub fn expected(name: &str) -> BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("expected")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    conformance::expected::read_expected(&text)
}

/// Runs the host suite against `target`.
pub fn run_host(target: Target, token: Option<&str>, selection: &Selection) -> HostReport {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let opts = Options {
        auth_token: token.map(str::to_owned),
        ..Options::default()
    };
    let report = rt
        .block_on(runner::run_host(
            target,
            opts,
            selection,
            Duration::from_secs(600),
            |_| {},
        ))
        .expect("the run starts");
    rt.shutdown_background();
    report
}

/// The failed checks of `results`, one line each.
pub fn failures(results: &[CheckResult]) -> Vec<String> {
    results
        .iter()
        .filter(|r| !r.passed())
        .map(conformance::report::line)
        .collect()
}

/// Asserts a run with no unexpected failure, no stale expectation, no skip,
/// and at least `min` checks.
pub fn assert_clean(results: &mut [CheckResult], expected: &BTreeSet<String>, min: usize) -> Tally {
    let tally = conformance::expected::tally(results, expected);
    let lines = failures(results).join("\n");
    assert!(
        tally.ok(),
        "unexpected: {:?}\nstale: {:?}\n{lines}",
        tally.unexpected,
        tally.stale
    );
    assert_eq!(tally.skipped, 0, "{lines}");
    assert!(results.len() >= min, "only {} checks", results.len());
    tally
}

/// Seconds since `started`, for messages.
pub fn since(started: Instant) -> f64 {
    started.elapsed().as_secs_f64()
}
