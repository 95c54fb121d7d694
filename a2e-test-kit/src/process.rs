//! Processes seen from a test: whether one still runs, which ones run a
//! command, and polling until a condition holds.

use std::time::Duration;

/// Whether a process with `pid` still runs (zombies count as gone).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

/// Pids of processes whose command line contains `needle`.
pub fn pids_running(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in dir.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains(needle) && alive(pid) {
                found.push(pid);
            }
        }
    }
    found
}

/// Polls `check` until it holds, failing after `limit`.
pub async fn eventually(limit: Duration, mut check: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !check() {
        assert!(
            start.elapsed() < limit,
            "condition not met within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_alive_until_it_is_reaped() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(alive(pid));
        // The child shows its own command line once it has executed `sleep`,
        // which may be a moment after `spawn` returned.
        let start = std::time::Instant::now();
        while !pids_running("sleep 30").contains(&pid) {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "{pid} never listed"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!alive(pid));
    }

    #[tokio::test]
    async fn eventually_returns_once_the_condition_holds() {
        let mut polls = 0;
        eventually(Duration::from_secs(5), || {
            polls += 1;
            polls == 3
        })
        .await;
        assert_eq!(polls, 3);
    }
}
