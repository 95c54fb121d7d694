//! Chains that fail: every `on_error` policy, and the chain's timeout
//! (chains spec).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::chains::{at, phases};
use super::{Cx, HostScenario};
use crate::check::{CheckDef, must, should};
use crate::profile::{ECHO, FAIL, SLEEP};
use crate::scenario::{Area, Fixture, On, Outcome, Scenario};
use crate::wire::show;

pub(super) const SCENARIOS: &[HostScenario] = &[
    Scenario {
        name: "chains/on-error",
        area: Area::Chains,
        about: "Runs a failing node under abort (the default), skip, and a fallback node.",
        needs: &[
            Fixture::Cap("chains"),
            Fixture::Tool(ECHO),
            Fixture::Tool(FAIL),
        ],
        on: On::All,
        checks: ON_ERROR,
        run: crate::run_fn!(Cx, on_error),
    },
    Scenario {
        name: "chains/timeout",
        area: Area::Chains,
        about: "Runs a 5 s node in a chain with a timeout of 1 s.",
        needs: &[Fixture::Cap("chains"), Fixture::Tool(SLEEP)],
        on: On::All,
        checks: TIMEOUT,
        run: crate::run_fn!(Cx, timeout),
    },
];

const ON_ERROR: &[CheckDef] = &[
    must(
        "chains.on-error.abort",
        "chains: ChainNode",
        "a failing node under on_error abort (the default) fails the chain: success: false",
    ),
    must(
        "chains.on-error.abort-code",
        "chains: Error Codes",
        "that chain's error has code chain_node_error",
    ),
    must(
        "chains.on-error.abort-stops",
        "chains: ChainNode",
        "under abort, the nodes after the failed one do not run",
    ),
    must(
        "chains.on-error.partial-outputs",
        "chains: chain/resp",
        "outputs still holds the nodes that completed before the failure",
    ),
    must(
        "chains.on-error.error-event",
        "chains: chain/event",
        "the failing node gets an error event with a non-empty error",
    ),
    must(
        "chains.on-error.skip",
        "chains: ChainNode",
        "under on_error skip the chain goes on past the failed node and succeeds",
    ),
    must(
        "chains.on-error.fallback",
        "chains: ChainNode",
        "under on_error naming a node, that node runs when the failing node fails",
    ),
    should(
        "chains.on-error.fallback-success",
        "chains: ChainNode",
        "a chain rescued by its fallback node succeeds",
    ),
    should(
        "chains.on-error.fallback-unused",
        "chains: ChainNode",
        "a fallback node does not run when its node succeeds",
    ),
];

const TIMEOUT: &[CheckDef] = &[
    must(
        "chains.timeout.chain",
        "chains: Security 3",
        "a chain past its timeout is answered with chain/resp, success: false",
    ),
    must(
        "chains.timeout.bounded",
        "chains: Security 3",
        "that answer comes within the timeout plus 5 s",
    ),
    should(
        "chains.timeout.code",
        "a2e-core §3",
        "that chain's error has code timeout",
    ),
];

fn echo(id: &str, next: &str) -> Value {
    let mut node = json!({"node_id": id, "kind": "tool", "name": ECHO, "input": {"text": id}});
    if !next.is_empty() {
        node["next_node"] = json!(next);
    }
    node
}

fn fail(id: &str, next: &str, on_error: Option<&str>) -> Value {
    let mut node =
        json!({"node_id": id, "kind": "tool", "name": FAIL, "input": {"message": "as asked"}});
    if !next.is_empty() {
        node["next_node"] = json!(next);
    }
    if let Some(policy) = on_error {
        node["on_error"] = json!(policy);
    }
    node
}

