//! `a2e-conformance client-driver TARGET`: `a2e-client` doing what each
//! client scenario asks (`A2E_CONFORMANCE_SCENARIO`), and printing its report.
//! Other clients write a driver like this one in their own language.

use std::process::ExitCode;
use std::time::Duration;

use a2e_client::proto::{A2ECapability, ChainNode, ChainRequest, NodeKind, ProcSpawnRequest};
use a2e_client::{Client, ClientBuilder, ClientError, SkillCall, ToolCall};
use futures::StreamExt;
use serde_json::{Value, json};

/// Runs the scenario named in the environment against `target`.
pub async fn main(target: &str) -> ExitCode {
    let scenario = std::env::var("A2E_CONFORMANCE_SCENARIO").unwrap_or_default();
    let outcome = tokio::time::timeout(Duration::from_secs(120), run(&scenario, target)).await;
    let (report, ok) = match outcome {
        Ok(Ok(report)) => (report, true),
        Ok(Err(e)) => (json!({"error": e}), false),
        Err(_) => (json!({"error": "the driver ran out of time"}), false),
    };
    println!("{report}");
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn builder(scenario: &str) -> ClientBuilder {
    let cap = match scenario {
        "skills" => A2ECapability::SKILL,
        "chain" => A2ECapability::CHAINS,
        "proc" => A2ECapability::PROC,
        _ => A2ECapability::TOOLS,
    };
    let mut b = Client::builder()
        .agent_id("conformance-client")
        .capabilities([cap])
        .request_timeout(Duration::from_secs(30))
        .handshake_timeout(Duration::from_secs(15));
    if let Ok(token) = std::env::var("A2E_CONFORMANCE_AUTH_TOKEN") {
        b = b.auth_token(token);
    }
    b
}

async fn connect(b: ClientBuilder, target: &str) -> Result<Client, ClientError> {
    if target.starts_with("ws://") {
        b.connect_ws(target).await
    } else if target.starts_with("http://") {
        b.connect_http(target).await
    } else {
        b.connect_stdio(tokio::process::Command::new(target)).await
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

async fn run(scenario: &str, target: &str) -> Result<Value, String> {
    let b = builder(scenario);
    if scenario == "handshake-refused" {
        return match connect(b, target).await {
            Ok(c) => {
                c.close().await;
                Err("the handshake was accepted".into())
            }
            Err(ClientError::HandshakeRefused { reason }) => Ok(json!({"reason": reason})),
            Err(e) => Err(err(e)),
        };
    }
    let client = connect(b, target).await.map_err(err)?;
    let report = act(scenario, &client).await;
    if scenario != "shutdown" {
        client.close().await;
    }
    report
}

async fn act(scenario: &str, client: &Client) -> Result<Value, String> {
    let tools = client.tools();
    match scenario {
        "handshake" => {
            client.ping().await.map_err(err)?;
            Ok(json!({"session_id": client.session_id(), "max_parallel": client.max_parallel()}))
        }
        "auth" | "auth-bearer" => {
            client.ping().await.map_err(err)?;
            Ok(json!({}))
        }
        "tools" => {
            let list = tools.list().await.map_err(err)?;
            let names: Vec<&str> = list.iter().map(|t| t.name.as_str()).collect();
            let r = tools
                .call("echo", json!({"text": "hello"}))
                .await
                .map_err(err)?;
            Ok(json!({"tools": names, "result": r.data}))
        }
        "streaming" => {
            let mut events = Vec::new();
            let r = tools
                .call_with_events(ToolCall::new("stream", json!({})), |e| {
                    events.push(json!({"seq": e.seq, "kind": e.kind, "data": e.data}));
                })
                .await
                .map_err(err)?;
            Ok(json!({"events": events, "result": r.data}))
        }
        "interleaved" => {
            let collect = |name: &'static str, n: u64| async move {
                let mut events = Vec::new();
                let r = tools
                    .call_with_events(ToolCall::new(name, json!({"n": n})), |e| {
                        events.push(Value::Object(e.data))
                    })
                    .await?;
                Ok::<_, ClientError>(json!({"events": events, "result": r.data}))
            };
            let (slow, fast) = tokio::join!(collect("slow", 1), collect("fast", 2));
            Ok(json!({"slow": slow.map_err(err)?, "fast": fast.map_err(err)?}))
        }
        "refused" => {
            let code = match tools.call("missing", json!({})).await {
                Err(e) => e.code().map(ToString::to_string).unwrap_or_default(),
                Ok(_) => String::new(),
            };
            let after = tools
                .call("echo", json!({"text": "after"}))
                .await
                .map_err(err)?;
            Ok(json!({"error_code": code, "after": after.data}))
        }
        "failed" => {
            let r = tools.call("flaky", json!({})).await.map_err(err)?;
            Ok(json!({"success": r.success, "error_code": r.error_code, "error": r.error}))
        }
        "host-closes" => {
            let call = ToolCall::new("hang", json!({})).timeout_secs(60);
            match tools.call_with(call).await {
                Ok(r) => Err(format!("the call returned {r:?}")),
                Err(e) => Ok(json!({"error": e.to_string()})),
            }
        }
        "seq-gap" => {
            let mut seqs = Vec::new();
            let r = tools
                .call_with_events(ToolCall::new("gappy", json!({})), |e| seqs.push(e.seq))
                .await
                .map_err(err)?;
            Ok(json!({"seqs": seqs, "result": r.data}))
        }
        "large" => {
            let r = tools.call("large", json!({})).await.map_err(err)?;
            Ok(json!({"length": r.data.as_str().map_or(0, str::len)}))
        }
        "unknown" | "unknown-answer" | "host-ping" => {
            let text = match scenario {
                "unknown" => "u",
                "unknown-answer" => "v",
                _ => "p",
            };
            let r = tools
                .call("echo", json!({"text": text}))
                .await
                .map_err(err)?;
            Ok(json!({"result": r.data}))
        }
        "skills" => {
            let skills = client.skills().discover().await.map_err(err)?;
            let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
            let mut seqs = Vec::new();
            let r = client
                .skills()
                .call_with_events(SkillCall::new("summarise", json!({"text": "abc"})), |e| {
                    seqs.push(e.seq)
                })
                .await
                .map_err(err)?;
            Ok(json!({"skills": names, "seqs": seqs, "result": r.data}))
        }
        "chain" => {
            let mut node = ChainNode::new("a", NodeKind::TOOL, "echo");
            node.input.insert("text".into(), json!("c"));
            let req = ChainRequest {
                nodes: vec![node],
                entry_node: "a".into(),
                ..ChainRequest::default()
            };
            let mut phases = Vec::new();
            let resp = client
                .chains()
                .run_with_events(req, |e| phases.push(format!("{}:{}", e.node_id, e.phase)))
                .await
                .map_err(err)?;
            Ok(
                json!({"phases": phases, "success": resp.success, "final_output": resp.final_output}),
            )
        }
        "proc" => {
            let mut p = client
                .proc()
                .spawn_with(ProcSpawnRequest {
                    cmd: vec!["sh".into(), "-c".into(), "echo hi".into()],
                    ..ProcSpawnRequest::default()
                })
                .await
                .map_err(err)?;
            let mut stdout = Vec::new();
            while let Some(e) = p.next().await {
                if let Some(t) = e.data.get("text").and_then(Value::as_str) {
                    stdout.push(t.to_owned());
                }
            }
            let code = p.exit().and_then(|x| x.code);
            Ok(json!({"stdout": stdout.join("\n"), "code": code}))
        }
        "shutdown" => {
            client.shutdown(2).await.map_err(err)?;
            Ok(json!({}))
        }
        other => Err(format!("unknown scenario `{other}`")),
    }
}
