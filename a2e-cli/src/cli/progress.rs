//! The progress `a2e run` prints on stderr, one style for chains, ACMP DAGs
//! and Ontheia chains: a line when a node (a DAG's task, an Ontheia step)
//! starts running, a line when it ends with its state and duration, and
//! one summary line at the end.
//!
//! ```text
//! running  fetch
//! done     fetch    DURATION
//! skipped  notify
//! failed   build    DURATION: exit status 1
//! chain `release` failed: 1 done, 1 skipped, 1 failed in DURATION
//! ```
//!
//! A duration is whole milliseconds under a second (`N ms`), else seconds
//! with two decimals (`N.NN s`).

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// What became of a node, as an event reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// It started.
    Start,
    /// It succeeded.
    Done,
    /// It did not run (a false condition, an `on_error: skip` upstream, a
    /// cancelled DAG task).
    Skip,
    /// It failed.
    Error,
}

impl Phase {
    /// The phase of a wire `chain/event` (`start`, `done`, `skip`, `error`)
    /// or an Ontheia event (the same words; `message` is none).
    pub(crate) fn parse(phase: &str) -> Option<Self> {
        Some(match phase {
            "start" => Self::Start,
            "done" => Self::Done,
            "skip" => Self::Skip,
            "error" => Self::Error,
            _ => return None,
        })
    }
}

/// The progress of one run.
pub(crate) struct Progress {
    /// What runs: "chain `id`", "DAG `id`", "Ontheia chain".
    what: String,
    began: Instant,
    /// When each running node started.
    running: HashMap<String, Instant>,
    done: usize,
    skipped: usize,
    failed: usize,
}

impl Progress {
    /// The progress of a run of `what` (named in the summary).
    pub(crate) fn new(what: impl Into<String>) -> Self {
        Self {
            what: what.into(),
            began: Instant::now(),
            running: HashMap::new(),
            done: 0,
            skipped: 0,
            failed: 0,
        }
    }

    /// Prints the line of one event of `node`.
    pub(crate) fn event(&mut self, node: &str, phase: Phase, error: &str) {
        eprintln!("{}", self.line(node, phase, error));
    }

    /// The line of one event of `node` (counted).
    fn line(&mut self, node: &str, phase: Phase, error: &str) -> String {
        if phase == Phase::Start {
            self.running.insert(node.to_owned(), Instant::now());
            return format!("running  {node}");
        }
        let took = self.running.remove(node).map(|at| at.elapsed());
        let state = match phase {
            Phase::Done => {
                self.done += 1;
                "done"
            }
            Phase::Skip => {
                self.skipped += 1;
                "skipped"
            }
            Phase::Error | Phase::Start => {
                self.failed += 1;
                "failed"
            }
        };
        let mut line = format!("{state:<8} {node}");
        if let Some(took) = took {
            line.push_str(&format!("  {}", duration(took)));
        }
        if !error.is_empty() {
            line.push_str(&format!(": {error}"));
        }
        line
    }

    /// Prints the summary line: the outcome (`succeeded`, `failed`,
    /// `cancelled`, …), how many nodes ended how, and the run's duration.
    pub(crate) fn finish(&self, outcome: &str) {
        eprintln!("{}", self.summary(outcome));
    }

    fn summary(&self, outcome: &str) -> String {
        let mut line = format!(
            "{} {outcome}: {} done, {} skipped, {} failed",
            self.what, self.done, self.skipped, self.failed
        );
        if !self.running.is_empty() {
            line.push_str(&format!(", {} still running", self.running.len()));
        }
        line.push_str(&format!(" in {}", duration(self.began.elapsed())));
        line
    }
}

/// A duration for people: milliseconds below a second, else seconds with
/// two decimals.
fn duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.2} s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_state_has_its_line_and_the_summary_counts_them() {
        let mut p = Progress::new("chain `c`");
        assert_eq!(p.line("a", Phase::Start, ""), "running  a");
        assert!(p.line("a", Phase::Done, "").starts_with("done     a  "));
        assert_eq!(p.line("b", Phase::Skip, ""), "skipped  b");
        p.line("c", Phase::Start, "");
        let failed = p.line("c", Phase::Error, "boom");
        assert!(
            failed.starts_with("failed   c  ") && failed.ends_with(" ms: boom"),
            "{failed}"
        );
        p.line("d", Phase::Start, "");
        let summary = p.summary("failed");
        assert!(
            summary
                .starts_with("chain `c` failed: 1 done, 1 skipped, 1 failed, 1 still running in "),
            "{summary}"
        );
    }

    #[test]
    fn durations_read_in_ms_then_seconds() {
        assert_eq!(duration(Duration::from_millis(12)), "12 ms");
        assert_eq!(duration(Duration::from_millis(1234)), "1.23 s");
    }
}
