//! The Agent Card: the host's published skills as A2A skills, both
//! bindings at the agent's URL, streaming on, push notifications off, the
//! bearer scheme when the host has a token.

use std::sync::Arc;

use a2a_proto::{
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, SecurityRequirement, SecurityScheme,
    binding,
};
use a2e_host_core::host::Host;
use a2e_proto::{SkillDiscoverRequest, SkillStatus};
use axum::extract::State;
use std::hash::{Hash, Hasher};

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::A2aAgent;

/// The media types a skill takes and gives: a data part (JSON) or text.
const MODES: [&str; 2] = ["application/json", "text/plain"];

/// How long a client may keep the card (it changes when skills do).
const CARD_MAX_AGE: &str = "public, max-age=60";

/// The host's published skills, as A2A skills.
pub(crate) fn skills(host: &Host) -> Vec<a2e_proto::SkillDefinition> {
    host.discover_skills(&SkillDiscoverRequest::default())
        .into_iter()
        .filter(|def| def.status == SkillStatus::PUBLISHED)
        .collect()
}

/// The card of `host` reached at `base_url`.
pub fn agent_card(host: &Host, base_url: &str) -> AgentCard {
    let skills = skills(host)
        .into_iter()
        .map(|def| {
            let mut tags = def.tags.clone().unwrap_or_default();
            if let Some(category) = &def.category {
                tags.push(category.clone());
            }
            tags.push(def.source.clone());
            tags.retain(|t| !t.is_empty());
            let description = if def.description.is_empty() {
                format!("The skill `{}`.", def.name)
            } else {
                def.description.clone()
            };
            AgentSkill {
                id: def.name.clone(),
                name: def.name,
                description,
                tags,
                examples: def.triggers,
                ..AgentSkill::default()
            }
        })
        .collect();
    let token = !host.config().auth_token.is_empty();
    AgentCard {
        name: "a2e".into(),
        description: "An A2E host: its published skills (chains, LLM, Ontheia and program \
                      skills) run as durable tasks."
            .into(),
        supported_interfaces: vec![
            AgentInterface::new(format!("{base_url}/"), binding::JSONRPC),
            AgentInterface::new(base_url, binding::HTTP_JSON),
        ],
        version: env!("CARGO_PKG_VERSION").into(),
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(true),
            ..AgentCapabilities::default()
        },
        security_schemes: if token {
            [(
                crate::checks::SCHEME.to_owned(),
                SecurityScheme::bearer(None),
            )]
            .into()
        } else {
            Default::default()
        },
        security_requirements: if token {
            vec![SecurityRequirement::scheme(crate::checks::SCHEME, vec![])]
        } else {
            Vec::new()
        },
        default_input_modes: MODES.map(String::from).to_vec(),
        default_output_modes: MODES.map(String::from).to_vec(),
        skills,
        ..AgentCard::default()
    }
}

/// `GET /.well-known/agent-card.json`: with an `ETag` (of the card's
/// bytes), and `304 Not Modified` to a client that has it.
pub(crate) async fn serve_card(State(agent): State<Arc<A2aAgent>>, headers: HeaderMap) -> Response {
    let card = agent_card(&agent.host, &agent.base_url);
    let body = serde_json::to_vec(&card).unwrap_or_default();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    body.hash(&mut hasher);
    let etag = format!("\"{:016x}\"", hasher.finish());
    let seen = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    // The card is the host's since the agent was made: that is when it
    // last changed.
    let modified = chrono::DateTime::<chrono::Utc>::from(agent.since)
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string();
    let cache = [
        (header::CACHE_CONTROL, CARD_MAX_AGE.to_owned()),
        (header::ETAG, etag),
        (header::LAST_MODIFIED, modified),
    ];
    if seen {
        return (StatusCode::NOT_MODIFIED, cache).into_response();
    }
    (cache, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}
