//! Durable chain runs on a host with a real journal file: a fresh run is
//! journaled and re-attached to; a run left unfinished (as a host killed
//! mid-run leaves it) resumes without running finished calls again, reruns
//! an idempotent call with its key, and fails a non-idempotent one as
//! `interrupted`.

use std::sync::{Arc, Mutex};

use a2e_journal::{Journal, NewRun, NodeKey, NodeOutcome, RunId, RunKind, RunStatus};
use a2e_proto::{ChainEvent, ChainNode, ChainPhase, ChainRequest, NodeKind, ToolDefinition};
use futures::StreamExt;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::*;
use a2e_test_kit::journaled_chain::outcome;
use a2e_test_kit::plugin::Effects;

use crate::config::HostConfig;
use crate::error::HostError;
use crate::error::HostResult;
use crate::plugin::{CallContext, ToolOutput, ToolPlugin};

async fn host(root: &std::path::Path, effects: &Effects) -> (Arc<Host>, Arc<dyn Journal>) {
    let config = HostConfig {
        root: root.to_path_buf(),
        builtins: Vec::new(),
        ..HostConfig::default()
    };
    let host = Host::builder(config)
        .with_tool_plugin(effects.clone())
        .build()
        .unwrap();
    let journal = enable(&host).await.unwrap();
    (host, journal)
}

/// a -> b -> c, each calling `tool_c` for c and `step` otherwise, each
/// node's `n` the previous node's plus one.
fn chain(tool_c: &str) -> ChainRequest {
    let ids = ["a", "b", "c"];
    let nodes = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let tool = if *id == "c" { tool_c } else { "step" };
            let mut n = ChainNode::new(id, NodeKind::TOOL, tool);
            if let Some(prev) = i.checked_sub(1).map(|p| ids[p]) {
                n.input_map
                    .insert("n".into(), json!(format!("{prev}.output.n")));
            }
            if let Some(next) = ids.get(i + 1) {
                n.next_node = (*next).into();
            }
            n
        })
        .collect();
    ChainRequest {
        id: "req-1".into(),
        nodes,
        entry_node: "a".into(),
        ..ChainRequest::default()
    }
}

fn event(node: &str, phase: ChainPhase, seq: u64, output: Value) -> Value {
    serde_json::to_value(ChainEvent {
        req_id: "req-1".into(),
        node_id: node.into(),
        phase,
        output,
        seq,
        ..ChainEvent::default()
    })
    .unwrap()
}

/// What a host killed while `c` ran leaves: a and b finished (with their
/// events), c started.
async fn crashed_run(journal: &dyn Journal, req: &ChainRequest) -> RunId {
    let run = RunId::parse("crashed1").unwrap();
    journal
        .create_run(NewRun {
            run_id: run.clone(),
            kind: RunKind::Chain,
            agent: "ag".into(),
            request: serde_json::to_value(req).unwrap(),
        })
        .await
        .unwrap();
    let mut seq = 0;
    for (node, n) in [("a", 1), ("b", 2)] {
        let key = NodeKey::new(run.clone(), node, 1).unwrap();
        journal.node_started(&key).await.unwrap();
        journal
            .append_event(&run, seq, &event(node, ChainPhase::START, seq, Value::Null))
            .await
            .unwrap();
        let out = json!({"n": n});
        journal
            .node_finished(&key, &NodeOutcome::output(out.clone()))
            .await
            .unwrap();
        journal
            .append_event(&run, seq + 1, &event(node, ChainPhase::DONE, seq + 1, out))
            .await
            .unwrap();
        seq += 2;
    }
    let c = NodeKey::new(run.clone(), "c", 1).unwrap();
    journal.node_started(&c).await.unwrap();
    run
}

