//! a2e as an A2A client: the skills of the remote agents of
//! `[[a2a.agents]]` as skills of the host, `NAME__SKILL` (a name valid as an
//! MCP tool name too), callable as any skill — by agents, from chains, LLM
//! skills and ACMP.
//!
//! Each agent's card is read when the host is built (a host whose agents'
//! cards cannot be read is not built: the error names the agent and the
//! URL). A call sends the skill's arguments as the data part of a message
//! naming the remote skill in `metadata.skill`, over the agent's JSON-RPC
//! interface: streamed when the card offers streaming (each status the
//! remote task reports becomes a `status` event of the call), else waited
//! for. The call's output is the task's artifacts; a cancelled call cancels
//! the remote task (`CancelTask`).

mod call;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use a2a_proto::{AgentCard, binding};
use a2e_host_core::config::RemoteAgentEntry;
use a2e_host_core::host::{BuildError, HostBuilder};
use a2e_plugin::{Error, SkillCall, SkillOutput, SkillPlugin};
use a2e_proto::{SkillDefinition, SkillStatus};
use serde_json::{Map, Value, json};

/// Attempts at reading a card before the build fails.
const CARD_ATTEMPTS: u32 = 3;

/// How long reading one card may take.
const CARD_TIMEOUT: Duration = Duration::from_secs(10);

/// One remote agent, as its card described it.
#[derive(Debug)]
pub(crate) struct RemoteAgent {
    /// Its name on this host.
    pub name: String,
    /// Its JSON-RPC endpoint.
    pub endpoint: String,
    /// The bearer token it wants.
    pub token: Option<String>,
    /// Whether it streams.
    pub streaming: bool,
    /// How long a call may take.
    pub timeout: Duration,
    /// Its skills' definitions on this host.
    pub skills: Vec<SkillDefinition>,
}

/// The skills of every remote agent.
#[derive(Debug)]
pub struct RemoteAgents {
    http: reqwest::Client,
    /// By the host's skill name: the agent and the remote skill's id.
    skills: HashMap<String, (Arc<RemoteAgent>, String)>,
    definitions: Vec<SkillDefinition>,
}

/// The skill's definition on this host: the remote skill's card entry
/// under `AGENT__ID`, taking any object.
fn definition(agent: &str, skill: &a2a_proto::AgentSkill) -> SkillDefinition {
    let mut tags = skill.tags.clone();
    tags.push("a2a".into());
    let description = if skill.description.is_empty() {
        skill.name.clone()
    } else {
        skill.description.clone()
    };
    let mut def = SkillDefinition::new(&format!("{agent}__{}", skill.id), &description);
    def.triggers = skill.examples.clone();
    def.status = SkillStatus::PUBLISHED;
    def.input_schema = json!({"type": "object"})
        .as_object()
        .cloned()
        .unwrap_or_default();
    def.source = format!("a2a:{agent}");
    def.tags = Some(tags);
    def
}

/// Reads `entry`'s card (with retries on the shared backoff).
async fn read_card(http: &reqwest::Client, entry: &RemoteAgentEntry) -> Result<AgentCard, String> {
    let url = entry.card_url();
    let backoff = a2e_http::Backoff::new(Duration::from_millis(200), Duration::from_secs(2));
    let mut last = String::new();
    for attempt in 0..CARD_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(backoff.delay(attempt)).await;
        }
        let got = http.get(&url).timeout(CARD_TIMEOUT).send().await;
        match got {
            Ok(resp) if resp.status().is_success() => {
                let body = resp.bytes().await.map_err(|e| a2e_http::describe(&e))?;
                return a2a_proto::decode::<AgentCard>(&body)
                    .map_err(|e| format!("its card at {url} does not decode: {e}"));
            }
            Ok(resp) => last = format!("{url} answered {}", resp.status()),
            Err(e) => last = format!("{url}: {}", a2e_http::describe(&e)),
        }
    }
    Err(last)
}

/// The agent of `entry`, from its card.
async fn agent(http: &reqwest::Client, entry: &RemoteAgentEntry) -> Result<RemoteAgent, String> {
    let card = read_card(http, entry).await?;
    let endpoint = card
        .supported_interfaces
        .iter()
        .find(|i| i.protocol_binding == binding::JSONRPC)
        .map(|i| i.url.clone())
        .ok_or_else(|| {
            format!(
                "its card offers no JSON-RPC interface ({})",
                entry.card_url()
            )
        })?;
    let token = match &entry.token_env {
        Some(var) => Some(std::env::var(var).map_err(|_| format!("token_env `{var}` is not set"))?),
        None => None,
    };
    Ok(RemoteAgent {
        name: entry.name.clone(),
        endpoint,
        token,
        streaming: card.capabilities.streaming == Some(true),
        timeout: Duration::from_secs(entry.timeout_secs),
        skills: card
            .skills
            .iter()
            .map(|s| definition(&entry.name, s))
            .collect(),
    })
}

/// Adds the skills of `[[a2a.agents]]` to `builder` (nothing without agents).
pub async fn mount(builder: HostBuilder) -> Result<HostBuilder, BuildError> {
    let entries = builder.config().a2a.agents.clone();
    if entries.is_empty() {
        return Ok(builder);
    }
    let invalid = |agent: &str, why: String| {
        BuildError::Config(a2e_host_core::ConfigError::A2aAgent {
            agent: agent.to_owned(),
            why,
        })
    };
    let http = a2e_http::ClientOptions::default()
        .build()
        .map_err(|e| invalid("*", format!("no HTTP client: {e}")))?;
    let mut skills = HashMap::new();
    let mut definitions = Vec::new();
    for entry in &entries {
        let agent = agent(&http, entry)
            .await
            .map_err(|e| invalid(&entry.name, e))?;
        let agent = Arc::new(agent);
        for def in &agent.skills {
            let remote = def
                .name
                .strip_prefix(&format!("{}__", agent.name))
                .unwrap_or(&def.name)
                .to_owned();
            skills.insert(def.name.clone(), (agent.clone(), remote));
            definitions.push(def.clone());
        }
        tracing::info!(agent = %agent.name, skills = agent.skills.len(), "a2a: remote agent mounted");
    }
    Ok(builder.with_skill_plugin(RemoteAgents {
        http,
        skills,
        definitions,
    }))
}

impl SkillPlugin for RemoteAgents {
    fn name(&self) -> &str {
        "a2a-agents"
    }

    fn skills(&self) -> Vec<SkillDefinition> {
        self.definitions.clone()
    }

    async fn call(
        &self,
        skill: &str,
        args: Map<String, Value>,
        call: SkillCall,
    ) -> Result<SkillOutput, Error> {
        let Some((agent, remote)) = self.skills.get(skill) else {
            return Err(Error::Refused {
                kind: a2e_plugin::Refusal::UnknownSkill,
                message: skill.to_owned(),
            });
        };
        call::run(&self.http, agent, remote, args, &call.ctx).await
    }
}
