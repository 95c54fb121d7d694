//! What a run prints: one line per check, the closing counts, `checks.json`
//! per scenario, and the catalog of every check (`list`, `list --markdown`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::check::{CheckDef, CheckResult, Status};
use crate::expected::Tally;
use crate::scenario::{Area, Fixture, On};

/// One line for a result.
pub fn line(r: &CheckResult) -> String {
    let id = r.def.id;
    match &r.status {
        Status::Passed if r.expected_failure => {
            format!("XPASS {id}  (listed as an expected failure, passes now)")
        }
        Status::Passed => format!("PASS  {id}"),
        Status::Skipped { reason } => format!("SKIP  {id}  ({reason})"),
        Status::Failed { expected, got } => format!(
            "{} {id}  [{} {}] expected {expected}; got {got}",
            if r.expected_failure { "XFAIL" } else { "FAIL " },
            r.def.level,
            r.def.section,
        ),
    }
}

/// The closing lines: the counts, then what failed the run.
pub fn closing(t: &Tally) -> String {
    let mut out = String::new();
    let expected = t.failed - t.unexpected.len();
    if expected > 0 {
        let _ = writeln!(out, "{expected} of the failures are listed as expected");
    }
    for stale in &t.stale {
        let _ = writeln!(out, "stale expected failure: {stale}");
    }
    let _ = write!(
        out,
        "{} passed, {} failed, {} skipped",
        t.passed, t.failed, t.skipped
    );
    out
}

/// Writes `<dir>/<scenario>/checks.json` for every scenario of `results`
/// (under `<dir>/<prefix>/` when a prefix is given).
pub fn write_json(dir: &Path, prefix: Option<&str>, results: &[CheckResult]) -> Result<(), String> {
    let mut by: BTreeMap<&str, Vec<&CheckResult>> = BTreeMap::new();
    for r in results {
        by.entry(r.scenario.as_str()).or_default().push(r);
    }
    for (scenario, checks) in by {
        let mut path = dir.to_path_buf();
        if let Some(prefix) = prefix {
            path.push(prefix);
        }
        for part in scenario.split('/') {
            path.push(part);
        }
        std::fs::create_dir_all(&path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        path.push("checks.json");
        let text = serde_json::to_string_pretty(&checks).map_err(|e| e.to_string())?;
        std::fs::write(&path, text + "\n")
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

/// A scenario in the catalog.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// Its name.
    pub name: &'static str,
    /// Its area.
    pub area: Area,
    /// What it does.
    pub about: &'static str,
    /// Where it runs.
    pub on: On,
    /// What it needs.
    pub needs: &'static [Fixture],
    /// Its checks.
    pub checks: &'static [CheckDef],
}

/// The plain catalog: one line per check.
pub fn plain(entries: &[Entry]) -> String {
    let mut out = String::new();
    for e in entries {
        for c in e.checks {
            let _ = writeln!(
                out,
                "{:<48} {:<6} {:<28} {}",
                c.id,
                c.level.to_string(),
                e.name,
                c.rule
            );
        }
    }
    let total: usize = entries.iter().map(|e| e.checks.len()).sum();
    let _ = write!(out, "{total} checks in {} scenarios", entries.len());
    out
}

fn needs(list: &[Fixture]) -> String {
    if list.is_empty() {
        return "—".into();
    }
    list.iter()
        .map(|f| match f {
            Fixture::Tool(n) | Fixture::Skill(n) => format!("`{n}`"),
            Fixture::Cap(n) => format!("capability `{n}`"),
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The catalog as Markdown: per area, its scenarios and their checks.
pub fn markdown(entries: &[Entry]) -> String {
    let mut out = String::new();
    let total: usize = entries.iter().map(|e| e.checks.len()).sum();
    let musts = entries
        .iter()
        .flat_map(|e| e.checks)
        .filter(|c| c.level == crate::check::Level::Must)
        .count();
    let _ = writeln!(
        out,
        "{total} checks ({musts} MUST, {} SHOULD) in {} scenarios.\n",
        total - musts,
        entries.len()
    );
    for area in Area::ALL {
        let mine: Vec<&Entry> = entries.iter().filter(|e| e.area == *area).collect();
        if mine.is_empty() {
            continue;
        }
        let n: usize = mine.iter().map(|e| e.checks.len()).sum();
        let _ = writeln!(out, "### {area} ({n} checks)\n");
        for e in mine {
            let _ = writeln!(
                out,
                "**`{}`** — {} Transports: {}. Needs: {}.\n",
                e.name,
                e.about,
                e.on.label(),
                needs(e.needs)
            );
            let _ = writeln!(out, "| check | level | spec | rule |\n|---|---|---|---|");
            for c in e.checks {
                let _ = writeln!(
                    out,
                    "| `{}` | {} | {} | {} |",
                    c.id, c.level, c.section, c.rule
                );
            }
            let _ = writeln!(out);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::must;

    #[test]
    fn lines_say_what_was_expected_and_what_came() {
        let r = CheckResult {
            def: must("a.b", "a2e-core §1", "r"),
            scenario: "x/y".into(),
            status: Status::failed("pong", "error"),
            expected_failure: false,
        };
        assert_eq!(
            line(&r),
            "FAIL  a.b  [MUST a2e-core §1] expected pong; got error"
        );
    }

    #[test]
    fn json_goes_to_one_file_per_scenario() {
        let dir = tempfile::tempdir().unwrap();
        let r = CheckResult {
            def: must("a.b", "s", "r"),
            scenario: "tools/list".into(),
            status: Status::Passed,
            expected_failure: false,
        };
        write_json(dir.path(), None, &[r]).unwrap();
        let text = std::fs::read_to_string(dir.path().join("tools/list/checks.json")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v[0]["id"], "a.b");
        assert_eq!(v[0]["status"], "passed");
        assert_eq!(v[0]["level"], "MUST");
    }
}
