//! The local model server that `.ci/install-llm.sh` starts (llama-cpp-python's
//! OpenAI-compatible server with SmolLM2-135M): where it is, and whether it answers.
//! The installer runs it under a loop that starts it again if it exits, so a test that
//! finds it down waits a while for it to come back before it fails.

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// `$A2E_CI_TOOLS` (default `<workspace>/.ci-tools`).
pub fn ci_tools() -> PathBuf {
    std::env::var_os("A2E_CI_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.ci-tools"))
}

/// A variable from the environment, else from the `export` lines of `$A2E_CI_TOOLS/env`.
pub fn setting(name: &str) -> Option<String> {
    if let Some(v) = std::env::var(name).ok().filter(|v| !v.is_empty()) {
        return Some(v);
    }
    let text = std::fs::read_to_string(ci_tools().join("env")).ok()?;
    let prefix = format!("export {name}=");
    text.lines()
        .rev()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.trim().trim_matches('"').to_owned())
}

/// Whether `url`'s `/models` answers (a stale URL is as good as none).
pub fn answers(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let addr = rest.split('/').next().unwrap_or("");
    let Ok(mut stream) = std::net::TcpStream::connect(addr) else {
        return false;
    };
    use std::io::{Read, Write};
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let path = format!(
        "/{}/models",
        rest.split_once('/')
            .map_or("", |(_, p)| p)
            .trim_end_matches('/')
    );
    let req = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    let mut head = [0u8; 12];
    stream.write_all(req.as_bytes()).is_ok()
        && stream.read_exact(&mut head).is_ok()
        && head.starts_with(b"HTTP/1.")
        && &head[9..12] == b"200"
}

/// Waits until `url` answers, up to `limit`; on giving up, the tail of the server's log
/// (written by the installer) is in the error.
pub fn wait_until_answering(url: &str, limit: Duration) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    loop {
        if answers(url) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            let log = std::fs::read_to_string(ci_tools().join("llm-server/server.log"))
                .unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(30).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            return Err(format!(
                "the local model server at {url} did not answer within {limit:?}; its log ends:\n{}",
                tail.join("\n")
            ));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}
