//! Checks: one testable rule of the specs each ([`CheckDef`]), and what a run
//! found for it ([`Status`], gathered by a [`Recorder`]).

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

/// How strongly the spec asks for a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Level {
    /// The spec requires it; a host or client without it does not speak A2E.
    #[serde(rename = "MUST")]
    Must,
    /// The spec (or the reference's documented behaviour) recommends it.
    #[serde(rename = "SHOULD")]
    Should,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Must => "MUST",
            Self::Should => "SHOULD",
        })
    }
}

/// One rule of the specs, as a check: its id, where the spec says it, how
/// strongly, and the rule in one sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CheckDef {
    /// Stable id, `<area>.<topic>.<rule>` (e.g. `tools.call.unknown-tool`).
    pub id: &'static str,
    /// The spec and section it comes from (e.g. `a2e-core §3`, `tools: tool/call/req`).
    pub section: &'static str,
    /// MUST or SHOULD.
    pub level: Level,
    /// The rule, in one sentence.
    pub rule: &'static str,
}

/// A MUST rule.
pub const fn must(id: &'static str, section: &'static str, rule: &'static str) -> CheckDef {
    CheckDef {
        id,
        section,
        level: Level::Must,
        rule,
    }
}

/// A SHOULD rule.
pub const fn should(id: &'static str, section: &'static str, rule: &'static str) -> CheckDef {
    CheckDef {
        id,
        section,
        level: Level::Should,
        rule,
    }
}

/// What a run found for one check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum Status {
    /// The rule held.
    Passed,
    /// It did not: what was expected and what came back.
    Failed {
        /// What the rule asks for.
        expected: String,
        /// What the peer did.
        got: String,
    },
    /// Not checked, and why (a fixture the host lacks, an option not given).
    Skipped {
        /// Why.
        reason: String,
    },
}

impl Status {
    /// A failure.
    pub fn failed(expected: impl Into<String>, got: impl Into<String>) -> Self {
        Self::Failed {
            expected: expected.into(),
            got: got.into(),
        }
    }

    /// A skip.
    pub fn skipped(reason: impl Into<String>) -> Self {
        Self::Skipped {
            reason: reason.into(),
        }
    }

    /// `passed`, `failed` or `skipped`.
    pub fn word(&self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed { .. } => "failed",
            Self::Skipped { .. } => "skipped",
        }
    }
}

/// The result of one check in one scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckResult {
    /// The check.
    #[serde(flatten)]
    pub def: CheckDef,
    /// The scenario that ran it.
    pub scenario: String,
    /// What was found.
    #[serde(flatten)]
    pub status: Status,
    /// Listed in the expected-failures file.
    pub expected_failure: bool,
}

impl CheckResult {
    /// Whether it passed.
    pub fn passed(&self) -> bool {
        self.status == Status::Passed
    }

    /// Whether it failed.
    pub fn failed(&self) -> bool {
        matches!(self.status, Status::Failed { .. })
    }
}

/// Longest `expected`/`got` text kept, in characters: a host that floods
/// output does not flood the report.
pub const MAX_DETAIL_CHARS: usize = 600;

