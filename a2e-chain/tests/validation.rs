//! Every validation error: refused before anything runs, naming node and
//! field, with the wire code it maps to.

use crate::common;

use a2e_chain::{ChainConfig, ValidationError, validate};
use a2e_proto::{ChainNode, ErrorCode, NodeKind};
use common::*;
use serde_json::json;

fn check(nodes: Vec<ChainNode>, entry: &str) -> ValidationError {
    check_with(nodes, entry, json!({}), &ChainConfig::default())
}

fn check_with(
    nodes: Vec<ChainNode>,
    entry: &str,
    input: serde_json::Value,
    cfg: &ChainConfig,
) -> ValidationError {
    let req = request(nodes, entry, input);
    validate(&req, cfg).expect_err("should be refused")
}

/// Asserts code, node and field, and that the message mentions `needle`.
fn expect(err: ValidationError, code: ErrorCode, node: &str, field: &str, needle: &str) {
    assert_eq!(err.code(), code, "{err}");
    assert_eq!(err.node_id(), node, "{err}");
    assert_eq!(err.field(), field, "{err}");
    assert!(err.to_string().contains(needle), "`{err}` lacks `{needle}`");
    assert_eq!(err.detail()["node_id"], node);
    assert_eq!(err.detail()["field"], field);
}

const SV: ErrorCode = ErrorCode::SCHEMA_VIOLATION;

#[test]
fn a_valid_chain_passes() {
    let req = request(
        vec![
            then(tool("a", "echo"), "b"),
            with_map(tool("b", "echo"), &[("x", "a.output")]),
        ],
        "a",
        json!({}),
    );
    let plan = validate(&req, &ChainConfig::default()).unwrap();
    assert_eq!(plan.node_count(), 2);
}

#[test]
fn duplicate_ids() {
    let e = check(vec![tool("a", "x"), tool("b", "x"), tool("a", "y")], "a");
    expect(e.clone(), SV, "a", "node_id", "duplicate");
    assert!(matches!(e, ValidationError::DuplicateId { first: 0, .. }));
}

#[test]
fn empty_and_reserved_ids() {
    expect(
        check(vec![tool("", "x")], "a"),
        SV,
        "",
        "node_id",
        "empty node_id",
    );
    expect(
        check(vec![tool("input", "x")], "input"),
        SV,
        "input",
        "node_id",
        "reserved",
    );
}

#[test]
fn unknown_ids_in_every_reference_field() {
    let e = check(vec![tool("a", "x")], "nope");
    expect(e, SV, "", "entry_node", "unknown node `nope`");
    expect(
        check(vec![then(tool("a", "x"), "ghost")], "a"),
        SV,
        "a",
        "next_node",
        "`ghost`",
    );
    expect(
        check(
            vec![branch("b", "`true`", "ghost", ""), tool("a", "x")],
            "b",
        ),
        SV,
        "b",
        "true_node",
        "`ghost`",
    );
    expect(
        check(
            vec![branch("b", "`true`", "a", "ghost"), tool("a", "x")],
            "b",
        ),
        SV,
        "b",
        "false_node",
        "`ghost`",
    );
    expect(
        check(vec![map("m", "input.xs", "ghost")], "m"),
        SV,
        "m",
        "map_node",
        "`ghost`",
    );
    expect(
        check(vec![on_error(tool("a", "x"), "ghost")], "a"),
        SV,
        "a",
        "on_error",
        "`ghost`",
    );
    let e = check(
        vec![
            tool("a", "x"),
            with_map(tool("b", "x"), &[("t", "ghost.output")]),
        ],
        "a",
    );
    expect(e, SV, "b", "input_map.t", "`ghost`");
    let e = check(
        vec![
            tool("a", "x"),
            with_map(tool("b", "x"), &[("t", "[a.output, ghost.output]")]),
        ],
        "a",
    );
    expect(e, SV, "b", "input_map.t", "`ghost`");
    expect(
        check(
            vec![branch("b", "ghost.output", "a", ""), tool("a", "x")],
            "b",
        ),
        SV,
        "b",
        "condition",
        "`ghost`",
    );
    expect(
        check(vec![map("m", "ghost.output", "t"), tool("t", "x")], "m"),
        SV,
        "m",
        "items_path",
        "`ghost`",
    );
    // `item` and `index` exist only inside a map template.
    expect(
        check(vec![with_map(tool("a", "x"), &[("i", "item")])], "a"),
        SV,
        "a",
        "input_map.i",
        "`item`",
    );
}

