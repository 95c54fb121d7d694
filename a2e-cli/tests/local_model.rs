//! The local model server that `.ci/install-llm.sh` starts (llama-cpp-python's
//! OpenAI-compatible server with SmolLM2-135M): where it is, and whether it answers.
//! The installer runs it under a loop that starts it again if it exits, so a test that
//! finds it down waits a while for it to come back before it fails.

pub use a2e_test_kit::ci_tools::setting;
use std::time::{Duration, Instant};

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
            let log = std::fs::read_to_string(
                a2e_test_kit::ci_tools::dir().join("llm-server/server.log"),
            )
            .unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            let tail = &lines[lines.len().saturating_sub(30)..];
            return Err(format!(
                "the local model server at {url} did not answer within {limit:?}; its log ends:\n{}",
                tail.join("\n")
            ));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}
