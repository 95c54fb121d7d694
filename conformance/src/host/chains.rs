//! Chains: a linear run with its inputs, outputs and events, and the chains
//! a host must refuse before running them (chains spec).

use serde_json::{Value, json};

use super::{Cx, HostScenario};
use crate::check::{CheckDef, must, should};
use crate::profile::ECHO;
use crate::scenario::{Area, Fixture, On, Outcome, Scenario};
use crate::session::Reply;
use crate::wire::show;

pub(super) const SCENARIOS: &[HostScenario] = &[
    Scenario {
        name: "chains/linear",
        area: Area::Chains,
        about: "Runs two echo nodes in a row, reading initial_input and the first node's output.",
        needs: &[Fixture::Cap("chains"), Fixture::Tool(ECHO)],
        on: On::All,
        checks: LINEAR,
        run: crate::run_fn!(Cx, linear),
    },
    Scenario {
        name: "chains/validation",
        area: Area::Chains,
        about: "Sends chains with cycles, unknown nodes and kinds, duplicate ids and an unknown tool.",
        needs: &[Fixture::Cap("chains"), Fixture::Tool(ECHO)],
        on: On::All,
        checks: VALIDATION,
        run: crate::run_fn!(Cx, validation),
    },
];

const LINEAR: &[CheckDef] = &[
    must(
        "chains.answered",
        "chains: chain/resp",
        "chain/req is answered with chain/resp naming it in req_id",
    ),
    must(
        "chains.chain-id",
        "chains: chain/resp",
        "chain_id echoes the request's",
    ),
    must(
        "chains.success",
        "chains: chain/resp",
        "a chain whose nodes all succeed has success: true",
    ),
    must(
        "chains.outputs",
        "chains: chain/resp",
        "outputs maps each completed node's id to its output",
    ),
    must(
        "chains.input-dollar",
        "chains: chain/req",
        "`$.input.<field>` in input_map reads initial_input",
    ),
    must(
        "chains.input-static",
        "chains: Execution Model",
        "a node's input is its static input merged with its resolved input_map",
    ),
    must(
        "chains.input-upstream",
        "chains: ChainNode",
        "`<node>.output.<field>` in input_map reads an upstream node's output",
    ),
    must(
        "chains.final-output",
        "chains: Terminal Node Detection",
        "final_output is the terminal node's output",
    ),
    must(
        "chains.nodes-run",
        "chains: chain/resp",
        "nodes_run counts the nodes that ran",
    ),
    must(
        "chains.duration",
        "chains: chain/resp",
        "duration_ms is an integer ≥ 0",
    ),
    should(
        "chains.error-null",
        "chains: chain/resp",
        "a successful chain's error is null or absent",
    ),
    must(
        "chains.events-phases",
        "chains: chain/event",
        "each node that runs gets a start event, then a done event",
    ),
    must(
        "chains.events-seq",
        "a2e-core §1",
        "a chain's events carry seq 0, 1, 2, …",
    ),
    must(
        "chains.events-before-answer",
        "a2e-core §4",
        "every chain/event comes before the chain/resp",
    ),
    must(
        "chains.events-done-output",
        "chains: chain/event",
        "a done event carries the node's output",
    ),
    must(
        "chains.order",
        "chains: ChainNode",
        "a node's next_node starts only after the node is done",
    ),
    must(
        "chains.minimal",
        "chains: chain/req",
        "a chain/req with only nodes and entry_node is served",
    ),
    must(
        "chains.streaming-default",
        "chains: chain/req",
        "a chain that leaves streaming out gets chain/events (the default is true)",
    ),
    must(
        "chains.chain-id-default",
        "chains: chain/req",
        "a chain without chain_id gets one: chain/resp has a non-empty chain_id",
    ),
    should(
        "chains.streaming-off",
        "chains: chain/req",
        "a chain with streaming: false gets no chain/event",
    ),
];

const VALIDATION: &[CheckDef] = &[
    must(
        "chains.validate.cycle",
        "chains: Security 1",
        "a chain with a cycle is refused before it runs: an error, code chain_cycle",
    ),
    must(
        "chains.validate.self-loop",
        "chains: Security 1",
        "a node that is its own next_node is refused with chain_cycle",
    ),
    must(
        "chains.validate.req-id",
        "a2e-core §3",
        "a refused chain's error names the chain/req in req_id",
    ),
    must(
        "chains.validate.nothing-ran",
        "chains: Security 1",
        "a refused chain sends no chain/event",
    ),
    must(
        "chains.validate.unknown-next",
        "chains: ChainNode",
        "a next_node naming no node is refused with an error",
    ),
    must(
        "chains.validate.unknown-entry",
        "chains: chain/req",
        "an entry_node naming no node is refused with an error",
    ),
    must(
        "chains.validate.unknown-kind",
        "chains: ChainNode",
        "a node of an unknown kind is refused with an error",
    ),
    must(
        "chains.validate.duplicate-id",
        "chains: ChainNode",
        "two nodes with one node_id are refused with an error",
    ),
    must(
        "chains.validate.unknown-tool",
        "chains: chain/resp",
        "a tool node naming an unknown tool does not succeed",
    ),
];

