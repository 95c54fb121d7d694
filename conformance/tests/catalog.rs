//! The catalog of checks: enough of them, well named, each once, and the
//! README's list generated from it.

use std::collections::BTreeSet;

#[test]
fn there_are_at_least_150_checks_with_unique_well_formed_ids() {
    let entries = conformance::catalog_entries();
    let checks: Vec<_> = entries.iter().flat_map(|e| e.checks).collect();
    assert!(checks.len() >= 150, "{} checks", checks.len());
    let mut ids = BTreeSet::new();
    for c in &checks {
        assert!(ids.insert(c.id), "`{}` is declared twice", c.id);
        let area = c.id.split('.').next().unwrap_or_default();
        assert!(
            [
                "core",
                "tools",
                "skills",
                "chains",
                "proc",
                "transport",
                "client",
                "plugin"
            ]
            .contains(&area),
            "`{}` has no area prefix",
            c.id
        );
        assert!(
            c.id.chars()
                .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '.' || ch == '-'),
            "`{}`",
            c.id
        );
        assert!(!c.section.is_empty() && !c.rule.is_empty(), "`{}`", c.id);
    }
    let mut names = BTreeSet::new();
    for e in &entries {
        assert!(names.insert(e.name), "scenario `{}` twice", e.name);
        assert!(!e.checks.is_empty(), "scenario `{}` has no checks", e.name);
    }
}

#[test]
fn the_readme_lists_every_check_as_the_binary_generates_it() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let begin = "<!-- checks:begin (a2e-conformance list --markdown) -->\n";
    let end = "<!-- checks:end -->";
    let from = readme.find(begin).expect("the README has the begin marker") + begin.len();
    let to = readme.find(end).expect("the README has the end marker");
    let generated = conformance::report::markdown(&conformance::catalog_entries());
    assert!(
        readme[from..to].trim() == generated.trim(),
        "conformance/README.md's list of checks is stale: run `cargo run -p conformance -- list --markdown` and paste it between the markers"
    );
}
