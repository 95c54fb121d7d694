//! The chain document: `{"steps": [...], "edges": [...]}` as typed values.
//!
//! These types mirror the JSON shape exactly (unknown keys are rejected) and
//! derive [`schemars::JsonSchema`]; [`crate::schema::document_schema`] turns
//! them into the published schema. Build one with [`crate::parse`] (which
//! validates every limit first) rather than by deserializing directly.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

/// A whole chain: the steps run in order, edges carry data between them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "Ontheia chain document")]
pub struct Document {
    /// The steps, run in order (1–50).
    #[schemars(length(min = 1, max = 50))]
    pub steps: Vec<Step>,
    /// Data mappings between steps (at most 200).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 200))]
    pub edges: Vec<Edge>,
}

/// `{from, to, map?}`: before `to` runs, each `map` entry copies the value at
/// a path of `from`'s stored result into `to`'s `inputs` under a key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Edge {
    /// A step id, or `input` (the global context).
    #[schemars(length(min = 1, max = 64))]
    pub from: String,
    /// A step id, or `output` (the run's final outputs).
    #[schemars(length(min = 1, max = 64))]
    pub to: String,
    /// `{"<path in the source result>": "<input key in the target>"}`, non-empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map: Option<Map<String, Value>>,
}

/// The thirteen step types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepType {
    /// Vector search in long-term memory.
    MemorySearch,
    /// An MCP server's tool (or a native host tool).
    Tool,
    /// A model call.
    Llm,
    /// Routes on a central value to the matching case.
    Router,
    /// The first case whose `when` holds, else `default`.
    Branch,
    /// Sub-steps run concurrently.
    Parallel,
    /// Stores text in long-term memory.
    MemoryWrite,
    /// An HTTP request.
    RestCall,
    /// A pause.
    Delay,
    /// Sub-steps repeated `count` times.
    Loop,
    /// Sub-steps retried on failure.
    Retry,
    /// A template rendered to text or JSON.
    Transform,
    /// Delegation to another agent.
    Agent,
}

impl StepType {
    /// Every type, in the schema's order.
    pub const ALL: [StepType; 13] = [
        StepType::MemorySearch,
        StepType::Tool,
        StepType::Llm,
        StepType::Router,
        StepType::Branch,
        StepType::Parallel,
        StepType::MemoryWrite,
        StepType::RestCall,
        StepType::Delay,
        StepType::Loop,
        StepType::Retry,
        StepType::Transform,
        StepType::Agent,
    ];

    /// The name in documents (`memory_search`, `tool`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            StepType::MemorySearch => "memory_search",
            StepType::Tool => "tool",
            StepType::Llm => "llm",
            StepType::Router => "router",
            StepType::Branch => "branch",
            StepType::Parallel => "parallel",
            StepType::MemoryWrite => "memory_write",
            StepType::RestCall => "rest_call",
            StepType::Delay => "delay",
            StepType::Loop => "loop",
            StepType::Retry => "retry",
            StepType::Transform => "transform",
            StepType::Agent => "agent",
        }
    }

    /// The type named `name`, if it is one of the thirteen.
    pub fn from_name(name: &str) -> Option<StepType> {
        StepType::ALL.into_iter().find(|t| t.as_str() == name)
    }
}

impl fmt::Display for StepType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `when` condition: a boolean, a number (true when non-zero) or a string
/// expression (see [`crate::condition`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum When {
    /// Taken as is.
    Bool(bool),
    /// True when non-zero.
    Number(Number),
    /// Templated and evaluated.
    Text(String),
}

/// One case of a `branch` or `router`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// For `branch`: the condition. For `router`: the value the central
    /// value must equal (or a full `==`/`!=` condition). Absent: always.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<When>,
    /// The steps run when this case is taken (at most 20).
    #[schemars(length(max = 20))]
    pub steps: Vec<Step>,
}

