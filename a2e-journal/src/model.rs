//! What a journal holds: runs, their nodes' starts and results, events and
//! final answers.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::JournalError;
use crate::ids::RunId;

/// What kind of work a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// An A2E chain (`chain/req`).
    Chain,
    /// An ACMP task DAG.
    AcmpDag,
    /// An Ontheia document.
    Ontheia,
    /// An LLM skill's agentic loop.
    LlmSkill,
    /// A tool call an MCP client asked to run as a task (the
    /// `io.modelcontextprotocol/tasks` extension).
    McpTask,
    /// A call outside any run (an agent's `tool/call` or `skill/call`)
    /// that waits for a person's decision: it ends when the call is
    /// decided (docs/approvals.md).
    Approval,
    /// A skill an A2A client called with a message: the A2A task
    /// (docs/a2a.md).
    A2aTask,
}

impl RunKind {
    /// `chain`, `acmp_dag`, `ontheia`, `llm_skill`, `mcp_task`, `approval`
    /// or `a2a_task`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chain => "chain",
            Self::AcmpDag => "acmp_dag",
            Self::Ontheia => "ontheia",
            Self::LlmSkill => "llm_skill",
            Self::McpTask => "mcp_task",
            Self::Approval => "approval",
            Self::A2aTask => "a2a_task",
        }
    }

    /// The kind named `s`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "chain" => Self::Chain,
            "acmp_dag" => Self::AcmpDag,
            "ontheia" => Self::Ontheia,
            "llm_skill" => Self::LlmSkill,
            "mcp_task" => Self::McpTask,
            "approval" => Self::Approval,
            "a2a_task" => Self::A2aTask,
            _ => return None,
        })
    }
}

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Not finished: resumed when its host starts again.
    Running,
    /// Finished with success.
    Succeeded,
    /// Finished with a failure.
    Failed,
    /// Cancelled.
    Cancelled,
}

impl RunStatus {
    /// `running`, `succeeded`, `failed` or `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// The status named `s`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "running" => Self::Running,
            "succeeded" => Self::Succeeded,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            _ => return None,
        })
    }

    /// Whether the run has ended.
    pub fn is_finished(self) -> bool {
        self != Self::Running
    }
}

/// A run to journal.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    /// Its id.
    pub run_id: RunId,
    /// What it runs.
    pub kind: RunKind,
    /// The agent that asked for it (only it may attach, show or cancel).
    pub agent: String,
    /// The request, as JSON: what a resumed run starts from.
    pub request: Value,
}

/// How a node ended: its output or its error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "ok")]
pub enum NodeOutcome {
    /// It produced an output.
    #[serde(rename = "true")]
    Output {
        /// The output.
        output: Value,
    },
    /// It failed.
    #[serde(rename = "false")]
    Error {
        /// The wire error code (`tool_error`, `timeout`, `interrupted`, …).
        code: String,
        /// The message.
        message: String,
    },
}

impl NodeOutcome {
    /// An output.
    pub fn output(output: Value) -> Self {
        Self::Output { output }
    }

    /// An error.
    pub fn error(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Error {
            code: code.into(),
            message: message.into(),
        }
    }
}

/// The code of a node that may have run when its host died and is not run
/// again because its tool is not idempotent: it fails with this code, and
/// the run's own error handling (a chain's `on_error`) decides what follows.
pub const INTERRUPTED: &str = "interrupted";

/// One execution of a node, as journaled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeRecord {
    /// The node (a chain's map item: `template[index]`).
    pub node_id: String,
    /// The attempt, from 1.
    pub attempt: u32,
    /// When it started (ms since the Unix epoch); 0 when only its result
    /// was journaled.
    pub started_ms: u64,
    /// When its result was journaled.
    pub finished_ms: Option<u64>,
    /// Its result; `None` while it runs (or when its host died meanwhile).
    pub outcome: Option<NodeOutcome>,
    /// What it started with (its input, its span), when the host journaled
    /// that ([`crate::Journal::node_started_with`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<NodeStart>,
}

/// Most bytes of a node's input a journal keeps (as JSON text): a larger
/// input is kept cut, as a string (see [`NodeStart::input_bytes`]).
pub const MAX_START_INPUT_BYTES: usize = 16 * 1024;

/// What a node's execution started with, for whoever looks at a run (the
/// live view, `a2e runs show`): the arguments it was called with and where
/// its call sits in the trace. Informational: a resumed run never reads it.
/// The host journals it with credentials redacted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeStart {
    /// The arguments the node was called with (after `input_map`
    /// resolution). An input whose JSON text is larger than
    /// [`MAX_START_INPUT_BYTES`] is the start of that text, as a string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// The size in bytes of the input's JSON text, when it was cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_bytes: Option<u64>,
    /// The trace the node's call belongs to (32 hex digits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// The node call's own span (16 hex digits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_id: Option<String>,
    /// The host that ran the node, in a cluster (its `[cluster] name`; a
    /// name longer than 256 bytes is not kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// Most bytes of a host's name a [`NodeStart`] keeps (a longer one is dropped).
