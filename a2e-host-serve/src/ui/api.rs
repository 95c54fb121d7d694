//! The view's JSON: the overview (sessions, recent runs), the catalog, and
//! one run with its graph.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use a2e_graph::{Format, NodeRun, NodeState, RunStates};
use a2e_journal::{NodeOutcome, RunFilter, RunId, RunKind, RunState, StoredEvent};
use a2e_proto::{ChainRequest, SkillDiscoverRequest, ToolListRequest};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{allowed, guarded, unauthorized};
use crate::transport::net::NetState;

/// Runs the overview lists, newest first.
const LISTED_RUNS: usize = 50;

/// Events of one run sent with it (the first ones; the rest come live).
const RUN_EVENTS: usize = 2000;

fn answer(status: StatusCode, body: Value) -> Response {
    guarded((status, Json(body)).into_response())
}

fn failed(status: StatusCode, message: impl std::fmt::Display) -> Response {
    answer(status, json!({ "error": message.to_string() }))
}

/// `GET /ui/api/overview`.
pub(super) async fn overview(
    State(state): State<Arc<NetState>>,
    headers: axum::http::HeaderMap,
) -> Response {
    if !allowed(&state, &headers) {
        return unauthorized();
    }
    let host = &state.host;
    let runs = match host.journal() {
        Some(journal) => {
            let filter = RunFilter {
                agent: None,
                status: None,
                limit: LISTED_RUNS,
            };
            match journal.list_runs(&filter).await {
                Ok(loaded) => json!(loaded.items),
                Err(e) => {
                    return failed(StatusCode::SERVICE_UNAVAILABLE, format!("run journal: {e}"));
                }
            }
        }
        None => Value::Null,
    };
    answer(
        StatusCode::OK,
        json!({
            "sessions": state.open_sessions(),
            "runs": runs,
            "journal": host.journal().is_some(),
            // Runs kept in memory only (the durable journal is off).
            "journal_memory": host.journal().is_some()
                && !host.config().journal.enabled
                && !host.config().cluster.enabled(),
            "telemetry": host.telemetry().is_enabled(),
        }),
    )
}

/// `GET /ui/api/catalog`.
pub(super) async fn catalog(
    State(state): State<Arc<NetState>>,
    headers: axum::http::HeaderMap,
) -> Response {
    if !allowed(&state, &headers) {
        return unauthorized();
    }
    let host = &state.host;
    let tools = host.list_tools(&ToolListRequest::default());
    let skills = host.discover_skills(&SkillDiscoverRequest::default());
    answer(StatusCode::OK, json!({ "tools": tools, "skills": skills }))
}

/// `GET /ui/api/runs/{id}`.
pub(super) async fn run(
    State(state): State<Arc<NetState>>,
    headers: axum::http::HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if !allowed(&state, &headers) {
        return unauthorized();
    }
    let Some(journal) = state.host.journal() else {
        return failed(
            StatusCode::NOT_FOUND,
            "this host does not journal its runs ([journal] enabled = false)",
        );
    };
    let run = match RunId::parse(&id) {
        Ok(run) => run,
        Err(e) => return failed(StatusCode::BAD_REQUEST, e),
    };
    let shown = match journal.show_run(&run).await {
        Ok(Some(mut shown)) => {
            a2e_host_core::redact::redact_records(&mut shown);
            shown
        }
        Ok(None) => return failed(StatusCode::NOT_FOUND, format!("no run `{run}`")),
        Err(e) => return failed(StatusCode::SERVICE_UNAVAILABLE, format!("run journal: {e}")),
    };
    let events = match journal.events(&run, 0, RUN_EVENTS).await {
        Ok(events) => events,
        Err(e) => return failed(StatusCode::SERVICE_UNAVAILABLE, format!("run journal: {e}")),
    };
    let (nodes, svg, graph_error) = match shown.summary.kind {
        RunKind::Chain => chain_view(&shown),
        #[cfg(feature = "acmp")]
        RunKind::AcmpDag => dag_view(&shown),
        #[cfg(feature = "ontheia")]
        RunKind::Ontheia => ontheia_view(&shown),
        #[cfg(not(feature = "ontheia"))]
        RunKind::Ontheia => (
            Vec::new(),
            None,
            Some("this host was built without Ontheia".to_owned()),
        ),
        RunKind::LlmSkill => loop_view(&shown, &events),
        // A task is one tool call: no graph, its answer is the run's.
        RunKind::McpTask | RunKind::Approval | RunKind::A2aTask => (Vec::new(), None, None),
        #[cfg(not(feature = "acmp"))]
        RunKind::AcmpDag => (
            Vec::new(),
            None,
            Some("this host was built without ACMP".to_owned()),
        ),
    };
    let trace_id = state
        .host
        .live()
        .trace_id(run.as_str())
        .or_else(|| traceparent_trace(&shown.request));
    // A map's items (`template[index]`) count on their template node, as
    // in the picture; the items keep their own entries for the page to
    // fold again as their events arrive.
    let drawn: HashSet<&str> = nodes
        .iter()
        .filter_map(|n| n.get("node_id").and_then(Value::as_str))
        .collect();
    let folded = a2e_graph::fold_items(&node_states(&shown, &events), |id| drawn.contains(id));
    let states: HashMap<&String, Value> = folded
        .iter()
        .map(|(id, r)| {
            let ms = r
                .duration
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
            let items = r.items.map(|items| {
                json!({
                    "total": items.total, "done": items.done, "failed": items.failed,
                    "running": items.running, "skipped": items.skipped,
                })
            });
            let mut state = json!({ "state": r.state.as_str(), "duration_ms": ms });
            if let (Some(items), Value::Object(fields)) = (items, &mut state) {
                fields.insert("items".to_owned(), items);
            }
            (id, state)
        })
        .collect();
    answer(
        StatusCode::OK,
        json!({
            "summary": shown.summary,
            "chain_id": shown
                .request
                .get("chain_id")
                .or_else(|| shown.request.get("dag").and_then(|d| d.get("dag_id")))
                .or_else(|| shown.request.get("skill"))
                .cloned()
                .unwrap_or(Value::Null),
            "nodes": nodes,
            "records": shown.nodes,
            "states": states,
            "timeline": timeline(&shown),
            "events": events.iter().map(|e| json!({"seq": e.seq, "event": e.event})).collect::<Vec<_>>(),
            "answer": shown.answer,
            "svg": svg,
            "graph_error": graph_error,
            "trace_id": trace_id,
        }),
    )
}

