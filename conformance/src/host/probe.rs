//! What of the fixture profile a host offers, found by asking it once before
//! the scenarios run: its tools (deferred ones by search), its skills, and
//! whether it spawns `sh`.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use super::{ALL_CAPS, Env};
use crate::profile;
use crate::scenario::Fixture;
use crate::session::{Session, SessionParts};
use crate::wire;

/// The fixtures a host offers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fixtures {
    /// Capabilities the host accepted enabled, or served when asked.
    pub caps: BTreeSet<String>,
    /// Tool names (deferred ones included).
    pub tools: BTreeSet<String>,
    /// Skill names.
    pub skills: BTreeSet<String>,
    /// It spawns `sh`.
    pub proc: bool,
    /// The suite has the host's shared secret.
    pub auth: bool,
    /// Why the probe could not finish, if it could not.
    pub problem: Option<String>,
}

impl Fixtures {
    /// Whether `fixture` is offered.
    pub fn has(&self, fixture: Fixture) -> bool {
        match fixture {
            Fixture::Cap(name) => self.caps.contains(name),
            Fixture::Tool(name) => self.tools.contains(name),
            Fixture::Skill(name) => self.skills.contains(name),
            Fixture::Proc => self.proc,
            Fixture::AuthToken => self.auth,
        }
    }

    /// One line saying what was found.
    pub fn describe(&self) -> String {
        let list = |set: &BTreeSet<String>| {
            let mine: Vec<&str> = set
                .iter()
                .filter(|n| n.starts_with("conformance_"))
                .map(String::as_str)
                .collect();
            if mine.is_empty() {
                "none".to_owned()
            } else {
                mine.join(", ")
            }
        };
        let mut out = format!(
            "capabilities: {}; fixtures: tools {}; skills {}; proc {}; auth token {}",
            self.caps.iter().cloned().collect::<Vec<_>>().join(", "),
            list(&self.tools),
            list(&self.skills),
            if self.proc { "yes" } else { "no" },
            if self.auth { "given" } else { "not given" },
        );
        if let Some(problem) = &self.problem {
            out.push_str(&format!(" (the probe did not finish: {problem})"));
        }
        out
    }

    /// The first of `needs` that is not offered.
    pub fn missing(&self, needs: &[Fixture]) -> Option<Fixture> {
        needs.iter().copied().find(|f| !self.has(*f))
    }

    /// Whether the host offers any of the fixture profile (a tool or a skill
    /// of it). Offering part of the profile declares it: the host then owes
    /// every fixture of each capability it accepted.
    pub fn offers_profile(&self) -> bool {
        profile::TOOLS.iter().any(|t| self.tools.contains(*t))
            || profile::SKILLS.iter().any(|s| self.skills.contains(*s))
    }

    /// The capability for which the host owes `fixture`, if it owes it: it
    /// offers the profile and accepted the capability the fixture belongs to.
    /// A scenario needing a fixture the host owes but lacks fails instead of
    /// being skipped. Capabilities and the auth token are never owed: a host
    /// may lack a capability, and the token is the suite's option.
    pub fn owes(&self, fixture: Fixture) -> Option<&'static str> {
        let cap = match fixture {
            Fixture::Tool(_) => "tools",
            Fixture::Skill(_) => "skill",
            Fixture::Proc => "proc",
            Fixture::Cap(_) | Fixture::AuthToken => return None,
        };
        (self.offers_profile() && self.caps.contains(cap)).then_some(cap)
    }
}

fn names(list: &Value) -> impl Iterator<Item = String> + '_ {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .map(str::to_owned)
}

/// Asks the host what it offers (within about `limit`).
pub async fn probe(env: &Arc<Env>, limit: Duration) -> Fixtures {
    let mut found = Fixtures {
        auth: env.opts.auth_token.is_some(),
        ..Fixtures::default()
    };
    if let Err(e) = run(env, limit, &mut found).await {
        found.problem = Some(e);
    }
    found
}

async fn run(env: &Arc<Env>, limit: Duration, found: &mut Fixtures) -> Result<(), String> {
    let link = tokio::time::timeout(env.opts.answer_timeout, env.connect())
        .await
        .map_err(|_| "connecting timed out".to_owned())??;
    let mut s = Session::new(SessionParts {
        link,
        transport: env.transport,
        schemas: env.schemas.clone(),
        wire: Arc::default(),
        wait: env.opts.answer_timeout,
        deadline: Instant::now() + limit,
        tag: "probe".into(),
    });
    let mut hs = json!({"agent_id": "a2e-conformance", "agent_caps": ALL_CAPS});
    if let Some(token) = &env.opts.auth_token {
        crate::wire::set(&mut hs, "auth_token", json!(token));
    }
    let hs = s.req("handshake/req", hs);
    let reply = s.request(hs).await.map_err(|e| e.0)?;
    if reply.ty() != "handshake/resp" || reply.at("/ok") == &Value::Bool(false) {
        return Err(format!("the handshake was not accepted: {}", reply.show()));
    }
    found.caps.extend(
        reply
            .at("/accepted_caps")
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c.get("enabled") != Some(&Value::Bool(false)))
            .filter_map(|c| c.get("capability").and_then(Value::as_str))
            .map(str::to_owned),
    );
    // A capability counts as offered when accepted, or when its request is served.
    let list = s.req("tool/list/req", json!({}));
    if let Ok(r) = s.request(list).await
        && r.ty() == "tool/list/resp"
    {
        found.caps.insert("tools".into());
        found.tools.extend(names(r.at("/tools")));
    }
    let search = s.req(
        "tool/list/req",
        json!({"query": "conformance", "include_deferred": true}),
    );
    if let Ok(r) = s.request(search).await {
        found.tools.extend(names(r.at("/tools")));
    }
    let discover = s.req("skill/discover/req", json!({}));
    if let Ok(r) = s.request(discover).await
        && r.ty() == "skill/discover/resp"
    {
        found.caps.insert("skill".into());
        found.skills.extend(names(r.at("/skills")));
    }
    let spawn = s.req(
        "proc/spawn/req",
        json!({"session_id": s.session_id.clone(), "cmd": ["sh", "-c", "exit 0"]}),
    );
    let id = wire::s(&spawn, "/id").to_owned();
    if let Ok(r) = s.request(spawn).await
        && r.ty() == "proc/spawn/resp"
        && r.at("/ok") == &Value::Bool(true)
    {
        found.caps.insert("proc".into());
        found.proc = true;
        // Its end, when it comes as the spec says (the proc checks judge that).
        let _ = s
            .events_until(&id, Duration::from_secs(2), |e| {
                wire::s(e, "/stream_type") == "killed"
            })
            .await;
    }
    Ok(())
}
