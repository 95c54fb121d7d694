//! Chains: branches, maps, joins and the node kinds that leave the chain
//! (skill, proc) (chains spec).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::chains::{at, phases};
use super::{Cx, HostScenario};
use crate::check::{CheckDef, must, should};
use crate::profile::{ECHO, SKILL, SLEEP};
use crate::scenario::{Area, Fixture, On, Outcome, Scenario};
use crate::wire::show;

pub(super) const SCENARIOS: &[HostScenario] = &[
    Scenario {
        name: "chains/branch",
        area: Area::Chains,
        about: "Runs a branch on input.flag, once true and once false.",
        needs: &[Fixture::Cap("chains"), Fixture::Tool(ECHO)],
        on: On::All,
        checks: BRANCH,
        run: crate::run_fn!(Cx, branch),
    },
    Scenario {
        name: "chains/map",
        area: Area::Chains,
        about: "Maps the sleeping tool over items that finish in reverse order, over nothing, and over four slow items.",
        needs: &[
            Fixture::Cap("chains"),
            Fixture::Tool(SLEEP),
            Fixture::Tool(ECHO),
        ],
        on: On::All,
        checks: MAP,
        run: crate::run_fn!(Cx, map),
    },
    Scenario {
        name: "chains/join",
        area: Area::Chains,
        about: "Runs two independent sleeping nodes and a node reading both.",
        needs: &[
            Fixture::Cap("chains"),
            Fixture::Tool(SLEEP),
            Fixture::Tool(ECHO),
        ],
        on: On::All,
        checks: JOIN,
        run: crate::run_fn!(Cx, join),
    },
    Scenario {
        name: "chains/skill-node",
        area: Area::Chains,
        about: "Runs a chain whose node calls the echo skill.",
        needs: &[Fixture::Cap("chains"), Fixture::Skill(SKILL)],
        on: On::All,
        checks: SKILL_NODE,
        run: crate::run_fn!(Cx, skill_node),
    },
    Scenario {
        name: "chains/proc-node",
        area: Area::Chains,
        about: "Runs a chain whose node spawns `sh -c 'echo chained'`.",
        needs: &[Fixture::Cap("chains"), Fixture::Proc],
        on: On::All,
        checks: PROC_NODE,
        run: crate::run_fn!(Cx, proc_node),
    },
];

const BRANCH: &[CheckDef] = &[
    must(
        "chains.branch.true-side",
        "chains: ChainNode",
        "when the condition holds, true_node runs and false_node does not",
    ),
    must(
        "chains.branch.false-side",
        "chains: ChainNode",
        "when it does not hold, false_node runs and true_node does not",
    ),
    must(
        "chains.branch.skip-event",
        "chains: chain/event",
        "the side not taken gets a skip event",
    ),
    must(
        "chains.branch.not-in-outputs",
        "chains: chain/resp",
        "a skipped node has no entry in outputs",
    ),
    should(
        "chains.branch.downstream-skipped",
        "chains: chain/event",
        "a node reached only through the side not taken does not run",
    ),
    must(
        "chains.branch.success",
        "chains: chain/resp",
        "a chain whose untaken side was skipped succeeds",
    ),
];

const MAP: &[CheckDef] = &[
    must(
        "chains.map.output-list",
        "chains: ChainNode",
        "a map node's output is a list with one output per item",
    ),
    should(
        "chains.map.order",
        "chains: ChainNode",
        "the list is in item order, whatever order the items finish in",
    ),
    should(
        "chains.map.item",
        "chains: ChainNode",
        "the template node reads its item as `item` in its input_map",
    ),
    should(
        "chains.map.parallel",
        "chains: Overview",
        "items run in parallel: 4 items of 800 ms take less than 2.4 s",
    ),
    should(
        "chains.map.template",
        "chains: ChainNode",
        "the template runs only through its map: it has no entry of its own in outputs",
    ),
    should(
        "chains.map.empty",
        "chains: ChainNode",
        "a map over an empty list outputs []",
    ),
    must(
        "chains.map.success",
        "chains: chain/resp",
        "a map whose items all succeed leaves the chain successful",
    ),
];