#[tokio::test]
async fn an_unfinished_run_resumes_and_reruns_an_idempotent_call_with_its_key() {
    let root = tempfile::tempdir().unwrap();
    let effects = Effects::default();
    let (host, journal) = host(root.path(), &effects).await;
    let run = crashed_run(&*journal, &chain("step")).await;

    assert_eq!(resume_unfinished(&host, &CancellationToken::new()).await, 1);
    let (phases, status, answer) = outcome(&*journal, &run).await;
    // a and b are not run again; c runs again with its old key.
    assert_eq!(effects.calls(), ["crashed1/c/1"]);
    assert_eq!(
        phases,
        [
            "a:start", "a:done", "b:start", "b:done", "c:start", "c:done"
        ]
    );
    assert_eq!(status, RunStatus::Succeeded);
    assert_eq!(answer["final_output"], json!({"n": 3}));
    assert_eq!(answer["outputs"]["a"], json!({"n": 1}));
    // Nothing is left to resume.
    assert!(journal.load_unfinished().await.unwrap().items.is_empty());
}

#[tokio::test]
async fn a_call_that_must_not_repeat_fails_as_interrupted() {
    let root = tempfile::tempdir().unwrap();
    let effects = Effects::default();
    let (host, journal) = host(root.path(), &effects).await;
    let run = crashed_run(&*journal, &chain("once")).await;

    assert_eq!(resume_unfinished(&host, &CancellationToken::new()).await, 1);
    let (phases, status, answer) = outcome(&*journal, &run).await;
    assert!(effects.calls().is_empty(), "{:?}", effects.calls());
    assert_eq!(phases.last().unwrap(), "c:error");
    assert_eq!(status, RunStatus::Failed);
    assert_eq!(answer["error"]["node_code"], "interrupted", "{answer}");
    assert_eq!(answer["error"]["node_id"], "c");
    let state = journal.show_run(&run).await.unwrap().unwrap();
    let (_, c) = state.result_of("c").unwrap();
    assert!(
        matches!(c, NodeOutcome::Error { code, .. } if code == "interrupted"),
        "{c:?}"
    );
}

#[tokio::test]
async fn a_fresh_run_is_journaled_keyed_and_attached_to_by_its_agent_only() {
    let root = tempfile::tempdir().unwrap();
    let effects = Effects::default();
    let (host, journal) = host(root.path(), &effects).await;
    let req = chain("once");
    let plan = crate::chains::plan(&host, &req).unwrap();
    let resp = run_plan(&host, &plan, CallOptions::new().session("s1"), "ag").await;
    assert!(resp.success, "{:?}", resp.error);

    let runs = journal
        .list_runs(&a2e_journal::RunFilter::default())
        .await
        .unwrap();
    let run = runs.items[0].run_id.clone();
    assert_eq!(runs.items[0].status, RunStatus::Succeeded);
    let keys: Vec<String> = ["a", "b", "c"]
        .iter()
        .map(|n| format!("{run}/{n}/1"))
        .collect();
    assert_eq!(effects.calls(), keys);

    // By request id, from a seq: the rest of the events, then the answer.
    let by_req = a2e_proto::ChainAttach {
        id: "att".into(),
        chain_req_id: "req-1".into(),
        from_seq: 4,
        ..a2e_proto::ChainAttach::default()
    };
    let items: Vec<AttachItem> = attach(&host, "ag", &by_req).await.unwrap().collect().await;
    assert_eq!(items.len(), 3, "{items:?}");
    let AttachItem::Event(first) = &items[0] else {
        panic!("{items:?}")
    };
    assert_eq!(
        (first.seq, first.node_id.as_str(), first.req_id.as_str()),
        (4, "c", "att")
    );
    let AttachItem::Answer(answer) = &items[2] else {
        panic!("{items:?}")
    };
    assert_eq!(answer.req_id, "att");
    assert_eq!(answer.final_output, json!({"n": 3}));

    // Another agent's run, an unknown run, a malformed request.
    let by_id = a2e_proto::ChainAttach {
        run_id: run.to_string(),
        chain_req_id: String::new(),
        ..by_req.clone()
    };
    let e = attach(&host, "intruder", &by_id).await.err().unwrap();
    assert_eq!(e.code, ErrorCode::UNAUTHORIZED);
    let unknown = a2e_proto::ChainAttach {
        run_id: "nope".into(),
        ..by_id.clone()
    };
    let e = attach(&host, "ag", &unknown).await.err().unwrap();
    assert_eq!(e.code.as_str(), "unknown_run");
    assert!(e.message.contains("nope"));
    let e = attach(&host, "intruder", &by_req).await.err().unwrap();
    assert_eq!(e.code.as_str(), "unknown_run");
    // Neither or both of `run_id` and `chain_req_id`.
    let both = a2e_proto::ChainAttach {
        run_id: run.to_string(),
        ..by_req.clone()
    };
    let neither = a2e_proto::ChainAttach {
        chain_req_id: String::new(),
        ..by_req.clone()
    };
    for malformed in [both, neither] {
        let e = attach(&host, "ag", &malformed).await.err().unwrap();
        assert_eq!(e.code, ErrorCode::SCHEMA_VIOLATION, "{malformed:?}");
    }
}

