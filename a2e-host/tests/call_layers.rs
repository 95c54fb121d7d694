//! Layers added to the call pipeline see every call before its plugin runs:
//! an agent's tool and skill calls, a skill's own tool calls, chain nodes.

use std::sync::{Arc, Mutex};

use a2e_host::plugin::{SkillCall, SkillOutput, SkillPlugin, Toolbox};
use a2e_host::{
    CallHead, CallLayer, CallOptions, CallTarget, Host, HostConfig, HostError, HostResult,
};
use a2e_proto::{ChainRequest, ErrorCode, SkillCallRequest, SkillDefinition, ToolCallRequest};
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

/// Records each call it sees, refuses `forbidden`, and doubles `n`.
#[derive(Default, Clone)]
struct Gate {
    seen: Arc<Mutex<Vec<String>>>,
}

impl CallLayer for Gate {
    fn before<'a>(&'a self, call: CallHead<'a>) -> BoxFuture<'a, HostResult<()>> {
        Box::pin(async move {
            let target = match call.target {
                CallTarget::Tool => "tool",
                CallTarget::Skill => "skill",
                _ => "other",
            };
            self.seen
                .lock()
                .unwrap()
                .push(format!("{target}:{}", call.name));
            if call.name == "forbidden" {
                return Err(HostError::Denied(
                    "`forbidden` needs a person's approval".into(),
                ));
            }
            if let Some(n) = call.args.get("n").and_then(Value::as_i64) {
                call.args.insert("n".into(), json!(n * 2));
            }
            Ok(())
        })
    }
}

/// A skill that calls `echo` through its host.
struct Relay;

impl SkillPlugin<HostError> for Relay {
    fn name(&self) -> &str {
        "relay"
    }

    fn skills(&self) -> Vec<SkillDefinition> {
        vec![SkillDefinition::new("relay", "Calls echo")]
    }

    async fn call(
        &self,
        _: &str,
        _: Map<String, Value>,
        call: SkillCall<HostError>,
    ) -> HostResult<SkillOutput> {
        let out = call
            .host
            .call_tool(ToolCallRequest::new("echo", json!({"n": 1})), &call.ctx)
            .await?;
        Ok(out.data.into())
    }
}

fn host(gate: &Gate) -> Arc<Host> {
    let tools = Toolbox::new("t")
        .tool("echo", "Echoes", |args: Value, _cx| async move { Ok(args) })
        .tool("forbidden", "Never runs", |_args: Value, _cx| async move {
            Ok::<Value, a2e_host::plugin::Error>(json!({"ran": true}))
        });
    Host::builder(HostConfig::default())
        .with_tool_plugin(tools)
        .with_skill_plugin(Relay)
        .with_layer(gate.clone())
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_layer_changes_arguments_and_refuses_calls() {
    let gate = Gate::default();
    let host = host(&gate);
    let echoed = host
        .call_tool(
            ToolCallRequest::new("echo", json!({"n": 21})),
            CallOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(echoed.data, json!({"n": 42}));
    let refused = host
        .call_tool(
            ToolCallRequest::new("forbidden", json!({})),
            CallOptions::new(),
        )
        .await
        .err()
        .map(|e| (e.code(), e.to_string()));
    let (code, message) = refused.expect("the layer refuses the call");
    assert_eq!(code, ErrorCode::TOOL_DENIED);
    assert!(message.contains("approval"), "{message}");
}

#[tokio::test]
async fn a_skills_own_tool_calls_and_chain_nodes_pass_the_layers() {
    let gate = Gate::default();
    let host = host(&gate);
    let relayed = host
        .call_skill(
            SkillCallRequest::new("relay", json!({})),
            CallOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(relayed.data, json!({"n": 2}), "{relayed:?}");
    let chain: ChainRequest = serde_json::from_value(json!({
        "type": "chain/req", "id": "c1", "chain_id": "c1", "entry_node": "a",
        "nodes": [
            {"node_id": "a", "kind": "tool", "name": "echo", "input": {"n": 5}, "next_node": "b"},
            {"node_id": "b", "kind": "tool", "name": "forbidden", "input": {}}
        ]
    }))
    .unwrap();
    let resp = a2e_host::chains::run_request(&host, &chain, CallOptions::new())
        .await
        .unwrap();
    assert!(!resp.success, "the refused node fails the chain: {resp:?}");
    let error = serde_json::to_string(&resp.error).unwrap();
    assert!(error.contains("approval"), "{error}");
    assert_eq!(
        *gate.seen.lock().unwrap(),
        ["skill:relay", "tool:echo", "tool:echo", "tool:forbidden"]
    );
}

/// Waits `wait` before every call of `echo`, and does not apply to others.
struct Slow {
    wait: std::time::Duration,
    runs: Arc<Mutex<u32>>,
}

impl CallLayer for Slow {
    fn applies(&self, _: CallTarget, name: &str, _: &a2e_host::plugin::Extensions) -> bool {
        name == "echo"
    }

    fn before<'a>(&'a self, _call: CallHead<'a>) -> BoxFuture<'a, HostResult<()>> {
        Box::pin(async move {
            *self.runs.lock().unwrap() += 1;
            tokio::time::sleep(self.wait).await;
            Ok(())
        })
    }
}

#[tokio::test]
async fn a_layers_wait_is_not_the_calls_time_and_ends_with_its_caller() {
    let runs = Arc::new(Mutex::new(0));
    let tools = Toolbox::new("t")
        .tool("echo", "Echoes", |args: Value, _cx| async move { Ok(args) })
        .tool(
            "other",
            "Echoes",
            |args: Value, _cx| async move { Ok(args) },
        );
    let host = Host::builder(HostConfig::default())
        .with_tool_plugin(tools)
        .with_layer(Slow {
            wait: std::time::Duration::from_millis(1500),
            runs: runs.clone(),
        })
        .build()
        .unwrap();
    // A one-second call whose layer waits longer still runs.
    let mut req = ToolCallRequest::new("echo", json!({"n": 1}));
    req.timeout = 1;
    let done = host.call_tool(req, CallOptions::new()).await.unwrap();
    assert!(done.success, "{done:?}");
    assert_eq!(*runs.lock().unwrap(), 1);
    // A layer that does not apply is not run.
    let other = host
        .call_tool(ToolCallRequest::new("other", json!({})), CallOptions::new())
        .await
        .unwrap();
    assert!(other.success);
    assert_eq!(*runs.lock().unwrap(), 1);
    // The caller's cancellation ends the wait (of half a minute here).
    let host = Host::builder(HostConfig::default())
        .with_tool_plugin(
            Toolbox::new("t").tool("echo", "Echoes", |args: Value, _cx| async move { Ok(args) }),
        )
        .with_layer(Slow {
            wait: std::time::Duration::from_secs(30),
            runs: runs.clone(),
        })
        .build()
        .unwrap();
    let token = tokio_util::sync::CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        cancel.cancel();
    });
    let started = std::time::Instant::now();
    let cancelled = host
        .call_tool(
            ToolCallRequest::new("echo", json!({})),
            CallOptions::new().cancel(&token),
        )
        .await
        .unwrap();
    assert_eq!(
        cancelled.error_code,
        Some(ErrorCode::CANCELLED),
        "{cancelled:?}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}
