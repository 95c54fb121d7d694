//! What the approval layer costs a call that needs no approval, beside the
//! same call on a host without the layer, in one run.
//!
//! `cargo xtask bench approvals` runs it in release mode. Three in-process
//! hosts with the built-in tools: `bare` (no layer), `other_tool` (the
//! layer, with a rule for `run_command` only: the call's name is checked
//! against it and nothing else is built) and `same_tool` (a rule for the
//! called tool that an agent glob keeps from matching: the call is admitted
//! — its context built, the rule's arguments and agent checked — and goes
//! on). Each runs 2,000 sequential `text_stats` calls and a 100-node chain
//! of them, in interleaved rounds; the medians, then the ratios to `bare`
//! with their targets (BENCHMARKS.md). Prints JSON lines.

use std::sync::Arc;
use std::time::Instant;

use a2e_bench::report::{Target, emit, ratio, round};
use a2e_bench::stats::{interleaved, median_of, ms};
use a2e_host_approvals::ApprovalLayer;
use a2e_host_core::{CallOptions, Host, HostConfig, chains};
use a2e_proto::{ChainRequest, ToolCallRequest};
use serde_json::json;

const CALLS: usize = 2000;
const CHAIN_NODES: usize = 100;
const ROUNDS: usize = 21;
const WARM_UPS: usize = 3;

fn host(rules: &str) -> Result<Arc<Host>, Box<dyn std::error::Error>> {
    let config = HostConfig::from_toml(rules)?;
    let mut builder = Host::builder(config.clone()).with_builtins();
    if !config.approvals.is_empty() {
        builder = builder.with_layer(ApprovalLayer::from_config(&config)?);
    }
    Ok(builder.build()?)
}

fn chain() -> Result<ChainRequest, serde_json::Error> {
    let nodes: Vec<_> = (0..CHAIN_NODES)
        .map(|i| {
            let mut node = json!({"node_id": format!("n{i}"), "kind": "tool", "name": "text_stats",
                                  "input": {"text": "one two three"}});
            if i + 1 < CHAIN_NODES {
                node["next_node"] = json!(format!("n{}", i + 1));
            }
            node
        })
        .collect();
    serde_json::from_value(
        json!({"type": "chain/req", "id": "b", "entry_node": "n0", "nodes": nodes}),
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let hosts = [
        ("bare", host("")?),
        (
            "other_tool",
            host("[[approvals]]\ntool = \"run_command\"\n")?,
        ),
        (
            "same_tool",
            host("[[approvals]]\ntool = \"text_stats\"\nagent = \"nobody-*\"\n")?,
        ),
    ];
    let req = chain()?;
    let calls = |host: &Arc<Host>| {
        let host = host.clone();
        rt.block_on(async move {
            for _ in 0..CALLS {
                let call = ToolCallRequest::new("text_stats", json!({"text": "one two three"}));
                let done = host.call_tool(call, CallOptions::new()).await;
                assert!(done.is_ok_and(|r| r.success));
            }
        });
    };
    let chains_run = |host: &Arc<Host>| {
        let host = host.clone();
        let req = req.clone();
        rt.block_on(async move {
            let resp = chains::run_request(&host, &req, CallOptions::new()).await;
            assert!(resp.is_ok_and(|r| r.success));
        });
    };
    let mut cases: Vec<Box<dyn FnMut()>> = Vec::new();
    for (_, h) in &hosts {
        let h = h.clone();
        cases.push(Box::new(move || calls(&h)));
    }
    for (_, h) in &hosts {
        let h = h.clone();
        cases.push(Box::new(move || chains_run(&h)));
    }
    let mut refs: Vec<&mut dyn FnMut()> = cases
        .iter_mut()
        .map(|c| &mut **c as &mut dyn FnMut())
        .collect();
    let started = Instant::now();
    let times = interleaved(WARM_UPS, ROUNDS, &mut refs);
    let medians: Vec<f64> = times
        .iter()
        .map(|t| median_of(t.iter().map(|d| ms(*d))))
        .collect();
    for (i, (name, _)) in hosts.iter().enumerate() {
        let call_ms = medians[i];
        let chain_ms = medians[hosts.len() + i];
        emit(&json!({
            "host": name,
            "call_us": round(call_ms * 1000.0 / CALLS as f64, 2),
            "chain_100_ms": round(chain_ms, 3),
        }));
    }
    // A call no rule names: within noise. A call a rule names but does not
    // hold is admitted (its context built, the rule checked): a bounded cost.
    let targets = [(1.05, 1.05), (1.5, 1.1)];
    for ((i, (name, _)), (call, chain)) in hosts.iter().enumerate().skip(1).zip(targets) {
        emit(&ratio(
            &format!("call_{name}_vs_bare"),
            medians[i] / medians[0],
            Some(Target::AtMost(call)),
        ));
        emit(&ratio(
            &format!("chain_{name}_vs_bare"),
            medians[hosts.len() + i] / medians[hosts.len()],
            Some(Target::AtMost(chain)),
        ));
    }
    emit(&json!({"rounds": ROUNDS, "seconds": round(started.elapsed().as_secs_f64(), 1)}));
    Ok(())
}
