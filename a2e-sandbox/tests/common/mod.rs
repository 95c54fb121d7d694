//! Helpers shared by the integration tests.
#![allow(dead_code)]

use a2e_test_kit::skip;

use std::path::PathBuf;
use std::time::Duration;

use a2e_sandbox::{Sandbox, SandboxConfig, Wrapper};

/// The wrapper binary built with the tests.
pub fn wrapper() -> Wrapper {
    Wrapper::binary(env!("CARGO_BIN_EXE_a2e-sandbox-exec"))
}

/// A sandbox with `config`.
pub async fn sandbox_with(config: SandboxConfig) -> Sandbox {
    Sandbox::new(wrapper(), config).await.expect("probe")
}

/// A sandbox with every layer the host offers.
pub async fn sandbox() -> Sandbox {
    sandbox_with(SandboxConfig::default()).await
}

/// A program from `PATH`; `None` (after saying so, or failing under CI) when missing.
pub fn need(test: &str, program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let found = std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file());
    if found.is_none() {
        if std::env::var_os("CI").is_some() {
            panic!("{test} needs `{program}`, which is not installed");
        }
        skip::skipped(&format!(
            "{test} needs {program} (install it from the system's packages)"
        ));
    }
    found
}

/// Says loudly that a layer this host lacks keeps a test from checking it.
pub fn skip_layer(test: &str, layer: &str) {
    skip::skipped(&format!(
        "{test} needs the `{layer}` sandbox layer, which this host lacks"
    ));
}

/// `(pid, pgrp, comm)` of every process, read from /proc (zombies left out).
pub fn processes() -> Vec<(u32, u32, String)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = stat[open + 1..close].to_owned();
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        if fields.first().is_some_and(|s| *s == "Z" || *s == "X") {
            continue;
        }
        let Some(pgrp) = fields.get(2).and_then(|s| s.parse().ok()) else {
            continue;
        };
        out.push((pid, pgrp, comm));
    }
    out
}

/// The live processes of group `pgid`.
pub fn group(pgid: u32) -> Vec<(u32, String)> {
    processes()
        .into_iter()
        .filter(|(_, g, _)| *g == pgid)
        .map(|(p, _, c)| (p, c))
        .collect()
}

/// Whether `pid` is a live process (`kill -0`, zombies count as gone).
pub fn alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    if nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None).is_err() {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_none_or(|s| s != "Z" && s != "X"),
        Err(_) => false,
    }
}

/// Polls `cond` every 50 ms for at most `limit`; whether it came true.
pub fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    loop {
        if cond() {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits (up to 20 s) until group `pgid` holds at least `n` processes named `comm`;
/// returns every pid of the group then.
pub fn wait_group(pgid: u32, comm: &str, n: usize) -> Vec<u32> {
    let mut pids = Vec::new();
    let ok = wait_for(Duration::from_secs(20), || {
        let g = group(pgid);
        pids = g.iter().map(|(p, _)| *p).collect();
        g.iter().filter(|(_, c)| c == comm).count() >= n
    });
    assert!(ok, "group {pgid} never had {n} `{comm}`: {:?}", group(pgid));
    pids
}
