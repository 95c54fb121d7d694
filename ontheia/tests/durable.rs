//! Durable runs: step keys under loops, retries and agents; resuming from
//! journaled answers without calling the backend again; events not
//! delivered twice; the observer between a step's answer and its use.

use crate::common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use common::{Host, doc, engine};
use ontheia::{
    AgentPlan, Document, Engine, Event, Globals, ObserveFuture, Resume, RunOptions, RunOutcome,
    StepCall, StepObserver, StepReply, StepStatus,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Logs starts and answers, and keeps the answers by key.
#[derive(Default)]
struct Journal {
    log: Mutex<Vec<String>>,
    answers: Mutex<HashMap<String, StepReply>>,
    refuse: Option<&'static str>,
}

impl StepObserver for Journal {
    fn started(&self, call: &StepCall) -> ObserveFuture {
        self.log.lock().unwrap().push(format!(
            "started:{}#{}:{}",
            call.key,
            call.attempt,
            call.step_type.as_str()
        ));
        let refuse = self.refuse == Some(call.step_id.as_str());
        Box::pin(async move {
            if refuse {
                return Err("journal full".to_owned());
            }
            Ok(())
        })
    }

    fn finished(&self, call: &StepCall, reply: &StepReply) -> ObserveFuture {
        self.log
            .lock()
            .unwrap()
            .push(format!("finished:{}:{}", call.key, reply.is_ok()));
        self.answers
            .lock()
            .unwrap()
            .insert(call.key.clone(), reply.clone());
        Box::pin(async { Ok(()) })
    }
}

async fn run_durable(
    engine: &Engine<Host>,
    d: &Document,
    options: RunOptions,
) -> (RunOutcome, Vec<(u64, String)>) {
    let mut events = Vec::new();
    let out = engine
        .run_with(
            d,
            &Globals::with_input("go"),
            |e: &Event<'_>| events.push((e.seq, e.identity())),
            CancellationToken::new(),
            options,
        )
        .await
        .expect("run");
    (out, events)
}

fn document() -> Document {
    doc(json!({"steps": [
        {"id": "ask", "type": "llm", "prompt": "first", "params": {"silent": true}},
        {"id": "each", "type": "loop", "params": {"count": 2}, "steps": [
            {"id": "count", "type": "tool", "server": "a2e", "tool": "counter", "params": {"args": {}}}
        ]},
        {"id": "again", "type": "retry", "params": {"count": 2, "delay_ms": 0}, "steps": [
            {"id": "shout", "type": "tool", "server": "a2e", "tool": "upper", "params": {"args": {"text": "${steps.ask.output}"}}}
        ]},
        {"id": "tidy", "type": "transform", "prompt": "done: ${steps.shout.output}", "params": {"silent": true}},
        {"id": "delegate", "type": "agent", "agent_id": "helper"}
    ]}))
}

fn host() -> Host {
    let mut host = Host::default();
    host.agents.insert(
        "helper".into(),
        AgentPlan::Chain {
            document: Box::new(doc(json!({"steps": [
                {"id": "inner", "type": "llm", "prompt": "inner", "params": {"silent": true}}
            ]}))),
            agent_id: None,
            task_id: None,
        },
    );
    host
}

#[tokio::test]
async fn journaled_steps_have_keys_under_loops_retries_and_agents() {
    let journal = Arc::new(Journal::default());
    let e = engine(host());
    let (out, _) = run_durable(
        &e,
        &document(),
        RunOptions {
            resume: None,
            observer: Some(journal.clone()),
        },
    )
    .await;
    assert!(!out.any_failed());
    let log = journal.log.lock().unwrap().clone();
    assert_eq!(
        log,
        [
            "started:ask#1:llm",
            "finished:ask:true",
            "started:each#0/count#1:tool",
            "finished:each#0/count:true",
            "started:each#1/count#1:tool",
            "finished:each#1/count:true",
            "started:again@1/shout#1:tool",
            "finished:again@1/shout:true",
            "started:delegate#1:agent",
            "started:delegate>inner#1:llm",
            "finished:delegate>inner:true",
            "finished:delegate:true",
        ]
    );
}

#[tokio::test]
async fn a_resumed_run_calls_the_backend_only_for_what_did_not_finish() {
    let d = document();
    let journal = Arc::new(Journal::default());
    let first_engine = engine(host());
    let (first, first_events) = run_durable(
        &first_engine,
        &d,
        RunOptions {
            resume: None,
            observer: Some(journal.clone()),
        },
    )
    .await;
    // The host died after the first loop iteration's answer and its `done`
    // event were journaled.
    let answers = journal.answers.lock().unwrap().clone();
    let cut = first_events
        .iter()
        .position(|(_, id)| id == "each#0/count:done")
        .unwrap()
        + 1;
    let mut resume = Resume::new();
    for key in ["ask", "each#0/count"] {
        resume.finished(key, answers[key].clone());
    }
    for (_, id) in &first_events[..cut] {
        resume.reported(id.clone());
    }
    resume.next_seq(cut as u64);

    let e = engine(host());
    let (out, events) = run_durable(
        &e,
        &d,
        RunOptions {
            resume: Some(resume),
            observer: None,
        },
    )
    .await;
    // ask and the first count did not reach the backend again.
    let calls = e.backend().calls();
    assert_eq!(
        e.backend().llm_calls().len(),
        1,
        "only the agent's inner call"
    );
    assert_eq!(e.backend().tool_calls().len(), 2, "{calls:?}");
    // The results are the uninterrupted run's (the counter restarted at 1 in
    // the new host, and the second iteration is the one that ran).
    assert_eq!(out.result("ask"), first.result("ask"));
    assert_eq!(out.result("shout"), first.result("shout"));
    assert_eq!(out.result("tidy"), first.result("tidy"));
    assert_eq!(out.result("delegate"), first.result("delegate"));
    assert_eq!(out.result("count").unwrap().output, "{\"n\":1}");
    // Exactly the events the journal lacked, numbered on from it.
    assert_eq!(events, first_events[cut..]);
}

#[tokio::test]
async fn a_replayed_failure_is_the_steps_failure_and_the_run_goes_on() {
    let d = document();
    let mut resume = Resume::new();
    resume.finished(
        "ask",
        Err("interrupted: `ask` may have run when its host stopped".to_owned()),
    );
    let e = engine(host());
    let (out, events) = run_durable(
        &e,
        &d,
        RunOptions {
            resume: Some(resume),
            observer: None,
        },
    )
    .await;
    let ask = out.result("ask").unwrap();
    assert_eq!(ask.status, StepStatus::Failed);
    assert_eq!(
        ask.error.as_deref(),
        Some("interrupted: `ask` may have run when its host stopped")
    );
    assert!(events.iter().any(|(_, id)| id == "ask:error"));
    assert_eq!(out.result("tidy").unwrap().status, StepStatus::Success);
    assert_eq!(e.backend().llm_calls().len(), 1);
}

#[tokio::test]
async fn a_start_the_observer_refuses_fails_the_step_without_calling_the_backend() {
    let journal = Arc::new(Journal {
        refuse: Some("ask"),
        ..Journal::default()
    });
    let e = engine(host());
    let (out, _) = run_durable(
        &e,
        &document(),
        RunOptions {
            resume: None,
            observer: Some(journal.clone()),
        },
    )
    .await;
    let ask = out.result("ask").unwrap();
    assert_eq!(ask.status, StepStatus::Failed);
    assert_eq!(ask.error.as_deref(), Some("journal full"));
    // Only the agent's inner model call reached the backend.
    assert_eq!(e.backend().llm_calls().len(), 1);
    assert_eq!(e.backend().llm_calls()[0].prompt, "inner");
}
