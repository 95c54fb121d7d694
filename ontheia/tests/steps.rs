//! The steps that reach the backend, and `transform`: what each sends and
//! what it stores.

use crate::common;

use common::{Call, Host, doc, engine, run, start_server};
use ontheia::{AgentPlan, Document, Globals, LlmReply, StepStatus};
use serde_json::{Map, Value, json};

#[tokio::test]
async fn llm_step_sends_its_parameters_and_parses_messy_json() {
    let host = Host::with_llm(|_| {
        Ok(LlmReply::text(
            "Here you go:\n```json\n{'city': 'Berlin', is_free: True, 'tags': ['a' 'b'],}\n```\nAnything else?",
        ))
    });
    let d = doc(json!({"steps": [
        {"id": "ask", "type": "llm", "prompt": "Weather in ${input}?", "system_prompt": "You are ${user_name}'s helper",
         "model": "small", "agent_id": "a-1", "params": {"temperature": 0.2, "silent": true, "max_tokens": 50}}
    ]}));
    let g = Globals {
        user_name: Some("Ada".into()),
        ..Globals::with_input("Berlin")
    };
    let e = engine(host);
    let (out, events) = run(&e, &d, &g).await;
    let req = &e.backend().llm_calls()[0];
    assert_eq!(req.prompt, "Weather in Berlin?");
    assert_eq!(req.system_prompt.as_deref(), Some("You are Ada's helper"));
    assert_eq!(req.model.as_deref(), Some("small"));
    assert_eq!(req.temperature, Some(0.2));
    assert!(req.silent);
    assert_eq!(
        req.params,
        json!({"max_tokens": 50}).as_object().unwrap().clone()
    );
    assert_eq!(req.agent_id.as_deref(), Some("a-1"));
    let r = out.result("ask").unwrap();
    assert_eq!(
        r.data,
        json!({"city": "Berlin", "is_free": true, "tags": ["a", "b"]})
    );
    assert!(r.output.as_str().unwrap().starts_with("Here you go:"));
    assert_eq!(r.status, StepStatus::Success);
    // Silent: no chat message event.
    assert_eq!(events, ["ask:start", "ask:done"]);
}

#[tokio::test]
async fn llm_gets_the_truncated_chain_state_and_output_is_truncated() {
    let host = Host::with_llm(|req| {
        Ok(LlmReply::text(if req.step_id == "long" {
            "z".repeat(5000)
        } else {
            "ok".into()
        }))
    });
    let d = doc(json!({"steps": [
        {"id": "long", "type": "llm", "prompt": "x"},
        {"id": "next", "type": "llm", "prompt": "y"}
    ]}));
    let e = engine(host);
    let (out, events) = run(&e, &d, &Globals::default()).await;
    let long = out
        .result("long")
        .unwrap()
        .output
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        long.chars().count(),
        1601,
        "1600 characters and an ellipsis"
    );
    assert!(long.ends_with('…'));
    let state = &e.backend().llm_calls()[1].chain_state;
    assert!(state.starts_with("{\"long\":{\"data\":null,\"output\":\"zzz"));
    assert!(state.contains("z…\"}}"), "the stored (truncated) output");
    // With longer stored outputs, the chain state is cut at 2,000 characters.
    let host = Host::with_llm(|req| {
        Ok(LlmReply::text(if req.step_id == "long" {
            "z".repeat(5000)
        } else {
            "ok".into()
        }))
    });
    let mut config = common::config();
    config.max_output_chars = 10_000;
    let e2 = ontheia::Engine::with_config(host, config);
    run(&e2, &d, &Globals::default()).await;
    let state = &e2.backend().llm_calls()[1].chain_state;
    assert_eq!(state.chars().count(), 2001);
    assert!(state.ends_with("zz…"));
    // Non-silent answers are messages for the chat stream.
    assert_eq!(
        events,
        [
            "long:start",
            "long:message",
            "long:done",
            "next:start",
            "next:message",
            "next:done"
        ]
    );
}

