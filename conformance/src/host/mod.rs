//! The host suite: scenarios that drive a host under test (a command spoken
//! to over stdio, or a WebSocket / HTTP+SSE URL) and check what it answers.

mod chains;
mod chains_fail;
mod chains_flow;
mod core;
mod errors;
mod lifecycle;
mod probe;
mod proc;
mod skills;
mod tools;
mod tools_defs;
mod tools_results;
mod tools_run;
mod transport;
mod wire_checks;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use crate::check::{Recorder, Status};
use crate::link::{self, Link};
use crate::scenario::{Abort, Fixture, Scenario, Transport};
use crate::schemas::Schemas;
use crate::session::{Session, SessionParts};
use crate::wire::WireLog;

pub use probe::{Fixtures, probe};

/// A scenario of the host suite.
pub type HostScenario = Scenario<Cx>;

/// Every host scenario, in the order they run (`core/wire`, which reports
/// on all the traffic, last).
pub fn scenarios() -> Vec<&'static HostScenario> {
    let mut all: Vec<&'static HostScenario> = Vec::new();
    for group in [
        core::SCENARIOS,
        errors::SCENARIOS,
        tools::SCENARIOS,
        tools_defs::SCENARIOS,
        tools_results::SCENARIOS,
        tools_run::SCENARIOS,
        skills::SCENARIOS,
        chains::SCENARIOS,
        chains_flow::SCENARIOS,
        chains_fail::SCENARIOS,
        proc::SCENARIOS,
        transport::SCENARIOS,
        lifecycle::SCENARIOS,
        wire_checks::SCENARIOS,
    ] {
        all.extend(group.iter());
    }
    all
}

/// Every host scenario as the catalog lists it.
pub fn entries() -> Vec<crate::report::Entry> {
    scenarios()
        .into_iter()
        .map(|s| crate::report::Entry {
            name: s.name,
            area: s.area,
            about: s.about,
            on: s.on,
            needs: s.needs,
            checks: s.checks,
        })
        .collect()
}

/// The host under test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A command speaking NDJSON on stdin/stdout; a fresh process per session.
    Command(Vec<String>),
    /// A running host at a `ws://` or `http://` URL; a fresh connection per session.
    Url(String),
}

impl Target {
    /// The transport it speaks.
    pub fn transport(&self) -> Result<Transport, String> {
        match self {
            Self::Command(_) => Ok(Transport::Stdio),
            Self::Url(url) if url.starts_with("ws://") => Ok(Transport::Ws),
            Self::Url(url) if url.starts_with("http://") => Ok(Transport::Http),
            Self::Url(url) => Err(format!("`{url}`: the URL must start with ws:// or http://")),
        }
    }

    /// How the report names it.
    pub fn describe(&self) -> String {
        match self {
            Self::Command(cmd) => cmd.join(" "),
            Self::Url(url) => url.clone(),
        }
    }
}

/// How a host run behaves.
#[derive(Debug, Clone)]
pub struct Options {
    /// The host's shared secret (handshake `auth_token`, bearer token).
    pub auth_token: Option<String>,
    /// How long one answer may take.
    pub answer_timeout: Duration,
    /// How long one scenario may take.
    pub scenario_timeout: Duration,
    /// What happens to a host child's stderr.
    pub stderr: link::stdio::Stderr,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            auth_token: None,
            answer_timeout: Duration::from_secs(10),
            scenario_timeout: Duration::from_secs(90),
            stderr: link::stdio::Stderr::Discard,
        }
    }
}

/// What every scenario of one run shares.
pub struct Env {
    /// The host.
    pub target: Target,
    /// Its transport.
    pub transport: Transport,
    /// The options.
    pub opts: Options,
    /// The fixtures it offers.
    pub fixtures: Fixtures,
    /// Message schemas.
    pub schemas: Arc<Schemas>,
    /// Problems of every message read in the run.
    pub wire: Arc<Mutex<WireLog>>,
}

impl Env {
    /// Opens a connection to the host.
    pub async fn connect(&self) -> Result<Link, String> {
        let token = self.opts.auth_token.as_deref();
        match &self.target {
            Target::Command(cmd) => link::stdio::spawn(cmd, &[], self.opts.stderr),
            Target::Url(url) if self.transport == Transport::Ws => {
                link::ws::connect(url, token).await
            }
            Target::Url(url) => link::http::connect(url, token).await,
        }
    }
}

