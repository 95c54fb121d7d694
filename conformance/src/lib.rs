//! Conformance of the A2E wire types (`a2e-proto`) to the A2E specs.
//!
//! Every wire example printed in the tools, skills and chains specs, and an
//! example of every core and proc message from the core spec's tables, is a
//! fixture under `fixtures/spec/`. Each is decoded to its typed message and
//! re-encoded, and then:
//!
//! 1. every field of the original comes back with the same value, and every
//!    field the re-encoding adds holds the default a freshly decoded minimal
//!    message has (numbers compare as numbers);
//! 2. `decode(encode(x)) == x`;
//! 3. the re-encoding matches its committed insta snapshot;
//! 4. the original and the re-encoding validate against the type's generated
//!    JSON Schema.
//!
//! Beside them: the decoder's defaults against the spec's field tables
//! (`fixtures/defaults.json`), malformed lines with the exact error each must
//! give (`fixtures/negative.json`), and NDJSON framing cases.
//!
//! [`blackbox::run`] drives any host binary over stdio with the spec's
//! requests and malformed lines (`cargo xtask conformance --host CMD…`).
//!
//! [`run_all`] runs every one of these checks and returns one [`Outcome`]
//! each; the integration tests and `cargo xtask conformance` both use it.
//!
//! The host checker ([`host`], run by [`runner`]), the plugin checker
//! ([`plugin`]) and the client checker ([`client`], the crate
//! `conformance-client`) are built on the parts of `conformance-harness`
//! (checks, scenarios, links, sessions, wire rules, reports), which this
//! crate re-exports under their old paths ([`check`], [`link`], …).
//!
//! ```no_run
//! let outcomes = conformance::run_all();
//! for outcome in &outcomes {
//!     println!("{outcome}");
//! }
//! println!("{}", conformance::summary(&outcomes));
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

use std::collections::BTreeMap;
use std::fmt;

pub mod blackbox;
pub mod catalog;
pub mod child;
pub mod cli;
pub mod defaults;
pub mod fixtures;
pub mod framing;
pub mod host;
pub mod json;
pub mod mutant;
pub mod negative;
pub mod plugin;
pub mod positive;
pub mod runner;
pub mod snapshots;

// The parts the host, client and plugin checkers share live in
// `conformance-harness`, and the client checker in `conformance-client`;
// they stay reachable here under their old paths.
pub use conformance_client as client;
#[doc(hidden)]
pub use conformance_harness::run_fn;
pub use conformance_harness::{
    check, expected, link, profile, report, scenario, schemas, session, wire,
};

use catalog::Catalog;
use schemas::Schemas;

/// Every scenario of the host and client suites, as the catalog lists them.
pub fn catalog_entries() -> Vec<report::Entry> {
    let mut all = host::entries();
    all.extend(client::entries());
    all.extend(plugin::entries());
    all
}

/// The result of one conformance check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// What was checked, e.g. `spec/tools/call_req` or `negative/empty_line`.
    pub name: String,
    /// Whether it passed.
    pub passed: bool,
    /// What failed, or a short note when it passed.
    pub detail: String,
}

impl Outcome {
    /// A passed check.
    pub fn pass(name: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            passed: true,
            detail: detail.into(),
        }
    }

    /// A failed check.
    pub fn fail(name: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            passed: false,
            detail: detail.into(),
        }
    }

    /// Passed when `problems` is empty; otherwise failed, listing them.
    pub fn from_problems(name: impl Into<String>, problems: &[String]) -> Self {
        if problems.is_empty() {
            Self::pass(name, "ok")
        } else {
            Self::fail(name, problems.join("; "))
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.passed {
            write!(f, "ok   {}", self.name)
        } else {
            write!(f, "FAIL {}: {}", self.name, self.detail)
        }
    }
}

/// `N passed, N failed`.
pub fn summary(outcomes: &[Outcome]) -> String {
    let passed = outcomes.iter().filter(|o| o.passed).count();
    format!("{passed} passed, {} failed", outcomes.len() - passed)
}

/// The fixture groups whose files are positive (must-decode) fixtures:
/// `spec` (the specs' examples and the core tables' messages) and `edge`
/// (lines the specs allow that their examples do not show).
pub const POSITIVE_GROUPS: &[&str] = &["spec", "edge"];

/// What every check needs, loaded once: the spec defaults and the compiled schemas.
#[derive(Debug)]
pub struct Suite {
    /// The spec's defaults (`fixtures/defaults.json`).
    pub catalog: Catalog,
    /// Validators of every generated schema.
    pub schemas: Schemas,
}

impl Suite {
    /// Loads the catalog and compiles the schemas.
    pub fn load() -> Result<Self, String> {
        Ok(Self {
            catalog: Catalog::load()?,
            schemas: Schemas::build()?,
        })
    }

