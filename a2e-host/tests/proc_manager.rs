//! The proc capability: spawn, read events, write, kill, status, limits,
//! timeouts, session isolation and the end of a session.

use crate::proc_support;

use std::sync::Arc;

use a2e_host::EventStream;
use a2e_host::HostError;
use a2e_host::proc::ProcManager;
use a2e_host::proc::pid_alive;
use a2e_proto::{ErrorCode, ProcKillRequest, ProcStatusRequest, ProcWriteRequest, StreamType};
use serde_json::{Map, Value, json};

/// Every event up to and including `killed`.
use proc_support::*;

#[tokio::test]
async fn spawn_streams_lines_then_a_killed_event() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    let (tx, mut rx) = EventStream::channel(64);
    let req = spawn_req(&["sh", "-c", "echo one; echo two >&2; echo three"]);
    let resp = m.spawn("s1", &req, tx).await.unwrap();
    assert!(resp.ok);
    assert_eq!(resp.req_id, req.id);
    assert!(resp.pid > 1);
    assert!(
        resp.proc_id.starts_with("p-") && resp.proc_id.len() == 10,
        "{}",
        resp.proc_id
    );

    let events = events_until_end(&mut rx).await;
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (0..events.len() as u64).collect::<Vec<_>>());
    assert!(
        events
            .iter()
            .all(|e| e.req_id == req.id && e.proc_id == resp.proc_id)
    );
    let stdout: Vec<&str> = events
        .iter()
        .filter(|e| e.stream_type == StreamType::STDOUT)
        .map(|e| e.data["text"].as_str().unwrap())
        .collect();
    assert_eq!(stdout, vec!["one", "three"]);
    let stderr: Vec<&str> = events
        .iter()
        .filter(|e| e.stream_type == StreamType::STDERR)
        .map(|e| e.data["text"].as_str().unwrap())
        .collect();
    assert_eq!(stderr, vec!["two"]);
    let last = events.last().unwrap();
    assert_eq!(last.data["code"], 0);
    assert_eq!(state(&m, "s1", &resp.proc_id), "stopped");
}

#[tokio::test]
async fn many_lines_keep_their_order_and_seq() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    let (tx, mut rx) = EventStream::channel(4);
    let script = "i=1; while [ $i -le 200 ]; do echo $i; echo e$i >&2; i=$((i+1)); done";
    m.spawn("s", &spawn_req(&["sh", "-c", script]), tx)
        .await
        .unwrap();
    let events = events_until_end(&mut rx).await;
    assert_eq!(events.len(), 401);
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.seq, i as u64);
    }
    let stdout: Vec<String> = events
        .iter()
        .filter(|e| e.stream_type == StreamType::STDOUT)
        .map(|e| e.data["text"].as_str().unwrap().to_owned())
        .collect();
    let expected: Vec<String> = (1..=200).map(|i| i.to_string()).collect();
    assert_eq!(stdout, expected);
}

#[tokio::test]
async fn write_feeds_stdin_and_eof_ends_cat() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    let (tx, mut rx) = EventStream::channel(64);
    let resp = m.spawn("s", &spawn_req(&["cat"]), tx).await.unwrap();
    let write = |data: &str, eof: bool| ProcWriteRequest {
        proc_id: resp.proc_id.clone(),
        data: data.into(),
        eof,
        ..ProcWriteRequest::default()
    };
    let w = m.write("s", &write("hello\n", false)).await.unwrap();
    assert!(w.ok);
    assert_eq!(w.pid, resp.pid);
    let e = next_event(&mut rx).await;
    assert_eq!(e.stream_type, StreamType::STDOUT);
    assert_eq!(e.data["text"], "hello");
    assert_eq!(state(&m, "s", &resp.proc_id), "running");

    m.write("s", &write("bye\n", true)).await.unwrap();
    let events = events_until_end(&mut rx).await;
    assert_eq!(events[0].data["text"], "bye");
    assert_eq!(events.last().unwrap().data["code"], 0);
    assert_eq!(state(&m, "s", &resp.proc_id), "stopped");

    let err = m.write("s", &write("late\n", false)).await.unwrap_err();
    assert_eq!(proc_code(&err), Some(ErrorCode::PROC_DEAD), "{err:?}");
}

#[tokio::test]
async fn stdin_mode_null_gives_end_of_file_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    let (tx, mut rx) = EventStream::channel(64);
    let mut req = spawn_req(&["cat"]);
    req.stdin_mode = "null".into();
    let resp = m.spawn("s", &req, tx).await.unwrap();
    let events = events_until_end(&mut rx).await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].data["code"], 0);
    let _ = resp;

    let mut bad = spawn_req(&["cat"]);
    bad.stdin_mode = "file".into();
    let (tx, _rx) = EventStream::channel(1);
    let err = m.spawn("s", &bad, tx).await.unwrap_err();
    assert!(matches!(err, HostError::Schema { .. }), "{err:?}");
}