pub(crate) const MAX_HOST_NAME_BYTES: usize = 256;

impl NodeStart {
    /// A start with `input`, cut to [`MAX_START_INPUT_BYTES`] when larger.
    pub fn with_input(input: Value) -> Self {
        Self {
            input: Some(input),
            ..Self::default()
        }
        .bounded()
    }

    /// The start as JSON text, within bounds (see [`NodeStart::bounded`]):
    /// serialized once when it is within them already, which is the rule.
    pub(crate) fn bounded_json(&self) -> serde_json::Result<String> {
        let text = serde_json::to_string(self)?;
        // The ids, the host and the keys around the input take less than this.
        if text.len() <= MAX_START_INPUT_BYTES && self.ids_ok() {
            return Ok(text);
        }
        serde_json::to_string(&self.clone().bounded())
    }

    /// Whether the trace and span id are hex of the right length (or
    /// absent), and the host's name within its bound.
    fn ids_ok(&self) -> bool {
        hex_id(self.trace_id.as_deref(), 32)
            && hex_id(self.span_id.as_deref(), 16)
            && self
                .host
                .as_ref()
                .is_none_or(|h| h.len() <= MAX_HOST_NAME_BYTES)
    }

    /// The same start within bounds: the input cut to
    /// [`MAX_START_INPUT_BYTES`] of JSON text; a trace or span id that is
    /// not hex of the right length dropped.
    pub fn bounded(mut self) -> Self {
        if let Some(input) = &self.input
            // Not a cut already (the start of a text, as a string).
            && !(self.input_bytes.is_some()
                && input.as_str().is_some_and(|t| t.len() <= MAX_START_INPUT_BYTES))
        {
            let text = serde_json::to_string(input).unwrap_or_default();
            if text.len() > MAX_START_INPUT_BYTES {
                let mut end = MAX_START_INPUT_BYTES;
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                self.input_bytes = Some(text.len() as u64);
                self.input = Some(Value::String(
                    text.get(..end).unwrap_or_default().to_owned(),
                ));
            }
        }
        if !hex_id(self.trace_id.as_deref(), 32) {
            self.trace_id = None;
        }
        if !hex_id(self.span_id.as_deref(), 16) {
            self.span_id = None;
        }
        if self
            .host
            .as_ref()
            .is_some_and(|h| h.len() > MAX_HOST_NAME_BYTES)
        {
            self.host = None;
        }
        self
    }
}

/// Whether `id` is absent or `len` hex digits.
fn hex_id(id: Option<&str>, len: usize) -> bool {
    id.is_none_or(|s| s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A run's headline: what `runs list` shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// The run.
    pub run_id: RunId,
    /// What it runs.
    pub kind: RunKind,
    /// Who asked for it.
    pub agent: String,
    /// Where it is.
    pub status: RunStatus,
    /// When it was created (ms since the Unix epoch).
    pub created_ms: u64,
    /// When it finished.
    pub finished_ms: Option<u64>,
    /// Whether a cancel was asked for.
    pub cancel_requested: bool,
    /// Events journaled so far: the `seq` its next event takes.
    pub next_seq: u64,
    /// In a cluster: the host that coordinated it — the one that created
    /// it, or, once finished, the one that finished it (after a take-over,
    /// not its first). `None` outside a cluster, where the journal's one
    /// host runs everything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coordinator: Option<String>,
}

/// A run with its request, its nodes and its answer: what `runs show` shows
/// and what a resumed run starts from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    /// The headline.
    pub summary: RunSummary,
    /// The request.
    pub request: Value,
    /// Every journaled execution of its nodes, by node id then attempt.
    pub nodes: Vec<NodeRecord>,
    /// The final answer, once finished.
    pub answer: Option<Value>,
}

impl RunState {
    /// The result a node's latest attempt left, if it finished.
    pub fn result_of(&self, node_id: &str) -> Option<(&NodeRecord, &NodeOutcome)> {
        self.latest(node_id)
            .and_then(|r| r.outcome.as_ref().map(|o| (r, o)))
    }

    /// A node's latest journaled attempt.
    pub fn latest(&self, node_id: &str) -> Option<&NodeRecord> {
        self.nodes
            .iter()
            .filter(|r| r.node_id == node_id)
            .max_by_key(|r| r.attempt)
    }

