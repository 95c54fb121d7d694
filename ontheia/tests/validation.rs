//! Every document rule and limit, each error naming its JSON path and rule.

use ontheia::{Rule, ValidationErrors, parse, parse_value};
use serde_json::{Value, json};

fn errs(doc: Value) -> ValidationErrors {
    match parse_value(&doc) {
        Ok(_) => panic!("expected errors for {doc}"),
        Err(e) => e,
    }
}

#[track_caller]
fn assert_err(doc: Value, path: &str, rule: Rule) {
    let e = errs(doc);
    assert!(e.has(path, rule), "expected {rule} at {path}, got: {e}");
}

fn llm(id: &str) -> Value {
    json!({"id": id, "type": "llm", "prompt": "hi"})
}

fn steps(n: usize) -> Vec<Value> {
    (0..n).map(|i| llm(&format!("s{i}"))).collect()
}

#[test]
fn valid_document_parses() {
    let d = parse(r#"{"steps":[{"id":"a","type":"llm","prompt":"hi"}],"edges":[]}"#).unwrap();
    assert_eq!(d.steps.len(), 1);
}

#[test]
fn syntax_and_shape() {
    let e = parse("{\"steps\": [").unwrap_err();
    assert!(e.has("$", Rule::Syntax), "{e}");
    assert!(e.to_string().contains("line 1"), "{e}");
    assert_err(json!([]), "$", Rule::Type);
    assert_err(json!({}), "$.steps", Rule::Required);
    assert_err(
        json!({"steps": [llm("a")], "nodes": []}),
        "$.nodes",
        Rule::UnknownField,
    );
    assert_err(json!({"steps": {}}), "$.steps", Rule::Type);
    assert_err(
        json!({"steps": [llm("a")], "edges": {}}),
        "$.edges",
        Rule::Type,
    );
    assert_err(json!({"steps": [42]}), "$.steps[0]", Rule::Type);
    let big = format!("{{\"steps\": [], \"pad\": \"{}\"}}", "x".repeat(1 << 20));
    assert!(parse(&big).unwrap_err().has("$", Rule::DocumentSize));
}

#[test]
fn step_count_limits() {
    assert_err(json!({"steps": []}), "$.steps", Rule::Items);
    assert!(parse_value(&json!({"steps": steps(50)})).is_ok());
    assert_err(json!({"steps": steps(51)}), "$.steps", Rule::Items);
}

#[test]
fn ids() {
    assert_err(
        json!({"steps": [{"type": "llm", "prompt": "x"}]}),
        "$.steps[0].id",
        Rule::Required,
    );
    assert_err(
        json!({"steps": [{"id": "", "type": "llm", "prompt": "x"}]}),
        "$.steps[0].id",
        Rule::Length,
    );
    assert_err(
        json!({"steps": [llm(&"x".repeat(65))]}),
        "$.steps[0].id",
        Rule::Length,
    );
    assert!(parse_value(&json!({"steps": [llm(&"x".repeat(64))]})).is_ok());
    assert_err(
        json!({"steps": [{"id": 7, "type": "llm", "prompt": "x"}]}),
        "$.steps[0].id",
        Rule::Type,
    );
    assert_err(
        json!({"steps": [llm("a"), llm("a")]}),
        "$.steps[1].id",
        Rule::DuplicateId,
    );
    assert_err(
        json!({"steps": [llm("input")]}),
        "$.steps[0].id",
        Rule::ReservedId,
    );
    // Nested ids count too.
    assert_err(
        json!({"steps": [llm("a"), {"id": "p", "type": "parallel", "steps": [llm("a")]}]}),
        "$.steps[1].steps[0].id",
        Rule::DuplicateId,
    );
}

#[test]
fn types_and_unknown_fields() {
    assert_err(
        json!({"steps": [{"id": "a"}]}),
        "$.steps[0].type",
        Rule::Required,
    );
    assert_err(
        json!({"steps": [{"id": "a", "type": "python"}]}),
        "$.steps[0].type",
        Rule::Enum,
    );
    assert_err(
        json!({"steps": [{"id": "a", "type": "llm", "prompt": "x", "colour": 1}]}),
        "$.steps[0].colour",
        Rule::UnknownField,
    );
    assert_err(
        json!({"steps": [{"id": "a", "type": "llm", "prompt": 5}]}),
        "$.steps[0].prompt",
        Rule::Type,
    );
    assert_err(
        json!({"steps": [{"id": "a", "type": "llm", "prompt": "x", "params": []}]}),
        "$.steps[0].params",
        Rule::Type,
    );
    assert_err(
        json!({"steps": [{"id": "a", "type": "llm", "prompt": "x", "when": []}]}),
        "$.steps[0].when",
        Rule::Type,
    );
    assert_err(
        json!({"steps": [{"id": "a", "type": "llm", "prompt": "x", "params": {"temperature": 3}}]}),
        "$.steps[0].params.temperature",
        Rule::Range,
    );
    assert_err(
        json!({"steps": [{"id": "a", "type": "llm", "prompt": "x", "params": {"silent": "yes"}}]}),
        "$.steps[0].params.silent",
        Rule::Type,
    );
    assert_err(
        json!({"steps": [{"id": "a", "type": "agent", "agent_id": "x".repeat(129)}]}),
        "$.steps[0].agent_id",
        Rule::Length,
    );
}

#[test]
fn required_fields_per_type_also_from_params() {
    let cases = [
        (json!({"id": "a", "type": "llm"}), "$.steps[0].prompt"),
        (json!({"id": "a", "type": "agent"}), "$.steps[0].agent_id"),
        (
            json!({"id": "a", "type": "tool", "tool": "t"}),
            "$.steps[0].server",
        ),
        (
            json!({"id": "a", "type": "tool", "server": "s"}),
            "$.steps[0].tool",
        ),
        (
            json!({"id": "a", "type": "memory_search"}),
            "$.steps[0].namespaces",
        ),
        (
            json!({"id": "a", "type": "memory_write", "params": {"content": "c"}}),
            "$.steps[0].namespace",
        ),
        (
            json!({"id": "a", "type": "memory_write", "params": {"namespace": "n"}}),
            "$.steps[0].content",
        ),
        (json!({"id": "a", "type": "transform"}), "$.steps[0].prompt"),
        (json!({"id": "a", "type": "rest_call"}), "$.steps[0].url"),
        (
            json!({"id": "a", "type": "router", "input": "x"}),
            "$.steps[0].cases",
        ),
        (
            json!({"id": "a", "type": "router", "cases": [{"steps": []}]}),
            "$.steps[0].input",
        ),
        (json!({"id": "a", "type": "branch"}), "$.steps[0].cases"),
        (json!({"id": "a", "type": "parallel"}), "$.steps[0].steps"),
        (
            json!({"id": "a", "type": "loop", "steps": [llm("b")]}),
            "$.steps[0].count",
        ),
        (
            json!({"id": "a", "type": "loop", "count": 2}),
            "$.steps[0].steps",
        ),
        (json!({"id": "a", "type": "retry"}), "$.steps[0].steps"),
        (json!({"id": "a", "type": "delay"}), "$.steps[0].delay_ms"),
    ];
    for (step, path) in cases {
        assert_err(json!({"steps": [step]}), path, Rule::Required);
    }
    // The same values inside `params` satisfy the requirement.
    let ok = json!({"steps": [
        {"id": "a", "type": "llm", "params": {"prompt": "p"}},
        {"id": "b", "type": "tool", "params": {"server": "s", "tool": "t"}},
        {"id": "c", "type": "delay", "params": {"delay_ms": 0}},
        {"id": "d", "type": "transform", "params": {"template": "x"}},
        {"id": "e", "type": "router", "params": {"value": "v"}, "cases": [{"when": "v", "steps": []}]},
        {"id": "f", "type": "loop", "params": {"count": 2}, "steps": [llm("g")]}
    ]});
    parse_value(&ok).unwrap();
}

#[test]
fn numeric_limits() {
    let d = |step: Value| json!({"steps": [step]});
    let lp =
        |count: Value| d(json!({"id": "l", "type": "loop", "count": count, "steps": [llm("x")]}));
    assert!(parse_value(&lp(json!(1))).is_ok());
    assert!(parse_value(&lp(json!(20))).is_ok());
    assert_err(lp(json!(0)), "$.steps[0].count", Rule::Range);
    assert_err(lp(json!(21)), "$.steps[0].count", Rule::Range);
    assert_err(lp(json!(2.5)), "$.steps[0].count", Rule::Integer);
    assert_err(lp(json!("3")), "$.steps[0].count", Rule::Type);
    let rt =
        |count: Value| d(json!({"id": "r", "type": "retry", "count": count, "steps": [llm("x")]}));
    assert!(parse_value(&rt(json!(5))).is_ok());
    assert_err(rt(json!(6)), "$.steps[0].count", Rule::Range);
    assert_err(rt(json!(0)), "$.steps[0].count", Rule::Range);
    let retry_params = d(
        json!({"id": "r", "type": "retry", "params": {"count": 9, "delay_ms": 600001}, "steps": [llm("x")]}),
    );
    assert_err(retry_params.clone(), "$.steps[0].params.count", Rule::Range);
    assert_err(retry_params, "$.steps[0].params.delay_ms", Rule::Range);
    let dl = |ms: Value| d(json!({"id": "d", "type": "delay", "delay_ms": ms}));
    assert!(parse_value(&dl(json!(0))).is_ok());
    assert!(parse_value(&dl(json!(600000))).is_ok());
    assert_err(dl(json!(600001)), "$.steps[0].delay_ms", Rule::Range);
    assert_err(dl(json!(-1)), "$.steps[0].delay_ms", Rule::Range);
    let ms = |k: Value| {
        d(json!({"id": "m", "type": "memory_search", "params": {"namespaces": ["n"], "top_k": k}}))
    };
    assert!(parse_value(&ms(json!(20))).is_ok());
    assert_err(ms(json!(21)), "$.steps[0].params.top_k", Rule::Range);
    assert_err(ms(json!(0)), "$.steps[0].params.top_k", Rule::Range);
    assert_err(
        d(json!({"id": "m", "type": "memory_search", "params": {"namespaces": [1]}})),
        "$.steps[0].params.namespaces[0]",
        Rule::Type,
    );
}

#[test]
fn nested_array_limits() {
    let par = |n: usize| json!({"steps": [{"id": "p", "type": "parallel", "steps": steps(n)}]});
    assert!(parse_value(&par(4)).is_ok());
    assert_err(par(5), "$.steps[0].steps", Rule::Items);
    assert_err(par(0), "$.steps[0].steps", Rule::Items);
    let lp = json!({"steps": [{"id": "l", "type": "loop", "count": 2, "steps": steps(5)}]});
    assert_err(lp, "$.steps[0].steps", Rule::Items);
    let cases = |n: usize, per: usize| {
        let cs: Vec<Value> = (0..n)
            .map(|c| json!({"when": true, "steps": (0..per).map(|i| llm(&format!("c{c}_{i}"))).collect::<Vec<_>>()}))
            .collect();
        json!({"steps": [{"id": "b", "type": "branch", "cases": cs}]})
    };
    assert!(parse_value(&cases(10, 20)).is_ok());
    assert_err(cases(11, 1), "$.steps[0].cases", Rule::Items);
    assert_err(cases(1, 21), "$.steps[0].cases[0].steps", Rule::Items);
    assert_err(
        json!({"steps": [{"id": "b", "type": "branch", "cases": []}]}),
        "$.steps[0].cases",
        Rule::Items,
    );
    let default = json!({"steps": [{"id": "b", "type": "branch", "cases": [{"steps": []}], "default": steps(21)}]});
    assert_err(default, "$.steps[0].default", Rule::Items);
    assert_err(
        json!({"steps": [{"id": "b", "type": "branch", "cases": [{"steps": [], "then": 1}]}]}),
        "$.steps[0].cases[0].then",
        Rule::UnknownField,
    );
    assert_err(
        json!({"steps": [{"id": "b", "type": "branch", "cases": [{}]}]}),
        "$.steps[0].cases[0].steps",
        Rule::Required,
    );
    // Sub-steps only where the type takes them.
    assert_err(
        json!({"steps": [{"id": "a", "type": "llm", "prompt": "x", "steps": [llm("b")]}]}),
        "$.steps[0].steps",
        Rule::NotAllowed,
    );
    assert_err(
        json!({"steps": [{"id": "a", "type": "loop", "count": 1, "steps": [llm("b")], "cases": []}]}),
        "$.steps[0].cases",
        Rule::NotAllowed,
    );
}

#[test]
fn nesting_depth_is_bounded() {
    let mut inner = llm("leaf");
    for i in 0..8 {
        inner = json!({"id": format!("n{i}"), "type": "retry", "steps": [inner]});
    }
    let e = errs(json!({"steps": [inner]}));
    assert!(e.errors().iter().any(|x| x.rule == Rule::Nesting), "{e}");
}

#[test]
fn rest_call_fields() {
    let rc = |extra: Value| {
        let mut s = json!({"id": "r", "type": "rest_call", "url": "http://127.0.0.1/x"});
        s.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({"steps": [s]})
    };
    for m in [
        "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "post",
    ] {
        assert!(parse_value(&rc(json!({"method": m}))).is_ok(), "{m}");
    }
    assert_err(
        rc(json!({"method": "FETCH"})),
        "$.steps[0].method",
        Rule::Enum,
    );
    assert_err(
        rc(json!({"headers": {"X-N": 1}})),
        "$.steps[0].headers.X-N",
        Rule::Type,
    );
    assert_err(rc(json!({"headers": []})), "$.steps[0].headers", Rule::Type);
    assert_err(rc(json!({"url": "  "})), "$.steps[0].url", Rule::Length);
}

#[test]
fn edges() {
    let two = || vec![llm("a"), llm("b")];
    let with = |edges: Value| json!({"steps": two(), "edges": edges});
    assert!(
        parse_value(&with(
            json!([{"from": "a", "to": "b", "map": {"data.x": "x"}}])
        ))
        .is_ok()
    );
    assert!(parse_value(&with(json!([{"from": "input", "to": "a"}, {"from": "b", "to": "output", "map": {"output": "answer"}}]))).is_ok());
    assert_err(
        with(json!([{"from": "a", "to": "zzz"}])),
        "$.edges[0].to",
        Rule::UnknownStep,
    );
    assert_err(
        with(json!([{"from": "zzz", "to": "a"}])),
        "$.edges[0].from",
        Rule::UnknownStep,
    );
    assert_err(
        with(json!([{"from": "output", "to": "a"}])),
        "$.edges[0].from",
        Rule::UnknownStep,
    );
    assert_err(
        with(json!([{"from": "a", "to": "input"}])),
        "$.edges[0].to",
        Rule::UnknownStep,
    );
    assert_err(
        with(json!([{"to": "a"}])),
        "$.edges[0].from",
        Rule::Required,
    );
    assert_err(
        with(json!([{"from": "a", "to": "b", "map": {}}])),
        "$.edges[0].map",
        Rule::Items,
    );
    assert_err(
        with(json!([{"from": "a", "to": "b", "map": {"data.x": 1}}])),
        "$.edges[0].map.data.x",
        Rule::Type,
    );
    assert_err(
        with(json!([{"from": "a", "to": "b", "via": 1}])),
        "$.edges[0].via",
        Rule::UnknownField,
    );
    assert_err(
        with(json!([{"from": "a", "to": "x".repeat(65)}])),
        "$.edges[0].to",
        Rule::Length,
    );
    let many: Vec<Value> = (0..201).map(|_| json!({"from": "a", "to": "b"})).collect();
    assert_err(with(Value::Array(many)), "$.edges", Rule::Items);
    let ok: Vec<Value> = (0..200).map(|_| json!({"from": "a", "to": "b"})).collect();
    assert!(parse_value(&with(Value::Array(ok))).is_ok());
}

#[test]
fn cycles_and_longest_path() {
    let e = errs(json!({"steps": [llm("a"), llm("b"), llm("c")], "edges": [
        {"from": "a", "to": "b"}, {"from": "b", "to": "c"}, {"from": "c", "to": "b"}
    ]}));
    assert!(e.has("$.edges", Rule::Cycle), "{e}");
    assert!(e.to_string().contains("b -> c -> b"), "{e}");
    assert_err(
        json!({"steps": [llm("a")], "edges": [{"from": "a", "to": "a"}]}),
        "$.edges",
        Rule::Cycle,
    );

    // A chain of 50 steps through nested ids is fine; 51 is not.
    let path_doc = |n: usize| {
        let mut top: Vec<Value> = Vec::new();
        let mut ids = Vec::new();
        for g in 0..n.div_ceil(4) {
            let kids: Vec<Value> = (0..4)
                .filter(|k| g * 4 + k < n)
                .map(|k| llm(&format!("s{}", g * 4 + k)))
                .collect();
            for k in &kids {
                ids.push(k["id"].as_str().unwrap().to_owned());
            }
            top.push(json!({"id": format!("p{g}"), "type": "parallel", "steps": kids}));
        }
        let edges: Vec<Value> = ids
            .windows(2)
            .map(|w| json!({"from": w[0], "to": w[1]}))
            .collect();
        json!({"steps": top, "edges": edges})
    };
    assert!(parse_value(&path_doc(50)).is_ok());
    assert_err(path_doc(51), "$.edges", Rule::PathLength);
}

#[test]
fn all_errors_are_reported_at_once() {
    let e = errs(json!({"steps": [
        {"id": "a", "type": "loop", "count": 99, "steps": [llm("x")]},
        {"id": "b", "type": "delay", "delay_ms": 700000},
        {"id": "c", "type": "nope"}
    ]}));
    assert!(e.has("$.steps[0].count", Rule::Range));
    assert!(e.has("$.steps[1].delay_ms", Rule::Range));
    assert!(e.has("$.steps[2].type", Rule::Enum));
    assert_eq!(e.errors().len(), 3, "{e}");
}
