//! Program skills (sandboxed) and Ontheia skills over the real binary
//! (`a2e serve --stdio`): events and results, `out_of_memory` and `sandbox_crash`
//! from real children, and an Ontheia chain called with `skill/call`.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use conformance::child::HostProcess;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

fn skill(dir: &Path, name: &str, text: &str) {
    std::fs::create_dir_all(dir.join("skills")).unwrap();
    std::fs::write(dir.join("skills").join(format!("{name}.md")), text).unwrap();
}

fn start(root: &Path) -> HostProcess {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args(["serve", "--stdio", "--root"]).arg(root);
    let mut host = HostProcess::spawn(cmd).unwrap();
    host.send(br#"{"type":"handshake/req","id":"hs","agent_id":"kinds"}"#)
        .unwrap();
    assert_eq!(host.answer("hs", WAIT, |_| {}).unwrap().0["ok"], true);
    host
}

fn call(host: &mut HostProcess, id: &str, name: &str, args: Value) -> (Value, Vec<Value>) {
    let req = json!({"type": "skill/call/req", "id": id, "name": name, "arguments": args, "streaming": true});
    host.send(req.to_string().as_bytes()).unwrap();
    host.answer(id, WAIT, |_| {}).unwrap()
}

#[test]
fn program_skills_run_sandboxed_and_report_how_they_ended() {
    let root = tempfile::tempdir().unwrap();
    skill(
        root.path(),
        "shout",
        r#"---
name: shout
description: Upper-cases a word, with a progress event
command: [sh, -c, "read -r args; echo '{\"event\": \"progress\", \"data\": {\"pct\": 50, \"message\": \"half\"}}'; echo \"{\\\"result\\\": {\\\"got\\\": $args}}\""]
input_schema:
  type: object
  properties: { word: { type: string } }
  required: [word]
---
Echoes its arguments back.
"#,
    );
    skill(
        root.path(),
        "hog",
        r#"---
name: hog
description: Allocates far past its memory limit
command: [python3, -c, "x = bytearray(2 * 1024 * 1024 * 1024)"]
memory_limit_mb: 256
---
"#,
    );
    skill(
        root.path(),
        "crasher",
        r#"---
name: crasher
description: Kills itself with SIGSEGV
command: [sh, -c, "kill -SEGV $$"]
---
"#,
    );
    let mut host = start(root.path());
    let (resp, events) = call(&mut host, "s1", "shout", json!({"word": "hi"}));
    assert_eq!(resp["type"], "skill/call/resp", "{resp}");
    assert_eq!(resp["data"]["success"], true, "{resp}");
    assert_eq!(resp["data"]["data"]["got"]["word"], "hi", "{resp}");
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "progress" && e["data"]["pct"] == 50),
        "{events:?}"
    );
    let (resp, _) = call(&mut host, "s2", "hog", json!({}));
    assert_eq!(resp["data"]["success"], false, "{resp}");
    assert_eq!(resp["data"]["error_code"], "out_of_memory", "{resp}");
    let (resp, _) = call(&mut host, "s3", "crasher", json!({}));
    assert_eq!(resp["data"]["success"], false, "{resp}");
    assert_eq!(resp["data"]["error_code"], "sandbox_crash", "{resp}");
    assert!(
        resp["data"]["error"].as_str().unwrap().contains("11")
            || resp["data"]["error"].as_str().unwrap().contains("SEGV"),
        "{resp}"
    );
    // A wrong argument is refused before anything runs; the host keeps serving.
    let (resp, _) = call(&mut host, "s4", "shout", json!({"word": 5}));
    assert_eq!(resp["type"], "error", "{resp}");
    assert_eq!(resp["code"], "schema_violation", "{resp}");
    host.send(br#"{"type":"ping","id":"p"}"#).unwrap();
    assert_eq!(host.answer("p", WAIT, |_| {}).unwrap().0["type"], "pong");
}

#[test]
fn an_ontheia_chain_in_a_skill_file_runs_with_skill_call() {
    let root = tempfile::tempdir().unwrap();
    skill(
        root.path(),
        "triage",
        r#"---
name: triage
description: Routes a request and remembers it
input_schema:
  type: object
  properties: { input: { type: string } }
  required: [input]
---
Routes the request by topic.

```ontheia
{"steps": [
  {"id": "route", "type": "router", "input": "${input}", "cases": [
    {"when": "weather", "steps": [{"id": "w", "type": "transform", "prompt": "forecast for ${user_id}"}]}
  ], "default": [{"id": "o", "type": "transform", "prompt": "other"}]},
  {"id": "save", "type": "memory_write", "params": {"namespace": "agent.${agent_id}.triage", "content": "asked about ${input}"}},
  {"id": "done", "type": "transform", "prompt": "routed ${input}"}
]}
```
"#,
    );
    let mut host = start(root.path());
    let (resp, events) = call(&mut host, "t1", "triage", json!({"input": "weather"}));
    assert_eq!(resp["type"], "skill/call/resp", "{resp}");
    assert_eq!(resp["data"]["success"], true, "{resp}");
    let data = &resp["data"]["data"];
    assert_eq!(data["w"]["output"], "forecast for kinds", "{resp}");
    assert_eq!(data["save"]["status"], "success", "{resp}");
    assert_eq!(resp["data"]["summary"], "routed weather", "{resp}");
    assert!(
        events.iter().any(|e| e["data"]["step_id"] == "route"),
        "{events:?}"
    );
    // The memory it wrote is the session's own.
    let req = json!({"type": "tool/call/req", "id": "m", "tool_name": "memory_search",
                     "arguments": {"query": "weather", "namespaces": ["agent.kinds.triage"]}});
    host.send(req.to_string().as_bytes()).unwrap();
    let (found, _) = host.answer("m", WAIT, |_| {}).unwrap();
    assert_eq!(
        found["data"]["data"]["hits"][0]["content"], "asked about weather",
        "{found}"
    );
}