/// `text` cut to [`MAX_DETAIL_CHARS`].
pub fn clip(text: &str) -> String {
    if text.chars().count() <= MAX_DETAIL_CHARS {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(MAX_DETAIL_CHARS).collect();
    out.push('…');
    out
}

/// Collects the statuses of one scenario's checks. A check recorded more than
/// once keeps its first failure; a check never recorded is failed with the
/// reason the scenario stopped, when it finishes.
#[derive(Debug)]
pub struct Recorder {
    scenario: String,
    defs: &'static [CheckDef],
    found: BTreeMap<&'static str, Status>,
    undeclared: Vec<String>,
}

impl Recorder {
    /// A recorder for `scenario`'s `defs`.
    pub fn new(scenario: impl Into<String>, defs: &'static [CheckDef]) -> Self {
        Self {
            scenario: scenario.into(),
            defs,
            found: BTreeMap::new(),
            undeclared: Vec::new(),
        }
    }

    fn def(&self, id: &str) -> Option<&'static CheckDef> {
        self.defs.iter().find(|d| d.id == id)
    }

    /// Records `status` for check `id` (a failure is not overwritten).
    pub fn record(&mut self, id: &str, status: Status) {
        let Some(def) = self.def(id) else {
            self.undeclared.push(id.to_owned());
            return;
        };
        let status = match status {
            Status::Failed { expected, got } => Status::failed(clip(&expected), clip(&got)),
            other => other,
        };
        match self.found.get(def.id) {
            Some(Status::Failed { .. }) => {}
            Some(Status::Passed) if status == Status::Passed => {}
            _ => {
                self.found.insert(def.id, status);
            }
        }
    }

    /// Records a pass when `ok`, else a failure with what was expected and what came back.
    pub fn check(
        &mut self,
        id: &str,
        ok: bool,
        expected: impl Into<String>,
        got: impl Into<String>,
    ) {
        let status = if ok {
            Status::Passed
        } else {
            Status::failed(expected, got)
        };
        self.record(id, status);
    }

    /// Records a pass.
    pub fn pass(&mut self, id: &str) {
        self.record(id, Status::Passed);
    }

    /// Records a failure.
    pub fn fail(&mut self, id: &str, expected: impl Into<String>, got: impl Into<String>) {
        self.record(id, Status::failed(expected, got));
    }

    /// Records a skip (a failure or pass already recorded stays).
    pub fn skip(&mut self, id: &str, reason: impl Into<String>) {
        if self.found.contains_key(id) {
            return;
        }
        self.record(id, Status::skipped(reason));
    }

    /// Whether check `id` has a status yet.
    pub fn has(&self, id: &str) -> bool {
        self.found.contains_key(id)
    }

    /// Every status recorded so far, by check id.
    pub fn statuses(&self) -> Vec<(String, Status)> {
        self.found
            .iter()
            .map(|(id, st)| ((*id).to_owned(), st.clone()))
            .collect()
    }

    /// Skips every check of the scenario for `reason`.
    pub fn skip_all(&mut self, reason: &str) {
        for def in self.defs {
            self.skip(def.id, reason);
        }
    }

    /// The results in declaration order; checks not recorded fail with
    /// `unfinished` (why the scenario stopped before them).
    pub fn finish(self, unfinished: Option<&str>) -> Vec<CheckResult> {
        let why = unfinished.unwrap_or("the scenario ended without evaluating this check");
        let mut out: Vec<CheckResult> = self
            .defs
            .iter()
            .map(|def| CheckResult {
                def: *def,
                scenario: self.scenario.clone(),
                status: self
                    .found
                    .get(def.id)
                    .cloned()
                    .unwrap_or_else(|| Status::failed("the check to be evaluated", why)),
                expected_failure: false,
            })
            .collect();
        for id in self.undeclared {
            out.push(CheckResult {
                def: must(
                    "internal.undeclared-check",
                    "conformance suite",
                    "every check a scenario records is declared by it",
                ),
                scenario: self.scenario.clone(),
                status: Status::failed("a declared check id", id),
                expected_failure: false,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[rustfmt::skip]
    const DEFS: &[CheckDef] = &[must("a.b.c", "s", "r"), should("a.b.d", "s", "r")];

    #[test]
    fn a_failure_sticks_and_missing_checks_fail_with_the_reason() {
        let mut rec = Recorder::new("x", DEFS);
        rec.fail("a.b.c", "1", "2");
        rec.pass("a.b.c");
        let out = rec.finish(Some("the host closed"));
        assert_eq!(out[0].status, Status::failed("1", "2"));
        assert_eq!(
            out[1].status,
            Status::failed("the check to be evaluated", "the host closed")
        );
    }

    #[test]
    fn an_undeclared_id_is_an_internal_failure() {
        let mut rec = Recorder::new("x", DEFS);
        rec.pass("a.b.c");
        rec.pass("a.b.d");
        rec.pass("nope");
        let out = rec.finish(None);
        assert_eq!(out.len(), 3);
        assert!(out[2].failed());
    }

    #[test]
    fn details_are_clipped() {
        let long = "x".repeat(5000);
        assert!(clip(&long).chars().count() <= MAX_DETAIL_CHARS + 1);
    }
}
