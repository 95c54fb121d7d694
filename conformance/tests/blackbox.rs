//! The host suite fails hosts that do not speak A2E, check by check and in bounded time.

use std::time::{Duration, Instant};

#[test]
fn an_echoing_peer_fails_every_check() {
    // `cat` answers each request with the request itself: wrong types, no req_id.
    let started = Instant::now();
    let outcomes = conformance::blackbox::run_with(&["cat".to_owned()], Duration::from_millis(300));
    assert!(outcomes.len() >= 40, "{outcomes:#?}");
    assert!(outcomes.iter().all(|o| !o.passed), "{outcomes:#?}");
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_missing_program_is_reported() {
    let outcomes = conformance::blackbox::run(&["/nonexistent/a2e-host".to_owned()]);
    assert!(!outcomes.is_empty());
    assert!(outcomes.iter().all(|o| !o.passed));
    assert!(outcomes[0].detail.contains("cannot start"), "{outcomes:#?}");
}
