//! Tools that load on first use (as mounted MCP servers that are not `eager`
//! do) and the skills that declare them: a skill is not `Blocked` only
//! because its tools have not been loaded yet, and a call loads them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use a2e_host::plugin::{CallContext, SkillCall, SkillOutput, SkillPlugin, ToolOutput, ToolPlugin};
use a2e_host::transport::stdio::{StdioOptions, serve};
use a2e_host::{Host, HostConfig, HostError, HostResult};
use a2e_proto::{SkillDefinition, ToolDefinition};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

/// Offers `deploy_service` once asked to load (when `loads_anything`).
struct LazyTools {
    loaded: AtomicBool,
    loads: Arc<AtomicUsize>,
    loads_anything: bool,
}

impl ToolPlugin for LazyTools {
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

impl SkillPlugin for DeploySkill {
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
        call: SkillCall,
    ) -> HostResult<SkillOutput> {
        let tool = call
            .host
            .registry()
            .tool("deploy_service")
            .ok_or_else(|| HostError::Skill("the declared tool is missing".into()))?;
        Ok(json!({"via": tool.def.name}).into())
    }
}

type Session = (DuplexStream, Lines<BufReader<DuplexStream>>);

async fn session(loads_anything: bool) -> (Session, Arc<AtomicUsize>) {
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
    let (mut w, server_r) = tokio::io::duplex(1 << 16);
    let (server_w, client_r) = tokio::io::duplex(1 << 16);
    tokio::spawn(serve(host, server_r, server_w, StdioOptions::default()));
    w.write_all(b"{\"type\":\"handshake/req\",\"id\":\"hs\",\"agent_id\":\"lazy-tester\"}\n")
        .await
        .unwrap();
    let mut lines = BufReader::new(client_r).lines();
    lines.next_line().await.unwrap();
    ((w, lines), loads)
}

async fn ask((w, lines): &mut Session, msg: Value) -> Value {
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
    let (mut s, loads) = session(true).await;
    let found = ask(&mut s, json!({"type": "skill/discover/req", "id": "d1"})).await;
    assert_eq!(status_of(&found, "deploy"), "Published");
    assert_eq!(loads.load(Ordering::SeqCst), 1);
    // Nothing is missing any more: no second load.
    let again = ask(&mut s, json!({"type": "skill/discover/req", "id": "d2"})).await;
    assert_eq!(status_of(&again, "deploy"), "Published");
    assert_eq!(loads.load(Ordering::SeqCst), 1);
    let listed = ask(&mut s, json!({"type": "tool/list/req", "id": "l1"})).await;
    assert!(listed.to_string().contains("deploy_service"), "{listed}");
}

#[tokio::test]
async fn a_call_loads_the_tools_its_skill_declares() {
    let (mut s, loads) = session(true).await;
    // No discovery first: the call itself finds the skill blocked, loads, runs.
    let resp = ask(
        &mut s,
        json!({"type": "skill/call/req", "id": "c1", "name": "deploy", "arguments": {}}),
    )
    .await;
    assert_eq!(resp["data"]["success"], true, "{resp}");
    assert_eq!(resp["data"]["data"]["via"], "deploy_service", "{resp}");
    assert_eq!(loads.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_skill_whose_tools_never_load_stays_blocked_and_its_call_names_them() {
    let (mut s, loads) = session(false).await;
    let found = ask(&mut s, json!({"type": "skill/discover/req", "id": "d1"})).await;
    assert_eq!(status_of(&found, "deploy"), "Blocked");
    let resp = ask(
        &mut s,
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
