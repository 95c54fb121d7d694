//! The exec wrapper binary on its own: bad plans, a parent that is not the
//! expected one, and the policy checks of the host side.

mod common;

use std::process::Command;

use a2e_sandbox::{Policy, SETUP_FAILED_EXIT, SETUP_FAILED_MARKER, SandboxError, setup_failure};
use common::sandbox;

fn wrapper(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_a2e-sandbox-exec"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_invocations_are_setup_failures_that_say_why() {
    let cases: [(&[&str], &str); 5] = [
        (&[], "expected `--`"),
        (&["{}", "--", "true"], "the plan is not valid"),
        (&["not json", "--", "true"], "the plan is not valid"),
        (&["{\"v\":7}", "--", "true"], "the plan is not valid"),
        (&["--init", "x", "--", "true"], "--init expects"),
    ];
    for (args, want) in cases {
        let (code, stdout, stderr) = wrapper(args);
        assert_eq!(code, SETUP_FAILED_EXIT, "{args:?}");
        assert!(stdout.is_empty());
        assert!(stderr.starts_with(SETUP_FAILED_MARKER), "{stderr}");
        let why = setup_failure(stderr.as_bytes()).unwrap();
        assert!(why.contains(want), "{args:?}: {why}");
    }
}

#[test]
fn the_probe_reports_json() {
    let (code, stdout, _) = wrapper(&["--probe"]);
    assert_eq!(code, 0);
    let caps: a2e_sandbox::Capabilities = serde_json::from_str(stdout.trim()).unwrap();
    assert!(caps.parent_death_signal.is_available());
}

/// A plan as the host side builds it, with `parent_pid` replaced.
async fn plan_with_parent(parent: u32) -> String {
    let sb = sandbox().await;
    let dir = tempfile::tempdir().unwrap();
    let cmd = sb
        .command(&Policy::process(dir.path()), "true", [] as [&str; 0])
        .unwrap();
    let plan = cmd
        .as_std()
        .get_args()
        .next()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let mut value: serde_json::Value = serde_json::from_str(&plan).unwrap();
    assert_eq!(value["parent_pid"], std::process::id());
    value["parent_pid"] = parent.into();
    value["cwd"] = "/".into();
    value.to_string()
}

#[tokio::test]
async fn the_wrapper_stops_when_its_parent_is_not_the_host() {
    // Run directly by this test, the wrapper's parent is this process: fine.
    let plan = plan_with_parent(std::process::id()).await;
    let (code, _, stderr) = wrapper(&[&plan, "--", "sh", "-c", "exit 4"]);
    assert_eq!(code, 4, "{stderr}");
    // A plan naming another parent means the host is gone: nothing runs.
    let plan = plan_with_parent(1).await;
    let (code, stdout, stderr) = wrapper(&[&plan, "--", "sh", "-c", "echo ran"]);
    assert_eq!(code, SETUP_FAILED_EXIT);
    assert!(stdout.is_empty());
    assert!(
        setup_failure(stderr.as_bytes())
            .unwrap()
            .contains("is gone"),
        "{stderr}"
    );
}

#[tokio::test]
async fn the_working_directory_must_be_an_absolute_directory() {
    let sb = sandbox().await;
    for dir in ["relative/dir", "/surely/not/here/a2e"] {
        let err = sb
            .command(&Policy::process(dir), "true", [] as [&str; 0])
            .unwrap_err();
        assert!(matches!(err, SandboxError::Policy(_)), "{err}");
        assert!(err.to_string().contains(dir), "{err}");
    }
}