const JOIN: &[CheckDef] = &[
    must(
        "chains.deps.join",
        "chains: Dependency Resolution",
        "a node starts only after every node its input_map reads is done, and sees their outputs",
    ),
    should(
        "chains.deps.parallel",
        "chains: Dependency Resolution",
        "nodes ready at once run in parallel",
    ),
];

const SKILL_NODE: &[CheckDef] = &[must(
    "chains.skill.runs",
    "chains: Node Execution Types",
    "a skill node calls the skill; its output is the skill's output",
)];

const PROC_NODE: &[CheckDef] = &[
    must(
        "chains.proc.runs",
        "chains: Node Execution Types",
        "a proc node spawns its command and waits for it: the chain succeeds",
    ),
    should(
        "chains.proc.output",
        "chains: Node Execution Types",
        "the proc node's output holds what the command wrote",
    ),
];

fn branch_chain() -> Value {
    json!([
        {"node_id": "check", "kind": "branch", "condition": "input.flag", "true_node": "yes", "false_node": "no"},
        {"node_id": "yes", "kind": "tool", "name": ECHO, "input": {"text": "yes"}, "next_node": "after_yes"},
        {"node_id": "after_yes", "kind": "tool", "name": ECHO, "input_map": {"text": "yes.output.text"}},
        {"node_id": "no", "kind": "tool", "name": ECHO, "input": {"text": "no"}}
    ])
}

async fn branch(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    for flag in [true, false] {
        let req = s.req(
            "chain/req",
            json!({"nodes": branch_chain(), "entry_node": "check", "initial_input": {"flag": flag}, "streaming": true}),
        );
        let r = s.request(req).await?;
        let ph = phases(&r);
        let ran = |n: &str| at(&ph, n, "done").is_some();
        let skipped = |n: &str| at(&ph, n, "skip").is_some();
        let outputs = r.at("/outputs").clone();
        let (taken, other) = if flag { ("yes", "no") } else { ("no", "yes") };
        let check = if flag {
            "chains.branch.true-side"
        } else {
            "chains.branch.false-side"
        };
        cx.check(
            check,
            ran(taken) && !ran(other),
            format!("{taken} runs, {other} does not"),
            format!("{ph:?}"),
        );
        cx.check(
            "chains.branch.skip-event",
            skipped(other),
            format!("a skip event for {other}"),
            format!("{ph:?}"),
        );
        cx.check(
            "chains.branch.not-in-outputs",
            outputs.get(other).is_none() && outputs.get(taken).is_some(),
            format!("outputs with {taken} and without {other}"),
            show(&outputs),
        );
        if !flag {
            cx.check(
                "chains.branch.downstream-skipped",
                r.at("/success") == &json!(true)
                    && !ran("after_yes")
                    && outputs.get("after_yes").is_none(),
                "after_yes does not run",
                format!("{ph:?}"),
            );
        }
        cx.check(
            "chains.branch.success",
            r.at("/success") == &json!(true),
            "success: true",
            r.show(),
        );
    }
    Ok(())
}

fn map_chain(items: &str, template: Value) -> Value {
    json!([
        {"node_id": "each", "kind": "map", "items_path": items, "map_node": "work"},
        template
    ])
}