/// `(node_id, phase)` of each event.
pub(super) fn phases(r: &Reply) -> Vec<(String, String)> {
    r.events
        .iter()
        .map(|e| {
            (
                e["node_id"].as_str().unwrap_or_default().to_owned(),
                e["phase"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// Index of the first event of `node` in `phase`.
pub(super) fn at(ph: &[(String, String)], node: &str, phase: &str) -> Option<usize> {
    ph.iter().position(|(n, p)| n == node && p == phase)
}

/// The seqs of the events are 0, 1, 2, ….
pub(super) fn seqs_ok(r: &Reply) -> bool {
    r.events
        .iter()
        .enumerate()
        .all(|(i, e)| e.get("seq").and_then(Value::as_u64) == Some(i as u64))
}

fn two_echoes() -> Value {
    json!([
        {"node_id": "first", "kind": "tool", "name": ECHO,
         "input": {"text": "static", "keep": 1}, "input_map": {"text": "$.input.greeting"},
         "next_node": "second"},
        {"node_id": "second", "kind": "tool", "name": ECHO,
         "input_map": {"text": "first.output.text", "n": "first.output.keep"}}
    ])
}

async fn linear(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let sid = s.session_id.clone();
    let req = s.req(
        "chain/req",
        json!({"session_id": sid, "chain_id": "cf-linear", "nodes": two_echoes(), "entry_node": "first",
               "initial_input": {"greeting": "hello"}, "correlation_id": "turn-1", "streaming": true, "timeout": 60}),
    );
    let id = req["id"].as_str().unwrap_or_default().to_owned();
    let r = s.request(req).await?;
    cx.check(
        "chains.answered",
        r.ty() == "chain/resp" && r.s("/req_id") == id,
        "chain/resp with the request's req_id",
        r.show(),
    );
    cx.check(
        "chains.chain-id",
        r.s("/chain_id") == "cf-linear",
        "chain_id cf-linear",
        r.show(),
    );
    cx.check(
        "chains.success",
        r.at("/success") == &json!(true),
        "success: true",
        r.show(),
    );
    let first = r.at("/outputs/first").clone();
    let second = r.at("/outputs/second").clone();
    cx.check(
        "chains.outputs",
        r.at("/outputs").as_object().is_some_and(|o| o.len() == 2)
            && !first.is_null()
            && !second.is_null(),
        "outputs for `first` and `second`",
        show(r.at("/outputs")),
    );
    cx.check(
        "chains.input-dollar",
        first["text"] == "hello",
        "first's text \"hello\" (from $.input.greeting)",
        show(&first),
    );
    cx.check(
        "chains.input-static",
        first["keep"] == 1,
        "first's static keep: 1 kept beside its input_map",
        show(&first),
    );
    cx.check(
        "chains.input-upstream",
        second["text"] == "hello" && second["n"] == 1,
        "second's text \"hello\" and n 1 (from first.output)",
        show(&second),
    );
    cx.check(
        "chains.final-output",
        !second.is_null() && r.at("/final_output") == &second,
        format!("final_output {}", show(&second)),
        show(r.at("/final_output")),
    );
    cx.check(
        "chains.nodes-run",
        r.at("/nodes_run") == &json!(2),
        "nodes_run 2",
        show(r.at("/nodes_run")),
    );
    cx.check(
        "chains.duration",
        r.at("/duration_ms").is_u64(),
        "an integer duration_ms",
        r.show(),
    );
    cx.check(
        "chains.error-null",
        r.ty() == "chain/resp" && r.at("/error").is_null(),
        "error null",
        show(r.at("/error")),
    );
    let ph = phases(&r);
    let expected = ["first:start", "first:done", "second:start", "second:done"];
    let got: Vec<String> = ph.iter().map(|(n, p)| format!("{n}:{p}")).collect();
    cx.check(
        "chains.events-phases",
        got == expected,
        format!("{expected:?}"),
        format!("{got:?}"),
    );
    cx.check(
        "chains.events-seq",
        !r.events.is_empty() && seqs_ok(&r),
        "seq 0, 1, 2, …",
        format!("{:?}", r.seqs()),
    );
    let done = r
        .events
        .iter()
        .find(|e| e["node_id"] == "second" && e["phase"] == "done");
    cx.check(
        "chains.events-done-output",
        done.is_some_and(|e| e["output"] == second),
        "second's done event with its output",
        done.map(show).unwrap_or_default(),
    );
    let order = matches!((at(&ph, "first", "done"), at(&ph, "second", "start")), (Some(a), Some(b)) if a < b);
    cx.check(
        "chains.order",
        order,
        "first:done before second:start",
        format!("{got:?}"),
    );
    s.settle().await?;
    let late = s.late(&id).len();
    cx.check(
        "chains.events-before-answer",
        !r.events.is_empty() && late == 0,
        "events, none after chain/resp",
        format!("{} before, {late} after", r.events.len()),
    );

    let min = s.req("chain/req", json!({"nodes": [{"node_id": "only", "kind": "tool", "name": ECHO, "input": {"text": "min"}}], "entry_node": "only"}));
    let r = s.request(min).await?;
    cx.check(
        "chains.minimal",
        r.ty() == "chain/resp" && r.at("/success") == &json!(true),
        "chain/resp, success: true",
        r.show(),
    );
    let n = r
        .events
        .iter()
        .filter(|e| e["type"] == "chain/event")
        .count();
    cx.check(
        "chains.streaming-default",
        n >= 2,
        "start and done events",
        format!("{n} chain/event(s)"),
    );
    cx.check(
        "chains.chain-id-default",
        !r.s("/chain_id").is_empty(),
        "a non-empty chain_id",
        r.show(),
    );

    let off = s.req(
        "chain/req",
        json!({"nodes": [{"node_id": "only", "kind": "tool", "name": ECHO, "input": {"text": "quiet"}}], "entry_node": "only", "streaming": false}),
    );
    let off_id = off["id"].as_str().unwrap_or_default().to_owned();
    let r = s.request(off).await?;
    s.settle().await?;
    let n = r.events.len() + s.late(&off_id).len();
    cx.check(
        "chains.streaming-off",
        r.ty() == "chain/resp" && n == 0,
        "chain/resp without chain/event",
        format!("{n} event(s) and {}", r.show()),
    );
    Ok(())
}

fn echo(id: &str, next: &str) -> Value {
    let mut node = json!({"node_id": id, "kind": "tool", "name": ECHO, "input": {"text": id}});
    if !next.is_empty() {
        node["next_node"] = json!(next);
    }
    node
}

async fn validation(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let cycle = s.req(
        "chain/req",
        json!({"nodes": [echo("a", "b"), echo("b", "c"), echo("c", "b")], "entry_node": "a"}),
    );
    let id = cycle["id"].as_str().unwrap_or_default().to_owned();
    let r = s.request(cycle).await?;
    cx.check(
        "chains.validate.cycle",
        r.is_error() && r.code() == "chain_cycle",
        "an error, code chain_cycle",
        r.show(),
    );
    cx.check(
        "chains.validate.req-id",
        r.is_error() && r.s("/req_id") == id,
        format!("req_id `{id}`"),
        r.show(),
    );
    s.settle().await?;
    let ran = r.events.len() + s.late(&id).len();
    cx.check(
        "chains.validate.nothing-ran",
        ran == 0,
        "no chain/event",
        format!("{ran} event(s)"),
    );

    let self_loop = s.req(
        "chain/req",
        json!({"nodes": [echo("a", "a")], "entry_node": "a"}),
    );
    let r = s.request(self_loop).await?;
    cx.check(
        "chains.validate.self-loop",
        r.is_error() && r.code() == "chain_cycle",
        "an error, code chain_cycle",
        r.show(),
    );

    let cases: [(&str, Value, &str); 4] = [
        (
            "chains.validate.unknown-next",
            json!([echo("a", "nowhere")]),
            "a",
        ),
        (
            "chains.validate.unknown-entry",
            json!([echo("a", "")]),
            "nowhere",
        ),
        (
            "chains.validate.unknown-kind",
            json!([{"node_id": "a", "kind": "conformance_bogus", "name": ECHO}]),
            "a",
        ),
        (
            "chains.validate.duplicate-id",
            json!([echo("a", ""), echo("a", "")]),
            "a",
        ),
    ];
    for (check, nodes, entry) in cases {
        let req = s.req("chain/req", json!({"nodes": nodes, "entry_node": entry}));
        let id = req["id"].as_str().unwrap_or_default().to_owned();
        let r = s.request(req).await?;
        cx.check(
            check,
            r.is_error() && r.s("/req_id") == id,
            "an error naming the chain/req",
            r.show(),
        );
    }

    let unknown = s.req(
        "chain/req",
        json!({"nodes": [{"node_id": "a", "kind": "tool", "name": "conformance_no_such_tool", "input": {}}], "entry_node": "a"}),
    );
    let r = s.request(unknown).await?;
    cx.check(
        "chains.validate.unknown-tool",
        r.is_error() || r.at("/success") == &json!(false),
        "an error, or chain/resp with success: false",
        r.show(),
    );
    Ok(())
}