#[tokio::test]
async fn output_limits_are_configurable() {
    let host = Host::with_llm(|_| Ok(LlmReply::text("abcdefghij")));
    let mut config = common::config();
    config.max_output_chars = 4;
    config.event_output_chars = 2;
    let e = ontheia::Engine::with_config(host, config);
    let d = doc(
        json!({"steps": [{"id": "m", "type": "llm", "prompt": "x", "params": {"silent": true}}]}),
    );
    let mut outputs = Vec::new();
    let out = e
        .run(
            &d,
            &Globals::default(),
            |ev: &ontheia::Event<'_>| outputs.push(ev.output.map(str::to_owned)),
            Default::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.result("m").unwrap().output, "abcd…");
    assert_eq!(outputs, [None, Some("ab…".to_owned())]);
}

#[tokio::test]
async fn tool_step_joins_text_parts_and_keeps_the_raw_result() {
    let d = doc(json!({"steps": [
        {"id": "now", "type": "tool", "server": "time", "tool": "now"},
        {"id": "echo", "type": "tool", "server": "fs", "tool": "echo", "args": {"when": "${steps.now.data.datetime}", "n": 3, "list": ["${input}"]}},
        {"id": "multi", "type": "tool", "params": {"server": "x", "tool": "multi"}},
        {"id": "up", "type": "tool", "server": "x", "tool": "upper", "args": {"text": "hello"}},
        {"id": "bad", "type": "tool", "server": "x", "tool": "missing"},
        {"id": "warn", "type": "tool", "server": "x", "tool": "warn"}
    ]}));
    let e = engine(Host::default());
    let (out, _) = run(&e, &d, &Globals::with_input("q")).await;
    assert_eq!(out.result("now").unwrap().data["timezone"], "Europe/Berlin");
    let echo = out.result("echo").unwrap();
    assert_eq!(
        echo.data,
        json!({"when": "2026-12-01T14:05:00+01:00", "n": 3, "list": ["q"]})
    );
    assert_eq!(echo.result.as_ref().unwrap()["content"][0]["type"], "text");
    let calls = e.backend().tool_calls();
    assert_eq!(calls[1].server, "fs");
    assert_eq!(calls[1].args["n"], 3);
    let multi = out.result("multi").unwrap();
    assert_eq!(multi.output, "{\"a\": 1}\nplain");
    assert_eq!(multi.data, json!([{"a": 1}, "plain"]));
    assert_eq!(out.result("up").unwrap().data, "HELLO");
    let bad = out.result("bad").unwrap();
    assert_eq!(bad.status, StepStatus::Failed);
    assert_eq!(bad.error.as_deref(), Some("denied: no tool x/missing"));
    assert_eq!(bad.output, Value::Null);
    let warn = out.result("warn").unwrap();
    assert_eq!(warn.status, StepStatus::Success);
    assert_eq!(warn.warnings, ["tool reported an error: quota low"]);
}

