//! Durable skill runs on a host with a real journal file: an Ontheia skill's
//! tool steps and an LLM skill's tool calls carry their node's idempotency
//! key; a skill run left unfinished resumes without running its finished
//! steps again and reruns an idempotent one with its old key.

use std::sync::Arc;

use a2e_journal::{Journal, NewRun, NodeKey, NodeOutcome, RunId, RunKind, RunStatus};
use a2e_proto::{ChainEvent, ChainPhase, SkillCallRequest};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use a2e_host_core::config::HostConfig;
use a2e_host_core::host::{CallOptions, Host};
use a2e_host_runs::*;
use a2e_test_kit::journaled_chain::outcome;
use a2e_test_kit::plugin::Effects;

/// An Ontheia skill whose steps `s1`, `s2` call the idempotent tool `step`.
fn ontheia_doc() -> Value {
    json!({"steps": [
        {"id": "s1", "type": "tool", "server": "a2e", "tool": "step", "args": {"n": 1}},
        {"id": "s2", "type": "tool", "server": "a2e", "tool": "step", "args": {"n": 2}}
    ]})
}

async fn skill_host(
    root: &std::path::Path,
    effects: &Effects,
    llm: &str,
) -> (Arc<Host>, Arc<dyn Journal>) {
    std::fs::create_dir_all(root.join("skills")).unwrap();
    std::fs::write(
        root.join("skills/steps.md"),
        format!(
            "---\nname: steps\ndescription: Two steps\n---\nTwo steps.\n\n```ontheia\n{}\n```\n",
            ontheia_doc()
        ),
    )
    .unwrap();
    std::fs::write(
        root.join("skills/helper.md"),
        "---\nname: helper\ndescription: Calls step\ntools: [step]\n---\nCall step.\n",
    )
    .unwrap();
    let mut config = HostConfig::from_toml(llm).unwrap();
    config.root = root.to_path_buf();
    config.builtins = Vec::new();
    let builder = Host::builder(config).with_tool_plugin(effects.clone());
    let host = super::builder_with_skills(builder).build().unwrap();
    let journal = enable(&host).await.unwrap();
    host.register_session("s", "ag");
    (host, journal)
}

/// The only run's id.
async fn only_run(journal: &dyn Journal) -> RunId {
    let runs = journal
        .list_runs(&a2e_journal::RunFilter::default())
        .await
        .unwrap();
    assert_eq!(runs.items.len(), 1);
    runs.items[0].run_id.clone()
}

