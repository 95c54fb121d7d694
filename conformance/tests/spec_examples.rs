//! The specs' wire examples and the core tables' messages: decode, re-encode,
//! compare, round-trip, snapshot, validate.

use crate::common;

use a2e_proto::{
    ChainNode, ErrorCode, EventKind, Message, NodeKind, SkillStatus, StreamType, decode,
};
use conformance::fixtures::{Fixture, load_group};
use conformance::{Suite, positive};
use serde_json::{Value, json};

/// Examples printed in the tools (5), skills (5) and chains (3) specs.
const PRINTED_EXAMPLES: usize = 13;
/// Messages written from the core spec's tables (core and proc).
const CORE_FIXTURES: usize = 19;

fn spec() -> Vec<Fixture> {
    load_group("spec").expect("fixtures/spec loads")
}

fn fixture(name: &str) -> Fixture {
    spec()
        .into_iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no fixture {name}"))
}

fn message(name: &str) -> Message {
    decode(fixture(name).line()).expect("fixture decodes")
}

fn check_group(group: &str) {
    let suite = Suite::load().expect("suite loads");
    let pending = common::pending();
    let mut failed = Vec::new();
    for f in load_group(group).expect("group loads") {
        let report = suite.positive(&f);
        for (name, value) in &report.reencoded {
            common::assert_snapshot(name, value);
        }
        if !report.problems.is_empty() && !pending.contains_key(&f.name) {
            failed.push(format!("{}: {}", f.name, report.problems.join("; ")));
        }
    }
    assert!(failed.is_empty(), "failed:\n{}", failed.join("\n"));
}

#[test]
fn every_spec_fixture_round_trips_and_matches_its_snapshot_and_schema() {
    check_group("spec");
}

#[test]
fn every_edge_fixture_round_trips_and_matches_its_snapshot_and_schema() {
    check_group("edge");
}

#[test]
fn fixture_counts() {
    let all = spec();
    let count = |prefix: &str| all.iter().filter(|f| f.name.starts_with(prefix)).count();
    assert_eq!(count("spec/tools/"), 5);
    assert_eq!(count("spec/skills/"), 5);
    assert_eq!(count("spec/chains/"), 3);
    assert_eq!(count("spec/core/"), CORE_FIXTURES);
    assert_eq!(all.len(), PRINTED_EXAMPLES + CORE_FIXTURES);
}

#[test]
fn run_all_checks_every_spec_fixture_once() {
    let outcomes = conformance::run_all();
    let spec_outcomes: Vec<&str> = outcomes
        .iter()
        .map(|o| o.name.as_str())
        .filter(|n| n.starts_with("spec/"))
        .collect();
    assert_eq!(spec_outcomes.len(), PRINTED_EXAMPLES + CORE_FIXTURES);
    let printed = spec_outcomes
        .iter()
        .filter(|n| !n.starts_with("spec/core/"))
        .count();
    assert_eq!(printed, PRINTED_EXAMPLES);
    for f in spec() {
        assert_eq!(
            spec_outcomes.iter().filter(|n| **n == f.name).count(),
            1,
            "{}",
            f.name
        );
    }
    common::assert_passed(&outcomes);
    let summary = conformance::summary(&outcomes);
    let failed = outcomes.iter().filter(|o| !o.passed).count();
    assert_eq!(
        summary,
        format!("{} passed, {failed} failed", outcomes.len() - failed)
    );
}

#[test]
fn fixture_files_are_single_lines() {
    for f in spec() {
        assert!(f.bytes.ends_with(b"\n"), "{}", f.name);
        assert!(!f.line().contains(&b'\n'), "{}", f.name);
        assert!(!f.line().contains(&b'\r'), "{}", f.name);
    }
}

#[test]
fn tools_examples_decode_to_their_typed_fields() {
    let Message::ToolListResponse(list) = message("spec/tools/list_resp") else {
        panic!("not a tool/list/resp")
    };
    assert_eq!(list.req_id, "a1b2c3");
    let tool = &list.tools[0];
    assert_eq!(tool.name, "read_file");
    assert!(tool.input_parameters[0].required);
    assert_eq!(tool.input_parameters[0].param_type, "string");
    assert_eq!(tool.toolkit, None);
    assert!(!tool.defer_loading);

    let Message::ToolCallRequest(call) = message("spec/tools/call_req") else {
        panic!("not a tool/call/req")
    };
    assert_eq!(call.tool_name, "read_file");
    assert_eq!(call.arguments["path"], "/etc/hostname");
    assert!(call.streaming);
    assert_eq!(call.timeout, 30);

    let Message::ToolEvent(event) = message("spec/tools/event") else {
        panic!("not a tool/event")
    };
    assert_eq!(event.kind, EventKind::PROGRESS);
    assert_eq!(event.data["pct"], 50);

    let Message::ToolCallResponse(resp) = message("spec/tools/call_resp") else {
        panic!("not a tool/call/resp")
    };
    assert!(resp.data.success);
    assert_eq!(resp.data.data, json!({"content": "my-host"}));
    assert_eq!(resp.data.duration_ms, 100);
    assert_eq!(resp.created_at, 1716123457.2);
    assert_eq!(message("spec/tools/call_req").id(), resp.req_id);
}