async fn map(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let sleep =
        json!({"node_id": "work", "kind": "tool", "name": SLEEP, "input_map": {"ms": "item"}});
    let req = s.req(
        "chain/req",
        json!({"nodes": map_chain("input.items", sleep.clone()), "entry_node": "each", "initial_input": {"items": [600, 300, 20]}}),
    );
    let r = s.request(req).await?;
    let out = r.at("/outputs/each").clone();
    let list = out.as_array().cloned().unwrap_or_default();
    cx.check(
        "chains.map.output-list",
        list.len() == 3,
        "a list of 3 outputs",
        show(&out),
    );
    let slept: Vec<Value> = list.iter().map(|o| o["slept"].clone()).collect();
    cx.check(
        "chains.map.item",
        slept.len() == 3 && slept.iter().all(Value::is_number),
        "each item's `slept` from `item`",
        show(&out),
    );
    cx.check(
        "chains.map.order",
        slept == [json!(600), json!(300), json!(20)],
        "slept 600, 300, 20 in that order",
        format!("{slept:?}"),
    );
    let outputs = r.at("/outputs").clone();
    cx.check(
        "chains.map.template",
        r.at("/success") == &json!(true) && outputs.get("work").is_none(),
        "success without outputs.work",
        show(&outputs),
    );
    cx.check(
        "chains.map.success",
        r.at("/success") == &json!(true),
        "success: true",
        r.show(),
    );

    let echo =
        json!({"node_id": "work", "kind": "tool", "name": ECHO, "input_map": {"text": "item"}});
    let req = s.req(
        "chain/req",
        json!({"nodes": map_chain("input.items", echo), "entry_node": "each", "initial_input": {"items": []}}),
    );
    let r = s.request(req).await?;
    cx.check(
        "chains.map.empty",
        r.at("/outputs/each") == &json!([]),
        "outputs.each []",
        r.show(),
    );

    let req = s.req(
        "chain/req",
        json!({"nodes": map_chain("input.items", sleep), "entry_node": "each", "initial_input": {"items": [800, 800, 800, 800]}, "streaming": false}),
    );
    let started = Instant::now();
    let r = s.request_within(req, Duration::from_secs(20)).await?;
    let took = started.elapsed();
    cx.check(
        "chains.map.parallel",
        r.at("/success") == &json!(true) && took < Duration::from_millis(2400),
        "success in less than 2.4 s",
        format!("{took:?}: {}", r.show()),
    );
    Ok(())
}

async fn join(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let nodes = json!([
        {"node_id": "a", "kind": "tool", "name": SLEEP, "input": {"ms": 300}},
        {"node_id": "b", "kind": "tool", "name": SLEEP, "input": {"ms": 300}},
        {"node_id": "j", "kind": "tool", "name": ECHO,
         "input_map": {"text": "'joined'", "a": "a.output.slept", "b": "b.output.slept"}}
    ]);
    let req = s.req(
        "chain/req",
        json!({"nodes": nodes, "entry_node": "a", "streaming": true}),
    );
    let r = s.request(req).await?;
    let ph = phases(&r);
    let j_start = at(&ph, "j", "start");
    let after = matches!((at(&ph, "a", "done"), at(&ph, "b", "done"), j_start), (Some(a), Some(b), Some(j)) if a < j && b < j);
    let j = r.at("/outputs/j").clone();
    cx.check(
        "chains.deps.join",
        after && j["a"] == 300 && j["b"] == 300,
        "j starts after a and b are done, with a: 300 and b: 300",
        format!("{ph:?}; j = {}", show(&j)),
    );
    let overlap = matches!(
        (at(&ph, "a", "start"), at(&ph, "b", "start"), at(&ph, "a", "done"), at(&ph, "b", "done")),
        (Some(sa), Some(sb), Some(da), Some(db)) if sb < da && sa < db
    );
    cx.check(
        "chains.deps.parallel",
        overlap,
        "b starts before a is done",
        format!("{ph:?}"),
    );
    Ok(())
}

async fn skill_node(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let nodes =
        json!([{"node_id": "k", "kind": "skill", "name": SKILL, "input": {"text": "via chain"}}]);
    let req = s.req("chain/req", json!({"nodes": nodes, "entry_node": "k"}));
    let r = s.request(req).await?;
    cx.check(
        "chains.skill.runs",
        r.at("/success") == &json!(true) && r.at("/outputs/k") == &json!({"text": "via chain"}),
        "success, outputs.k {\"text\":\"via chain\"}",
        r.show(),
    );
    Ok(())
}

async fn proc_node(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let nodes =
        json!([{"node_id": "p", "kind": "proc", "input": {"cmd": ["sh", "-c", "echo chained"]}}]);
    let req = s.req(
        "chain/req",
        json!({"nodes": nodes, "entry_node": "p", "timeout": 30}),
    );
    let r = s.request(req).await?;
    cx.check(
        "chains.proc.runs",
        r.at("/success") == &json!(true),
        "success: true",
        r.show(),
    );
    let out = r.at("/outputs/p").to_string();
    cx.check(
        "chains.proc.output",
        out.contains("chained"),
        "an output holding `chained`",
        out,
    );
    Ok(())
}
