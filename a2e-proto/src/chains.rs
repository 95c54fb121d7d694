//! The chains capability (`chain/*`, a2e-chains spec): messages and the node model.

use std::sync::atomic::{AtomicU64, Ordering};

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
            on_error: default_on_error(),
            ..Self::blank()
        }
    }

    /// A `tool` node with every field empty, `on_error` too (nothing
    /// allocated): what a decoder fills in.
    pub(crate) fn blank() -> Self {
        Self {
            node_id: String::new(),
            kind: NodeKind::TOOL,
            name: String::new(),
            input: Map::new(),
            input_map: crate::InputMap::new(),
            condition: String::new(),
            true_node: String::new(),
            false_node: String::new(),
            items_path: String::new(),
            map_node: String::new(),
            next_node: String::new(),
            on_error: String::new(),
        }
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
        #[serde(default, deserialize_with = "crate::node_list::nodes")]
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
    }
}

/// Writes the `chain/event` lines of one chain request straight from the
/// state that produced them: the same NDJSON line as the [`ChainEvent`]
/// with these fields (see the test), without copying the output or building
/// a [`crate::Message`]. The request id is encoded once; the fixed parts of
/// the line are written as they are. The host encodes a streaming chain's
/// events with it where they happen.
///
/// Event ids are 32 lowercase hex digits, as every message id: 16 random to
/// the writer, then a count of its events (unique without drawing random
/// bits per event). `ts` is written from the clock's seconds and
/// microseconds, the number a float of them would print as.
#[derive(Debug)]
pub struct ChainEventWriter {
    /// `req_id` as a JSON string.
    req_id: Vec<u8>,
    /// The first half of every id, random to this writer.
    id_prefix: u64,
    /// The part between `ts` and `node_id`'s value:
    /// `,"req_id":"…","node_id":`.
    middle: Vec<u8>,
    /// Events written.
    count: AtomicU64,
}

impl Clone for ChainEventWriter {
    /// A writer for the same request, with ids of its own.
    fn clone(&self) -> Self {
        Self::from_json_id(self.req_id.clone())
    }
}

impl ChainEventWriter {
    /// The writer for the events of request `req_id`.
    pub fn new(req_id: &str) -> Self {
        Self::from_json_id(json_string(req_id))
    }

    fn from_json_id(req_id: Vec<u8>) -> Self {
        let mut middle = b",\"req_id\":".to_vec();
        middle.extend_from_slice(&req_id);
        middle.extend_from_slice(b",\"node_id\":");
        Self {
            req_id,
            id_prefix: uuid::Uuid::new_v4().as_u64_pair().0,
            middle,
            count: AtomicU64::new(0),
        }
    }

    /// Appends one event, with a fresh id and made now, as one NDJSON line
    /// (ending in `\n`) to `out`; the time written as its `ts` (since the
    /// Unix epoch), for a caller that batches lines by age.
    pub fn write_line(
        &self,
        out: &mut Vec<u8>,
        event: &ChainEventFields<'_>,
    ) -> std::time::Duration {
        let count = self.count.fetch_add(1, Ordering::Relaxed);
        let mut id = [0u8; 32];
        let id = uuid::Uuid::from_u64_pair(self.id_prefix, count)
            .simple()
            .encode_lower(&mut id);
        // The id is 32 lowercase hex digits: nothing to escape.
        out.extend_from_slice(b"{\"type\":\"chain/event\",\"id\":\"");
        out.extend_from_slice(id.as_bytes());
        out.extend_from_slice(b"\",\"version\":\"");
        out.extend_from_slice(crate::PROTOCOL_VERSION.as_bytes());
        out.extend_from_slice(b"\",\"ts\":");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        write_seconds(out, now);
        out.extend_from_slice(&self.middle);
        write_str(out, event.node_id);
        out.extend_from_slice(b",\"phase\":");
        write_str(out, event.phase.as_str());
        out.extend_from_slice(b",\"output\":");
        if event.output.is_null() {
            out.extend_from_slice(b"null");
        } else {
            write_json(out, event.output);
        }
        out.extend_from_slice(b",\"error\":");
        write_str(out, event.error);
        out.extend_from_slice(b",\"seq\":");
        write_json(out, &event.seq);
        out.extend_from_slice(b"}\n");
        now
    }
}

/// `s` as a JSON string: quoted as it is when nothing in it needs an escape
/// (ids, phases, most messages), else through serde_json.
fn write_str(out: &mut Vec<u8>, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        write_json(out, s);
    }
}

