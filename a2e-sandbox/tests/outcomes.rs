//! How real sandboxed children end: exit codes, crashes, out of memory, CPU
//! limit, timeout and cancellation (which kill the whole group).

mod common;

use std::time::Duration;

use a2e_sandbox::{Containment, Limits, Policy, RunOptions, SandboxConfig, Termination};
use common::{alive, need, sandbox, sandbox_with, wait_for, wait_group};

fn skill_policy(dir: &tempfile::TempDir) -> Policy {
    let mut p = Policy::skill(dir.path());
    p.limits = Limits {
        address_space_bytes: Some(512 << 20),
        cpu_seconds: Some(30),
        open_files: Some(64),
        processes: None,
    };
    p
}

#[tokio::test]
async fn exit_code_and_output() {
    let sb = sandbox().await;
    let dir = tempfile::tempdir().unwrap();
    let report = sb
        .run(
            &skill_policy(&dir),
            "sh",
            ["-c", "pwd; echo oops >&2; exit 3"],
            &RunOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(report.termination, Termination::Exited(3));
    let cwd = String::from_utf8(report.stdout).unwrap();
    assert_eq!(
        std::fs::canonicalize(cwd.trim()).unwrap(),
        std::fs::canonicalize(dir.path()).unwrap()
    );
    assert_eq!(report.stderr.text(), "oops\n");
}

#[tokio::test]
async fn stdin_reaches_the_program() {
    let sb = sandbox().await;
    let dir = tempfile::tempdir().unwrap();
    let opts = RunOptions {
        stdin: Some(b"one\ntwo\n".to_vec()),
        ..RunOptions::default()
    };
    let report = sb
        .run(&skill_policy(&dir), "wc", ["-l"], &opts)
        .await
        .unwrap();
    assert!(report.termination.success(), "{:?}", report.termination);
    assert_eq!(String::from_utf8_lossy(&report.stdout).trim(), "2");
}

#[tokio::test]
async fn a_program_that_kills_itself_is_a_crash_with_its_signal() {
    for config in [
        SandboxConfig::default(),
        SandboxConfig {
            namespaces: false,
            ..SandboxConfig::default()
        },
        SandboxConfig {
            bubblewrap: a2e_sandbox::BubblewrapUse::Prefer,
            ..SandboxConfig::default()
        },
    ] {
        let sb = sandbox_with(config).await;
        let dir = tempfile::tempdir().unwrap();
        for (sig, num) in [("SEGV", 11), ("TERM", 15), ("ABRT", 6)] {
            let script = format!("kill -{sig} $$; sleep 5");
            let report = sb
                .run(
                    &skill_policy(&dir),
                    "sh",
                    ["-c", &script],
                    &RunOptions::default(),
                )
                .await
                .unwrap();
            assert_eq!(
                report.termination,
                Termination::Signaled(num),
                "{sig} under {:?}",
                report.applied
            );
            assert_eq!(report.termination.error_code(), Some("sandbox_crash"));
        }
    }
}

#[tokio::test]
async fn allocating_past_the_limit_is_out_of_memory() {
    let sb = sandbox().await;
    let dir = tempfile::tempdir().unwrap();
    let policy = skill_policy(&dir);
    // awk doubles a string until an allocation fails.
    let report = sb
        .run(
            &policy,
            "awk",
            ["BEGIN { s = \"x\"; while (1) s = s s }"],
            &RunOptions::default(),
        )
        .await
        .unwrap();
    assert!(
        matches!(report.termination, Termination::OutOfMemory { .. }),
        "{:?}: {}",
        report.termination,
        report.stderr.text()
    );
    assert_eq!(report.termination.error_code(), Some("out_of_memory"));

    // The same program without the limit set is not told apart as out of memory.
    let mut unlimited = policy.clone();
    unlimited.limits.address_space_bytes = None;
    let report = sb
        .run(
            &unlimited,
            "sh",
            ["-c", "echo 'out of memory' >&2; exit 2"],
            &RunOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(report.termination, Termination::Exited(2));

    if let Some(python) = need("allocating_past_the_limit_is_out_of_memory", "python3") {
        let report = sb
            .run(
                &policy,
                &python,
                ["-c", "b = bytearray(2 * 1024 ** 3)"],
                &RunOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(
            report.termination,
            Termination::OutOfMemory {
                code: Some(1),
                signal: None
            },
            "{}",
            report.stderr.text()
        );
    }
}

#[tokio::test]
async fn the_cpu_limit_ends_a_busy_loop() {
    let sb = sandbox().await;
    let dir = tempfile::tempdir().unwrap();
    let mut policy = skill_policy(&dir);
    policy.limits.cpu_seconds = Some(1);
    let report = sb
        .run(
            &policy,
            "sh",
            ["-c", "while :; do :; done"],
            &RunOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(report.termination, Termination::CpuLimit);
    assert_eq!(report.termination.error_code(), Some("timeout"));
}

#[tokio::test]
async fn a_missing_program_is_a_setup_failure() {
    let sb = sandbox().await;
    let dir = tempfile::tempdir().unwrap();
    let report = sb
        .run(
            &skill_policy(&dir),
            "surely-no-such-program-a2e",
            [] as [&str; 0],
            &RunOptions::default(),
        )
        .await
        .unwrap();
    match report.termination {
        Termination::SetupFailed(why) => {
            assert!(why.contains("surely-no-such-program-a2e"), "{why}")
        }
        other => panic!("{other:?}"),
    }
}

/// Spawns `sh` with a background grandchild, waits until both sleeps run,
/// stops the run with `stop`, and checks that every process of the group is gone.
async fn group_dies(config: SandboxConfig, timeout: bool) {
    let sb = sandbox_with(config).await;
    let dir = tempfile::tempdir().unwrap();
    let policy = Policy::process(dir.path());
    let applied = sb.applied(&policy);
    let child = sb
        .spawn(&policy, "sh", ["-c", "sleep 300 & sleep 301"], false)
        .unwrap();
    let pgid = child.id().unwrap();
    let cancel = tokio_util::sync::CancellationToken::new();
    let opts = RunOptions {
        // Long enough for the group to start; the cancel case never reaches it.
        timeout: timeout.then_some(Duration::from_secs(6)),
        cancel: cancel.clone(),
        ..RunOptions::default()
    };
    let watcher = tokio::task::spawn_blocking(move || wait_group(pgid, "sleep", 2));
    let run = sb.supervise(&policy, child, &opts);
    tokio::pin!(run);
    let pids = tokio::select! {
        pids = watcher => pids.unwrap(),
        r = &mut run => panic!("the run ended before its group was seen: {r:?}"),
    };
    if !timeout {
        cancel.cancel();
    }
    let report = run.await.unwrap();
    let want = if timeout {
        Termination::TimedOut
    } else {
        Termination::Cancelled
    };
    assert_eq!(report.termination, want);
    assert!(pids.len() >= 3, "{pids:?}");
    let gone = tokio::task::spawn_blocking(move || {
        wait_for(Duration::from_secs(10), || pids.iter().all(|p| !alive(*p)))
    });
    assert!(gone.await.unwrap(), "processes left behind ({applied:?})");
}

#[tokio::test]
async fn a_timeout_kills_the_whole_group() {
    group_dies(SandboxConfig::default(), true).await;
    // Without namespaces the group kill alone must do it.
    group_dies(
        SandboxConfig {
            namespaces: false,
            bubblewrap: a2e_sandbox::BubblewrapUse::Never,
            ..SandboxConfig::default()
        },
        true,
    )
    .await;
}

#[tokio::test]
async fn cancelling_kills_the_whole_group() {
    let sb = sandbox().await;
    let dir = tempfile::tempdir().unwrap();
    if sb.capabilities().pid_namespace.is_available() {
        assert_eq!(
            sb.applied(&Policy::process(dir.path())).containment,
            Containment::PidNamespace
        );
    }
    group_dies(SandboxConfig::default(), false).await;
}

#[tokio::test]
async fn the_limits_are_those_of_the_policy() {
    let sb = sandbox().await;
    let dir = tempfile::tempdir().unwrap();
    let report = sb
        .run(
            &skill_policy(&dir),
            "sh",
            ["-c", "ulimit -n; ulimit -v; ulimit -t; ulimit -c"],
            &RunOptions::default(),
        )
        .await
        .unwrap();
    assert!(report.termination.success(), "{report:?}");
    // open files, address space in KiB, CPU seconds, core size.
    assert_eq!(
        String::from_utf8_lossy(&report.stdout),
        "64\n524288\n30\n0\n"
    );
}

#[tokio::test]
async fn a_sigterm_to_the_group_lets_the_program_finish_gracefully() {
    let sb = sandbox().await;
    let dir = tempfile::tempdir().unwrap();
    let policy = Policy::process(dir.path());
    let child = sb
        .spawn(
            &policy,
            "sh",
            [
                "-c",
                "trap 'echo graceful; exit 0' TERM; touch ready; while :; do sleep 0.1; done",
            ],
            false,
        )
        .unwrap();
    let pgid = child.id().unwrap();
    let ready = dir.path().join("ready");
    let signaller = tokio::task::spawn_blocking(move || {
        assert!(wait_for(Duration::from_secs(20), || ready.exists()));
        nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pgid as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
    });
    let report = sb
        .supervise(&policy, child, &RunOptions::default())
        .await
        .unwrap();
    signaller.await.unwrap();
    assert_eq!(report.termination, Termination::Exited(0), "{report:?}");
    assert_eq!(report.stdout, b"graceful\n");
}

#[tokio::test]
async fn the_program_starts_with_no_signal_blocked_or_ignored() {
    let sb = sandbox().await;
    let dir = tempfile::tempdir().unwrap();
    // The shell reads its own status (a child like grep could reset the mask).
    let script =
        "while read -r l; do case $l in SigBlk*|SigIgn*) echo $l;; esac; done < /proc/self/status";
    for policy in [Policy::process(dir.path()), skill_policy(&dir)] {
        let opts = RunOptions {
            stdin: Some(b"{}\n".to_vec()),
            ..RunOptions::default()
        };
        let report = sb.run(&policy, "sh", ["-c", script], &opts).await.unwrap();
        let text = String::from_utf8(report.stdout).unwrap();
        let mask = |name: &str| {
            let line = text.lines().find(|l| l.starts_with(name)).unwrap();
            u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
        };
        assert_eq!(mask("SigBlk:"), 0, "{text}");
        // The sandbox ignores nothing of its own: besides the C library's internal
        // real-time signals (32, 33), only what the host itself was started with
        // ignored (e.g. SIGHUP under nohup) may be ignored, as exec keeps it.
        assert_eq!(
            mask("SigIgn:") & 0x7fff_ffff & !inherited_ignored(),
            0,
            "{text}"
        );
    }
}

/// The signals this test process was started with ignored (`SigIgn` of
/// /proc/self/status).
fn inherited_ignored() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("SigIgn:"))?.to_owned();
            u64::from_str_radix(line.split_whitespace().nth(1)?, 16).ok()
        })
        .unwrap_or(0)
}