/// The chain's nodes as defined (what each is given) and its plain SVG (the
/// page colours it).
fn chain_view(shown: &RunState) -> (Vec<Value>, Option<String>, Option<String>) {
    let req: ChainRequest = match serde_json::from_value(shown.request.clone()) {
        Ok(req) => req,
        Err(e) => {
            return (
                Vec::new(),
                None,
                Some(format!("the request does not load: {e}")),
            );
        }
    };
    let nodes = req
        .nodes
        .iter()
        .map(|n| {
            json!({
                "node_id": n.node_id,
                "kind": n.kind,
                "name": n.name,
                "input": a2e_host_core::redact::redact_map(&n.input),
                "input_map": n.input_map,
                "on_error": n.on_error,
            })
        })
        .collect();
    let drawn = a2e_graph::chain::chain_graph(&req, &a2e_chain::ChainConfig::default())
        .and_then(|graph| graph.render(Format::Svg, None));
    match drawn {
        Ok(svg) => (nodes, Some(svg), None),
        Err(e) => (nodes, None, Some(e.to_string())),
    }
}

/// An Ontheia skill run's steps as defined and its document's plain SVG.
#[cfg(feature = "ontheia")]
fn ontheia_view(shown: &RunState) -> (Vec<Value>, Option<String>, Option<String>) {
    let Some(document) = shown.request.get("document") else {
        return (Vec::new(), None, Some("the run has no document".to_owned()));
    };
    let doc: ontheia::Document = match serde_json::from_value(document.clone()) {
        Ok(doc) => doc,
        Err(e) => {
            return (
                Vec::new(),
                None,
                Some(format!("the document does not load: {e}")),
            );
        }
    };
    let steps = doc
        .all_steps()
        .iter()
        .map(|s| {
            let input = serde_json::to_value(&s.params).unwrap_or(Value::Null);
            json!({"node_id": s.id, "kind": s.kind.as_str(), "name": s.param_str("tool"),
                   "input": a2e_host_core::redact::redact(&input)})
        })
        .collect();
    let drawn = a2e_graph::ontheia::ontheia_graph(&doc).and_then(|g| g.render(Format::Svg, None));
    match drawn {
        Ok(svg) => (steps, Some(svg), None),
        Err(e) => (steps, None, Some(e.to_string())),
    }
}

/// An LLM skill run's model turns and tool calls as they happened (from
/// its events) and their plain SVG.
fn loop_view(
    shown: &RunState,
    events: &[a2e_journal::StoredEvent],
) -> (Vec<Value>, Option<String>, Option<String>) {
    let mut steps: Vec<a2e_graph::sequence::Step> = Vec::new();
    let mut last_turn: Option<String> = None;
    for e in events {
        let Some(id) = e.event.get("node_id").and_then(Value::as_str) else {
            continue;
        };
        if steps.iter().any(|s| s.id == id) {
            continue;
        }
        let step = match id.split_once('/') {
            Some((turn, _)) => a2e_graph::sequence::Step {
                id: id.to_owned(),
                kind: "tool".into(),
                caption: format!(
                    "tool {}",
                    e.event
                        .pointer("/output/tool")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                ),
                after: Some(turn.to_owned()),
            },
            None => {
                let step = a2e_graph::sequence::Step {
                    id: id.to_owned(),
                    kind: "model".into(),
                    caption: format!("model {}", id.replace('-', " ")),
                    after: last_turn.take(),
                };
                last_turn = Some(id.to_owned());
                step
            }
        };
        steps.push(step);
    }
    let nodes = steps
        .iter()
        .map(|s| json!({"node_id": s.id, "kind": s.kind, "name": s.caption}))
        .collect();
    let name = shown
        .request
        .get("skill")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let drawn = a2e_graph::sequence::loop_graph(name, &steps).render(Format::Svg, None);
    match drawn {
        Ok(svg) => (nodes, Some(svg), None),
        Err(e) => (nodes, None, Some(e.to_string())),
    }
}

