//! The sandboxed-skill runner over real programs: arguments on stdin, NDJSON
//! events and a final line on stdout, and each way a run can fail.

mod common;

use std::time::Duration;

use a2e_sandbox::{Limits, Policy, SkillError, SkillEvent, SkillOptions, Termination, run_skill};
use common::sandbox;
use serde_json::json;

fn policy(dir: &tempfile::TempDir) -> Policy {
    let mut p = Policy::skill(dir.path());
    p.limits = Limits {
        address_space_bytes: Some(512 << 20),
        cpu_seconds: Some(30),
        open_files: Some(64),
        processes: None,
    };
    p
}

async fn run_sh(
    script: &str,
    opts: &SkillOptions,
) -> (
    Result<a2e_sandbox::SkillOutput, SkillError>,
    Vec<SkillEvent>,
) {
    let sb = sandbox().await;
    let dir = tempfile::tempdir().unwrap();
    let mut events = Vec::new();
    let out = run_skill(
        &sb,
        &policy(&dir),
        "sh",
        ["-c", script],
        &json!({"name": "a2e", "n": [1, 2]}),
        opts,
        |e| events.push(e),
    )
    .await;
    (out, events)
}

#[tokio::test]
async fn events_and_a_result() {
    let script = r#"
        read -r args
        echo '{"event":"progress","data":{"pct":50,"message":"half"}}'
        echo '{"event":"status"}'
        printf '{"result":{"echo":%s},"summary":"done"}\n' "$args"
    "#;
    let (out, events) = run_sh(script, &SkillOptions::default()).await;
    let out = out.unwrap();
    assert_eq!(out.result, json!({"echo": {"name": "a2e", "n": [1, 2]}}));
    assert_eq!(out.summary, Some(json!("done")));
    assert_eq!(out.events, 2);
    assert_eq!(events[0].kind, "progress");
    assert_eq!(events[0].data, json!({"pct": 50, "message": "half"}));
    assert_eq!((events[1].kind.as_str(), events[1].seq), ("status", 1));
}

#[tokio::test]
async fn a_reported_error_keeps_its_code() {
    let script = r#"echo '{"error":{"code":"bad_input","message":"no name"}}'; exit 1"#;
    let (out, _) = run_sh(script, &SkillOptions::default()).await;
    match out.unwrap_err() {
        e @ SkillError::Reported { .. } => {
            assert_eq!(e.code(), "skill_error");
            let SkillError::Reported { code, message, .. } = e else {
                unreachable!()
            };
            assert_eq!(code.as_deref(), Some("bad_input"));
            assert_eq!(message, "no name");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_crash_is_sandbox_crash() {
    let script = r#"echo '{"event":"log","data":{"level":"info","message":"x"}}'; kill -SEGV $$"#;
    let (out, events) = run_sh(script, &SkillOptions::default()).await;
    let err = out.unwrap_err();
    assert_eq!(err.code(), "sandbox_crash", "{err}");
    assert!(matches!(
        err,
        SkillError::Terminated {
            termination: Termination::Signaled(11),
            ..
        }
    ));
    assert_eq!(events.len(), 1);
}

#[tokio::test]
async fn allocating_past_the_limit_is_out_of_memory() {
    let script = r#"read -r args; awk 'BEGIN { s = "x"; while (1) s = s s }'"#;
    let (out, _) = run_sh(script, &SkillOptions::default()).await;
    let err = out.unwrap_err();
    assert_eq!(err.code(), "out_of_memory", "{err:?}");
}

#[tokio::test]
async fn a_protocol_violation_stops_the_run() {
    let (out, _) = run_sh("echo not-json; sleep 300", &SkillOptions::default()).await;
    match out.unwrap_err() {
        SkillError::Protocol { message, .. } => {
            assert!(message.contains("line 1: not JSON"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    let opts = SkillOptions {
        max_events: 3,
        ..SkillOptions::default()
    };
    let (out, events) = run_sh(r#"while :; do echo '{"event":"log"}'; done"#, &opts).await;
    let err = out.unwrap_err();
    assert_eq!(err.code(), "skill_error");
    assert!(err.to_string().contains("more than 3 events"), "{err}");
    assert_eq!(events.len(), 3);
    let opts = SkillOptions {
        max_line_bytes: 1000,
        ..SkillOptions::default()
    };
    let (out, _) = run_sh("head -c 5000 /dev/zero | tr '\\0' x; sleep 300", &opts).await;
    assert!(
        out.unwrap_err()
            .to_string()
            .contains("longer than 1000 bytes")
    );
}

#[tokio::test]
async fn no_result_and_a_timeout() {
    let (out, _) = run_sh("read -r args; exit 0", &SkillOptions::default()).await;
    let err = out.unwrap_err();
    assert!(
        matches!(
            err,
            SkillError::Terminated {
                no_result: true,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(err.code(), "skill_error");

    let mut opts = SkillOptions::default();
    opts.run.timeout = Some(Duration::from_secs(1));
    let (out, _) = run_sh(r#"echo '{"event":"status"}'; sleep 300"#, &opts).await;
    let err = out.unwrap_err();
    assert_eq!(err.code(), "timeout", "{err:?}");
}
