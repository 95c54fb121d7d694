//! Helpers shared by the integration tests: node builders, a scriptable
//! in-process runner, and an event recorder.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2e_chain::{ChainConfig, Engine, Event, NodeCall, NodeError, NodeResult, NodeRunner};
use a2e_proto::{ChainNode, ChainRequest, ChainResponse, NodeKind};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A `tool` node named `name`.
pub fn tool(id: &str, name: &str) -> ChainNode {
    ChainNode::new(id, NodeKind::TOOL, name)
}

/// Sets `input_map` entries.
pub fn with_map(mut n: ChainNode, entries: &[(&str, &str)]) -> ChainNode {
    for (k, v) in entries {
        n.input_map.insert((*k).into(), json!(v));
    }
    n
}

/// Sets static `input` entries.
pub fn with_input(mut n: ChainNode, entries: &[(&str, Value)]) -> ChainNode {
    for (k, v) in entries {
        n.input.insert((*k).into(), v.clone());
    }
    n
}

/// Sets `next_node`.
pub fn then(mut n: ChainNode, next: &str) -> ChainNode {
    n.next_node = next.into();
    n
}

/// Sets `on_error`.
pub fn on_error(mut n: ChainNode, policy: &str) -> ChainNode {
    n.on_error = policy.into();
    n
}

/// A branch node.
pub fn branch(id: &str, cond: &str, t: &str, f: &str) -> ChainNode {
    let mut n = ChainNode::new(id, NodeKind::BRANCH, "");
    n.condition = cond.into();
    n.true_node = t.into();
    n.false_node = f.into();
    n
}

/// A map node.
pub fn map(id: &str, items: &str, template: &str) -> ChainNode {
    let mut n = ChainNode::new(id, NodeKind::MAP, "");
    n.items_path = items.into();
    n.map_node = template.into();
    n
}

/// A request.
pub fn request(nodes: Vec<ChainNode>, entry: &str, input: Value) -> ChainRequest {
    ChainRequest {
        nodes,
        entry_node: entry.into(),
        initial_input: input.as_object().cloned().unwrap_or_default(),
        ..ChainRequest::default()
    }
}

/// One recorded runner call.
#[derive(Debug, Clone)]
pub struct Call {
    pub node_id: String,
    pub item: Option<usize>,
    pub input: Value,
}

/// A runner scripted by tool name:
/// - `echo`: returns its input;
/// - `const`: returns `input.value`;
/// - `fail`: fails with `tool_error` and `input.message`;
/// - `panic`: panics;
/// - `sleep`: sleeps `input.ms` then returns its input;
/// - `hang`: waits for cancellation (records that it saw it), never returns.
#[derive(Clone, Default)]
pub struct Script {
    pub calls: Arc<Mutex<Vec<Call>>>,
    pub cancelled: Arc<AtomicUsize>,
    pub in_flight: Arc<AtomicUsize>,
    pub max_in_flight: Arc<AtomicUsize>,
}

impl Script {
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    pub fn called(&self, id: &str) -> bool {
        self.calls().iter().any(|c| c.node_id == id)
    }
}

struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl NodeRunner for Script {
    async fn run(&self, call: NodeCall) -> NodeResult {
        self.calls.lock().unwrap().push(Call {
            node_id: call.node_id.to_string(),
            item: call.item,
            input: call.input.clone().into_value(),
        });
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let _guard = InFlight(self.in_flight.clone());
        match &*call.name {
            "echo" => Ok(call.input.into_value()),
            "const" => Ok(call.input["value"].clone()),
            "fail" => Err(NodeError::tool(
                call.input["message"]
                    .as_str()
                    .unwrap_or("failed")
                    .to_owned(),
            )),
            "panic" => panic!("runner blew up"),
            "sleep" => {
                let ms = call.input["ms"].as_u64().unwrap_or(1);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(call.input.into_value())
            }
            "hang" => {
                call.cancel.cancelled().await;
                self.cancelled.fetch_add(1, Ordering::SeqCst);
                std::future::pending::<NodeResult>().await
            }
            other => Err(NodeError::tool(format!("unknown tool {other}"))),
        }
    }
}

/// A recorded event, in wire form.
#[derive(Debug, Clone, PartialEq)]
pub struct Ev {
    pub seq: u64,
    pub node: String,
    pub phase: String,
    pub output: Value,
    pub error: String,
}

/// Runs `req` with `script`, recording events.
pub async fn run_with(
    req: &ChainRequest,
    script: &Script,
    config: ChainConfig,
) -> (ChainResponse, Vec<Ev>) {
    run_cancel(req, script, config, CancellationToken::new()).await
}

/// Runs `req` with `script` and an external cancellation token.
pub async fn run_cancel(
    req: &ChainRequest,
    script: &Script,
    config: ChainConfig,
    cancel: CancellationToken,
) -> (ChainResponse, Vec<Ev>) {
    let engine = Engine::new(script.clone()).with_config(config);
    let mut events = Vec::new();
    let resp = engine
        .run(
            req,
            |ev: &Event<'_>| {
                let w = ev.to_wire("r");
                events.push(Ev {
                    seq: w.seq,
                    node: w.node_id,
                    phase: w.phase.to_string(),
                    output: w.output,
                    error: w.error,
                })
            },
            cancel,
        )
        .await
        .expect("valid chain");
    (resp, events)
}

/// Runs with the default config.
pub async fn run(req: &ChainRequest, script: &Script) -> (ChainResponse, Vec<Ev>) {
    run_with(req, script, ChainConfig::default()).await
}

/// `node:phase` strings, in order.
pub fn phases(events: &[Ev]) -> Vec<String> {
    events
        .iter()
        .map(|e| format!("{}:{}", e.node, e.phase))
        .collect()
}

/// Seq numbers are 0, 1, 2, …
pub fn assert_seq(events: &[Ev]) {
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.seq, i as u64, "seq of event {i}");
    }
}
