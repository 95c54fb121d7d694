//! A scripted model server for the LLM-skill tests: a small axum app on 127.0.0.1 (its
//! own thread and runtime) that answers each request with the next scripted turn, in the
//! dialect the request's path names (`/chat/completions`: OpenAI Chat Completions,
//! `/messages`: Anthropic Messages), streamed as Server-Sent Events when the request asks
//! for a stream and as one JSON body otherwise. It records every request it receives.
#![allow(dead_code)]

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};

/// The key the host is configured with; it must never show outside the request headers.
pub const FAKE_KEY: &str = "sk-FAKE-host-key-5d2e8a71c4";

/// One scripted model turn.
#[derive(Debug, Clone)]
pub enum Turn {
    /// A final answer.
    Text(String),
    /// Tool calls: (id, name, arguments as the model writes them).
    Tools(Vec<(String, String, String)>),
    /// An HTTP error status with a body.
    Status(u16, String),
    /// Never answers.
    Hang,
}

/// A final answer.
pub fn text(t: &str) -> Turn {
    Turn::Text(t.to_owned())
}

/// One tool call.
pub fn tool(id: &str, name: &str, args: Value) -> Turn {
    Turn::Tools(vec![(id.into(), name.into(), args.to_string())])
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: BTreeMap<String, String>,
    pub body: Value,
}

impl Received {
    /// The names of the tools offered in this request.
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| {
                t["function"]["name"]
                    .as_str()
                    .or_else(|| t["name"].as_str())
                    .map(str::to_owned)
            })
            .collect()
    }
}

#[derive(Clone, Default)]
struct Shared {
    script: Arc<Mutex<VecDeque<Turn>>>,
    received: Arc<Mutex<Vec<Received>>>,
}

/// A running scripted server.
pub struct Server {
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    shared: Shared,
}

impl Server {
    /// Starts a server answering `script` in order.
    pub fn start(script: Vec<Turn>) -> Self {
        let shared = Shared::default();
        shared.script.lock().unwrap().extend(script);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(shared.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                axum::serve(listener, app).await.unwrap();
            });
        });
        Server {
            base_url: format!("http://{addr}/v1"),
            shared,
        }
    }

    /// The requests received so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }
}

async fn answer(
    State(shared): State<Shared>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let headers: BTreeMap<String, String> = headers
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let anthropic = uri.path().ends_with("/messages");
    let stream = body["stream"] == json!(true);
    shared.received.lock().unwrap().push(Received {
        path: uri.path().to_owned(),
        headers,
        body,
    });
    let next = shared.script.lock().unwrap().pop_front();
    let turn = match next {
        Some(t) => t,
        None => Turn::Status(500, "script exhausted".into()),
    };
    if let Turn::Hang = turn {
        std::future::pending::<()>().await;
    }
    if let Turn::Status(code, body) = turn {
        return Response::builder()
            .status(code)
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap();
    }
    let (content_type, body) = match (anthropic, stream) {
        (false, false) => ("application/json", openai_json(&turn).to_string()),
        (false, true) => ("text/event-stream", openai_sse(&turn)),
        (true, false) => ("application/json", anthropic_json(&turn).to_string()),
        (true, true) => ("text/event-stream", anthropic_sse(&turn)),
    };
    Response::builder()
        .header("content-type", content_type)
        .body(Body::from(body))
        .unwrap()
}

/// Splits text in two pieces (on a character boundary) so streams carry several deltas.
fn halves(t: &str) -> (String, String) {
    let mut mid = t.len() / 2;
    while !t.is_char_boundary(mid) {
        mid -= 1;
    }
    (t[..mid].to_owned(), t[mid..].to_owned())
}

fn data(v: Value) -> String {
    format!("data: {v}\n\n")
}