/// A DAG run's tasks as defined (capability and input) and its plain SVG.
#[cfg(feature = "acmp")]
fn dag_view(shown: &RunState) -> (Vec<Value>, Option<String>, Option<String>) {
    let dag: acmp_dag::Dag = match shown.request.get("dag").map(acmp_dag::decode::from_value) {
        Some(Ok(dag)) => dag,
        Some(Err(e)) => {
            return (
                Vec::new(),
                None,
                Some(format!("the DAG does not load: {e}")),
            );
        }
        None => return (Vec::new(), None, Some("the run has no DAG".to_owned())),
    };
    let tasks = dag
        .tasks
        .iter()
        .map(|t| {
            let input = serde_json::to_value(&t.input).unwrap_or(Value::Null);
            json!({"node_id": t.task_id, "kind": "acmp_task", "name": t.capability,
                   "input": a2e_host_core::redact::redact(&input)})
        })
        .collect();
    let drawn = a2e_graph::dag::dag_graph(&dag, &acmp_dag::ValidationLimits::default())
        .and_then(|graph| graph.render(Format::Svg, None));
    match drawn {
        Ok(svg) => (tasks, Some(svg), None),
        Err(e) => (tasks, None, Some(e.to_string())),
    }
}

/// Every attempt of every node (a map item under its own id) with its start
/// and end (ms since the Unix epoch; no end while it runs) and how it ended
/// (`done`, `failed`, `running`; `unfinished` when the run ended without
/// it), in start order: the page's timeline.
fn timeline(shown: &RunState) -> Vec<Value> {
    let mut attempts: Vec<&a2e_journal::NodeRecord> =
        shown.nodes.iter().filter(|r| r.started_ms > 0).collect();
    attempts.sort_by_key(|r| (r.started_ms, r.finished_ms.unwrap_or(u64::MAX), r.attempt));
    attempts
        .iter()
        .map(|r| {
            let state = match (&r.outcome, shown.summary.status.is_finished()) {
                (Some(NodeOutcome::Output { .. }), _) => "done",
                (Some(NodeOutcome::Error { .. }), _) => "failed",
                (None, false) => "running",
                (None, true) => "unfinished",
            };
            json!({"node_id": r.node_id, "attempt": r.attempt, "start_ms": r.started_ms,
                   "end_ms": r.finished_ms, "state": state})
        })
        .collect()
}

/// The trace id of the request's own `traceparent`, when it carried one
/// (the run's spans then belong to that trace).
fn traceparent_trace(request: &Value) -> Option<String> {
    let parent = request.get("traceparent")?.as_str()?;
    a2e_telemetry::TraceContext::parse(parent, None)
        .ok()
        .map(|cx| cx.trace_id())
}

/// Each node's state and duration in a journaled run, for drawing it: the
/// phase of its last event (`start`: running, `done`, `error`: failed,
/// `skip`: skipped; a node with none was not reached) and the duration of
/// its latest attempt (so far, when it runs). Map items (`fetch[3]`) keep
/// their own ids, which a graph of the document ignores.
pub fn node_states(state: &RunState, events: &[StoredEvent]) -> RunStates {
    let now = a2e_journal::now_ms();
    let mut states = RunStates::new();
    for e in events {
        let text = |key: &str| e.event.get(key).and_then(Value::as_str);
        let (Some(node), Some(phase)) = (text("node_id"), text("phase")) else {
            continue;
        };
        let node_state = match phase {
            "start" => NodeState::Running,
            "done" => NodeState::Done,
            "error" => NodeState::Failed,
            "skip" => NodeState::Skipped,
            _ => continue,
        };
        states.insert(node.to_owned(), NodeRun::new(node_state, None));
    }
    let ids: Vec<String> = states.keys().cloned().collect();
    for id in ids {
        let Some(record) = state.latest(&id) else {
            continue;
        };
        if record.started_ms == 0 {
            continue;
        }
        let end = match (record.finished_ms, &record.outcome) {
            (Some(end), _) => end,
            (None, None) if !state.summary.status.is_finished() => now,
            _ => continue,
        };
        if let Some(run) = states.get_mut(&id) {
            run.duration = Some(Duration::from_millis(end.saturating_sub(record.started_ms)));
        }
    }
    // A failed attempt that a later event does not explain still failed.
    for record in &state.nodes {
        if matches!(record.outcome, Some(NodeOutcome::Error { .. }))
            && !states.contains_key(&record.node_id)
        {
            states.insert(
                record.node_id.clone(),
                NodeRun::new(NodeState::Failed, None),
            );
        }
    }
    states
}