#[test]
fn missing_fields_per_kind() {
    expect(
        check(vec![tool("a", "")], "a"),
        SV,
        "a",
        "name",
        "needs `name`",
    );
    let mut s = ChainNode::new("s", NodeKind::SKILL, "");
    s.name.clear();
    expect(check(vec![s], "s"), SV, "s", "name", "`skill` node needs");
    expect(
        check(vec![ChainNode::new("p", NodeKind::PROC, "")], "p"),
        SV,
        "p",
        "input.cmd",
        "needs `input.cmd`",
    );
    let mut proc_node = ChainNode::new("p", NodeKind::PROC, "");
    proc_node.input_map.insert("cmd".into(), json!("input.cmd"));
    assert!(
        validate(
            &request(vec![proc_node], "p", json!({})),
            &ChainConfig::default()
        )
        .is_ok()
    );
    expect(
        check(vec![branch("b", "", "a", ""), tool("a", "x")], "b"),
        SV,
        "b",
        "condition",
        "needs `condition`",
    );
    expect(
        check(vec![branch("b", "`true`", "", "")], "b"),
        SV,
        "b",
        "true_node",
        "needs `true_node`",
    );
    expect(
        check(vec![map("m", "", "t"), tool("t", "x")], "m"),
        SV,
        "m",
        "items_path",
        "needs `items_path`",
    );
    expect(
        check(vec![map("m", "input.xs", "")], "m"),
        SV,
        "m",
        "map_node",
        "needs `map_node`",
    );
}

#[test]
fn fields_a_kind_does_not_take() {
    let mut t = tool("a", "x");
    t.condition = "`true`".into();
    expect(
        check(vec![t], "a"),
        SV,
        "a",
        "condition",
        "does not take `condition`",
    );
    let mut t = tool("a", "x");
    t.items_path = "input".into();
    expect(check(vec![t], "a"), SV, "a", "items_path", "does not take");
    let b = with_map(branch("b", "`true`", "a", ""), &[("x", "input")]);
    expect(
        check(vec![b, tool("a", "x")], "b"),
        SV,
        "b",
        "input_map",
        "`branch` node does not take",
    );
    let mut m = map("m", "input.xs", "t");
    m.true_node = "t".into();
    expect(
        check(vec![m, tool("t", "x")], "m"),
        SV,
        "m",
        "true_node",
        "`map` node does not take",
    );
}

#[test]
fn unknown_kind() {
    let n = ChainNode::new("a", NodeKind::new("http"), "x");
    expect(check(vec![n], "a"), SV, "a", "kind", "unknown kind `http`");
}

#[test]
fn bad_shapes() {
    let mut n = tool("a", "x");
    n.input_map.insert("k".into(), json!(3));
    expect(
        check(vec![n], "a"),
        SV,
        "a",
        "input_map.k",
        "expected a JMESPath expression string",
    );
    let n = with_input(tool("a", "x"), &[("timeout", json!("soon"))]);
    expect(check(vec![n], "a"), SV, "a", "input.timeout", "seconds");
    let n = with_input(tool("a", "x"), &[("timeout", json!(-1))]);
    expect(check(vec![n], "a"), SV, "a", "input.timeout", "seconds");
    expect(
        check(vec![branch("b", "`true`", "a", "a"), tool("a", "x")], "b"),
        SV,
        "b",
        "false_node",
        "same node",
    );
}