#[test]
fn skills_examples_decode_to_their_typed_fields() {
    let Message::SkillDiscoverResponse(resp) = message("spec/skills/discover_resp") else {
        panic!("not a skill/discover/resp")
    };
    let skill = &resp.skills[0];
    assert_eq!(skill.status, SkillStatus::PUBLISHED);
    assert_eq!(skill.tools, None);
    assert_eq!(skill.max_turns, Some(10));
    assert_eq!(skill.timeout_seconds, Some(120));
    assert_eq!(skill.input_schema["required"], json!(["code"]));

    let Message::SkillCallRequest(call) = message("spec/skills/call_req") else {
        panic!("not a skill/call/req")
    };
    assert_eq!(call.name, "code_review");
    assert_eq!(call.timeout, 60);
    assert_eq!(call.llm_override, None);

    let Message::SkillCallResponse(done) = message("spec/skills/call_resp") else {
        panic!("not a skill/call/resp")
    };
    let result = done.data.expect("result");
    assert_eq!(result.summary, json!("No issues found"));
    assert_eq!(result.duration_ms, 1400);
    assert_eq!(done.error, None);
}

#[test]
fn chain_examples_decode_to_their_typed_fields() {
    let Message::ChainRequest(chain) = message("spec/chains/linear_chain_req") else {
        panic!("not a chain/req")
    };
    assert_eq!(chain.chain_id, "abc123");
    assert_eq!(chain.entry_node, "read");
    assert_eq!(chain.nodes.len(), 2);
    assert_eq!(chain.nodes[0].kind, NodeKind::TOOL);
    assert_eq!(chain.nodes[0].next_node, "summarize");
    assert_eq!(chain.nodes[1].kind, NodeKind::SKILL);
    assert_eq!(chain.nodes[1].input_map["text"], "read.output");
    assert_eq!(chain.nodes[1].next_node, "");

    let branch: ChainNode =
        serde_json::from_slice(fixture("spec/chains/branch_node").line()).expect("a ChainNode");
    assert_eq!(branch.kind, NodeKind::BRANCH);
    assert_eq!(branch.condition, "length(output.items) > `0`");
    assert_eq!(
        (branch.true_node.as_str(), branch.false_node.as_str()),
        ("process", "skip_log")
    );
    assert_eq!(branch.on_error, "abort");

    let map: ChainNode =
        serde_json::from_slice(fixture("spec/chains/map_node").line()).expect("a ChainNode");
    assert_eq!(map.kind, NodeKind::MAP);
    assert_eq!(map.items_path, "input.files");
    assert_eq!(map.map_node, "process_file");
}

#[test]
fn node_fragments_are_not_messages_but_travel_in_a_chain() {
    for name in ["spec/chains/branch_node", "spec/chains/map_node"] {
        let f = fixture(name);
        let err = decode(f.line()).expect_err("a fragment has no type");
        assert_eq!(err.code(), ErrorCode::INVALID_MESSAGE);

        let node: Value = serde_json::from_slice(f.line()).expect("JSON");
        let chain = positive::chain_with_node(&node);
        let Message::ChainRequest(req) =
            decode(&serde_json::to_vec(&chain).expect("encodes")).expect("decodes")
        else {
            panic!("not a chain/req")
        };
        assert_eq!(req.nodes.len(), 1);
        assert_eq!(req.entry_node, req.nodes[0].node_id);
        assert_eq!(req.chain_id, positive::FRAGMENT_CHAIN_ID);
        assert_eq!(req.timeout, 300);
    }
}

#[test]
fn core_examples_decode_to_their_typed_fields() {
    let Message::HandshakeRequest(legacy) = message("spec/core/handshake_req_a2e_alias") else {
        panic!("not a handshake/req")
    };
    assert_eq!(legacy.version, "1.0");
    let line = Message::HandshakeRequest(legacy).to_json();
    let back: Value = serde_json::from_slice(&line).expect("JSON");
    assert_eq!(back["version"], "1.0");
    assert!(back.get("a2e").is_none(), "emits version, never a2e");

    let Message::HandshakeResponse(resp) = message("spec/core/handshake_resp") else {
        panic!("not a handshake/resp")
    };
    assert_eq!(resp.accepted_caps.len(), 4);
    assert!(!resp.accepted_caps[3].enabled);
    assert_eq!(resp.accepted_caps[3].metadata["reason"], "no plugin loaded");

    let Message::ErrorMessage(error) = message("spec/core/error") else {
        panic!("not an error")
    };
    assert_eq!(error.code, ErrorCode::SCHEMA_VIOLATION);
    assert!(!error.retryable);

    let Message::ProcReadEvent(exit) = message("spec/core/proc_read_event_exit") else {
        panic!("not a proc/read/event")
    };
    assert_eq!(exit.stream_type, StreamType::KILLED);
    assert_eq!(exit.kind, EventKind::STATUS, "kind defaults to status");
    assert_eq!(exit.data["code"], 0);
}

#[test]
fn every_message_type_has_a_positive_fixture() {
    let mut all = spec();
    all.extend(load_group("edge").expect("fixtures/edge loads"));
    let seen: Vec<String> = all
        .iter()
        .filter_map(|f| decode(f.line()).ok())
        .map(|m| m.type_str().to_owned())
        .collect();
    let missing: Vec<&str> = Message::TYPES
        .iter()
        .copied()
        .filter(|t| !seen.iter().any(|s| s == t))
        .collect();
    assert!(missing.is_empty(), "no fixture of {missing:?}");
}

#[test]
fn unknown_fields_are_dropped_and_the_rest_kept() {
    let line = br#"{"type":"ping","id":"p9","version":"1.0","ts":1716123460.5,"x_trace":"abc"}"#;
    let msg = decode(line).expect("tolerated");
    let back: Value = serde_json::from_slice(&msg.to_json()).expect("JSON");
    assert_eq!(
        back,
        json!({"type": "ping", "id": "p9", "version": "1.0", "ts": 1716123460.5})
    );
}