fn openai_json(turn: &Turn) -> Value {
    let (message, finish) = match turn {
        Turn::Text(t) => (json!({"role": "assistant", "content": t}), "stop"),
        Turn::Tools(calls) => {
            let calls: Vec<Value> = calls
                .iter()
                .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}))
                .collect();
            (
                json!({"role": "assistant", "content": null, "tool_calls": calls}),
                "tool_calls",
            )
        }
        Turn::Status(..) | Turn::Hang => unreachable!(),
    };
    json!({"id": "c", "object": "chat.completion", "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
}

fn openai_sse(turn: &Turn) -> String {
    let chunk = |delta: Value, finish: Value| {
        data(
            json!({"id": "c", "object": "chat.completion.chunk", "model": "scripted",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let mut out = chunk(json!({"role": "assistant", "content": ""}), Value::Null);
    match turn {
        Turn::Text(t) => {
            let (a, b) = halves(t);
            out += &chunk(json!({"content": a}), Value::Null);
            out += &chunk(json!({"content": b}), Value::Null);
            out += &chunk(json!({}), json!("stop"));
        }
        Turn::Tools(calls) => {
            for (i, (id, name, args)) in calls.iter().enumerate() {
                out += &chunk(
                    json!({"tool_calls": [{"index": i, "id": id, "type": "function",
                        "function": {"name": name, "arguments": ""}}]}),
                    Value::Null,
                );
                let (a, b) = halves(args);
                for piece in [a, b] {
                    out += &chunk(
                        json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
                        Value::Null,
                    );
                }
            }
            out += &chunk(json!({}), json!("tool_calls"));
        }
        Turn::Status(..) | Turn::Hang => unreachable!(),
    }
    out += &data(
        json!({"id": "c", "object": "chat.completion.chunk", "choices": [],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}),
    );
    out + "data: [DONE]\n\n"
}

fn anthropic_json(turn: &Turn) -> Value {
    let (content, stop) = match turn {
        Turn::Text(t) => (json!([{"type": "text", "text": t}]), "end_turn"),
        Turn::Tools(calls) => {
            let blocks: Vec<Value> = calls
                .iter()
                .map(|(id, name, args)| {
                    let input: Value = serde_json::from_str(args).unwrap_or(json!({}));
                    json!({"type": "tool_use", "id": id, "name": name, "input": input})
                })
                .collect();
            (Value::Array(blocks), "tool_use")
        }
        Turn::Status(..) | Turn::Hang => unreachable!(),
    };
    json!({"id": "msg", "type": "message", "role": "assistant", "model": "scripted",
        "content": content, "stop_reason": stop,
        "usage": {"input_tokens": 12, "output_tokens": 6}})
}

fn event(kind: &str, v: Value) -> String {
    format!("event: {kind}\ndata: {v}\n\n")
}

fn anthropic_sse(turn: &Turn) -> String {
    let mut out = event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg", "type": "message",
            "role": "assistant", "model": "scripted", "content": [], "stop_reason": null,
            "usage": {"input_tokens": 12, "output_tokens": 0}}}),
    );
    let stop = match turn {
        Turn::Text(t) => {
            out += &event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}}),
            );
            let (a, b) = halves(t);
            for piece in [a, b] {
                out += &event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "text_delta", "text": piece}}),
                );
            }
            out += &event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            );
            "end_turn"
        }
        Turn::Tools(calls) => {
            for (i, (id, name, args)) in calls.iter().enumerate() {
                out += &event(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": i,
                        "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
                );
                out += &event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": i,
                        "delta": {"type": "input_json_delta", "partial_json": args}}),
                );
                out += &event(
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": i}),
                );
            }
            "tool_use"
        }
        Turn::Status(..) | Turn::Hang => unreachable!(),
    };
    out += &event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop},
            "usage": {"output_tokens": 6}}),
    );
    out + &event("message_stop", json!({"type": "message_stop"}))
}

/// A workspace for a host: a root with notes, a `skills` folder and a config file.
pub struct Workspace {
    pub dir: tempfile::TempDir,
}

impl Workspace {
    /// A root holding `notes/plan.md` and `notes/ideas.md`, and an empty `skills` folder.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("notes")).unwrap();
        std::fs::create_dir_all(root.join("skills")).unwrap();
        std::fs::write(
            root.join("notes/plan.md"),
            "# Plan\nShip the release.\nTODO: write the changelog\n",
        )
        .unwrap();
        std::fs::write(
            root.join("notes/ideas.md"),
            "# Ideas\nTODO: try a smaller model\nA faster index.\n",
        )
        .unwrap();
        Workspace { dir }
    }

    /// The workspace root.
    pub fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    /// Writes a skill file.
    pub fn skill(&self, name: &str, text: &str) {
        std::fs::write(self.root().join("skills").join(format!("{name}.md")), text).unwrap();
    }

    /// Writes the host configuration (root, skills, audit log, and `providers` TOML) and
    /// returns its path.
    pub fn config(&self, providers: &str) -> PathBuf {
        let path = self.dir.path().join("a2e.toml");
        let text = format!(
            "root = {root:?}\nskill_dirs = [\"skills\"]\n\n[audit]\npath = {audit:?}\ninclude_arguments = true\n\n[memory]\nenabled = false\n\n{providers}\n",
            root = self.root().display().to_string(),
            audit = self.audit_path().display().to_string(),
        );
        std::fs::write(&path, text).unwrap();
        path
    }

    /// The audit log's path.
    pub fn audit_path(&self) -> PathBuf {
        self.dir.path().join("audit.log")
    }

    /// The file the host's stderr goes to.
    pub fn stderr_path(&self) -> PathBuf {
        self.dir.path().join("stderr.log")
    }
}

/// A `[[llm.providers]]` block.
pub fn provider(name: &str, kind: &str, server: &Server, extra: &str) -> String {
    format!(
        "[[llm.providers]]\nname = {name:?}\nkind = {kind:?}\nbase_url = {url:?}\nmodel = \"scripted-model\"\napi_key = {FAKE_KEY:?}\ntimeout_seconds = 30\nretry = {{ max_retries = 2, initial_backoff_ms = 10, max_backoff_ms = 50, max_retry_after_ms = 100 }}\n{extra}\n",
        url = server.base_url,
    )
}

/// `a2e serve --stdio --config CONFIG` with stderr into `stderr` and `A2E_LOG` at `log`.
pub fn serve(config: &Path, stderr: &Path, log: &str) -> conformance::child::HostProcess {
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg("exec \"$0\" serve --stdio --config \"$1\" 2>\"$2\"")
        .arg(env!("CARGO_BIN_EXE_a2e"))
        .arg(config)
        .arg(stderr)
        .env("A2E_LOG", log);
    conformance::child::HostProcess::spawn(cmd).unwrap()
}

/// The text of a stream of `artifact` events (base64 chunks), in order.
pub fn artifact_text(events: &[Value]) -> String {
    let mut bytes = Vec::new();
    for e in events.iter().filter(|e| e["kind"] == "artifact") {
        let chunk = e["data"]["chunk"].as_str().unwrap_or("");
        bytes.extend(decode_base64(chunk));
    }
    String::from_utf8(bytes).unwrap()
}

fn decode_base64(text: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap()
}