#[test]
fn jmespath_errors_are_caught_at_validation() {
    let e = check(
        vec![
            tool("a", "x"),
            with_map(tool("b", "x"), &[("t", "a.output[")]),
        ],
        "a",
    );
    expect(
        e.clone(),
        SV,
        "b",
        "input_map.t",
        "JMESPath error in `a.output[`",
    );
    assert!(matches!(e, ValidationError::Expression { .. }));
    let e = check(
        vec![
            tool("a", "x"),
            with_map(tool("b", "x"), &[("t", "shout(a.output)")]),
        ],
        "a",
    );
    expect(e, SV, "b", "input_map.t", "unknown function `shout`");
    let e = check(vec![with_map(tool("b", "x"), &[("t", "keys(@)")])], "b");
    expect(e, SV, "b", "input_map.t", "whole chain context");
    expect(
        check(vec![branch("b", "a ==", "a", ""), tool("a", "x")], "b"),
        SV,
        "b",
        "condition",
        "JMESPath error",
    );
    expect(
        check(vec![map("m", "input.xs[?", "t"), tool("t", "x")], "m"),
        SV,
        "m",
        "items_path",
        "JMESPath error",
    );
}

#[test]
fn cycles_name_their_path() {
    let e = check(
        vec![
            then(tool("a", "x"), "b"),
            then(tool("b", "x"), "c"),
            then(tool("c", "x"), "b"),
        ],
        "a",
    );
    expect(
        e.clone(),
        ErrorCode::CHAIN_CYCLE,
        "b",
        "nodes",
        "b -> c -> b",
    );
    assert_eq!(
        e,
        ValidationError::Cycle {
            path: vec!["b".into(), "c".into(), "b".into()]
        }
    );
    // Through input_map.
    let e = check(
        vec![
            tool("r", "x"),
            with_map(tool("a", "x"), &[("v", "b.output")]),
            with_map(tool("b", "x"), &[("v", "a.output")]),
        ],
        "r",
    );
    assert_eq!(
        e,
        ValidationError::Cycle {
            path: vec!["a".into(), "b".into(), "a".into()]
        }
    );
    // A node reading itself.
    let e = check(
        vec![
            tool("r", "x"),
            with_map(tool("a", "x"), &[("v", "a.output")]),
        ],
        "r",
    );
    assert_eq!(
        e,
        ValidationError::Cycle {
            path: vec!["a".into(), "a".into()]
        }
    );
    // A fallback reading a dependent of the node it stands in for.
    let e = check(
        vec![
            then(on_error(tool("a", "x"), "fb"), "d"),
            tool("d", "x"),
            with_map(tool("fb", "x"), &[("v", "d.output")]),
        ],
        "a",
    );
    assert_eq!(e.code(), ErrorCode::CHAIN_CYCLE, "{e}");
    // A template reading its own map.
    let e = check(
        vec![
            map("m", "input.xs", "t"),
            with_map(tool("t", "x"), &[("v", "m.output")]),
        ],
        "m",
    );
    assert_eq!(
        e,
        ValidationError::Cycle {
            path: vec!["m".into(), "m".into()]
        }
    );
}

#[test]
fn roles_that_cannot_mix() {
    let tmpl_branch = vec![map("m", "input.xs", "b"), branch("b", "`true`", "m", "")];
    expect(
        check(tmpl_branch, "m"),
        SV,
        "m",
        "map_node",
        "must be a tool, skill or proc",
    );
    expect(
        check(vec![on_error(tool("a", "x"), "a")], "a"),
        SV,
        "a",
        "on_error",
        "its own fallback",
    );
    let twice = vec![
        on_error(tool("a", "x"), "f"),
        on_error(tool("b", "x"), "f"),
        tool("f", "x"),
    ];
    expect(
        check(twice, "a"),
        SV,
        "b",
        "on_error",
        "already the fallback of `a`",
    );
    let tmpl_fb = vec![
        map("m", "input.xs", "t"),
        tool("t", "x"),
        on_error(tool("a", "x"), "t"),
    ];
    expect(check(tmpl_fb, "m"), SV, "a", "on_error", "map template");
    let next_tmpl = vec![
        map("m", "input.xs", "t"),
        tool("t", "x"),
        then(tool("a", "x"), "t"),
    ];
    expect(check(next_tmpl, "m"), SV, "a", "next_node", "map template");
    let branch_fb = vec![
        on_error(tool("a", "x"), "f"),
        tool("f", "x"),
        branch("b", "`true`", "f", ""),
    ];
    expect(check(branch_fb, "a"), SV, "b", "true_node", "a fallback");
    let tmpl_next = vec![
        map("m", "input.xs", "t"),
        then(tool("t", "x"), "z"),
        tool("z", "x"),
    ];
    expect(check(tmpl_next, "m"), SV, "t", "next_node", "no successor");
    let tmpl_policy = vec![
        map("m", "input.xs", "t"),
        on_error(tool("t", "x"), "f"),
        tool("f", "x"),
    ];
    expect(
        check(tmpl_policy, "m"),
        SV,
        "t",
        "on_error",
        "`abort` or `skip`",
    );
    let reads_tmpl = vec![
        map("m", "input.xs", "t"),
        tool("t", "x"),
        with_map(tool("r", "x"), &[("v", "t.output")]),
    ];
    expect(
        check(reads_tmpl, "m"),
        SV,
        "r",
        "input_map.v",
        "map template `t`",
    );
}