async fn on_error(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let nodes = json!([
        echo("ok", "bad"),
        fail("bad", "after", None),
        echo("after", "")
    ]);
    let req = s.req(
        "chain/req",
        json!({"nodes": nodes, "entry_node": "ok", "streaming": true}),
    );
    let r = s.request(req).await?;
    let ph = phases(&r);
    cx.check(
        "chains.on-error.abort",
        r.ty() == "chain/resp" && r.at("/success") == &json!(false),
        "chain/resp, success: false",
        r.show(),
    );
    cx.check(
        "chains.on-error.abort-code",
        r.s("/error/code") == "chain_node_error",
        "error.code chain_node_error",
        show(r.at("/error")),
    );
    cx.check(
        "chains.on-error.abort-stops",
        r.ty() == "chain/resp"
            && at(&ph, "after", "start").is_none()
            && r.at("/outputs/after").is_null(),
        "`after` never starts",
        format!("{ph:?}"),
    );
    cx.check(
        "chains.on-error.partial-outputs",
        r.at("/outputs/ok") == &json!({"text": "ok"}),
        "outputs.ok {\"text\":\"ok\"}",
        show(r.at("/outputs")),
    );
    let err = r
        .events
        .iter()
        .find(|e| e["node_id"] == "bad" && e["phase"] == "error");
    cx.check(
        "chains.on-error.error-event",
        err.is_some_and(|e| e["error"].as_str().is_some_and(|m| !m.is_empty())),
        "an error event for `bad` with its error",
        format!("{ph:?}"),
    );

    let nodes = json!([fail("bad", "after", Some("skip")), echo("after", "")]);
    let req = s.req("chain/req", json!({"nodes": nodes, "entry_node": "bad"}));
    let r = s.request(req).await?;
    cx.check(
        "chains.on-error.skip",
        r.at("/success") == &json!(true) && r.at("/outputs/after") == &json!({"text": "after"}),
        "success, with outputs.after",
        r.show(),
    );

    let nodes = json!([fail("bad", "", Some("rescue")), echo("rescue", "")]);
    let req = s.req(
        "chain/req",
        json!({"nodes": nodes, "entry_node": "bad", "streaming": true}),
    );
    let r = s.request(req).await?;
    let ph = phases(&r);
    cx.check(
        "chains.on-error.fallback",
        at(&ph, "rescue", "done").is_some(),
        "`rescue` runs",
        format!("{ph:?}"),
    );
    cx.check(
        "chains.on-error.fallback-success",
        r.at("/success") == &json!(true),
        "success: true",
        r.show(),
    );

    let nodes = json!([echo("fine", ""), echo("rescue", "")]);
    let mut nodes = nodes;
    nodes[0]["on_error"] = json!("rescue");
    let req = s.req(
        "chain/req",
        json!({"nodes": nodes, "entry_node": "fine", "streaming": true}),
    );
    let r = s.request(req).await?;
    let ph = phases(&r);
    cx.check(
        "chains.on-error.fallback-unused",
        r.at("/success") == &json!(true) && at(&ph, "rescue", "start").is_none(),
        "success, `rescue` never starts",
        format!("{ph:?}"),
    );
    Ok(())
}

async fn timeout(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let nodes = json!([{"node_id": "slow", "kind": "tool", "name": SLEEP, "input": {"ms": 5000}}]);
    let req = s.req(
        "chain/req",
        json!({"nodes": nodes, "entry_node": "slow", "timeout": 1}),
    );
    let started = Instant::now();
    let r = s.request_within(req, Duration::from_secs(15)).await?;
    let took = started.elapsed();
    cx.check(
        "chains.timeout.chain",
        r.ty() == "chain/resp" && r.at("/success") == &json!(false),
        "chain/resp, success: false",
        r.show(),
    );
    cx.check(
        "chains.timeout.bounded",
        r.ty() == "chain/resp" && took <= Duration::from_secs(6),
        "chain/resp within 6 s",
        format!("{} after {took:?}", r.ty()),
    );
    cx.check(
        "chains.timeout.code",
        r.s("/error/code") == "timeout",
        "error.code timeout",
        show(r.at("/error")),
    );
    Ok(())
}