#[tokio::test]
async fn kill_stops_a_process_and_reports_its_state() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    let (tx, mut rx) = EventStream::channel(64);
    let resp = m
        .spawn("s", &spawn_req(&["sleep", "30"]), tx)
        .await
        .unwrap();
    let kill = |signal: &str| ProcKillRequest {
        proc_id: resp.proc_id.clone(),
        signal: signal.into(),
        ..ProcKillRequest::default()
    };
    let err = m.kill("s", &kill("SIGHUP")).await.unwrap_err();
    assert!(matches!(err, HostError::Schema { .. }), "{err:?}");
    assert_eq!(state(&m, "s", &resp.proc_id), "running");

    let k = m.kill("s", &kill("SIGTERM")).await.unwrap();
    assert!(k.ok);
    assert_eq!(
        k.state, "stopped",
        "a kill that was asked for stops, not crashes"
    );
    let events = events_until_end(&mut rx).await;
    let end = events.last().unwrap();
    assert_eq!(end.data["code"], Value::Null);
    assert_eq!(end.data["signal"], 15);
    assert_gone(resp.pid).await;

    let again = m.kill("s", &kill("SIGKILL")).await.unwrap();
    assert!(!again.ok, "nothing to signal any more");
    assert_eq!(again.state, "stopped");
}

#[tokio::test]
async fn failures_crash_and_timeouts_time_out() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    let (tx, mut rx) = EventStream::channel(64);
    let crash = m
        .spawn("s", &spawn_req(&["sh", "-c", "exit 3"]), tx.clone())
        .await
        .unwrap();
    let events = events_until_end(&mut rx).await;
    assert_eq!(events.last().unwrap().data["code"], 3);
    assert_eq!(state(&m, "s", &crash.proc_id), "crashed");

    let killed_by_itself = m
        .spawn("s", &spawn_req(&["sh", "-c", "kill -9 $$"]), tx.clone())
        .await
        .unwrap();
    events_until_end(&mut rx).await;
    assert_eq!(state(&m, "s", &killed_by_itself.proc_id), "crashed");

    let mut req = spawn_req(&["sh", "-c", "sleep 30 & echo $!; wait"]);
    req.timeout = 1;
    let slow = m.spawn("s", &req, tx).await.unwrap();
    let events = events_until_end(&mut rx).await;
    let grandchild: u32 = events[0].data["text"].as_str().unwrap().parse().unwrap();
    assert_eq!(events.last().unwrap().stream_type, StreamType::KILLED);
    assert_eq!(state(&m, "s", &slow.proc_id), "timedout");
    assert_gone(slow.pid).await;
    assert_gone(grandchild).await;
}

#[tokio::test]
async fn status_of_all_processes_is_a_json_object() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    let (tx, mut rx) = EventStream::channel(64);
    let a = m
        .spawn("s", &spawn_req(&["echo", "x"]), tx.clone())
        .await
        .unwrap();
    events_until_end(&mut rx).await;
    let b = m
        .spawn("s", &spawn_req(&["sleep", "30"]), tx)
        .await
        .unwrap();
    let all = m.status("s", &ProcStatusRequest::default()).unwrap();
    let parsed: Map<String, Value> = serde_json::from_str(&all.status).unwrap();
    assert_eq!(
        Value::Object(parsed),
        json!({a.proc_id.clone(): "stopped", b.proc_id.clone(): "running"})
    );
    let other = m.status("other", &ProcStatusRequest::default()).unwrap();
    assert_eq!(other.status, "{}");
    m.end_session("s");
}

#[tokio::test]
async fn the_live_process_limit_is_per_session() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.commands.proc_limit = 2;
    let m = ProcManager::new(Arc::new(cfg));
    let (tx, mut rx) = EventStream::channel(64);
    let first = m
        .spawn("s", &spawn_req(&["sleep", "30"]), tx.clone())
        .await
        .unwrap();
    m.spawn("s", &spawn_req(&["sleep", "30"]), tx.clone())
        .await
        .unwrap();
    let err = m
        .spawn("s", &spawn_req(&["sleep", "30"]), tx.clone())
        .await
        .unwrap_err();
    assert_eq!(proc_code(&err), Some(ErrorCode::PROC_LIMIT), "{err:?}");
    assert_eq!(m.live_count("s"), 2);

    // Another session has its own budget.
    m.spawn("t", &spawn_req(&["sleep", "30"]), tx.clone())
        .await
        .unwrap();

    // Killing one frees a slot.
    m.kill(
        "s",
        &ProcKillRequest {
            proc_id: first.proc_id.clone(),
            signal: "SIGKILL".into(),
            ..ProcKillRequest::default()
        },
    )
    .await
    .unwrap();
    let _ = next_event(&mut rx).await;
    m.spawn("s", &spawn_req(&["sleep", "30"]), tx)
        .await
        .unwrap();
    m.end_session("s");
    m.end_session("t");
    assert_eq!(m.live_count("s"), 0);
}