    /// Checks one positive fixture.
    pub fn positive(&self, fixture: &fixtures::Fixture) -> positive::Report {
        positive::check(fixture, &self.catalog, &self.schemas)
    }

    /// Checks every positive fixture of a group.
    pub fn run_positive(&self, group: &str) -> Vec<Outcome> {
        match fixtures::load_group(group) {
            Ok(all) => all
                .iter()
                .map(|f| Outcome::from_problems(&f.name, &self.positive(f).problems))
                .collect(),
            Err(e) => vec![Outcome::fail(format!("load/{group}"), e)],
        }
    }

    /// Checks the decoder's defaults of every type against `defaults.json`.
    pub fn run_defaults(&self) -> Vec<Outcome> {
        let mut out = vec![Outcome::from_problems(
            "defaults/coverage",
            &defaults::check_coverage(&self.catalog, &self.schemas),
        )];
        for name in a2e_proto::Message::TYPES.iter().chain(catalog::MODELS) {
            out.push(Outcome::from_problems(
                format!("defaults/{name}"),
                &defaults::check(name, &self.catalog, &self.schemas),
            ));
        }
        out
    }

    /// Checks every case of `negative.json`.
    pub fn run_negative(&self) -> Vec<Outcome> {
        let cases = match negative::load() {
            Ok(cases) => cases,
            Err(e) => return vec![Outcome::fail("load/negative", e)],
        };
        let mut out = Vec::new();
        for case in &cases {
            let name = format!("negative/{}", case.name);
            out.push(match negative::check(case, &self.schemas) {
                Ok(()) => Outcome::pass(name, format!("{}", case.code)),
                Err(problems) => Outcome::from_problems(name, &problems),
            });
            if case.kept_by_default {
                let name = format!("negative/{}/kept_by_default", case.name);
                out.push(match negative::check_kept(case) {
                    Ok(()) => Outcome::pass(name, "kept as Message::Unknown"),
                    Err(problems) => Outcome::from_problems(name, &problems),
                });
            }
        }
        out
    }
}

/// Runs the NDJSON framing cases over the lines of the message fixtures in `spec`.
pub fn run_framing() -> Vec<Outcome> {
    let lines: Vec<Vec<u8>> = match fixtures::load_group("spec") {
        Ok(all) => all
            .iter()
            .filter(|f| {
                serde_json::from_slice::<serde_json::Value>(f.line())
                    .is_ok_and(|v| v.get("type").is_some())
            })
            .map(|f| f.line().to_vec())
            .collect(),
        Err(e) => return vec![Outcome::fail("load/spec", e)],
    };
    framing::cases(&lines)
        .iter()
        .map(|case| {
            let name = format!("framing/{}", case.name);
            match framing::check(case) {
                Ok(()) => Outcome::pass(name, "ok"),
                Err(e) => Outcome::fail(name, e),
            }
        })
        .collect()
}

/// Reads `fixtures/pending.json`: check name → the a2e-proto change it waits for.
pub fn pending() -> Result<BTreeMap<String, String>, String> {
    let value = fixtures::load_json("pending.json")?;
    let Some(map) = value.get("pending").and_then(|p| p.as_object()) else {
        return Err("pending.json: no pending object".into());
    };
    map.iter()
        .map(|(name, why)| match why.as_str() {
            Some(why) => Ok((name.clone(), why.to_owned())),
            None => Err(format!("pending.json: {name}: the reason is not a string")),
        })
        .collect()
}

/// Notes on each outcome listed in `pending` why it fails, and fails a listed
/// name that no check has.
pub fn mark_pending(outcomes: &mut Vec<Outcome>, pending: &BTreeMap<String, String>) {
    for outcome in outcomes.iter_mut() {
        if let Some(why) = pending.get(&outcome.name) {
            outcome.detail = if outcome.passed {
                "passes now: remove it from pending.json".to_owned()
            } else {
                format!("pending a2e-proto fix ({why}): {}", outcome.detail)
            };
        }
    }
    for name in pending.keys() {
        if !outcomes.iter().any(|o| &o.name == name) {
            outcomes.push(Outcome::fail(
                "load/pending",
                format!("pending.json names no check `{name}`"),
            ));
        }
    }
}

/// Runs every positive, defaults, negative and framing check (not the
/// property tests): one [`Outcome`] each, in a stable order.
pub fn run_all() -> Vec<Outcome> {
    let mut out = match Suite::load() {
        Ok(suite) => {
            let mut out = Vec::new();
            for group in POSITIVE_GROUPS {
                out.extend(suite.run_positive(group));
            }
            out.extend(suite.run_defaults());
            out.extend(suite.run_negative());
            out
        }
        Err(e) => vec![Outcome::fail("load/suite", e)],
    };
    out.extend(run_framing());
    match pending() {
        Ok(pending) => mark_pending(&mut out, &pending),
        Err(e) => out.push(Outcome::fail("load/pending", e)),
    }
    out
}
