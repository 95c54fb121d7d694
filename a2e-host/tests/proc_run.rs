//! `ProcManager::run_to_exit`: exit codes, capped output, timeouts, cancellation,
//! the live-process limit and the group killed when a run is dropped.

use crate::proc_support;

use std::sync::Arc;
use std::time::Duration;

use a2e_host::HostError;
use a2e_host::proc::ProcManager;
use a2e_proto::ErrorCode;
use serde_json::Map;
use tokio_util::sync::CancellationToken;

/// Every event up to and including `killed`.
use proc_support::*;

#[tokio::test]
async fn run_to_exit_returns_code_and_capped_output() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.commands.output_max_bytes = 8;
    let m = ProcManager::new(Arc::new(cfg));
    let cmd = |args: &[&str]| args.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let out = m
        .run_to_exit(
            "s",
            cmd(&["sh", "-c", "echo hi; echo 0123456789 >&2; exit 4"]),
            "",
            Map::new(),
            Some(Duration::from_secs(20)),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(out["exit_code"], 4);
    assert_eq!(out["stdout"], "hi\n");
    assert_eq!(out["stderr"], "01234567");
    assert_eq!(out["truncated"], true);
    assert_eq!(m.live_count("s"), 0, "a finished run no longer counts");

    let err = m
        .run_to_exit(
            "s",
            cmd(&["ls"]),
            "",
            Map::new(),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, HostError::Denied(_)), "{err:?}");
    let err = m
        .run_to_exit(
            "s",
            cmd(&["echo"]),
            "../",
            Map::new(),
            None,
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, HostError::Denied(_)), "{err:?}");
}

#[tokio::test]
async fn run_to_exit_kills_the_group_on_timeout_and_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let m = manager(dir.path());
    let script = vec![
        "sh".to_owned(),
        "-c".to_owned(),
        "sleep 30 & echo $! > pid; wait".to_owned(),
    ];
    let err = m
        .run_to_exit(
            "s",
            script.clone(),
            "",
            Map::new(),
            Some(Duration::from_secs(1)),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(err, HostError::Timeout(1));
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_gone(pid).await;
    std::fs::remove_file(&pid_file).unwrap();

    let cancel = CancellationToken::new();
    let run = m.run_to_exit("s", script, "", Map::new(), None, cancel.clone());
    let canceller = async {
        for _ in 0..500 {
            if std::fs::read_to_string(&pid_file).is_ok_and(|s| s.ends_with('\n')) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        cancel.cancel();
    };
    let (result, ()) = tokio::join!(run, canceller);
    assert_eq!(result.unwrap_err(), HostError::Cancelled);
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_gone(pid).await;
}

#[tokio::test]
async fn run_to_exit_counts_towards_the_limit_and_dies_with_its_session() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.commands.proc_limit = 1;
    let m = Arc::new(ProcManager::new(Arc::new(cfg)));
    let run = {
        let m = m.clone();
        tokio::spawn(async move {
            m.run_to_exit(
                "s",
                vec!["sleep".into(), "30".into()],
                "",
                Map::new(),
                None,
                CancellationToken::new(),
            )
            .await
        })
    };
    for _ in 0..500 {
        if m.live_count("s") == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(m.live_count("s"), 1);
    let (tx, _rx) = a2e_host::EventStream::channel(4);
    let err = m.spawn("s", &spawn_req(&["echo"]), tx).await.unwrap_err();
    assert_eq!(proc_code(&err), Some(ErrorCode::PROC_LIMIT), "{err:?}");

    m.end_session("s");
    let result = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("the run did not end with its session")
        .unwrap();
    assert_eq!(result.unwrap_err(), HostError::Cancelled);
}

#[tokio::test]
async fn dropping_a_run_kills_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let m = Arc::new(manager(dir.path()));
    let task = {
        let m = m.clone();
        tokio::spawn(async move {
            m.run_to_exit(
                "s",
                vec![
                    "sh".into(),
                    "-c".into(),
                    "sleep 30 & echo $! > pid; wait".into(),
                ],
                "",
                Map::new(),
                None,
                CancellationToken::new(),
            )
            .await
        })
    };
    for _ in 0..500 {
        if std::fs::read_to_string(&pid_file).is_ok_and(|s| s.ends_with('\n')) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    task.abort();
    let _ = task.await;
    assert_gone(pid).await;
    assert_eq!(m.live_count("s"), 0);
}
