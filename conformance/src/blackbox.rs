//! The host suite as plain [`Outcome`]s, for tests that drive a host command
//! over stdio and want a list of what passed and failed.
//!
//! It runs every host scenario of [`crate::host`] (see `a2e-conformance
//! list`) against the command, a fresh process per session; checks skipped
//! for lack of a fixture are left out.

use std::time::Duration;

use crate::Outcome;
use crate::check::Status;
use crate::host::{Options, Target};
use crate::runner::{self, Selection};

/// How long a host may take to answer one request, by default.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);

/// How long the whole suite may take.
const MAX_TIME: Duration = Duration::from_secs(600);

/// Runs the host suite against the host started by `command` (program and
/// arguments), one [`Outcome`] per check that ran.
pub fn run(command: &[String]) -> Vec<Outcome> {
    run_with(command, ANSWER_TIMEOUT)
}

/// [`run`] with another per-answer timeout.
pub fn run_with(command: &[String], timeout: Duration) -> Vec<Outcome> {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return vec![Outcome::fail("blackbox/runtime", e.to_string())],
    };
    let opts = Options {
        answer_timeout: timeout,
        scenario_timeout: (timeout * 4).max(Duration::from_secs(20)),
        ..Options::default()
    };
    let target = Target::Command(command.to_vec());
    let run = rt.block_on(runner::run_host(
        target,
        opts,
        &Selection::default(),
        MAX_TIME,
        |_| {},
    ));
    rt.shutdown_background();
    match run {
        Ok(report) => report
            .results
            .into_iter()
            .filter_map(|r| match r.status {
                Status::Passed => Some(Outcome::pass(r.def.id, "ok")),
                Status::Failed { expected, got } => Some(Outcome::fail(
                    r.def.id,
                    format!("expected {expected}; got {got}"),
                )),
                Status::Skipped { .. } => None,
            })
            .collect(),
        Err(e) => vec![Outcome::fail("blackbox/load", e)],
    }
}
