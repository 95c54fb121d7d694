//! Expected failures: the list a run is held to (one check id a line) and
//! the tally of a run's results against it.

use std::collections::BTreeSet;

use crate::check::{CheckResult, Status};

/// The counts of a run, and what makes it fail.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// Checks that passed.
    pub passed: usize,
    /// Checks that failed (expected ones included).
    pub failed: usize,
    /// Checks skipped.
    pub skipped: usize,
    /// Failed checks not listed as expected.
    pub unexpected: Vec<String>,
    /// Listed checks that did not fail (passed now, or name no check).
    pub stale: Vec<String>,
}

impl Tally {
    /// Whether the run succeeds: no unexpected failure, no stale expectation.
    pub fn ok(&self) -> bool {
        self.unexpected.is_empty() && self.stale.is_empty()
    }
}

/// Marks the expected failures in `results` and counts them.
pub fn tally(results: &mut [CheckResult], expected: &BTreeSet<String>) -> Tally {
    let mut t = Tally::default();
    for r in results.iter_mut() {
        r.expected_failure = expected.contains(r.def.id);
        match &r.status {
            Status::Passed => t.passed += 1,
            Status::Skipped { .. } => t.skipped += 1,
            Status::Failed { .. } => {
                t.failed += 1;
                if !r.expected_failure {
                    t.unexpected.push(r.def.id.to_owned());
                }
            }
        }
    }
    for id in expected {
        let mut mine = results.iter().filter(|r| r.def.id == id).peekable();
        if mine.peek().is_some() && mine.all(CheckResult::passed) {
            t.stale.push(format!("{id} passes now"));
        }
    }
    t
}

/// Reads an expected-failures file: one check id a line; `#` starts a comment.
pub fn read_expected(text: &str) -> BTreeSet<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::must;

    fn result(id: &'static str, status: Status) -> CheckResult {
        CheckResult {
            def: must(id, "s", "r"),
            scenario: "x".into(),
            status,
            expected_failure: false,
        }
    }

    #[test]
    fn expected_failures_pass_the_run_and_stale_ones_fail_it() {
        let mut results = vec![
            result("a", Status::failed("1", "2")),
            result("b", Status::Passed),
            result("c", Status::skipped("needs x")),
        ];
        let t = tally(&mut results, &read_expected("a # known\n"));
        assert!(t.ok(), "{t:?}");
        assert_eq!((t.passed, t.failed, t.skipped), (1, 1, 1));
        let t = tally(&mut results, &read_expected("b\n"));
        assert!(!t.ok());
        assert_eq!(t.unexpected, ["a"]);
        assert_eq!(t.stale, ["b passes now"]);
    }
}