    /// The executions that started and left no result: they may have run
    /// when their host died.
    pub fn interrupted(&self) -> impl Iterator<Item = &NodeRecord> {
        self.nodes.iter().filter(|r| r.outcome.is_none())
    }
}

/// One journaled event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredEvent {
    /// Its `seq` within the run (0, 1, 2, …).
    pub seq: u64,
    /// The event as the run produced it (e.g. a `chain/event` message).
    pub event: Value,
}

/// What a subscription to a run yields: each event once, in `seq` order,
/// then the final answer.
#[derive(Debug, Clone, PartialEq)]
pub enum RunItem {
    /// An event.
    Event(StoredEvent),
    /// The run finished; nothing follows.
    Finished {
        /// How it ended.
        status: RunStatus,
        /// Its final answer.
        answer: Value,
    },
}

/// A record that could not be read back, and the run it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptRun {
    /// The run.
    pub run_id: String,
    /// What is wrong.
    pub message: String,
}

impl From<CorruptRun> for JournalError {
    fn from(c: CorruptRun) -> Self {
        JournalError::Corrupt {
            run_id: c.run_id,
            message: c.message,
        }
    }
}

/// What a bulk read found: the records that load, and the runs whose
/// records do not (each named, so that an operator can look at it).
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded<T> {
    /// The records that load.
    pub items: Vec<T>,
    /// The runs that do not.
    pub corrupt: Vec<CorruptRun>,
}

impl<T> Default for Loaded<T> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            corrupt: Vec::new(),
        }
    }
}

/// Which runs to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// Only this agent's runs.
    pub agent: Option<String>,
    /// Only runs in this status.
    pub status: Option<RunStatus>,
    /// At most this many, newest first (0: the default of 100).
    pub limit: usize,
}

/// How long finished runs are kept. Unfinished runs are never pruned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// A finished run older than this (since it finished) is pruned.
    pub max_age: Option<Duration>,
    /// Only this many finished runs are kept, the most recently finished.
    pub max_runs: Option<usize>,
}

impl Default for Retention {
    /// Seven days, and at most 1,000 finished runs.
    fn default() -> Self {
        Self {
            max_age: Some(Duration::from_secs(7 * 24 * 3600)),
            max_runs: Some(1000),
        }
    }
}

/// What a prune removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PruneReport {
    /// Runs removed, with their nodes and events.
    pub runs: u64,
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outcomes_serialize_with_a_tag() {
        let ok = NodeOutcome::output(json!({"x": 1}));
        assert_eq!(
            serde_json::to_value(&ok).unwrap(),
            json!({"ok": "true", "output": {"x": 1}})
        );
        let err = NodeOutcome::error(INTERRUPTED, "may have run");
        let v = serde_json::to_value(&err).unwrap();
        assert_eq!(
            v,
            json!({"ok": "false", "code": "interrupted", "message": "may have run"})
        );
        assert_eq!(serde_json::from_value::<NodeOutcome>(v).unwrap(), err);
    }

    #[test]
    fn names_round_trip() {
        for k in [
            RunKind::Chain,
            RunKind::AcmpDag,
            RunKind::Ontheia,
            RunKind::LlmSkill,
            RunKind::McpTask,
            RunKind::Approval,
            RunKind::A2aTask,
        ] {
            assert_eq!(RunKind::parse(k.as_str()), Some(k));
        }
        for s in [
            RunStatus::Running,
            RunStatus::Succeeded,
            RunStatus::Failed,
            RunStatus::Cancelled,
        ] {
            assert_eq!(RunStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(RunKind::parse("dag"), None);
    }

    #[test]
    fn a_start_is_bounded() {
        let small = NodeStart::with_input(json!({"q": "é"}));
        assert_eq!(small.input, Some(json!({"q": "é"})));
        assert_eq!(small.input_bytes, None);
        let big = "é".repeat(MAX_START_INPUT_BYTES);
        let cut = NodeStart::with_input(json!({ "text": big }));
        let text = cut.input.as_ref().and_then(Value::as_str).unwrap();
        assert!(text.len() <= MAX_START_INPUT_BYTES && text.starts_with("{\"text\":\"é"));
        assert_eq!(cut.input_bytes, Some(2 * MAX_START_INPUT_BYTES as u64 + 11));
        let ids = NodeStart {
            trace_id: Some("0af7651916cd43dd8448eb211c80319c".into()),
            span_id: Some("<script>".into()),
            ..NodeStart::default()
        }
        .bounded();
        assert!(ids.trace_id.is_some() && ids.span_id.is_none());
        let host = NodeStart {
            host: Some("h".repeat(MAX_HOST_NAME_BYTES + 1)),
            ..NodeStart::default()
        };
        assert_eq!(host.bounded().host, None);
    }
}
