//! What a sandboxed child cannot do or see: the host's environment, the
//! network, files outside its working directory; and that nothing it starts
//! outlives the host, even when the host is killed with SIGKILL.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use a2e_sandbox::{
    BubblewrapUse, Containment, Layer, NetIsolation, Network, Policy, RunOptions, SandboxConfig,
    Termination,
};
use common::{alive, need, sandbox, sandbox_with, skip_layer, wait_for, wait_group};

const HELPER: &str = "A2E_SANDBOX_HELPER";
const HELPER_CONFIG: &str = "A2E_SANDBOX_HELPER_CONFIG";

fn config_named(name: &str) -> SandboxConfig {
    match name {
        "user-ns" => SandboxConfig {
            force_user_namespace: true,
            bubblewrap: BubblewrapUse::Never,
            ..SandboxConfig::default()
        },
        "group-only" => SandboxConfig {
            namespaces: false,
            bubblewrap: BubblewrapUse::Never,
            ..SandboxConfig::default()
        },
        "bwrap" => SandboxConfig {
            bubblewrap: BubblewrapUse::Prefer,
            ..SandboxConfig::default()
        },
        _ => SandboxConfig::default(),
    }
}

/// Not a test: the body of the helper process the tests below start (a host
/// stand-in they can kill or give a secret environment).
#[test]
#[ignore = "run as a child process by other tests"]
fn helper_process() {
    let Ok(mode) = std::env::var(HELPER) else {
        return;
    };
    let config = config_named(&std::env::var(HELPER_CONFIG).unwrap_or_default());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // The harness has printed `test helper_process ... ` without a newline.
    println!();
    rt.block_on(async move {
        let sb = sandbox_with(config).await;
        let dir = tempfile::tempdir().unwrap();
        let policy = Policy::process(dir.path());
        match mode.as_str() {
            "env" => {
                let report = sb
                    .run(&policy, "env", [] as [&str; 0], &RunOptions::default())
                    .await
                    .unwrap();
                for line in String::from_utf8_lossy(&report.stdout).lines() {
                    println!("ENV {line}");
                }
                println!("DONE");
            }
            "parent" => {
                let child = sb
                    .spawn(&policy, "sh", ["-c", "sleep 300 & sleep 301"], false)
                    .unwrap();
                println!(
                    "WRAPPER {} {:?}",
                    child.id().unwrap(),
                    sb.applied(&policy).containment
                );
                // Hold the child until this process is killed.
                tokio::time::sleep(Duration::from_secs(600)).await;
                drop(child);
            }
            other => panic!("unknown helper mode {other}"),
        }
    });
}