/// Per call of `seen`: its node and the calls with a result in the file.
type SeenLog = Arc<Mutex<Vec<(String, Vec<String>)>>>;

/// Tool `seen`: reads its run's journal file through a connection of its
/// own and records which calls have a result there when it is called.
#[derive(Clone)]
struct Seen {
    path: std::path::PathBuf,
    seen: SeenLog,
}

impl ToolPlugin<HostError> for Seen {
    fn name(&self) -> &str {
        "seen"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        vec![ToolDefinition::new("seen", "reads the journal")]
    }

    async fn call(
        &self,
        _tool: &str,
        _args: Map<String, Value>,
        ctx: CallContext,
    ) -> HostResult<ToolOutput> {
        let key = NodeKey::parse(&ctx.idempotency_key).unwrap();
        let other = a2e_journal::SqliteJournal::open(&self.path, Default::default())
            .await
            .unwrap();
        let state = other.show_run(key.run_id()).await.unwrap().unwrap();
        let done: Vec<String> = state
            .nodes
            .iter()
            .filter(|n| n.outcome.is_some())
            .map(|n| n.node_id.clone())
            .collect();
        self.seen
            .lock()
            .unwrap()
            .push((key.node_id().to_owned(), done));
        Ok(json!({"n": 1}).into())
    }
}

#[tokio::test]
async fn a_run_that_does_not_stream_has_each_result_in_the_file_before_the_next_call() {
    let root = tempfile::tempdir().unwrap();
    let config = HostConfig {
        root: root.path().to_path_buf(),
        builtins: Vec::new(),
        ..HostConfig::default()
    };
    let seen = Seen {
        path: config.journal_path(),
        seen: Arc::default(),
    };
    let host = Host::builder(config)
        .with_tool_plugin(seen.clone())
        .build()
        .unwrap();
    let journal = enable(&host).await.unwrap();
    // Results are queued, not awaited, for this run: it does not stream.
    assert!(journal.commits_in_order());
    let req = chain("seen");
    let req = ChainRequest {
        nodes: req
            .nodes
            .into_iter()
            .map(|mut n| {
                n.name = "seen".into();
                n
            })
            .collect(),
        ..req
    };
    let plan = crate::chains::plan(&host, &req).unwrap();
    let resp = run_plan(&host, &plan, CallOptions::new().session("s1"), "ag").await;
    assert!(resp.success, "{:?}", resp.error);
    // Each call found every earlier call's result committed to the file.
    assert_eq!(
        *seen.seen.lock().unwrap(),
        [
            ("a".to_owned(), vec![]),
            ("b".to_owned(), vec!["a".to_owned()]),
            ("c".to_owned(), vec!["a".to_owned(), "b".to_owned()]),
        ]
    );
}

#[tokio::test]
async fn a_second_host_on_the_same_journal_does_not_resume_its_runs() {
    let root = tempfile::tempdir().unwrap();
    let effects = Effects::default();
    let (first, journal) = host(root.path(), &effects).await;
    assert_eq!(
        resume_unfinished(&first, &CancellationToken::new()).await,
        0
    );
    crashed_run(&*journal, &chain("step")).await;
    let (second, _) = host(root.path(), &effects).await;
    assert_eq!(
        resume_unfinished(&second, &CancellationToken::new()).await,
        0
    );
    assert!(effects.calls().is_empty());
}

/// Durable ACMP DAG runs on the same host and tools.
#[cfg(feature = "acmp")]
mod dags {
    use super::*;