#[tokio::test]
async fn an_ontheia_skills_tool_steps_carry_their_keys_and_resume() {
    let root = tempfile::tempdir().unwrap();
    let effects = Effects::default();
    let (host, journal) = skill_host(root.path(), &effects, "").await;
    let req = SkillCallRequest::new("steps", json!({"input": "go"}));
    let result = host
        .call_skill(req, CallOptions::new().session("s"))
        .await
        .unwrap();
    assert!(result.success, "{result:?}");
    let run = only_run(&*journal).await;
    assert_eq!(
        effects.calls(),
        [format!("{run}/s1/1"), format!("{run}/s2/1")]
    );
    let (phases, status, answer) = outcome(&*journal, &run).await;
    assert_eq!(phases, ["s1:start", "s1:done", "s2:start", "s2:done"]);
    assert_eq!(status, RunStatus::Succeeded);
    assert_eq!(answer["chain_id"], "steps");

    // What a host killed while s2 ran leaves: s1 answered, s2 started.
    let crashed = RunId::parse("crashed3").unwrap();
    let doc: ontheia::Document = serde_json::from_value(ontheia_doc()).unwrap();
    let digest = skill_run::digest_of(&serde_json::to_value(&doc).unwrap());
    let request = json!({"id": "call-9", "skill": "steps", "arguments": {"input": "go"},
        "timeout": 60, "llm_override": null, "digest": digest});
    journal
        .create_run(NewRun {
            run_id: crashed.clone(),
            kind: RunKind::Ontheia,
            agent: "ag".into(),
            request,
        })
        .await
        .unwrap();
    let s1 = NodeKey::new(crashed.clone(), "s1", 1).unwrap();
    journal.node_started(&s1).await.unwrap();
    let answer = ontheia::StepAnswer {
        output: json!("from the journal"),
        ..Default::default()
    };
    journal
        .node_finished(
            &s1,
            &NodeOutcome::output(serde_json::to_value(&answer).unwrap()),
        )
        .await
        .unwrap();
    for (seq, phase) in [(0, ChainPhase::START), (1, ChainPhase::DONE)] {
        let event = ChainEvent {
            req_id: "call-9".into(),
            node_id: "s1".into(),
            phase,
            seq,
            ..ChainEvent::default()
        };
        journal
            .append_event(&crashed, seq, &serde_json::to_value(&event).unwrap())
            .await
            .unwrap();
    }
    let s2 = NodeKey::new(crashed.clone(), "s2", 1).unwrap();
    journal.node_started(&s2).await.unwrap();
    let before = effects.calls().len();

    assert_eq!(resume_unfinished(&host, &CancellationToken::new()).await, 1);
    let (phases, status, answer) = outcome(&*journal, &crashed).await;
    // s1 is not run again; s2 (idempotent) runs again with its old key.
    assert_eq!(effects.calls()[before..], [format!("{crashed}/s2/1")]);
    assert_eq!(phases, ["s1:start", "s1:done", "s2:start", "s2:done"]);
    assert_eq!(status, RunStatus::Succeeded, "{answer}");
    assert_eq!(
        answer["final_output"]["data"]["s1"]["output"], "from the journal",
        "{answer}"
    );
}

/// An OpenAI-compatible model on loopback: a call of `step`, then text;
/// streamed as Server-Sent Events.
async fn scripted_model() -> std::net::SocketAddr {
    let turns = Arc::new(std::sync::Mutex::new(std::collections::VecDeque::from([
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "step", "arguments": "{\"n\": 4}"}}]}),
        json!({"role": "assistant", "content": "stepped"}),
    ])));
    let app = axum::Router::new().fallback(move || {
        let turns = turns.clone();
        async move {
            let delta = turns
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or(json!({"content": "done"}));
            let finish = if delta.get("tool_calls").is_some() {
                "tool_calls"
            } else {
                "stop"
            };
            let chunk = |choice: Value| format!("data: {}\n\n", json!({"choices": [choice]}));
            let body = chunk(json!({"index": 0, "delta": delta}))
                + &chunk(json!({"index": 0, "delta": {}, "finish_reason": finish}))
                + "data: [DONE]\n\n";
            (
                [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
                body,
            )
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

#[tokio::test]
async fn an_llm_skills_tool_calls_carry_their_keys() {
    let model = scripted_model().await;
    let root = tempfile::tempdir().unwrap();
    let effects = Effects::default();
    let llm = format!(
        "[[llm.providers]]\nname = \"m\"\nkind = \"openai\"\nbase_url = \"http://{model}/v1\"\nmodel = \"m\"\napi_key = \"k\"\n"
    );
    let (host, journal) = skill_host(root.path(), &effects, &llm).await;
    let req = SkillCallRequest::new("helper", json!({"task": "step"}));
    let result = host
        .call_skill(req, CallOptions::new().session("s"))
        .await
        .unwrap();
    assert!(result.success, "{result:?}");
    let run = only_run(&*journal).await;
    assert_eq!(effects.calls(), [format!("{run}/turn-1/call_1/1")]);
    let state = journal.show_run(&run).await.unwrap().unwrap();
    let nodes: Vec<&str> = state.nodes.iter().map(|n| n.node_id.as_str()).collect();
    assert_eq!(nodes, ["turn-1", "turn-1/call_1", "turn-2"], "{state:?}");
    assert!(state.nodes.iter().all(|n| n.outcome.is_some()));
}