/// Starts the helper in `mode` with `config` and extra environment.
fn start_helper(mode: &str, config: &str, env: &[(&str, &str)]) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "helper_process",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HELPER, mode)
        .env(HELPER_CONFIG, config)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn the_hosts_secrets_stay_out_of_the_environment() {
    let helper = start_helper(
        "env",
        "default",
        &[("A2E_TEST_SECRET", "hunter2"), ("LANG", "C.UTF-8")],
    );
    let out = helper.wait_with_output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let env: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("ENV "))
        .collect();
    assert!(text.lines().any(|l| l == "DONE"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    assert!(env.iter().any(|l| l.starts_with("PATH=")), "{env:?}");
    assert!(env.contains(&"LANG=C.UTF-8"), "{env:?}");
    // Only allow-listed names (the helper's own environment has many more).
    for line in &env {
        let name = line.split('=').next().unwrap();
        assert!(
            a2e_sandbox::DEFAULT_ENV_ALLOW.contains(&name)
                || name == "PWD"
                || name == "SHLVL"
                || name == "_",
            "unexpected variable {name}"
        );
    }
}

/// Kills the helper (the host stand-in) with SIGKILL and checks that the
/// sandboxed `sh`, its two sleeps and the wrapper all die with it.
fn parent_death(config: &str) {
    let (_, pids, left) = kill_host(config, Duration::from_secs(20));
    assert!(
        left.is_empty(),
        "{left:?} of {pids:?} outlived the host ({config})"
    );
}

/// Starts the helper with `config`, waits for its sandboxed group, kills the
/// helper with SIGKILL and waits (up to 20 s) for the group to go. Returns the
/// group id, its pids and those still alive (which are then killed).
fn kill_host(config: &str, limit: Duration) -> (u32, Vec<u32>, Vec<u32>) {
    let mut helper = start_helper("parent", config, &[]);
    let stdout = helper.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let line = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|l| l.starts_with("WRAPPER "))
        // (`find` reads to the end when the helper dies without the line.)
        .expect("the helper never reported its child");
    let pgid: u32 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let pids = wait_group(pgid, "sleep", 2);
    assert!(pids.len() >= 2, "{pids:?}");
    helper.kill().unwrap();
    helper.wait().unwrap();
    let gone = wait_for(limit, || pids.iter().all(|p| !alive(*p)));
    let left: Vec<u32> = pids.iter().copied().filter(|p| alive(*p)).collect();
    if !gone {
        // Leave nothing behind whatever the assertions say.
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pgid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    (pgid, pids, left)
}

#[test]
fn without_containment_only_the_direct_child_dies_with_the_host() {
    // The control for the tests above: with only the parent-death signal, the
    // wrapper (which became `sh`) dies, its background sleeps survive.
    let (leader, pids, left) = kill_host("group-only", Duration::from_secs(3));
    assert!(
        !left.is_empty(),
        "{pids:?}: nothing survived, the check cannot tell"
    );
    assert!(
        !left.contains(&leader),
        "the direct child {leader} survived: {left:?}"
    );
    // kill_host has killed the survivors.
    assert!(wait_for(Duration::from_secs(10), || left
        .iter()
        .all(|p| !alive(*p))));
}

#[tokio::test]
async fn nothing_outlives_a_host_killed_with_sigkill() {
    let sb = sandbox().await;
    if !sb.capabilities().pid_namespace.is_available()
        && !sb.capabilities().bubblewrap.is_available()
    {
        skip_layer(
            "nothing_outlives_a_host_killed_with_sigkill",
            "pid_namespace",
        );
        return;
    }
    parent_death("default");
}

#[tokio::test]
async fn nothing_outlives_the_host_through_a_user_namespace() {
    let sb = sandbox_with(config_named("user-ns")).await;
    if !sb.capabilities().pid_namespace.is_available() {
        skip_layer(
            "nothing_outlives_the_host_through_a_user_namespace",
            "pid_namespace (user namespace)",
        );
        return;
    }
    assert!(sb.capabilities().needs_user_namespace);
    parent_death("user-ns");
}

#[tokio::test]
async fn nothing_outlives_the_host_under_bubblewrap() {
    // Under CI the package must be installed (.ci/install-sandbox.sh); whether
    // the kernel lets it work is the host's business.
    if need("nothing_outlives_the_host_under_bubblewrap", "bwrap").is_none() {
        return;
    }
    let sb = sandbox_with(config_named("bwrap")).await;
    if !sb.capabilities().bubblewrap.is_available() {
        skip_layer("nothing_outlives_the_host_under_bubblewrap", "bubblewrap");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        sb.applied(&Policy::process(dir.path())).containment,
        Containment::Bubblewrap
    );
    parent_death("bwrap");
}

/// Runs `bash` connecting to a listener on 127.0.0.1 under `policy`.
async fn connects(config: SandboxConfig, network: Network) -> (bool, NetIsolation) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let sb = sandbox_with(config).await;
    let dir = tempfile::tempdir().unwrap();
    let mut policy = Policy::skill(dir.path());
    policy.network = network;
    let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let report = sb
        .run(&policy, "bash", ["-c", &script], &RunOptions::default())
        .await
        .unwrap();
    let connected = report.stdout == b"connected\n";
    assert_eq!(connected, report.termination.success(), "{report:?}");
    (connected, report.applied.network)
}

#[tokio::test]
async fn no_network_inside() {
    if need("no_network_inside", "bash").is_none() {
        return;
    }
    // The listener is reachable when the network is allowed...
    let (ok, how) = connects(SandboxConfig::default(), Network::Allow).await;
    assert!(ok);
    assert_eq!(how, NetIsolation::NotRequested);
    // ...and not when it is denied, by each layer the host has.
    let (ok, how) = connects(SandboxConfig::default(), Network::Deny).await;
    if how == NetIsolation::None {
        skip_layer("no_network_inside", "net_namespace");
        return;
    }
    assert!(!ok, "connected through {how:?}");
    let landlock_only = SandboxConfig {
        namespaces: false,
        bubblewrap: BubblewrapUse::Never,
        ..SandboxConfig::default()
    };
    let (ok, how) = connects(landlock_only, Network::Deny).await;
    if how == NetIsolation::LandlockTcp {
        assert!(!ok, "connected through Landlock's TCP rules");
    } else {
        skip_layer("no_network_inside (Landlock TCP)", "landlock_tcp");
    }
    let (ok, how) = connects(config_named("bwrap"), Network::Deny).await;
    if how == NetIsolation::Bubblewrap {
        assert!(!ok, "connected through bubblewrap's network namespace");
    } else {
        skip_layer("no_network_inside (bubblewrap)", "bubblewrap");
    }
}

