//! The client suite: for each scenario a scripted host plays its part, the
//! client under test is started against it, and the checks read what the
//! client sent (the script) and what it reported (the judge).
//!
//! The client is started as `CMD… TARGET` with the scenario's short name in
//! `A2E_CONFORMANCE_SCENARIO` (and `A2E_CONFORMANCE_TRANSPORT`, and
//! `A2E_CONFORMANCE_AUTH_TOKEN` where the scenario gives one). `TARGET` is a
//! `ws://` or `http://` URL, or for stdio a program the client starts as its
//! host (with no arguments). The client does what the scenario asks (see
//! `a2e-conformance list`) and prints one JSON object, its report, as the last
//! line of its stdout.
//!
//! [`driver`] is such a client, built on `a2e-client`. The parts a scenario
//! is made of (checks, scenarios, links, the wire rules) come from
//! `conformance-harness`; `a2e-conformance client -- CMD…` runs this suite.
//!
//! Every scenario, as the catalog lists it:
//!
//! ```
//! let entries = conformance_client::entries();
//! assert!(entries.iter().any(|e| e.name == "client/handshake"));
//! for scenario in conformance_client::all() {
//!     println!("{}: {}", scenario.short(), scenario.asks);
//! }
//! ```
//!
//! A run of a client over stdio; the scripted host is `a2e-conformance`,
//! which must be this program or lie beside it:
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use conformance_client::{ClientOptions, run_all, this_program};
//! use conformance_harness::scenario::{Selection, Transport};
//!
//! # async fn demo() -> Result<(), String> {
//! let opts = ClientOptions {
//!     token: "secret".into(),
//!     answer_timeout: Duration::from_secs(5),
//!     scenario_timeout: Duration::from_secs(30),
//!     stderr: false,
//!     me: this_program()?,
//! };
//! let command = vec!["my-client".to_owned()];
//! let runs = run_all(
//!     &command,
//!     &[Transport::Stdio],
//!     &Selection::default(),
//!     &opts,
//!     Duration::from_secs(600),
//!     |transport, result| println!("{transport} {}: {:?}", result.def.id, result.status),
//! )
//! .await;
//! # let _ = runs;
//! # Ok(())
//! # }
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

pub mod driver;
mod peer;
mod run;
mod scenarios;
mod scenarios_events;
mod scenarios_more;
mod script;

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::Value;

use conformance_harness::check::{CheckDef, Recorder, must, should};
use conformance_harness::report::Entry;
use conformance_harness::scenario::{Area, On, Scenario};
use conformance_harness::wire::Rule;

pub use peer::Peer;
pub use run::{ClientOptions, run_all, run_client, this_program};

/// What a client scenario's script works with.
pub struct ClientCx {
    /// The client's connection.
    pub peer: Peer,
    /// The scenario's checks.
    pub rec: Recorder,
    /// The token the client was given, if the scenario gives one.
    pub token: Option<String>,
}

/// How the client's run ended.
#[derive(Debug, Clone, Default)]
pub struct ClientRun {
    /// Its exit code (`None`: killed, or ended by a signal).
    pub exit: Option<i32>,
    /// It ended by itself within the scenario's time.
    pub finished: bool,
    /// From its start to its end.
    pub elapsed: Duration,
    /// The last line of its stdout that is a JSON object.
    pub report: Option<Value>,
}

impl ClientRun {
    /// The report's field `key` (`null` when absent).
    pub fn get(&self, key: &str) -> &Value {
        static NULL: Value = Value::Null;
        self.report
            .as_ref()
            .and_then(|r| r.get(key))
            .unwrap_or(&NULL)
    }

    /// The report, shown.
    pub fn shown(&self) -> String {
        match &self.report {
            Some(r) => conformance_harness::wire::show(r),
            None => "no report on stdout".into(),
        }
    }
}

/// A client scenario: the script, and the judge of what the client reported.
pub struct ClientScenario {
    /// The script (the host's part) and the checks.
    pub scenario: Scenario<ClientCx>,
    /// What the client is asked to do and report (for driver authors).
    pub asks: &'static str,
    /// Judges the client's run.
    pub judge: fn(&ClientRun, &mut Recorder),
    /// The client is given a token.
    pub auth: bool,
}

impl ClientScenario {
    /// The short name the client gets (`client/tools` → `tools`).
    pub fn short(&self) -> &'static str {
        self.scenario
            .name
            .strip_prefix("client/")
            .unwrap_or(self.scenario.name)
    }
}

/// Every scripted client scenario.
pub fn all() -> Vec<&'static ClientScenario> {
    scenarios::SCENARIOS
        .iter()
        .chain(scenarios_more::SCENARIOS)
        .collect()
}

/// Every client scenario as the catalog lists it (the wire reports last).
pub fn entries() -> Vec<Entry> {
    let mut out: Vec<Entry> = all()
        .into_iter()
        .map(|c| Entry {
            name: c.scenario.name,
            area: c.scenario.area,
            about: c.asks,
            on: c.scenario.on,
            needs: c.scenario.needs,
            checks: c.scenario.checks,
        })
        .collect();
    out.push(Entry {
        name: "client/wire",
        area: Area::Client,
        about: "Reports on every message the client sent in the run.",
        on: On::All,
        needs: &[],
        checks: WIRE,
    });
    out.push(Entry {
        name: "client/wire-framing",
        area: Area::Client,
        about: "Reports on every line the client wrote in the run.",
        on: On::Stdio,
        needs: &[],
        checks: FRAMING,
    });
    out
}

/// Checks on every message the client sent.
#[rustfmt::skip]
pub(crate) const WIRE: &[CheckDef] = &[
    must("client.wire.object", "a2e-core §1", "every message the client sends is one JSON object"),
    must("client.wire.type", "a2e-core §1", "every message has a string type"),
    should("client.wire.known-type", "a2e-core §1", "a client sends only message types the specs define"),
    must("client.wire.id", "a2e-core §1", "every message has a non-empty string id"),
    must("client.wire.id-unique", "a2e-core §1", "no message id repeats within a session"),
    must("client.wire.version", "a2e-core §1", "every message carries version 1.x"),
    should("client.wire.ts", "a2e-core §1", "every message carries ts, Unix seconds of about now"),
    must("client.wire.schema", "a2e-core §2", "every message validates against its type's schema"),
];

/// The rule of each [`WIRE`] check.
pub(crate) const WIRE_RULES: &[(&str, Rule)] = &[
    ("client.wire.object", Rule::Object),
    ("client.wire.type", Rule::Type),
    ("client.wire.known-type", Rule::KnownType),
    ("client.wire.id", Rule::Id),
    ("client.wire.id-unique", Rule::IdUnique),
    ("client.wire.version", Rule::Version),
    ("client.wire.ts", Rule::Ts),
    ("client.wire.schema", Rule::Schema),
];

/// Checks on every line the client wrote (stdio).
#[rustfmt::skip]
pub(crate) const FRAMING: &[CheckDef] = &[must(
    "client.wire.compact",
    "a2e-core §1",
    "every line the client writes is one compact JSON message (NDJSON)",
)];

/// Scripted scenarios as plain scenarios (for the catalog's consistency tests).
pub fn scenarios() -> Vec<&'static Scenario<ClientCx>> {
    all().into_iter().map(|c| &c.scenario).collect()
}

/// `a2e-conformance scripted-host`: a scenario's host on stdin and stdout.
pub async fn serve_stdio(scenario: &str, report: &Path, token: Option<String>) -> ExitCode {
    run::serve_stdio(scenario, report, token).await
}
