//! The skills capability (`skill/*`, a2e-skills spec): messages and data models.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::codes::ErrorCode;
use crate::event::EventKind;

open_enum! {
    /// Lifecycle status of a skill.
    pub struct SkillStatus {
        /// Created, not yet available.
        CREATED = "Created",
        /// Blocked (missing dependencies).
        BLOCKED = "Blocked",
        /// Available for use.
        PUBLISHED = "Published",
        /// Archived and unavailable.
        ARCHIVED = "Archived",
    }
}

/// LLM configuration of a skill. `provider_credentials` never leaves the host:
/// use [`LLMConfig::redacted`] before sending one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "arbitrary", derive(proptest_derive::Arbitrary))]
pub struct LLMConfig {
    /// Provider name.
    pub provider_name: String,
    /// Provider credentials / API keys.
    #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::object()"))]
    pub provider_credentials: Map<String, Value>,
    /// Provider-specific configuration.
    #[serde(default)]
    #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::opt_object()"))]
    pub provider_config: Option<Map<String, Value>>,
    /// Whether this is the default configuration.
    #[serde(default)]
    pub is_default: bool,
}

/// What a redacted credential value reads on the wire.
pub const REDACTED: &str = "[REDACTED]";

impl LLMConfig {
    /// A copy whose every credential value reads [`REDACTED`].
    pub fn redacted(&self) -> Self {
        let mut copy = self.clone();
        for value in copy.provider_credentials.values_mut() {
            *value = Value::String(REDACTED.into());
        }
        copy
    }
}

/// A skill's manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "arbitrary", derive(proptest_derive::Arbitrary))]
pub struct SkillDefinition {
    /// Unique skill name.
    pub name: String,
    /// Skill version.
    pub version: String,
    /// What it does.
    pub description: String,
    /// Trigger phrases.
    pub triggers: Vec<String>,
    /// Tool dependencies (names, or objects with a `name`).
    #[serde(default)]
    #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::opt_list()"))]
    pub tools: Option<Vec<Value>>,
    /// Toolkit dependencies.
    #[serde(default)]
    #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::opt_list()"))]
    pub toolkits: Option<Vec<Value>>,
    /// Lifecycle status.
    pub status: SkillStatus,
    /// JSON Schema of the arguments.
    #[serde(default)]
    #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::object()"))]
    pub input_schema: Map<String, Value>,
    /// JSON Schema of the output.
    #[serde(default)]
    #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::object()"))]
    pub output_schema: Map<String, Value>,
    /// Natural-language instructions.
    #[serde(default)]
    pub instructions: Option<String>,
    /// Where the skill was defined.
    #[serde(default)]
    pub file_path: Option<String>,
    /// Default LLM configuration.
    #[serde(default)]
    pub llm_config: Option<LLMConfig>,
    /// Default arguments. The spec types this `list[str]` with default `{}`; any JSON is kept.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::json()"))]
    pub arguments: Value,
    /// When an agent should use it.
    pub when_to_use: String,
    /// How to build its arguments.
    pub argument_hint: String,
    /// Origin: `user`, `system` or `project`.
    pub source: String,
    /// Category.
    #[serde(default)]
    pub category: Option<String>,
    /// Tags.
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// Most agentic turns.
    #[serde(default)]
    #[serde(deserialize_with = "crate::num::opt_int")]
    pub max_turns: Option<u32>,
    /// Execution time limit.
    #[serde(default)]
    #[serde(deserialize_with = "crate::num::opt_int")]
    pub timeout_seconds: Option<u64>,
    /// Icon for a UI.
    #[serde(default)]
    pub icon: Option<String>,
    /// More metadata.
    #[serde(default)]
    #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::opt_object()"))]
    pub metadata: Option<Map<String, Value>>,
}

impl SkillDefinition {
    /// A published skill with the required fields set and the rest at defaults.
    pub fn new(name: &str, description: &str) -> Self {
        Self {
            name: name.into(),
            version: "1.0.0".into(),
            description: description.into(),
            triggers: Vec::new(),
            tools: None,
            toolkits: None,
            status: SkillStatus::PUBLISHED,
            input_schema: Map::new(),
            output_schema: Map::new(),
            instructions: None,
            file_path: None,
            llm_config: None,
            arguments: Value::Null,
            when_to_use: String::new(),
            argument_hint: String::new(),
            source: "system".into(),
            category: None,
            tags: None,
            max_turns: None,
            timeout_seconds: None,
            icon: None,
            metadata: None,
        }
    }

    /// Names of the tools this skill declares it needs.
    pub fn tool_names(&self) -> Vec<String> {
        self.tools
            .iter()
            .flatten()
            .filter_map(|t| match t {
                Value::String(s) => Some(s.clone()),
                Value::Object(o) => o.get("name").and_then(Value::as_str).map(str::to_owned),
                _ => None,
            })
            .collect()
    }

    /// A copy fit to leave the host: LLM credentials redacted.
    pub fn redacted(&self) -> Self {
        let mut copy = self.clone();
        copy.llm_config = copy.llm_config.as_ref().map(LLMConfig::redacted);
        copy
    }
}