#[test]
fn entry_node_rules() {
    expect(
        check(vec![tool("a", "x")], ""),
        SV,
        "",
        "entry_node",
        "required",
    );
    let e = check(
        vec![
            tool("a", "x"),
            with_map(tool("b", "x"), &[("v", "a.output")]),
        ],
        "b",
    );
    expect(e, SV, "", "entry_node", "depends on 1 other node");
    expect(
        check(vec![map("m", "input.xs", "t"), tool("t", "x")], "t"),
        SV,
        "",
        "entry_node",
        "map template",
    );
    expect(
        check(vec![on_error(tool("a", "x"), "f"), tool("f", "x")], "f"),
        SV,
        "",
        "entry_node",
        "fallback",
    );
}

#[test]
fn branch_output_needs_exactly_one_upstream() {
    let e = check(vec![branch("b", "output.ok", "a", ""), tool("a", "x")], "b");
    expect(
        e,
        SV,
        "b",
        "condition",
        "exactly one upstream node; this branch has 0",
    );
    let e = check(
        vec![
            tool("x", "x"),
            tool("y", "x"),
            branch("b", "output.ok && y.output.ok && x.output.ok", "a", ""),
            tool("a", "x"),
        ],
        "x",
    );
    expect(e, SV, "b", "condition", "this branch has 2");
}

#[test]
fn node_count_limit() {
    let nodes: Vec<_> = (0..11).map(|i| tool(&format!("n{i}"), "x")).collect();
    let cfg = ChainConfig {
        max_nodes: 10,
        ..ChainConfig::default()
    };
    let e = check_with(nodes, "n0", json!({}), &cfg);
    expect(e.clone(), SV, "", "nodes", "11 nodes; the limit is 10");
    assert_eq!(
        e,
        ValidationError::TooManyNodes {
            count: 11,
            limit: 10
        }
    );
    // The default is 10,000.
    assert_eq!(ChainConfig::default().max_nodes, 10_000);
}

#[test]
fn map_fan_out_limit_when_items_come_from_input() {
    let cfg = ChainConfig {
        max_map_items: 3,
        ..ChainConfig::default()
    };
    let nodes = vec![map("m", "input.xs", "t"), tool("t", "x")];
    let e = check_with(nodes.clone(), "m", json!({"xs": [1, 2, 3, 4]}), &cfg);
    expect(e, SV, "m", "items_path", "4 items; the limit is 3");
    let ok = request(nodes, "m", json!({"xs": [1, 2, 3]}));
    assert!(validate(&ok, &cfg).is_ok());
}

#[tokio::test]
async fn the_engine_refuses_before_running_anything() {
    let script = Script::default();
    let req = request(
        vec![then(tool("a", "echo"), "b"), then(tool("b", "echo"), "a")],
        "a",
        json!({}),
    );
    let err = a2e_chain::Engine::new(script.clone())
        .run(&req, (), tokio_util::sync::CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::CHAIN_CYCLE);
    assert!(script.calls().is_empty());
}