    /// task_a -> task_b -> task_c, each calling `step` with a literal input.
    fn dag() -> acmp_dag::Dag {
        let tasks: Vec<Value> = ["a", "b", "c"]
            .iter()
            .map(|id| {
                json!({"task_id": format!("task_{id}"), "capability": "step",
                       "input": {"type": "json", "data": {"n": 0}}})
            })
            .collect();
        serde_json::from_value(json!({
            "dag_id": "d",
            "tasks": tasks,
            "edges": [{"from": "task_a", "to": "task_b"}, {"from": "task_b", "to": "task_c"}],
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn a_fresh_dag_run_is_journaled_and_its_calls_keyed() {
        let root = tempfile::tempdir().unwrap();
        let effects = Effects::default();
        let (host, journal) = host(root.path(), &effects).await;
        let options = CallOptions::new().session("s1");
        let resp = run_dag(&host, dag(), "req-d", options, "ag", |_| {}).await;
        assert!(resp.success, "{:?}", resp.error);
        let runs = journal
            .list_runs(&a2e_journal::RunFilter::default())
            .await
            .unwrap();
        let summary = &runs.items[0];
        assert_eq!(
            (summary.kind, summary.status),
            (RunKind::AcmpDag, RunStatus::Succeeded)
        );
        let run = &summary.run_id;
        let keys: Vec<String> = ["a", "b", "c"]
            .iter()
            .map(|t| format!("{run}/task_{t}/1"))
            .collect();
        assert_eq!(effects.calls(), keys);
        let (phases, _, answer) = outcome(&*journal, run).await;
        assert_eq!(phases.len(), 6, "{phases:?}");
        assert_eq!(answer["outputs"]["task_c"], json!({"n": 1}));
    }

    #[tokio::test]
    async fn an_unfinished_dag_run_resumes_and_reruns_an_idempotent_task_with_its_key() {
        let root = tempfile::tempdir().unwrap();
        let effects = Effects::default();
        let (host, journal) = host(root.path(), &effects).await;
        // What a host killed while task_b ran leaves.
        let run = RunId::parse("crashed2").unwrap();
        journal
            .create_run(NewRun {
                run_id: run.clone(),
                kind: RunKind::AcmpDag,
                agent: "ag".into(),
                request: json!({"id": "req-d", "dag": dag()}),
            })
            .await
            .unwrap();
        let a = NodeKey::new(run.clone(), "task_a", 1).unwrap();
        journal.node_started(&a).await.unwrap();
        let result =
            acmp_dag::InvokeResult::new("task_a", acmp_dag::Payload::json(json!({"n": 1})));
        let output = NodeOutcome::output(serde_json::to_value(result).unwrap());
        journal.node_finished(&a, &output).await.unwrap();
        let phases = [
            ("task_a", ChainPhase::START),
            ("task_a", ChainPhase::DONE),
            ("task_b", ChainPhase::START),
        ];
        for (seq, (task, phase)) in phases.into_iter().enumerate() {
            let seq = seq as u64;
            let mut e = event(task, phase, seq, Value::Null);
            e["req_id"] = json!("req-d");
            journal.append_event(&run, seq, &e).await.unwrap();
        }
        let b = NodeKey::new(run.clone(), "task_b", 1).unwrap();
        journal.node_started(&b).await.unwrap();

        assert_eq!(resume_unfinished(&host, &CancellationToken::new()).await, 1);
        let (phases, status, answer) = outcome(&*journal, &run).await;
        // task_a is not run again; task_b runs again with its old key.
        assert_eq!(effects.calls(), ["crashed2/task_b/1", "crashed2/task_c/1"]);
        assert_eq!(
            phases,
            [
                "task_a:start",
                "task_a:done",
                "task_b:start",
                "task_b:done",
                "task_c:start",
                "task_c:done"
            ]
        );
        assert_eq!(status, RunStatus::Succeeded, "{answer}");
        assert_eq!(answer["req_id"], "req-d");
        assert_eq!(answer["outputs"]["task_a"], json!({"n": 1}));
        assert!(journal.load_unfinished().await.unwrap().items.is_empty());
    }
}
