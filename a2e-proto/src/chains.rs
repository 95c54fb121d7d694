//! The chains capability (`chain/*`, a2e-chains spec): messages and the node model.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

open_enum! {
    /// The kind of a chain node.
    pub struct NodeKind {
        /// Invoke a skill by name.
        SKILL = "skill",
        /// Call a tool by name.
        TOOL = "tool",
        /// Spawn a process through the proc capability and wait for it.
        PROC = "proc",
        /// Conditional fork on a JMESPath expression.
        BRANCH = "branch",
        /// Fan-out: apply one node to each item of a list.
        MAP = "map",
    }
}

open_enum! {
    /// The phase a `chain/event` reports.
    pub struct ChainPhase {
        /// The node started.
        START = "start",
        /// The node completed.
        DONE = "done",
        /// The node was skipped.
        SKIP = "skip",
        /// The node failed.
        ERROR = "error",
    }
}

/// What a node's `on_error` asks for, parsed from its wire string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnError<'a> {
    /// Fail the chain (the default).
    Abort,
    /// Record the error, give the node a `null` output, go on.
    Skip,
    /// Run this node instead; its output stands in.
    Fallback(&'a str),
}

/// One node of a chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "arbitrary", derive(proptest_derive::Arbitrary))]
pub struct ChainNode {
    /// Unique within the chain.
    pub node_id: String,
    /// Node kind.
    pub kind: NodeKind,
    /// Skill or tool name (for `proc`: unused; the command is `input.cmd`).
    #[serde(default)]
    pub name: String,
    /// Static input values.
    #[serde(default)]
    #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::object()"))]
    pub input: Map<String, Value>,
    /// Input field → JMESPath expression over the chain context.
    #[serde(default)]
    #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::input_map()"))]
    pub input_map: crate::InputMap,
    /// Branch condition (JMESPath).
    #[serde(default)]
    pub condition: String,
    /// Branch: node to run when the condition holds.
    #[serde(default)]
    pub true_node: String,
    /// Branch: node to run otherwise.
    #[serde(default)]
    pub false_node: String,
    /// Map: JMESPath to the list to iterate.
    #[serde(default)]
    pub items_path: String,
    /// Map: node applied to each item.
    #[serde(default)]
    pub map_node: String,
    /// Default successor.
    #[serde(default)]
    pub next_node: String,
    /// `abort`, `skip`, or a fallback node id.
    #[serde(default = "default_on_error")]
    pub on_error: String,
    /// `required`: the node's call waits for a person's decision before it
    /// runs, whatever the host's approval rules say (a wire extension of
    /// this implementation: docs/approvals.md). Empty: the rules decide.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub approval: String,
}

fn default_on_error() -> String {
    ChainNode::DEFAULT_ON_ERROR.into()
}

impl ChainNode {
    /// `on_error` when a node names none.
    pub const DEFAULT_ON_ERROR: &str = "abort";

    /// A node of `kind` named `name` with every other field at its default.
    pub fn new(node_id: &str, kind: NodeKind, name: &str) -> Self {
        Self {
            node_id: node_id.into(),
            kind,
            name: name.into(),
            input: Map::new(),
            input_map: crate::InputMap::new(),
            condition: String::new(),
            true_node: String::new(),
            false_node: String::new(),
            items_path: String::new(),
            map_node: String::new(),
            next_node: String::new(),
            on_error: default_on_error(),
            approval: String::new(),
        }
    }

    /// The value of [`ChainNode::approval`] that asks for a person's decision.
    pub const APPROVAL_REQUIRED: &str = "required";

    /// Whether the node's call waits for a person's decision.
    pub fn approval_required(&self) -> bool {
        self.approval == Self::APPROVAL_REQUIRED
    }

    /// The parsed `on_error` policy (empty reads as `abort`).
    pub fn on_error_policy(&self) -> OnError<'_> {
        match self.on_error.as_str() {
            "" | "abort" => OnError::Abort,
            "skip" => OnError::Skip,
            other => OnError::Fallback(other),
        }
    }
}

wire_message! {
    /// `chain/req` — run a DAG of nodes.
    pub struct ChainRequest = "chain/req" {
        /// Session from the handshake.
        #[serde(default)]
        pub session_id: String = String::new(),
        /// Chain identifier (8 hex digits by default).
        #[serde(default = "crate::envelope::new_chain_id")]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::id()"))]
        pub chain_id: String = crate::envelope::new_chain_id(),
        /// The nodes (must form a DAG).
        #[serde(default)]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "proptest::collection::vec(proptest::arbitrary::any::<ChainNode>(), 0..4)"))]
        pub nodes: Vec<ChainNode> = Vec::new(),
        /// The first node.
        #[serde(default)]
        pub entry_node: String = String::new(),
        /// Seed input, `input` in the chain context.
        #[serde(default)]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::object()"))]
        pub initial_input: Map<String, Value> = Map::new(),
        /// Ties the chain to an agent turn.
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
        /// Emit `chain/event`s.
        #[serde(default = "crate::envelope::yes")]
        pub streaming: bool = true,
        /// Chain wall-clock limit in seconds.
        #[serde(default = "default_chain_timeout")]
        #[serde(deserialize_with = "crate::num::int")]
        pub timeout: u64 = default_chain_timeout(),
    }
}

fn default_chain_timeout() -> u64 {
    300
}

