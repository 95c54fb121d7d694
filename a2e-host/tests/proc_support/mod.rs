//! What the process-manager tests share: a configuration, a manager, requests,
//! and readers of the events a process streams.
#![allow(dead_code)] // each test file uses a part

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use a2e_host::proc::ProcManager;
use a2e_host::proc::pid_alive;
use a2e_host::{EventReceiver, Outbound};
use a2e_host::{HostConfig, HostError};
use a2e_proto::{
    ErrorCode, Message, ProcReadEvent, ProcSpawnRequest, ProcStatusRequest, StreamType,
};

pub fn config(root: &Path) -> HostConfig {
    let mut c = HostConfig {
        root: root.to_path_buf(),
        ..HostConfig::default()
    };
    c.commands.allow = ["echo", "cat", "sleep", "sh"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    c
}

pub fn manager(root: &Path) -> ProcManager {
    ProcManager::new(Arc::new(config(root)))
}

pub fn spawn_req(cmd: &[&str]) -> ProcSpawnRequest {
    ProcSpawnRequest {
        cmd: cmd.iter().map(|s| (*s).to_owned()).collect(),
        ..ProcSpawnRequest::default()
    }
}

pub fn proc_code(err: &HostError) -> Option<ErrorCode> {
    match err {
        HostError::Proc { code, .. } => Some(code.clone()),
        _ => None,
    }
}

/// The next `proc/read/event`, within a generous bound.
pub async fn next_event(rx: &mut EventReceiver) -> ProcReadEvent {
    match tokio::time::timeout(Duration::from_secs(20), rx.recv()).await {
        Ok(Some(Outbound::Message(Message::ProcReadEvent(e)))) => e,
        other => panic!("expected a proc/read/event, got {other:?}"),
    }
}

/// Every event up to and including `killed`.
pub async fn events_until_end(rx: &mut EventReceiver) -> Vec<ProcReadEvent> {
    let mut out = Vec::new();
    loop {
        let e = next_event(rx).await;
        let end = e.stream_type == StreamType::KILLED;
        out.push(e);
        if end {
            return out;
        }
    }
}

pub async fn assert_gone(pid: u32) {
    let gone = async {
        while pid_alive(pid) {
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), gone)
        .await
        .unwrap_or_else(|_| panic!("process {pid} is still alive"));
}

pub fn state(m: &ProcManager, session: &str, proc_id: &str) -> String {
    m.status(
        session,
        &ProcStatusRequest {
            proc_id: proc_id.into(),
            ..ProcStatusRequest::default()
        },
    )
    .unwrap()
    .status
}
