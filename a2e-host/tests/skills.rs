//! Skills through a session: Rust skill plugins, discovery filters, status
//! gating, Blocked on missing tools (and tools that load on first use),
//! argument validation, credential redaction, and the audit log.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use a2e_host::plugin::{CallContext, SkillCall, SkillOutput, SkillPlugin, ToolOutput, ToolPlugin};
use a2e_host::transport::stdio::{StdioOptions, serve};
use a2e_host::{CallOptions, Host, HostConfig, HostError, HostResult};
use a2e_proto::{EventData, EventKind, LLMConfig, SkillDefinition, SkillStatus, ToolDefinition};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

struct Skills;

fn skill(name: &str, tags: &[&str], category: &str) -> SkillDefinition {
    let mut s = SkillDefinition::new(name, &format!("The {name} skill"));
    s.tags = Some(tags.iter().map(|t| (*t).to_owned()).collect());
    s.category = Some(category.into());
    s
}

impl SkillPlugin<HostError> for Skills {
    fn name(&self) -> &str {
        "test_skills"
    }

    fn skills(&self) -> Vec<SkillDefinition> {
        let mut greet = skill("greet", &["Social"], "chat");
        greet.input_schema = json!({"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]})
            .as_object()
            .unwrap()
            .clone();
        let mut creds = Map::new();
        creds.insert("api_key".into(), json!("sk-live-very-secret"));
        greet.llm_config = Some(LLMConfig {
            provider_name: "acme".into(),
            provider_credentials: creds,
            provider_config: None,
            is_default: true,
        });
        let mut draft = skill("draft", &["writing"], "docs");
        draft.status = SkillStatus::CREATED;
        let mut needs = skill("needs_tools", &["ops"], "ops");
        needs.tools = Some(vec![json!("deploy_service"), json!({"name": "read_file"})]);
        let mut slow = skill("slow", &["x"], "x");
        slow.timeout_seconds = Some(1);
        vec![greet, draft, needs, skill("fail", &["x"], "x"), slow]
    }

    async fn call(
        &self,
        skill: &str,
        args: Map<String, Value>,
        call: SkillCall<HostError>,
    ) -> HostResult<SkillOutput> {
        match skill {
            "greet" => {
                call.ctx
                    .emit(EventKind::PROGRESS, EventData::progress(50, "thinking"))
                    .await;
                let who = args.get("who").and_then(Value::as_str).unwrap_or("?");
                // A skill can call the host's tools.
                let tools = call.host.tools().len();
                Ok(json!({"greeting": format!("hello, {who}"), "tools_seen": tools}).into())
            }
            "fail" => Err(HostError::Skill("it went wrong".into())),
            "slow" => {
                tokio::time::sleep(Duration::from_secs(30)).await;
                Ok(json!({"late": true}).into())
            }
            other => Err(HostError::UnknownSkill(other.into())),
        }
    }
}

type Session = (
    tokio::io::DuplexStream,
    tokio::io::Lines<BufReader<tokio::io::DuplexStream>>,
);

async fn session(config: HostConfig) -> Session {
    let host = Host::builder(config)
        .with_builtins()
        .with_skill_plugin(Skills)
        .build()
        .unwrap();
    connect(host).await
}

/// A handshaken stdio session with `host`: the agent's writer and lines.
async fn connect(host: Arc<Host>) -> Session {
    let (client_w, server_r) = tokio::io::duplex(1 << 16);
    let (server_w, client_r) = tokio::io::duplex(1 << 16);
    tokio::spawn(serve(host, server_r, server_w, StdioOptions::default()));
    let mut w = client_w;
    w.write_all(b"{\"type\":\"handshake/req\",\"id\":\"hs\",\"agent_id\":\"skill-tester\"}\n")
        .await
        .unwrap();
    let mut lines = BufReader::new(client_r).lines();
    lines.next_line().await.unwrap();
    (w, lines)
}

async fn ask(
    w: &mut tokio::io::DuplexStream,
    lines: &mut tokio::io::Lines<BufReader<tokio::io::DuplexStream>>,
    msg: Value,
) -> Value {
    let id = msg["id"].as_str().unwrap().to_owned();
    w.write_all(format!("{msg}\n").as_bytes()).await.unwrap();
    loop {
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["req_id"] == id.as_str() && !v["type"].as_str().unwrap().ends_with("event") {
            return v;
        }
    }
}

#[tokio::test]
async fn discovery_filters_statuses_and_redaction() {
    let (mut w, mut l) = session(HostConfig::default()).await;
    let all = ask(
        &mut w,
        &mut l,
        json!({"type": "skill/discover/req", "id": "d1"}),
    )
    .await;
    let names: Vec<&str> = all["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["draft", "fail", "greet", "needs_tools", "slow"]);
    let text = all.to_string();
    assert!(
        !text.contains("sk-live-very-secret"),
        "credentials leaked: {text}"
    );
    let greet = all["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "greet")
        .unwrap();
    assert_eq!(
        greet["llm_config"]["provider_credentials"]["api_key"],
        "[REDACTED]"
    );
    let needs = all["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "needs_tools")
        .unwrap();
    assert_eq!(needs["status"], "Blocked");
    // Tags: OR, case-insensitive; categories.
    let by_tag = ask(
        &mut w,
        &mut l,
        json!({"type": "skill/discover/req", "id": "d2", "filter_tags": ["social", "writing"]}),
    )
    .await;
    let names: Vec<&str> = by_tag["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["draft", "greet"]);
    let by_cat = ask(
        &mut w,
        &mut l,
        json!({"type": "skill/discover/req", "id": "d3", "filter_categories": ["ops"]}),
    )
    .await;
    assert_eq!(by_cat["skills"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn calls_validate_gate_and_report() {
    let (mut w, mut l) = session(HostConfig::default()).await;
    let ok = ask(
        &mut w,
        &mut l,
        json!({"type": "skill/call/req", "id": "c1", "name": "greet", "arguments": {"who": "Ada"}}),
    )
    .await;
    assert_eq!(ok["type"], "skill/call/resp");
    assert_eq!(ok["name"], "greet");
    assert_eq!(ok["data"]["success"], true);
    assert_eq!(ok["data"]["data"]["greeting"], "hello, Ada");
    assert!(ok["data"]["data"]["tools_seen"].as_u64().unwrap() >= 7);
    assert_eq!(ok["data"]["events"][0]["kind"], "progress");
    let bad = ask(
        &mut w,
        &mut l,
        json!({"type": "skill/call/req", "id": "c2", "name": "greet", "arguments": {"who": 42}}),
    )
    .await;
    assert_eq!(bad["type"], "error");
    assert_eq!(bad["code"], "schema_violation");
    assert!(
        bad["detail"]["violations"][0]
            .as_str()
            .unwrap()
            .contains("/who")
    );
    let draft = ask(
        &mut w,
        &mut l,
        json!({"type": "skill/call/req", "id": "c3", "name": "draft", "arguments": {}}),
    )
    .await;
    assert_eq!(draft["type"], "error");
    assert!(draft["message"].as_str().unwrap().contains("Created"));
    let blocked = ask(
        &mut w,
        &mut l,
        json!({"type": "skill/call/req", "id": "c4", "name": "needs_tools", "arguments": {}}),
    )
    .await;
    assert_eq!(blocked["type"], "error");
    assert!(
        blocked["message"]
            .as_str()
            .unwrap()
            .contains("deploy_service"),
        "{blocked}"
    );
    let failed = ask(
        &mut w,
        &mut l,
        json!({"type": "skill/call/req", "id": "c5", "name": "fail", "arguments": {}}),
    )
    .await;
    assert_eq!(failed["type"], "skill/call/resp");
    assert_eq!(failed["data"]["success"], false);
    assert_eq!(failed["data"]["error_code"], "skill_error");
    let unknown = ask(
        &mut w,
        &mut l,
        json!({"type": "skill/call/req", "id": "c6", "name": "nope", "arguments": {}}),
    )
    .await;
    assert_eq!(unknown["code"], "unknown_skill");
}

#[tokio::test]
async fn the_audit_log_has_one_line_per_request_without_argument_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let mut config = HostConfig {
        root: dir.path().to_path_buf(),
        ..HostConfig::default()
    };
    config.audit.path = path.clone();
    let (mut w, mut l) = session(config).await;
    ask(&mut w, &mut l, json!({"type": "skill/call/req", "id": "a1", "name": "greet", "arguments": {"who": "secret-person"}})).await;
    ask(&mut w, &mut l, json!({"type": "tool/call/req", "id": "a2", "tool_name": "read_file", "arguments": {"path": "missing"}})).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0]["type"], "skill/call/req");
    assert_eq!(lines[0]["name"], "greet");
    assert_eq!(lines[0]["agent"], "skill-tester");
    assert_eq!(lines[0]["success"], true);
    assert_eq!(lines[0]["arguments"], json!(["who"]));
    assert!(!text.contains("secret-person"));
    assert_eq!(lines[1]["name"], "read_file");
    assert_eq!(lines[1]["success"], false);
    assert_eq!(lines[1]["error_code"], "tool_error");
    assert!(lines[1]["duration_ms"].is_u64());
}

// On tokio's paused clock: the 1 s timeout fires at its virtual instant, so
// the bound on when the chain ended is exact, whatever the machine's load.
#[tokio::test(start_paused = true)]
async fn a_skill_s_own_timeout_bounds_it_inside_a_longer_chain() {
    let host = Host::builder(HostConfig {
        root: std::env::temp_dir(),
        ..HostConfig::default()
    })
    .with_skill_plugin(Skills)
    .build()
    .unwrap();
    let req: a2e_proto::ChainRequest = serde_json::from_value(json!({
        "type": "chain/req", "id": "c1", "chain_id": "slow", "entry_node": "s",
        "timeout": 60,
        "nodes": [{"node_id": "s", "kind": "skill", "name": "slow"}],
    }))
    .unwrap();
    let started = tokio::time::Instant::now();
    let cancel = tokio_util::sync::CancellationToken::new();
    let resp =
        a2e_host::chains::run_request(&host, &req, CallOptions::new().session("s").cancel(&cancel))
            .await
            .unwrap();
    assert!(!resp.success);
    let code = resp
        .error
        .as_ref()
        .and_then(|e| e.get("node_code"))
        .cloned();
    assert_eq!(code, Some(json!("timeout")), "{:?}", resp.error);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_millis(1500),
        "the skill's own 1 s timeout should end it, not the chain's 60 s: {took:?}"
    );
}

// Tools that load on first use (as mounted MCP servers that are not `eager`
// do) and the skills that declare them: a skill is not `Blocked` only because
// its tools have not been loaded yet, and a call loads them.

/// Offers `deploy_service` once asked to load (when `loads_anything`).
struct LazyTools {
    loaded: AtomicBool,
    loads: Arc<AtomicUsize>,
    loads_anything: bool,
}

impl ToolPlugin<HostError> for LazyTools {
    fn name(&self) -> &str {
        "lazy"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        if self.loaded.load(Ordering::SeqCst) {
            vec![ToolDefinition::new("deploy_service", "Deploys a service")]
        } else {
            Vec::new()
        }
    }

    async fn load_tools(&self, _include_deferred: bool) -> bool {
        self.loads.fetch_add(1, Ordering::SeqCst);
        self.loads_anything && !self.loaded.swap(true, Ordering::SeqCst)
    }

    async fn call(&self, _: &str, _: Map<String, Value>, _: CallContext) -> HostResult<ToolOutput> {
        Ok(json!({"deployed": true}).into())
    }
}

/// One skill, `deploy`, that declares the lazy tool and calls it.
struct DeploySkill;

impl SkillPlugin<HostError> for DeploySkill {
    fn name(&self) -> &str {
        "deploy_skills"
    }

    fn skills(&self) -> Vec<SkillDefinition> {
        let mut deploy = SkillDefinition::new("deploy", "Deploys through the lazy tool");
        deploy.tools = Some(vec![json!("deploy_service")]);
        vec![deploy]
    }

    async fn call(
        &self,
        _: &str,
        _: Map<String, Value>,
        call: SkillCall<HostError>,
    ) -> HostResult<SkillOutput> {
        let tool = call
            .host
            .tools()
            .into_iter()
            .find(|t| t.name == "deploy_service")
            .ok_or_else(|| HostError::Skill("the declared tool is missing".into()))?;
        Ok(json!({"via": tool.name}).into())
    }
}

/// A session with the lazy tools and the `deploy` skill, and how often the
/// host asked the tools to load.
async fn lazy_session(loads_anything: bool) -> (Session, Arc<AtomicUsize>) {
    let loads = Arc::new(AtomicUsize::new(0));
    let host = Host::builder(HostConfig::default())
        .with_tool_plugin(LazyTools {
            loaded: AtomicBool::new(false),
            loads: loads.clone(),
            loads_anything,
        })
        .with_skill_plugin(DeploySkill)
        .build()
        .unwrap();
    (connect(host).await, loads)
}

fn status_of(discovered: &Value, skill: &str) -> String {
    discovered["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == skill)
        .map(|s| s["status"].as_str().unwrap().to_owned())
        .unwrap()
}

#[tokio::test]
async fn discovery_loads_the_tools_a_skill_declares_once() {
    let ((mut w, mut l), loads) = lazy_session(true).await;
    let found = ask(
        &mut w,
        &mut l,
        json!({"type": "skill/discover/req", "id": "d1"}),
    )
    .await;
    assert_eq!(status_of(&found, "deploy"), "Published");
    assert_eq!(loads.load(Ordering::SeqCst), 1);
    // Nothing is missing any more: no second load.
    let again = ask(
        &mut w,
        &mut l,
        json!({"type": "skill/discover/req", "id": "d2"}),
    )
    .await;
    assert_eq!(status_of(&again, "deploy"), "Published");
    assert_eq!(loads.load(Ordering::SeqCst), 1);
    let listed = ask(&mut w, &mut l, json!({"type": "tool/list/req", "id": "l1"})).await;
    assert!(listed.to_string().contains("deploy_service"), "{listed}");
}

#[tokio::test]
async fn a_call_loads_the_tools_its_skill_declares() {
    let ((mut w, mut l), loads) = lazy_session(true).await;
    // No discovery first: the call itself finds the skill blocked, loads, runs.
    let resp = ask(
        &mut w,
        &mut l,
        json!({"type": "skill/call/req", "id": "c1", "name": "deploy", "arguments": {}}),
    )
    .await;
    assert_eq!(resp["data"]["success"], true, "{resp}");
    assert_eq!(resp["data"]["data"]["via"], "deploy_service", "{resp}");
    assert_eq!(loads.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_skill_whose_tools_never_load_stays_blocked_and_its_call_names_them() {
    let ((mut w, mut l), loads) = lazy_session(false).await;
    let found = ask(
        &mut w,
        &mut l,
        json!({"type": "skill/discover/req", "id": "d1"}),
    )
    .await;
    assert_eq!(status_of(&found, "deploy"), "Blocked");
    let resp = ask(
        &mut w,
        &mut l,
        json!({"type": "skill/call/req", "id": "c1", "name": "deploy", "arguments": {}}),
    )
    .await;
    assert_eq!(resp["type"], "error", "{resp}");
    assert_eq!(resp["code"], "skill_error", "{resp}");
    let message = resp["message"].as_str().unwrap();
    assert!(
        message.contains("is Blocked (missing tools: deploy_service)"),
        "{message}"
    );
    // Each use asks again (a server that failed may have come up since).
    assert_eq!(loads.load(Ordering::SeqCst), 2);
}
