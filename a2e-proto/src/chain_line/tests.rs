use serde_json::json;

use super::chain_request;
use crate::chains::ChainRequest;
use crate::decode::{DecodeOptions, decode, decode_with};
use crate::{ErrorCode, Message};

/// A request with every kind of node field: plain strings, an escape, an
/// `input`, maps of plain and other values, an unknown field, a kind the
/// spec does not name, a later duplicate key in a map.
fn varied() -> String {
    let nodes = json!([
        {"node_id": "n0", "kind": "tool", "name": "echo", "input": {"x": 0}},
        {"node_id": "n1", "kind": "tool", "name": "echo", "input": {},
         "input_map": {"x": "n0.output.x", "y": "input.y"}},
        {"kind": "branch", "node_id": "b", "condition": "n1.output.x == `0`",
         "true_node": "t", "false_node": "f", "on_error": "skip"},
        {"node_id": "t", "kind": "tool", "name": "say \"hi\"\n", "next_node": "m"},
        {"node_id": "f", "kind": "something-new", "extra": {"deep": [1, {"a": null}]},
         "input_map": {"n": 5, "s": "input.s"}},
        {"node_id": "m", "kind": "map", "items_path": "input.items", "map_node": "t",
         "on_error": "f", "extra": "x", "extra": 2},
        {"node_id": "ü✓", "kind": "proc", "input": {"cmd": ["ls", "-l"]}},
    ]);
    let req = json!({
        "type": "chain/req", "id": "c1", "version": "1.0", "ts": 1.5,
        "chain_id": "abcd0123", "entry_node": "n0", "initial_input": {"items": [1, 2]},
        "nodes": nodes, "streaming": false, "timeout": 120, "correlation_id": "turn-1",
    });
    req.to_string()
}

fn serde(text: &str) -> Option<ChainRequest> {
    serde_json::from_str(text).ok()
}

/// `a` and `b` alike, but for the envelope fields a line without them gets
/// anew each time (`id`, `chain_id`, `ts`: serde reads the envelope on
/// both paths).
fn same(a: Option<ChainRequest>, b: Option<ChainRequest>) -> bool {
    match (a, b) {
        (Some(mut a), Some(b)) => {
            a.id.clone_from(&b.id);
            a.chain_id.clone_from(&b.chain_id);
            a.ts = b.ts;
            a == b
        }
        (a, b) => a.is_none() && b.is_none(),
    }
}