/// What changes from one `chain/event` to the next, borrowed.
#[derive(Debug, Clone)]
pub struct ChainEventFields<'a> {
    /// The node concerned.
    pub node_id: &'a str,
    /// The phase.
    pub phase: &'a ChainPhase,
    /// The node's output (`null` unless `done`).
    pub output: &'a Value,
    /// The error message (empty unless `error`).
    pub error: &'a str,
    /// 0, 1, 2, … per chain request.
    pub seq: u64,
}

/// `since` (the Unix epoch) in seconds with microseconds, appended as a
/// JSON number: `secs.micros` without trailing zeros (`secs.0` on the
/// second), which is how the float of that instant prints (a microsecond is
/// wider than the float's step at today's seconds), without formatting a
/// float.
fn write_seconds(out: &mut Vec<u8>, since: std::time::Duration) {
    write_json(out, &since.as_secs());
    out.push(b'.');
    let mut micros = since.subsec_micros();
    if micros == 0 {
        out.push(b'0');
        return;
    }
    let mut digits = [b'0'; 6];
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + u8::try_from(micros % 10).unwrap_or(0);
        micros /= 10;
    }
    let end = digits.iter().rposition(|d| *d != b'0').map_or(0, |i| i + 1);
    out.extend_from_slice(digits.get(..end).unwrap_or_default());
}

/// `value` as JSON, appended to `out`. Strings, numbers, a phase and a
/// `Value` always serialise (a `Value`'s keys are strings): nothing to fail.
fn write_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let _ = serde_json::to_writer(&mut *out, value);
}

fn json_string(value: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() + 2);
    write_json(&mut out, value);
    out
}

fn default_phase() -> ChainPhase {
    ChainPhase::START
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
    }
}

impl_request!(ChainRequest);
impl_response!(ChainEvent, ChainResponse);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_event_is_the_line_of_the_owned_one() {
        let output = serde_json::json!({"x": [1, "two\n", {"y": null}], "z": 1.5});
        let writer = ChainEventWriter::new("req-\u{e9}\"\u{1}");
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
            let fields = ChainEventFields {
                node_id: "node[3]\r",
                phase: &phase,
                output: &output,
                error,
                seq: 41,
            };
            let mut line = b"before\n".to_vec();
            writer.write_line(&mut line, &fields);
            let back = crate::decode(&line[7..line.len() - 1]).unwrap();
            let crate::Message::ChainEvent(back) = back else {
                panic!("not a chain/event: {back:?}");
            };
            let owned = ChainEvent {
                req_id: "req-\u{e9}\"\u{1}".into(),
                node_id: "node[3]\r".into(),
                phase: phase.clone(),
                output: output.clone(),
                error: error.into(),
                seq: 41,
                id: back.id.clone(),
                ts: back.ts,
                ..ChainEvent::default()
            };
            assert_eq!(back, owned);
            assert_eq!(back.id.len(), 32);
            // Byte for byte the line the message encodes to.
            let mut expected = b"before\n".to_vec();
            expected.extend(crate::Message::from(owned).to_json());
            expected.push(b'\n');
            assert_eq!(
                String::from_utf8_lossy(&line),
                String::from_utf8_lossy(&expected)
            );
        }
    }

    #[test]
    fn event_ids_are_unique_hex_and_ts_is_now() {
        let writer = ChainEventWriter::new("r");
        let other = writer.clone();
        let fields = ChainEventFields {
            node_id: "n",
            phase: &ChainPhase::START,
            output: &Value::Null,
            error: "",
            seq: 0,
        };
        let mut ids = std::collections::HashSet::new();
        for w in [&writer, &other, &writer] {
            for _ in 0..100 {
                let mut line = Vec::new();
                w.write_line(&mut line, &fields);
                let crate::Message::ChainEvent(event) =
                    crate::decode(&line[..line.len() - 1]).unwrap()
                else {
                    panic!("not a chain/event");
                };
                assert_eq!(event.id.len(), 32);
                assert!(
                    event
                        .id
                        .bytes()
                        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
                );
                assert!(ids.insert(event.id), "ids repeat");
                assert!(
                    (crate::envelope::now() - event.ts).abs() < 5.0,
                    "{}",
                    event.ts
                );
            }
        }
        // The clock's microseconds print as the float of them does.
        for (micros, text) in [
            (0, "1764621234.0"),
            (1, "1764621234.000001"),
            (10, "1764621234.00001"),
            (120_000, "1764621234.12"),
            (999_999, "1764621234.999999"),
            (123_456, "1764621234.123456"),
        ] {
            let mut out = Vec::new();
            write_seconds(
                &mut out,
                std::time::Duration::new(1_764_621_234, micros * 1000 + 999),
            );
            assert_eq!(String::from_utf8_lossy(&out), text);
            let parsed: f64 = serde_json::from_slice(&out).unwrap();
            assert_eq!(serde_json::to_vec(&parsed).unwrap(), out, "{micros}");
        }
    }
}