wire_message! {
    /// `chain/event` — a node changed phase.
    pub struct ChainEvent = "chain/event" {
        /// The chain request's id.
        #[serde(default)]
        pub req_id: String = String::new(),
        /// The node concerned.
        #[serde(default)]
        pub node_id: String = String::new(),
        /// The phase.
        #[serde(default = "default_phase")]
        pub phase: ChainPhase = ChainPhase::START,
        /// The node's output (with `done`).
        #[serde(default)]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::json()"))]
        pub output: Value = Value::Null,
        /// The error message (with `error`).
        #[serde(default)]
        pub error: String = String::new(),
        /// 0, 1, 2, … per chain request.
        #[serde(default)]
        #[serde(deserialize_with = "crate::num::int")]
        pub seq: u64 = 0,
        /// Extension: the durable run's id, on the run's first event (`seq`
        /// 0), so that an agent can attach to, show or cancel the run while
        /// it goes on; absent when the host journals no runs.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub run_id: String = String::new(),
    }
}

fn default_phase() -> ChainPhase {
    ChainPhase::START
}

/// A `chain/event` borrowed from the state it reports: it encodes as the
/// [`ChainEvent`] with the same fields does, without copying them (a
/// streaming chain encodes two events per node).
#[derive(Debug, Clone, Serialize)]
pub struct ChainEventRef<'a> {
    /// Message type, always `chain/event`.
    #[serde(rename = "type")]
    pub r#type: crate::envelope::TypeTag<ChainEvent>,
    /// Unique message id.
    pub id: &'a str,
    /// Protocol version.
    pub version: &'a str,
    /// Unix epoch seconds when the event was made.
    pub ts: f64,
    /// The chain request's id.
    pub req_id: &'a str,
    /// The node concerned.
    pub node_id: &'a str,
    /// The phase.
    pub phase: &'a ChainPhase,
    /// The node's output (with `done`).
    pub output: &'a Value,
    /// The error message (with `error`).
    pub error: &'a str,
    /// 0, 1, 2, … per chain request.
    pub seq: u64,
    /// Extension: the durable run's id, on the run's first event.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub run_id: &'a str,
}

impl<'a> ChainEventRef<'a> {
    /// An event of request `req_id` about `node_id`, made now, with the id
    /// `id` (see [`crate::new_id_in`]), no output, no error and `seq` 0.
    pub fn new(id: &'a str, req_id: &'a str, node_id: &'a str, phase: &'a ChainPhase) -> Self {
        Self {
            r#type: crate::envelope::TypeTag::new(),
            id,
            version: crate::PROTOCOL_VERSION,
            ts: crate::envelope::now(),
            req_id,
            node_id,
            phase,
            output: &Value::Null,
            error: "",
            seq: 0,
            run_id: "",
        }
    }
}

wire_message! {
    /// `chain/resp` — the chain's final result.
    pub struct ChainResponse = "chain/resp" {
        /// The chain request's id.
        #[serde(default)]
        pub req_id: String = String::new(),
        /// The chain's id.
        #[serde(default)]
        pub chain_id: String = String::new(),
        /// Whether the chain completed without a fatal error.
        #[serde(default)]
        pub success: bool = false,
        /// node_id → output of every completed node.
        #[serde(default)]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::outputs()"))]
        pub outputs: crate::Outputs = crate::Outputs::new(),
        /// Output of the last terminal node that completed.
        #[serde(default)]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::json()"))]
        pub final_output: Value = Value::Null,
        /// Total execution time.
        #[serde(default)]
        #[serde(deserialize_with = "crate::num::int")]
        pub duration_ms: u64 = 0,
        /// Nodes executed.
        #[serde(default)]
        #[serde(deserialize_with = "crate::num::int")]
        pub nodes_run: u64 = 0,
        /// Error details `{code, message, node_id}` when the chain failed.
        #[serde(default)]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::opt_object()"))]
        pub error: Option<Map<String, Value>> = None,
        /// Extension: the durable run's id (`a2e runs show ID`, `chain/attach`);
        /// absent when the host journals no runs.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub run_id: String = String::new(),
    }
}

impl_request!(ChainRequest);
impl_response!(ChainEvent, ChainResponse);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_borrowed_event_encodes_as_the_owned_one() {
        let output = serde_json::json!({"x": [1, "two\n", {"y": null}], "z": 1.5});
        for (phase, output, error) in [
            (ChainPhase::DONE, output, ""),
            (ChainPhase::START, Value::Null, ""),
            (
                ChainPhase::ERROR,
                Value::Null,
                "it \"failed\"\tbadly\u{7f}\u{2028}",
            ),
            (ChainPhase::new("later"), Value::Bool(true), "\u{0}\u{1f}\\"),
        ] {
            let mut id = [0u8; 32];
            let id = crate::new_id_in(&mut id);
            let event = ChainEventRef {
                output: &output,
                error,
                seq: 41,
                ..ChainEventRef::new(id, "req-\u{e9}\"\u{1}", "node[3]\r", &phase)
            };
            let owned = ChainEvent {
                id: id.to_owned(),
                ts: event.ts,
                req_id: event.req_id.to_owned(),
                node_id: event.node_id.to_owned(),
                phase: phase.clone(),
                output: output.clone(),
                error: error.to_owned(),
                seq: 41,
                ..ChainEvent::default()
            };
            let line = serde_json::to_string(&event).unwrap();
            assert_eq!(line, serde_json::to_string(&owned).unwrap());
            let back = crate::decode(line.as_bytes()).unwrap();
            assert_eq!(back, crate::Message::ChainEvent(owned));
        }
    }
}