#[tokio::test]
async fn landlock_confines_writes_to_the_working_directory() {
    let sb = sandbox().await;
    if !sb.capabilities().landlock_fs.is_available() {
        skip_layer(
            "landlock_confines_writes_to_the_working_directory",
            "landlock_fs",
        );
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("readable.txt"), "visible").unwrap();
    let outside = other.path().join("outside.txt");
    let script = format!(
        "echo in > inside.txt && cat {} && echo out > {}",
        other.path().join("readable.txt").display(),
        outside.display()
    );
    let policy = Policy::skill(work.path());
    let report = sb
        .run(&policy, "sh", ["-c", &script], &RunOptions::default())
        .await
        .unwrap();
    assert!(report.applied.filesystem);
    assert!(
        matches!(report.termination, Termination::Exited(c) if c != 0),
        "{report:?}"
    );
    assert_eq!(
        std::fs::read_to_string(work.path().join("inside.txt")).unwrap(),
        "in\n"
    );
    assert_eq!(report.stdout, b"visible");
    assert!(!outside.exists(), "wrote outside the working directory");
    assert!(
        report.stderr.text().contains("ermission denied"),
        "{}",
        report.stderr.text()
    );

    // The same write succeeds without filesystem rules.
    let mut open = policy.clone();
    open.filesystem = None;
    let report = sb
        .run(&open, "sh", ["-c", &script], &RunOptions::default())
        .await
        .unwrap();
    assert!(report.termination.success(), "{report:?}");
    assert!(outside.exists());
}

#[tokio::test]
async fn capabilities_name_every_missing_layer() {
    let sb = sandbox().await;
    let caps = sb.capabilities();
    for (name, layer) in caps.layers() {
        if let Layer::Unavailable(why) = layer {
            assert!(!why.is_empty(), "{name}");
        }
    }
    assert!(caps.parent_death_signal.is_available());
    assert!(caps.rlimits.is_available());
    let off = sandbox_with(SandboxConfig {
        namespaces: false,
        landlock: false,
        bubblewrap: BubblewrapUse::Never,
        force_user_namespace: false,
    })
    .await;
    let missing: Vec<&str> = off
        .capabilities()
        .unavailable()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(
        missing,
        [
            "pid_namespace",
            "net_namespace",
            "landlock_fs",
            "landlock_tcp",
            "landlock_scope",
            "bubblewrap"
        ]
    );
    let dir = tempfile::tempdir().unwrap();
    let applied = off.applied(&Policy::skill(dir.path()));
    assert_eq!(applied.containment, Containment::ProcessGroupOnly);
    assert_eq!(applied.network, NetIsolation::None);
    assert!(!applied.filesystem);
}

#[tokio::test]
async fn landlock_scopes_keep_signals_inside() {
    // Without namespaces the host's pid is visible; Landlock's signal scope
    // still refuses to signal it.
    let sb = sandbox_with(SandboxConfig {
        namespaces: false,
        bubblewrap: BubblewrapUse::Never,
        ..SandboxConfig::default()
    })
    .await;
    if !sb.capabilities().landlock_scope.is_available() {
        skip_layer("landlock_scopes_keep_signals_inside", "landlock_scope");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = format!("kill -0 {}", std::process::id());
    let mut policy = Policy::skill(dir.path());
    let report = sb
        .run(&policy, "sh", ["-c", &script], &RunOptions::default())
        .await
        .unwrap();
    assert!(!report.termination.success(), "{report:?}");
    assert!(
        report.stderr.text().contains("ermitted"),
        "{}",
        report.stderr.text()
    );
    // The same signal goes through without Landlock.
    policy.filesystem = None;
    policy.network = Network::Allow;
    let report = sb
        .run(&policy, "sh", ["-c", &script], &RunOptions::default())
        .await
        .unwrap();
    assert!(report.termination.success(), "{report:?}");
}

/// The effective capabilities of a child under `policy`, as /proc shows them.
async fn effective_caps(policy: &Policy) -> u64 {
    let sb = sandbox().await;
    let report = sb
        .run(
            policy,
            "sh",
            ["-c", "grep CapEff /proc/self/status"],
            &RunOptions::default(),
        )
        .await
        .unwrap();
    assert!(report.termination.success(), "{report:?}");
    let text = String::from_utf8(report.stdout).unwrap();
    let hex = text.split_whitespace().nth(1).unwrap();
    u64::from_str_radix(hex, 16).unwrap()
}

#[tokio::test]
async fn skills_run_without_capabilities_even_for_a_root_host() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(effective_caps(&Policy::skill(dir.path())).await, 0);
    let process = effective_caps(&Policy::process(dir.path())).await;
    if nix::unistd::geteuid().is_root() {
        // The control: a root host's commands keep root's capabilities.
        assert_ne!(process, 0);
    } else {
        assert_eq!(process, 0);
    }
}