/// What a host scenario works with.
pub struct Cx {
    /// The run's shared state.
    pub env: Arc<Env>,
    /// The scenario's checks.
    pub rec: Recorder,
    deadline: Instant,
    sessions: u64,
    name: &'static str,
}

/// The capabilities every session asks for.
pub const ALL_CAPS: &[&str] = &["tools", "skill", "chains", "proc"];

impl Cx {
    /// A context for `scenario` that must end by `deadline`.
    pub fn new(env: Arc<Env>, scenario: &'static HostScenario, deadline: Instant) -> Self {
        Self {
            env,
            rec: Recorder::new(scenario.name, scenario.checks),
            deadline,
            sessions: 0,
            name: scenario.name,
        }
    }

    /// The transport of the run.
    pub fn transport(&self) -> Transport {
        self.env.transport
    }

    /// The shared secret, if the suite was given one.
    pub fn token(&self) -> Option<&str> {
        self.env.opts.auth_token.as_deref()
    }

    /// Whether the host offers `fixture`.
    pub fn has(&self, fixture: Fixture) -> bool {
        self.env.fixtures.has(fixture)
    }

    /// A new connection, without a handshake.
    pub async fn connect(&mut self) -> Result<Session, Abort> {
        let link = tokio::time::timeout(self.env.opts.answer_timeout, self.env.connect())
            .await
            .map_err(|_| Abort("connecting to the host timed out".into()))?
            .map_err(Abort)?;
        self.sessions += 1;
        let tag = format!(
            "{}{}",
            self.name.replace('/', "-"),
            if self.sessions > 1 {
                format!("-{}", self.sessions)
            } else {
                String::new()
            }
        );
        Ok(Session::new(SessionParts {
            link,
            transport: self.env.transport,
            schemas: self.env.schemas.clone(),
            wire: self.env.wire.clone(),
            wait: self.env.opts.answer_timeout,
            deadline: self.deadline,
            tag,
        }))
    }

    /// The handshake request the suite sends, asking for `caps`.
    pub fn handshake_req(&self, s: &mut Session, caps: &[&str]) -> Value {
        let mut fields = json!({"agent_id": "a2e-conformance", "agent_caps": caps});
        if let Some(token) = self.token() {
            crate::wire::set(&mut fields, "auth_token", json!(token));
        }
        s.req("handshake/req", fields)
    }

    /// A new connection after a successful handshake asking for `caps`.
    pub async fn session_with(&mut self, caps: &[&str]) -> Result<Session, Abort> {
        let mut s = self.connect().await?;
        let hs = self.handshake_req(&mut s, caps);
        let reply = s.request(hs).await?;
        if reply.ty() != "handshake/resp" || reply.at("/ok") == &Value::Bool(false) {
            return Err(Abort(format!(
                "the handshake was not accepted: {}",
                reply.show()
            )));
        }
        s.session_id = reply.s("/session_id").to_owned();
        s.max_parallel = reply.at("/max_parallel").as_u64().unwrap_or(4);
        s.handshake = reply.msg;
        Ok(s)
    }

    /// A new connection after a handshake asking for every capability the suite uses.
    pub async fn session(&mut self) -> Result<Session, Abort> {
        self.session_with(ALL_CAPS).await
    }

    /// Records a pass when `ok`, else a failure.
    pub fn check(
        &mut self,
        id: &str,
        ok: bool,
        expected: impl Into<String>,
        got: impl Into<String>,
    ) {
        self.rec.check(id, ok, expected, got);
    }

    /// Records a pass.
    pub fn pass(&mut self, id: &str) {
        self.rec.pass(id);
    }

    /// Records a failure.
    pub fn fail(&mut self, id: &str, expected: impl Into<String>, got: impl Into<String>) {
        self.rec.fail(id, expected, got);
    }

    /// Records a skip.
    pub fn skip(&mut self, id: &str, reason: impl Into<String>) {
        self.rec.record(id, Status::skipped(reason));
    }

    /// Time left for the scenario.
    pub fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
}