/// `line` with its `type` moved last: decoded by the generic path only.
fn type_last(line: &str) -> String {
    let body = line.strip_prefix(r#"{"type":"chain/req","#).unwrap();
    let body = body.strip_suffix('}').unwrap();
    format!(r#"{{{body},"type":"chain/req"}}"#)
}

#[test]
fn plain_and_varied_nodes_are_read_here_as_serde_reads_them() {
    let text = varied();
    let fast = chain_request(&text, 64).expect("read here");
    assert_eq!(Some(&fast), serde(&text).as_ref());
    assert_eq!(fast.nodes.len(), 7);
    assert_eq!(fast.nodes[0].on_error, "abort");
    assert_eq!(fast.nodes[3].name, "say \"hi\"\n");
    assert_eq!(fast.nodes.capacity(), 7, "no room left over");
    // Pretty-printed (whitespace everywhere), and `nodes` placed first,
    // last, or alone: the same.
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let pretty = serde_json::to_string_pretty(&value).unwrap();
    assert_eq!(chain_request(&pretty, 64).as_ref(), Some(&fast));
    let nodes = value["nodes"].to_string();
    let mut rest = value.clone();
    rest.as_object_mut().unwrap().shift_remove("nodes");
    let rest = rest.to_string();
    let body = rest.strip_prefix('{').unwrap().strip_suffix('}').unwrap();
    for line in [
        format!(r#"{{"nodes":{nodes},{body}}}"#),
        format!(r#"{{{body} , "nodes" : {nodes} }}"#),
    ] {
        assert_eq!(chain_request(&line, 64).as_ref(), serde(&line).as_ref());
        assert!(chain_request(&line, 64).is_some(), "{line}");
    }
    let alone = format!(r#"{{"type":"chain/req","nodes":{nodes}}}"#);
    assert!(same(chain_request(&alone, 64), serde(&alone)));
    assert_eq!(chain_request(&alone, 64).unwrap().nodes, fast.nodes);
    let empty = r#"{"type":"chain/req","nodes":[ ],"id":"e"}"#;
    assert!(same(chain_request(empty, 64), serde(empty)));
}

#[test]
fn anything_unusual_is_left_to_the_generic_path() {
    let base = |nodes: &str| format!(r#"{{"type":"chain/req","id":"x","nodes":{nodes}}}"#);
    for (line, why) in [
        (base(r#"[{"node_id":"a"}]"#), "no kind"),
        (base(r#"[{"kind":"tool"}]"#), "no node_id"),
        (base(r#"[{}]"#), "empty node"),
        (
            base(r#"[{"node_id":"a","kind":"tool","name":"x","name":"y"}]"#),
            "twice",
        ),
        (
            base(r#"[{"node\u005fid":"a","kind":"tool"}]"#),
            "escaped key",
        ),
        (
            base(r#"[{"node_id":"a","kind":"tool",}]"#),
            "trailing comma",
        ),
        (
            base(r#"[{"node_id":"a","kind":"tool"},]"#),
            "trailing comma",
        ),
        (base(r#"[{"node_id":"a","kind":5}]"#), "kind a number"),
        (
            base(r#"[{"node_id":"a","kind":"tool","input":[]}]"#),
            "input a list",
        ),
        (base(r#"[["a"]]"#), "a node a list"),
        (base(r#"{}"#), "nodes an object"),
        (
            base(r#"[{"node_id":"a","kind":"tool","name":"a	b"}]"#),
            "a raw tab",
        ),
        (
            base(r#"[{"node_id":"a","kind":"tool","x":tru}]"#),
            "bad literal",
        ),
        (
            base(r#"[{"node_id":"a","kind":"tool"} {"node_id":"b","kind":"tool"}]"#),
            "no comma",
        ),
        (
            r#"{"type":"chain/req","nodes":[],"nodes":[]}"#.to_owned(),
            "nodes twice",
        ),
        (r#"{"type":"chain/req","id":"x"}"#.to_owned(), "no nodes"),
        (
            r#"{"type":"chain/req","nodes":[]} x"#.to_owned(),
            "trailing text",
        ),
        (
            r#"{"type":"chain/req","id":x,"nodes":[]}"#.to_owned(),
            "bad member",
        ),
        (
            r#"{"type":"chain/req","timeout":-1,"nodes":[]}"#.to_owned(),
            "bad timeout",
        ),
    ] {
        assert_eq!(chain_request(&line, 64), None, "{why}: {line}");
    }
}

#[test]
fn a_declined_line_decodes_or_fails_as_it_did() {
    // Through `decode`: the same message or error as the generic path's,
    // with its paths.
    for line in [
        r#"{"type":"chain/req","id":"x","nodes":[{"node_id":"a","kind":"tool"},{"node_id":"b","kind":"tool","name":"x","name":"y"}]}"#,
        r#"{"type":"chain/req","id":"x","nodes":[{"node_id":"a","kind":"tool","input":[]}]}"#,
        r#"{"type":"chain/req","id":"x","nodes":[{"node\u005fid":"a","kind":"tool"}],"ts":1,"chain_id":"c"}"#,
        r#"{"type":"chain/req","id":"x","nodes":[],"nodes":[]}"#,
    ] {
        let (here, generic) = (decode(line.as_bytes()), decode(type_last(line).as_bytes()));
        match (here, generic) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{line}"),
            (Err(a), Err(b)) => {
                assert_eq!(
                    (a.code(), a.to_string(), &a.req_id),
                    (b.code(), b.to_string(), &b.req_id)
                );
                assert_eq!(a.code(), ErrorCode::SCHEMA_VIOLATION, "{line}");
            }
            (a, b) => panic!("{line}: {a:?} against {b:?}"),
        }
    }
}

/// A chain whose one node's `input` nests `levels` deep (itself counted),
/// with `nodes` first or last.
fn nested(levels: usize, nodes_last: bool) -> String {
    let mut value = json!(1);
    for i in 0..levels {
        value = if i % 2 == 0 {
            json!([value])
        } else {
            json!({"k": value})
        };
    }
    let input = if levels % 2 == 1 {
        json!({"v": value})
    } else {
        json!({"v": [value]})
    };
    let node = json!({"node_id": "a", "kind": "tool", "input": input, "input_map": {"x": "input"}});
    let nodes = json!([node]).to_string();
    if nodes_last {
        format!(r#"{{"type":"chain/req","initial_input":{{}},"nodes":{nodes}}}"#)
    } else {
        format!(r#"{{"type":"chain/req","nodes":{nodes},"initial_input":{{"a":[[[]]]}}}}"#)
    }
}

/// The line's depth, counted as the generic path counts it.
fn depth(line: &str) -> usize {
    (1..200)
        .find(|&limit| crate::decode::within_depth(line.as_bytes(), limit))
        .unwrap()
}

#[test]
fn the_depth_limit_holds_here_as_on_the_generic_path() {
    for levels in 0..8 {
        for nodes_last in [false, true] {
            let line = nested(levels, nodes_last);
            let deepest = depth(&line);
            for limit in 1..deepest + 3 {
                let options = DecodeOptions {
                    max_depth: limit,
                    ..DecodeOptions::default()
                };
                let fast = chain_request(&line, limit);
                assert_eq!(fast.is_some(), limit >= deepest, "{line} at {limit}");
                match decode_with(line.as_bytes(), &options) {
                    Ok(Message::ChainRequest(req)) => {
                        assert!(limit >= deepest, "{line} at {limit}");
                        assert!(same(Some(req), serde(&line)), "{line}");
                    }
                    Ok(other) => panic!("{other:?}"),
                    Err(e) => {
                        assert!(limit < deepest, "{line} at {limit}: {e}");
                        assert_eq!(e.code(), ErrorCode::INVALID_MESSAGE, "{e}");
                    }
                }
            }
        }
    }
}

/// Every line one edit away from a valid one (a byte removed, or one of
/// JSON's structural bytes put in): whatever is read here, serde reads the
/// same; whatever serde refuses is not read here.
#[test]
fn near_misses_are_read_as_serde_reads_them_or_not_at_all() {
    let line = r#"{"type":"chain/req","id":"c","ts":1,"chain_id":"c","nodes":[{"node_id":"a","kind":"tool","name":"e\"","input":{"x":[1]},"input_map":{"x":"input.x"},"z":null},{"kind":"map","node_id":"b"}],"timeout":5}"#;
    assert!(chain_request(line, 64).is_some());
    let mut edits = Vec::new();
    for at in 0..line.len() {
        let mut cut = line.as_bytes().to_vec();
        cut.remove(at);
        edits.push(cut);
        for put in [
            b'{', b'}', b'[', b']', b'"', b',', b':', b'\\', b' ', b'1', b'x',
        ] {
            let mut more = line.as_bytes().to_vec();
            more.insert(at, put);
            edits.push(more);
        }
    }
    let mut read_here = 0;
    for edit in &edits {
        let Ok(text) = std::str::from_utf8(edit) else {
            continue;
        };
        if let Some(fast) = chain_request(text, 64) {
            read_here += 1;
            assert!(same(Some(fast), serde(text)), "{text}");
        }
    }
    // Whitespace and edits inside strings still take this path.
    assert!(read_here > 100, "{read_here} of {} read here", edits.len());
}