#[tokio::test]
async fn sessions_cannot_see_each_others_processes() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    let (tx, _rx) = EventStream::channel(64);
    let resp = m
        .spawn("a", &spawn_req(&["sleep", "30"]), tx)
        .await
        .unwrap();
    let status = m.status(
        "b",
        &ProcStatusRequest {
            proc_id: resp.proc_id.clone(),
            ..ProcStatusRequest::default()
        },
    );
    assert_eq!(
        proc_code(&status.unwrap_err()),
        Some(ErrorCode::UNKNOWN_PROC)
    );
    let kill = m
        .kill(
            "b",
            &ProcKillRequest {
                proc_id: resp.proc_id.clone(),
                ..ProcKillRequest::default()
            },
        )
        .await;
    assert_eq!(proc_code(&kill.unwrap_err()), Some(ErrorCode::UNKNOWN_PROC));
    let write = m
        .write(
            "b",
            &ProcWriteRequest {
                proc_id: resp.proc_id.clone(),
                data: "x".into(),
                ..ProcWriteRequest::default()
            },
        )
        .await;
    assert_eq!(
        proc_code(&write.unwrap_err()),
        Some(ErrorCode::UNKNOWN_PROC)
    );
    assert!(
        pid_alive(resp.pid),
        "b's attempts did not touch a's process"
    );
    m.end_session("b");
    assert!(pid_alive(resp.pid), "ending b leaves a alone");
    m.end_session("a");
    assert_gone(resp.pid).await;
}

#[tokio::test]
async fn ending_a_session_kills_every_group_including_grandchildren() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    let (tx, mut rx) = EventStream::channel(64);
    let sleeper = m
        .spawn("s", &spawn_req(&["sleep", "30"]), tx.clone())
        .await
        .unwrap();
    let shell = m
        .spawn(
            "s",
            &spawn_req(&["sh", "-c", "sleep 30 & echo $!; sleep 30"]),
            tx,
        )
        .await
        .unwrap();
    let first = next_event(&mut rx).await;
    assert_eq!(first.proc_id, shell.proc_id);
    let grandchild: u32 = first.data["text"].as_str().unwrap().parse().unwrap();
    for pid in [sleeper.pid, shell.pid, grandchild] {
        assert!(pid_alive(pid), "{pid} should run before the session ends");
    }

    m.end_session("s");
    for pid in [sleeper.pid, shell.pid, grandchild] {
        assert_gone(pid).await;
    }
    m.end_session("s");
    let err = m
        .status(
            "s",
            &ProcStatusRequest {
                proc_id: sleeper.proc_id.clone(),
                ..ProcStatusRequest::default()
            },
        )
        .unwrap_err();
    assert_eq!(proc_code(&err), Some(ErrorCode::UNKNOWN_PROC));
}

#[tokio::test]
async fn dropping_the_manager_kills_its_processes() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    let (tx, _rx) = EventStream::channel(64);
    let resp = m
        .spawn("s", &spawn_req(&["sleep", "30"]), tx)
        .await
        .unwrap();
    drop(m);
    assert_gone(resp.pid).await;
}

#[tokio::test]
async fn spawn_enforces_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let m = manager(dir.path());
    let (tx, mut rx) = EventStream::channel(64);

    for cmd in [&["ls"][..], &["/bin/sleep", "1"][..]] {
        let err = m.spawn("s", &spawn_req(cmd), tx.clone()).await.unwrap_err();
        assert!(
            matches!(&err, HostError::Denied(msg) if msg.contains(cmd[0])),
            "{err:?}"
        );
    }
    let err = m.spawn("s", &spawn_req(&[]), tx.clone()).await.unwrap_err();
    assert!(matches!(err, HostError::Schema { .. }), "{err:?}");
    for cwd in ["..", "out", "/"] {
        let mut req = spawn_req(&["echo"]);
        req.cwd = cwd.into();
        let err = m.spawn("s", &req, tx.clone()).await.unwrap_err();
        assert!(matches!(err, HostError::Denied(_)), "{cwd}: {err:?}");
    }
    let mut req = spawn_req(&["echo"]);
    req.env.insert("LD_PRELOAD".into(), json!("evil.so"));
    let err = m.spawn("s", &req, tx.clone()).await.unwrap_err();
    assert!(matches!(err, HostError::Denied(_)), "{err:?}");

    let mut req = spawn_req(&["sh", "-c", "pwd; echo $GREETING"]);
    req.cwd = "sub".into();
    req.env.insert("GREETING".into(), json!("hi"));
    m.spawn("s", &req, tx).await.unwrap();
    let events = events_until_end(&mut rx).await;
    let canon = dir.path().canonicalize().unwrap().join("sub");
    assert_eq!(events[0].data["text"], canon.to_str().unwrap());
    assert_eq!(events[1].data["text"], "hi");
}
