//! The Agent Card and its parts (proto `AgentCard`, `AgentInterface`,
//! `AgentProvider`, `AgentCapabilities`, `AgentExtension`, `AgentSkill`,
//! `AgentCardSignature`; spec §4.4, §8). v1.0 lists endpoints in
//! `supportedInterfaces`; v0.3's top-level `url`, `preferredTransport`,
//! `additionalInterfaces` and `protocolVersion` are gone (and ignored if
//! sent).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::security::{SecurityRequirement, SecurityScheme};
use crate::wire::{Metadata, is_false, nullable};

/// The `protocolBinding` names of the three standard bindings (spec §5.8;
/// custom bindings SHOULD use a URI).
pub mod binding {
    /// The JSON-RPC 2.0 binding (spec §9).
    pub const JSONRPC: &str = "JSONRPC";
    /// The gRPC binding (spec §10).
    pub const GRPC: &str = "GRPC";
    /// The HTTP+JSON/REST binding (spec §11).
    pub const HTTP_JSON: &str = "HTTP+JSON";
}

/// A self-describing manifest of an agent (proto `AgentCard`), served at
/// `/.well-known/agent-card.json` and by `GetExtendedAgentCard`. Required on
/// the wire: `name`, `description`, `supportedInterfaces`, `version`,
/// `capabilities`, `defaultInputModes`, `defaultOutputModes`, `skills`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    /// `name`: human-readable, e.g. `Recipe Agent`.
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    /// `description`: what the agent is for.
    #[serde(default, deserialize_with = "nullable")]
    pub description: String,
    /// `supportedInterfaces`: where and how to reach it; the first is preferred.
    #[serde(default, alias = "supported_interfaces", deserialize_with = "nullable")]
    pub supported_interfaces: Vec<AgentInterface>,
    /// `provider`: who runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    /// `version`: the agent's own version, e.g. `1.0.0`.
    #[serde(default, deserialize_with = "nullable")]
    pub version: String,
    /// `documentationUrl`: where its documentation is.
    #[serde(
        default,
        alias = "documentation_url",
        skip_serializing_if = "Option::is_none"
    )]
    pub documentation_url: Option<String>,
    /// `capabilities`: the optional protocol features it supports.
    #[serde(default)]
    pub capabilities: AgentCapabilities,
    /// `securitySchemes`: the authentication schemes, by name.
    #[serde(
        default,
        alias = "security_schemes",
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    /// `securityRequirements`: which schemes (and scopes) a client must use;
    /// any one entry suffices.
    #[serde(
        default,
        alias = "security_requirements",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub security_requirements: Vec<SecurityRequirement>,
    /// `defaultInputModes`: media types it accepts, for every skill.
    #[serde(default, alias = "default_input_modes", deserialize_with = "nullable")]
    pub default_input_modes: Vec<String>,
    /// `defaultOutputModes`: media types it produces, for every skill.
    #[serde(default, alias = "default_output_modes", deserialize_with = "nullable")]
    pub default_output_modes: Vec<String>,
    /// `skills`: what it is good at.
    #[serde(default, deserialize_with = "nullable")]
    pub skills: Vec<AgentSkill>,
    /// `signatures`: JWS signatures of the card.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub signatures: Vec<AgentCardSignature>,
    /// `iconUrl`: an icon of the agent.
    #[serde(default, alias = "icon_url", skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
}

/// One way to reach the agent (proto `AgentInterface`): a URL, a binding and
/// a protocol version, all required, and an optional tenant.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    /// `url`: an absolute URL (HTTPS in production), or `host:port` for gRPC.
    #[serde(default, deserialize_with = "nullable")]
    pub url: String,
    /// `protocolBinding`: `JSONRPC`, `GRPC`, `HTTP+JSON` (see [`binding`]) or
    /// a custom binding's URI.
    #[serde(default, alias = "protocol_binding", deserialize_with = "nullable")]
    pub protocol_binding: String,
    /// `tenant`: when set, clients put it in every request's `tenant` field.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    /// `protocolVersion`: the A2A version served there, `Major.Minor` (`1.0`).
    #[serde(default, alias = "protocol_version", deserialize_with = "nullable")]
    pub protocol_version: String,
}

impl AgentInterface {
    /// An interface of [`crate::PROTOCOL_VERSION`] at a URL over a binding.
    pub fn new(url: impl Into<String>, protocol_binding: impl Into<String>) -> Self {
        AgentInterface {
            url: url.into(),
            protocol_binding: protocol_binding.into(),
            tenant: String::new(),
            protocol_version: crate::PROTOCOL_VERSION.to_owned(),
        }
    }
}

/// Who provides the agent (proto `AgentProvider`): `organization` and `url`,
/// both required.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentProvider {
    /// `url`: the provider's website or documentation.
    #[serde(default, deserialize_with = "nullable")]
    pub url: String,
    /// `organization`: the provider's name.
    #[serde(default, deserialize_with = "nullable")]
    pub organization: String,
}

/// The optional features the agent supports (proto `AgentCapabilities`).
/// Absent booleans mean "not declared", kept apart from `false` so that a
/// signed card re-serializes as it was.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// `streaming`: `SendStreamingMessage` and `SubscribeToTask` work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// `pushNotifications`: the push notification config operations work.
    #[serde(
        default,
        alias = "push_notifications",
        skip_serializing_if = "Option::is_none"
    )]
    pub push_notifications: Option<bool>,
    /// `extensions`: the protocol extensions it supports.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<AgentExtension>,
    /// `extendedAgentCard`: `GetExtendedAgentCard` works for authenticated
    /// clients.
    #[serde(
        default,
        alias = "extended_agent_card",
        skip_serializing_if = "Option::is_none"
    )]
    pub extended_agent_card: Option<bool>,
}

/// A protocol extension the agent supports (proto `AgentExtension`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentExtension {
    /// `uri`: identifies the extension.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub uri: String,
    /// `description`: how the agent uses it.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    /// `required`: clients must understand and use it
    /// (`ExtensionSupportRequiredError` otherwise).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "is_false"
    )]
    pub required: bool,
    /// `params`: the extension's configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Metadata>,
}

/// Something the agent can do (proto `AgentSkill`). Required on the wire:
/// `id`, `name`, `description`, `tags`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    /// `id`: unique among the agent's skills.
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
    /// `name`: human-readable.
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    /// `description`: what the skill does.
    #[serde(default, deserialize_with = "nullable")]
    pub description: String,
    /// `tags`: keywords.
    #[serde(default, deserialize_with = "nullable")]
    pub tags: Vec<String>,
    /// `examples`: prompts or scenarios it handles.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub examples: Vec<String>,
    /// `inputModes`: media types it accepts, overriding the card's default.
    #[serde(
        default,
        alias = "input_modes",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub input_modes: Vec<String>,
    /// `outputModes`: media types it produces, overriding the card's default.
    #[serde(
        default,
        alias = "output_modes",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub output_modes: Vec<String>,
    /// `securityRequirements`: the schemes this skill needs.
    #[serde(
        default,
        alias = "security_requirements",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub security_requirements: Vec<SecurityRequirement>,
}

/// A JWS signature of the card, RFC 7515 JSON form (proto
/// `AgentCardSignature`): `protected` and `signature` required.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentCardSignature {
    /// `protected`: the protected JWS header, base64url-encoded JSON.
    #[serde(default, deserialize_with = "nullable")]
    pub protected: String,
    /// `signature`: the signature, base64url-encoded.
    #[serde(default, deserialize_with = "nullable")]
    pub signature: String,
    /// `header`: the unprotected JWS header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Metadata>,
}