#[tokio::test]
async fn memory_write_then_search() {
    let d = doc(json!({"steps": [
        {"id": "w", "type": "memory_write", "params": {"namespace": "vector.user.${user_id}.notes", "content": "User Input: ${input}", "metadata": {"source": "debug", "who": "${user_id}"}}},
        {"id": "r", "type": "memory_search", "params": {"namespaces": ["vector.user.${user_id}.notes"], "query": "tea", "top_k": 3}},
        {"id": "r2", "type": "memory_search", "params": {"namespaces": ["vector.user.${user_id}.notes"]}}
    ]}));
    let g = Globals {
        user_id: Some("u1".into()),
        ..Globals::with_input("I like tea")
    };
    let e = engine(Host::default());
    let (out, _) = run(&e, &d, &g).await;
    let mem = e.backend().memory.lock().unwrap().clone();
    assert_eq!(mem[0].0, "vector.user.u1.notes");
    assert_eq!(mem[0].1, "User Input: I like tea");
    assert_eq!(mem[0].2["source"], "chain_step");
    assert_eq!(mem[0].2["who"], "u1");
    assert_eq!(mem[0].2["step_id"], "w");
    assert_eq!(out.result("w").unwrap().data["count"], 1);
    let r = out.result("r").unwrap();
    assert_eq!(r.data["hits"][0]["content"], "User Input: I like tea");
    assert_eq!(
        serde_json::from_str::<Value>(r.output.as_str().unwrap()).unwrap(),
        r.data
    );
    let searches: Vec<_> = e
        .backend()
        .calls()
        .into_iter()
        .filter_map(|c| {
            if let Call::Search(s) = c {
                Some(s)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(searches[0].top_k, 3);
    assert_eq!(searches[0].query, "tea");
    // Defaults: the user's input as query, top_k 5.
    assert_eq!(searches[1].top_k, 5);
    assert_eq!(searches[1].query, "I like tea");
}

#[tokio::test]
async fn transform_text_json_and_default() {
    let d = doc(json!({"steps": [
        {"id": "json", "type": "transform", "prompt": "{name: '${input}', n: 2}", "params": {"output_format": "json", "silent": true}},
        {"id": "text", "type": "transform", "prompt": "{\"keep\": \"as text\"}", "params": {"output_format": "text", "silent": true}},
        {"id": "auto", "type": "transform", "params": {"template": "[1, 2, 3]", "silent": true}},
        {"id": "plain", "type": "transform", "prompt": "Hello ${steps.json.data.name}"},
        {"id": "notjson", "type": "transform", "prompt": "no json here", "params": {"output_format": "json"}}
    ]}));
    let (out, events) = run(&engine(Host::default()), &d, &Globals::with_input("Ada")).await;
    assert_eq!(
        out.result("json").unwrap().data,
        json!({"name": "Ada", "n": 2})
    );
    assert_eq!(
        out.result("json").unwrap().output,
        json!({"name": "Ada", "n": 2})
    );
    assert_eq!(
        out.result("text").unwrap().output,
        "{\"keep\": \"as text\"}"
    );
    assert_eq!(out.result("auto").unwrap().data, json!([1, 2, 3]));
    assert_eq!(out.result("plain").unwrap().output, "Hello Ada");
    assert_eq!(out.result("notjson").unwrap().status, StepStatus::Failed);
    assert!(events.contains(&"plain:message".to_owned()));
    assert!(!events.contains(&"json:message".to_owned()));
}

#[tokio::test]
async fn rest_call_against_a_real_server() {
    let base = start_server().await;
    let d = doc(json!({"steps": [
        {"id": "get", "type": "rest_call", "url": format!("{base}/weather?city=${{input}}")},
        {"id": "post", "type": "rest_call", "method": "post", "url": format!("{base}/echo"),
         "headers": {"Authorization": "Bearer ${user_id}"}, "body": {"city": "${steps.get.data.city}", "n": 1}},
        {"id": "messy", "type": "rest_call", "url": format!("{base}/messy")},
        {"id": "fail", "type": "rest_call", "url": format!("{base}/fail")},
        {"id": "denied", "type": "rest_call", "url": "http://example.invalid/x"}
    ]}));
    let g = Globals {
        user_id: Some("u1".into()),
        ..Globals::with_input("Munich")
    };
    let e = engine(Host::default());
    let (out, _) = run(&e, &d, &g).await;
    let get = out.result("get").unwrap();
    assert_eq!(get.data, json!({"city": "Munich", "temp": -3.5}));
    assert_eq!(get.result.as_ref().unwrap()["status"], 200);
    assert_eq!(get.result.as_ref().unwrap()["ok"], true);
    let post = out.result("post").unwrap();
    assert_eq!(post.data["content_type"], "application/json");
    assert_eq!(post.data["authorization"], "Bearer u1");
    assert_eq!(
        serde_json::from_str::<Value>(post.data["body"].as_str().unwrap()).unwrap(),
        json!({"city": "Munich", "n": 1})
    );
    assert_eq!(
        out.result("messy").unwrap().data,
        json!({"city": "Berlin", "temp": 3})
    );
    let fail = out.result("fail").unwrap();
    assert_eq!(fail.status, StepStatus::Success);
    assert_eq!(fail.result.as_ref().unwrap()["status"], 500);
    assert_eq!(fail.warnings.len(), 1);
    let denied = out.result("denied").unwrap();
    assert_eq!(denied.status, StepStatus::Failed);
    assert!(
        denied
            .error
            .as_ref()
            .unwrap()
            .contains("HTTP GET to http://example.invalid/x failed")
    );
}

fn sub_chain(steps: Value) -> AgentPlan {
    AgentPlan::Chain {
        document: Box::new(doc(json!({ "steps": steps }))),
        agent_id: None,
        task_id: Some("t-sub".into()),
    }
}

#[tokio::test]
async fn agent_delegation_chain_llm_and_reply() {
    let mut host = Host::with_llm(|req| {
        Ok(LlmReply::text(format!(
            "[{}|{}] {}",
            req.system_prompt.clone().unwrap_or_default(),
            req.model.clone().unwrap_or_default(),
            req.prompt
        )))
    });
    host.agents.insert(
        "researcher".into(),
        sub_chain(json!([
            {"id": "inner", "type": "transform", "prompt": "{\"got\": \"${input}\", \"agent\": \"${agent_id}\", \"task\": \"${task_id}\"}", "params": {"silent": true}}
        ])),
    );
    host.agents.insert(
        "writer".into(),
        AgentPlan::Llm {
            system_prompt: Some("persona".into()),
            model: Some("m1".into()),
        },
    );
    host.agents.insert(
        "oracle".into(),
        AgentPlan::Reply(LlmReply::text("42 {\"answer\": 42}")),
    );
    let d = doc(json!({"steps": [
        {"id": "r", "type": "agent", "agent_id": "researcher", "input": "find ${input}", "params": {"silent": true}},
        {"id": "w", "type": "agent", "agent_id": "writer", "task_id": "draft", "chain_id": "c1"},
        {"id": "o", "type": "agent", "params": {"agent_id": "oracle"}},
        {"id": "x", "type": "agent", "agent_id": "nobody"}
    ]}));
    let e = engine(host);
    let (out, _) = run(&e, &d, &Globals::with_input("tea")).await;
    assert_eq!(
        out.result("r").unwrap().data,
        json!({"got": "find tea", "agent": "researcher", "task": "t-sub"})
    );
    assert_eq!(out.result("w").unwrap().output, "[persona|m1] tea");
    assert_eq!(out.result("o").unwrap().data, json!({"answer": 42}));
    assert!(
        out.result("x")
            .unwrap()
            .error
            .as_ref()
            .unwrap()
            .contains("could not be found")
    );
    let agents: Vec<_> = e
        .backend()
        .calls()
        .into_iter()
        .filter_map(|c| {
            if let Call::Agent(a) = c {
                Some(a)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(agents[0].input, "find tea");
    assert_eq!(agents[0].depth, 1);
    assert_eq!(agents[1].task_id.as_deref(), Some("draft"));
    assert_eq!(agents[1].chain_id.as_deref(), Some("c1"));
}

#[tokio::test]
async fn agent_nesting_stops_at_five_levels() {
    // Agent "deep" delegates to itself forever.
    let mut host = Host::default();
    host.agents.insert(
        "deep".into(),
        sub_chain(json!([
            {"id": "again", "type": "agent", "agent_id": "deep", "input": "${input}+", "params": {"silent": true}},
            {"id": "report", "type": "transform", "prompt": "${steps.again.error}${steps.again.output}", "params": {"silent": true}}
        ])),
    );
    let d = doc(
        json!({"steps": [{"id": "start", "type": "agent", "agent_id": "deep", "params": {"silent": true}}]}),
    );
    let e = engine(host);
    let mut depths = Vec::new();
    let out = e
        .run(
            &d,
            &Globals::with_input("x"),
            |ev: &ontheia::Event<'_>| depths.push(ev.depth),
            Default::default(),
        )
        .await
        .unwrap();
    let agents: Vec<_> = e
        .backend()
        .calls()
        .into_iter()
        .filter_map(|c| {
            if let Call::Agent(a) = c {
                Some(a)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(agents.len(), 5, "levels 1 to 5 are delegated");
    assert_eq!(agents.last().unwrap().input, "x++++");
    assert_eq!(*depths.iter().max().unwrap(), 5);
    assert_eq!(
        out.result("start").unwrap().output,
        "maximum agent delegation depth (5) reached"
    );
}

#[tokio::test]
async fn an_invalid_sub_chain_fails_the_agent_step() {
    let mut host = Host::default();
    let bad: Document = serde_json::from_value(json!({"steps": [{"id": "l", "type": "loop", "count": 99, "steps": [{"id": "z", "type": "delay", "delay_ms": 0}]}]})).unwrap();
    host.agents.insert(
        "bad".into(),
        AgentPlan::Chain {
            document: Box::new(bad),
            agent_id: None,
            task_id: None,
        },
    );
    let d = doc(json!({"steps": [{"id": "a", "type": "agent", "agent_id": "bad"}]}));
    let (out, _) = run(&engine(host), &d, &Globals::default()).await;
    let err = out.result("a").unwrap().error.clone().unwrap();
    assert!(
        err.contains("agent chain is invalid") && err.contains("$.steps[0].count"),
        "{err}"
    );
}

#[tokio::test]
async fn unsupported_kinds_fail_their_steps() {
    struct Nothing;
    impl ontheia::Backend for Nothing {}
    let d = doc(json!({"steps": [
        {"id": "m", "type": "llm", "prompt": "x"},
        {"id": "t", "type": "transform", "prompt": "fine"}
    ]}));
    let e = ontheia::Engine::new(Nothing);
    let out = e
        .run(&d, &Globals::default(), (), Default::default())
        .await
        .unwrap();
    assert_eq!(
        out.result("m").unwrap().error.as_deref(),
        Some("llm steps are not supported by this host")
    );
    assert_eq!(out.result("t").unwrap().output, "fine");
    let _ = Map::<String, Value>::new();
}

#[tokio::test]
async fn a_type_erased_backend_runs_the_same() {
    use ontheia::{DynBackend, SharedBackend};
    use std::sync::Arc;
    let host: Arc<dyn DynBackend> = Arc::new(Host::with_llm(|req| {
        Ok(LlmReply::text(format!("{{\"p\": \"{}\"}}", req.prompt)))
    }));
    let e = ontheia::Engine::with_config(SharedBackend(host), common::config());
    let d = doc(json!({"steps": [
        {"id": "m", "type": "llm", "prompt": "hi", "params": {"silent": true}},
        {"id": "c", "type": "tool", "server": "s", "tool": "counter"},
        {"id": "w", "type": "memory_write", "params": {"namespace": "n", "content": "${steps.m.data.p}"}},
        {"id": "r", "type": "memory_search", "params": {"namespaces": ["n"], "query": "hi"}}
    ]}));
    let out = e
        .run(&d, &Globals::default(), (), Default::default())
        .await
        .unwrap();
    assert_eq!(out.result("m").unwrap().data, json!({"p": "hi"}));
    assert_eq!(out.result("c").unwrap().data, json!({"n": 1}));
    assert_eq!(out.result("r").unwrap().data["hits"][0]["content"], "hi");
}