/// The result of a skill call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "arbitrary", derive(proptest_derive::Arbitrary))]
pub struct SkillResult {
    /// Whether it succeeded.
    pub success: bool,
    /// Result data.
    #[serde(default)]
    #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::json()"))]
    pub data: Value,
    /// Summary for a person.
    #[serde(default)]
    #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::json()"))]
    pub summary: Value,
    /// Output was cut at a limit.
    #[serde(default)]
    pub truncated: bool,
    /// Error message.
    #[serde(default)]
    pub error: Option<String>,
    /// Machine-readable error code.
    #[serde(default)]
    pub error_code: Option<ErrorCode>,
    /// Execution time.
    #[serde(deserialize_with = "crate::num::int")]
    pub duration_ms: u64,
    /// Events streamed during the call.
    #[serde(default)]
    #[cfg_attr(
        feature = "arbitrary",
        proptest(
            strategy = "proptest::collection::vec(proptest::arbitrary::any::<SkillEvent>(), 0..3)"
        )
    )]
    pub events: Vec<SkillEvent>,
}

impl SkillResult {
    /// A successful result.
    pub fn ok(data: Value) -> Self {
        Self {
            success: true,
            data,
            summary: Value::Null,
            truncated: false,
            error: None,
            error_code: None,
            duration_ms: 0,
            events: Vec::new(),
        }
    }

    /// A failed result.
    pub fn failed(code: ErrorCode, error: impl Into<String>) -> Self {
        Self {
            success: false,
            error: Some(error.into()),
            error_code: Some(code),
            ..Self::ok(Value::Null)
        }
    }
}

wire_message! {
    /// `skill/discover/req` — find skills.
    pub struct SkillDiscoverRequest = "skill/discover/req" {
        /// Tags, any of which a skill must carry (OR).
        #[serde(default)]
        pub filter_tags: Vec<String> = Vec::new(),
        /// Categories, any of which a skill must be in.
        #[serde(default)]
        pub filter_categories: Vec<String> = Vec::new(),
    }
}

wire_message! {
    /// `skill/discover/resp` — the matching skills.
    pub struct SkillDiscoverResponse = "skill/discover/resp" {
        /// The request's id.
        #[serde(default)]
        pub req_id: String = String::new(),
        /// Skill manifests (credentials redacted).
        #[serde(default)]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "proptest::collection::vec(proptest::arbitrary::any::<SkillDefinition>(), 0..3)"))]
        pub skills: Vec<SkillDefinition> = Vec::new(),
    }
}

wire_message! {
    /// `skill/call/req` — execute a skill.
    pub struct SkillCallRequest = "skill/call/req" {
        /// Skill to run.
        #[serde(default)]
        pub name: String = String::new(),
        /// Arguments, validated against the skill's `input_schema`.
        #[serde(default)]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::object()"))]
        pub arguments: Map<String, Value> = Map::new(),
        /// Ties the call to an agent turn.
        #[serde(default)]
        pub correlation_id: String = String::new(),
        /// W3C trace context of the caller (`00-<trace id>-<span id>-<flags>`):
        /// the request's spans join the caller's trace. Optional; an unusable
        /// value starts a new trace (docs/observability.md).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub traceparent: String = String::new(),
        /// The W3C `tracestate` that goes with `traceparent`. Optional.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub tracestate: String = String::new(),
        /// Wall-clock limit in seconds.
        #[serde(default = "default_skill_timeout")]
        #[serde(deserialize_with = "crate::num::int")]
        pub timeout: u64 = default_skill_timeout(),
        /// Emit `skill/event`s during execution.
        #[serde(default = "crate::envelope::yes")]
        pub streaming: bool = true,
        /// Model/provider override.
        #[serde(default)]
        pub llm_override: Option<LLMConfig> = None,
        /// More metadata.
        #[serde(default)]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::object()"))]
        pub metadata: Map<String, Value> = Map::new(),
    }
}

/// A `skill/call/req`'s `timeout` when the request gives none (a2e-skills).
pub const DEFAULT_SKILL_TIMEOUT_SECS: u64 = 60;

fn default_skill_timeout() -> u64 {
    DEFAULT_SKILL_TIMEOUT_SECS
}

impl SkillCallRequest {
    /// A call of skill `name`; `arguments` should be an object.
    pub fn new(name: &str, arguments: Value) -> Self {
        Self {
            name: name.into(),
            arguments: match arguments {
                Value::Object(map) => map,
                _ => Map::new(),
            },
            ..Self::default()
        }
    }
}

wire_message! {
    /// `skill/call/resp` — the final result of a skill call.
    pub struct SkillCallResponse = "skill/call/resp" {
        /// The request's id.
        #[serde(default)]
        pub req_id: String = String::new(),
        /// The skill that ran.
        #[serde(default)]
        pub name: String = String::new(),
        /// The result.
        #[serde(default)]
        pub data: Option<SkillResult> = None,
        /// Transport-level error `{code, message, retryable}`.
        #[serde(default)]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::opt_object()"))]
        pub error: Option<Map<String, Value>> = None,
        /// When the result was made.
        #[serde(default = "crate::envelope::now")]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::finite()"))]
        pub created_at: f64 = crate::envelope::now(),
    }
}

wire_message! {
    /// `skill/event` — a streaming event during a skill call.
    pub struct SkillEvent = "skill/event" {
        /// Event kind.
        pub kind: EventKind = EventKind::STATUS,
        /// The call this belongs to.
        #[serde(default)]
        pub req_id: String = String::new(),
        /// Payload.
        #[serde(default)]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::object()"))]
        pub data: Map<String, Value> = Map::new(),
        /// 0, 1, 2, … per call.
        #[serde(default)]
        #[serde(deserialize_with = "crate::num::int")]
        pub seq: u64 = 0,
    }
}

impl_request!(SkillDiscoverRequest, SkillCallRequest);
impl_response!(SkillDiscoverResponse, SkillCallResponse, SkillEvent);