/// One step. Which fields a type uses is listed in the crate's
/// `docs/semantics.md`; every parameter may also be given inside `params`
/// (a top-level field wins).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Unique in the document (1–64 characters).
    #[schemars(length(min = 1, max = 64))]
    pub id: String,
    /// The step type.
    #[serde(rename = "type")]
    pub kind: StepType,
    /// `agent`: the target agent (name or id); `llm`: whose model to use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 128))]
    pub agent_id: Option<String>,
    /// `agent`: a task context that beats the agent's default chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub task_id: Option<String>,
    /// `agent`: a chain bound to the agent, instead of its default chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 128))]
    pub chain_id: Option<String>,
    /// `agent`: the message to the sub-agent; `router`: the central value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// Skip the step unless this holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<When>,
    /// Parameters; any top-level parameter may be given here instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Map<String, Value>>,
    /// Static inputs (templated), merged with edge-mapped inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Map<String, Value>>,
    /// Declared outputs (documentation only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs: Option<Map<String, Value>>,
    /// `llm`: the prompt; `transform`: the template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// `llm`: a system prompt for this step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// `llm`: a specific model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `tool`: the MCP server's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// `tool`: the tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// `tool`: the arguments (templated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Map<String, Value>>,
    /// `delay`, `retry`: milliseconds (0–600000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 600_000))]
    pub delay_ms: Option<Number>,
    /// `loop`: iterations (1–20); `retry`: attempts (1–5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 20))]
    pub count: Option<Number>,
    /// `retry`: a warning counts as a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_on_warnings: Option<bool>,
    /// `branch`, `router`: 1–10 cases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 10))]
    pub cases: Option<Vec<Case>>,
    /// `parallel`, `loop`, `retry`: the sub-steps (at most 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4))]
    pub steps: Option<Vec<Step>>,
    /// `branch`, `router`: steps when no case is taken (at most 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 20))]
    pub default: Option<Vec<Step>>,
    /// `rest_call`: the URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `rest_call`: GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// `rest_call`: request headers (templated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<Map<String, Value>>,
    /// `rest_call`: the body (templated), sent as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
}

impl Step {
    /// A step with just an id and a type; the rest unset.
    pub fn new(id: impl Into<String>, kind: StepType) -> Step {
        Step {
            id: id.into(),
            kind,
            agent_id: None,
            task_id: None,
            chain_id: None,
            input: None,
            when: None,
            params: None,
            inputs: None,
            outputs: None,
            prompt: None,
            system_prompt: None,
            model: None,
            server: None,
            tool: None,
            args: None,
            delay_ms: None,
            count: None,
            fail_on_warnings: None,
            cases: None,
            steps: None,
            default: None,
            url: None,
            method: None,
            headers: None,
            body: None,
        }
    }

    /// A parameter by name: the top-level field if set, else `params.<name>`.
    /// Returns an owned value for top-level fields (cheap for the small ones).
    pub fn param(&self, name: &str) -> Option<Value> {
        let top = match name {
            "agent_id" => self.agent_id.clone().map(Value::String),
            "task_id" => self.task_id.clone().map(Value::String),
            "chain_id" => self.chain_id.clone().map(Value::String),
            "input" => self.input.clone().map(Value::String),
            "prompt" => self.prompt.clone().map(Value::String),
            "system_prompt" => self.system_prompt.clone().map(Value::String),
            "model" => self.model.clone().map(Value::String),
            "server" => self.server.clone().map(Value::String),
            "tool" => self.tool.clone().map(Value::String),
            "args" => self.args.clone().map(Value::Object),
            "delay_ms" => self.delay_ms.clone().map(Value::Number),
            "count" => self.count.clone().map(Value::Number),
            "fail_on_warnings" => self.fail_on_warnings.map(Value::Bool),
            "url" => self.url.clone().map(Value::String),
            "method" => self.method.clone().map(Value::String),
            "headers" => self.headers.clone().map(Value::Object),
            "body" => self.body.clone(),
            "inputs" => self.inputs.clone().map(Value::Object),
            _ => None,
        };
        top.or_else(|| self.params.as_ref().and_then(|p| p.get(name)).cloned())
    }

    /// A parameter that is a string (top-level or in `params`).
    pub fn param_str(&self, name: &str) -> Option<String> {
        match self.param(name) {
            Some(Value::String(s)) => Some(s),
            _ => None,
        }
    }

    /// A boolean flag in `params` (or top-level), false when absent.
    pub fn flag(&self, name: &str) -> bool {
        matches!(self.param(name), Some(Value::Bool(true)))
    }

    /// An unsigned integer parameter (validated before a run).
    pub fn param_u64(&self, name: &str) -> Option<u64> {
        self.param(name).and_then(|v| v.as_u64())
    }

    /// The nested steps of every kind (`steps`, each case's, `default`).
    pub fn children(&self) -> impl Iterator<Item = &Step> {
        let nested = self.steps.iter().flatten();
        let cases = self.cases.iter().flatten().flat_map(|c| c.steps.iter());
        let default = self.default.iter().flatten();
        nested.chain(cases).chain(default)
    }
}

impl Document {
    /// Every step, nested ones included, depth first in document order.
    pub fn all_steps(&self) -> Vec<&Step> {
        let mut out = Vec::new();
        let mut stack: Vec<&Step> = self.steps.iter().rev().collect();
        while let Some(step) = stack.pop() {
            out.push(step);
            let kids: Vec<&Step> = step.children().collect();
            stack.extend(kids.into_iter().rev());
        }
        out
    }
}
