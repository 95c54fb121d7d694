//! Tests of process groups, capture and supervision.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::*;
use crate::error::HostError;

fn inherit() -> Vec<String> {
    DEFAULT_INHERITED_ENV
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
}

/// `sh -c script` spawned in a process group of its own.
fn spawn_sh(script: &str) -> GroupChild {
    let sh = resolve_program("sh").unwrap();
    let argv = ["sh".to_owned(), "-c".to_owned(), script.to_owned()];
    let mut cmd = command(
        &Launcher::default(),
        &sh,
        &argv,
        Path::new("/"),
        &[],
        false,
        &inherit(),
    );
    spawn_group(&mut cmd).unwrap()
}

fn line(text: &str) -> Line {
    Line {
        stream: StreamKind::Stdout,
        text: text.into(),
        newline: true,
    }
}

#[test]
fn allow_list_is_exact() {
    let allow = vec!["echo".to_owned(), "/bin/cat".to_owned()];
    assert!(check_allowed(&allow, "echo").is_ok());
    assert!(check_allowed(&allow, "/bin/cat").is_ok());
    for bad in ["/bin/echo", "./echo", "cat", "", "echo "] {
        let err = check_allowed(&allow, bad).unwrap_err();
        assert!(matches!(err, HostError::Denied(_)), "{bad}: {err:?}");
    }
}

#[test]
fn env_conversion_and_refusals() {
    let env: Map<String, Value> = serde_json::from_str(r#"{"A":"x","N":3,"B":true}"#).unwrap();
    let pairs = env_pairs(&env).unwrap();
    assert_eq!(
        pairs,
        vec![
            ("A".to_owned(), "x".to_owned()),
            ("N".to_owned(), "3".to_owned()),
            ("B".to_owned(), "true".to_owned())
        ]
    );
    let env: Map<String, Value> = serde_json::from_str(r#"{"LD_PRELOAD":"x.so"}"#).unwrap();
    assert!(matches!(env_pairs(&env), Err(HostError::Denied(_))));
    let env: Map<String, Value> = serde_json::from_str(r#"{"A":[1],"B=C":"x"}"#).unwrap();
    match env_pairs(&env) {
        Err(HostError::Schema { violations, .. }) => assert_eq!(violations.len(), 2),
        other => panic!("{other:?}"),
    }
}

#[test]
fn bare_names_resolve_in_the_host_path() {
    let sh = resolve_program("sh").unwrap();
    assert!(sh.is_absolute() && sh.ends_with("sh"), "{sh:?}");
    assert_eq!(resolve_program("./x").unwrap(), PathBuf::from("./x"));
    assert!(resolve_program("surely-no-such-program-a2e").is_none());
}

#[test]
fn group_zero_and_one_are_never_signalled() {
    assert!(kill_group(0, Signal::SIGKILL).is_err());
    assert!(kill_group(1, Signal::SIGKILL).is_err());
}

#[test]
fn capture_cuts_at_the_cap_on_a_char_boundary() {
    let mut c = Captured::new(Some(6), true);
    assert_eq!(c.admit(line("abc")).unwrap().text, "abc");
    let cut = c.admit(line("dé")).unwrap();
    assert_eq!(cut.text, "d");
    assert!(!cut.newline);
    assert!(c.truncated);
    assert!(c.admit(line("more")).is_none());
    assert_eq!(c.text, "abc\nd");
    assert_eq!(c.bytes, 5);
}

#[test]
fn capture_without_cap_or_keep() {
    let mut c = Captured::new(None, false);
    for _ in 0..100 {
        assert!(c.admit(line("xxxxxxxxxx")).is_some());
    }
    assert!(!c.truncated);
    assert!(c.text.is_empty());
    assert_eq!(c.bytes, 1100);
}

#[tokio::test]
async fn lines_are_split_stripped_and_lossy() {
    let mut data = b"one\r\ntwo\n\xffbad\n".to_vec();
    data.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES + 10));
    let (tx, mut rx) = mpsc::channel(16);
    forward_lines(&data[..], StreamKind::Stderr, tx)
        .await
        .unwrap();
    let mut got = Vec::new();
    while let Some(l) = rx.recv().await {
        got.push(l);
    }
    assert_eq!(got.len(), 5);
    assert_eq!(got[0].text, "one");
    assert_eq!(got[1].text, "two");
    assert_eq!(got[2].text, "\u{fffd}bad");
    assert_eq!(got[3].text.len(), MAX_LINE_BYTES);
    assert!(!got[3].newline);
    assert_eq!(got[4].text.len(), 10);
    assert!(got.iter().all(|l| l.stream == StreamKind::Stderr));
}

#[tokio::test]
async fn supervise_collects_output_and_kills_leftovers() {
    let child = spawn_sh("echo out; echo err >&2; sleep 30 & echo $!");
    let mut seen = Vec::new();
    let outcome = supervise(
        child,
        RunLimits {
            timeout: Some(Duration::from_secs(20)),
            keep_output: true,
            ..RunLimits::default()
        },
        |l| {
            seen.push(l);
            async {}
        },
    )
    .await
    .unwrap();
    assert_eq!(outcome.ending, Ending::Exited);
    assert_eq!(outcome.exit_code(), Some(0));
    assert_eq!(outcome.stderr.text, "err\n");
    let mut lines = outcome.stdout.text.lines();
    assert_eq!(lines.next(), Some("out"));
    let bg: u32 = lines.next().unwrap().parse().unwrap();
    assert_eq!(seen.len(), 3);
    // The background sleep was in the group and is gone with it.
    let gone = async {
        while pid_alive(bg) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), gone)
        .await
        .expect("background child still alive");
}

#[tokio::test]
async fn a_stuck_consumer_does_not_hold_off_the_timeout() {
    let child = spawn_sh("echo $$; sleep 30");
    let pid = child.pid();
    let limits = RunLimits {
        timeout: Some(Duration::from_secs(1)),
        ..RunLimits::default()
    };
    let outcome = tokio::time::timeout(
        Duration::from_secs(20),
        supervise(child, limits, |_| std::future::pending::<()>()),
    )
    .await
    .expect("supervise waited for a consumer that never takes a line")
    .unwrap();
    assert_eq!(outcome.ending, Ending::TimedOut);
    assert!(!pid_alive(pid));
}

#[tokio::test]
async fn a_slow_consumer_after_exit_loses_no_line() {
    let child = spawn_sh("echo 1; echo 2; echo 3");
    let mut seen = Vec::new();
    let outcome = supervise(child, RunLimits::default(), |l| {
        seen.push(l.text);
        tokio::time::sleep(Duration::from_millis(1500))
    })
    .await
    .unwrap();
    assert_eq!(outcome.ending, Ending::Exited);
    assert_eq!(seen, vec!["1", "2", "3"]);
}

#[tokio::test]
async fn dropping_the_guard_kills_the_group() {
    let sleep = resolve_program("sleep").unwrap();
    let argv = vec!["sleep".to_owned(), "30".to_owned()];
    let mut cmd = command(
        &Launcher::default(),
        &sleep,
        &argv,
        Path::new("/"),
        &[],
        false,
        &inherit(),
    );
    let child = spawn_group(&mut cmd).unwrap();
    let pid = child.pid();
    assert!(pid_alive(pid));
    drop(child);
    let gone = async {
        while pid_alive(pid) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), gone)
        .await
        .expect("process survived its guard");
}
