//! Hosts that hang, flood, close at once or talk nonsense are reported check
//! by check in bounded time, and their processes do not outlive the run.

use std::time::{Duration, Instant};

use conformance::host::{Options, Target};
use conformance::runner::{self, Selection};

/// Runs the suite against `command` with short limits; the results and how long it took.
fn run(command: &[&str]) -> (Vec<conformance::check::CheckResult>, Duration) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let opts = Options {
        answer_timeout: Duration::from_secs(1),
        scenario_timeout: Duration::from_secs(5),
        ..Options::default()
    };
    let started = Instant::now();
    let target = Target::Command(command.iter().map(|s| (*s).to_owned()).collect());
    let report = rt
        .block_on(runner::run_host(
            target,
            opts,
            &Selection::default(),
            Duration::from_secs(90),
            |_| {},
        ))
        .unwrap();
    rt.shutdown_background();
    (report.results, started.elapsed())
}

/// Whether a process whose command line holds `marker` is alive.
fn alive(marker: &str) -> bool {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .any(|c| {
            String::from_utf8_lossy(&c)
                .replace('\0', " ")
                .contains(marker)
        })
}

fn assert_all_fail(results: &[conformance::check::CheckResult], took: Duration) {
    let ran: Vec<_> = results
        .iter()
        .filter(|r| !matches!(r.status, conformance::check::Status::Skipped { .. }))
        .collect();
    assert!(ran.len() >= 40, "{} checks ran", ran.len());
    assert!(
        ran.iter().all(|r| r.failed()),
        "{:#?}",
        ran.iter().filter(|r| r.passed()).collect::<Vec<_>>()
    );
    assert!(took < Duration::from_secs(120), "{took:?}");
}

#[test]
fn a_host_that_never_answers_fails_in_bounded_time_and_is_killed() {
    let marker = "600.4217";
    let (results, took) = run(&["sleep", marker]);
    assert_all_fail(&results, took);
    std::thread::sleep(Duration::from_millis(300));
    assert!(!alive(marker), "a host process outlived the run");
}

#[test]
fn a_host_that_floods_garbage_fails_in_bounded_time() {
    let (results, took) = run(&["sh", "-c", "exec yes 'garbage 4243'"]);
    assert_all_fail(&results, took);
    std::thread::sleep(Duration::from_millis(300));
    assert!(!alive("garbage 4243"), "a host process outlived the run");
}

#[test]
fn a_host_that_exits_at_once_fails_every_check_quickly() {
    let (results, took) = run(&["true"]);
    assert_all_fail(&results, took);
    assert!(took < Duration::from_secs(30), "{took:?}");
}
