//! A scripted model server (a small axum app on 127.0.0.1, on its own thread and runtime
//! so tests may pause their clock) and a real tool executor for the loop tests.
#![allow(dead_code)]

use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2e_llm::{
    LoopEvent, ProviderConfig, ProviderKind, Providers, ResolvedModel, RetryPolicy, ToolExecutor,
    ToolSpec,
};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};

/// The fake key every test configures; it must never show in any error, Debug or event.
pub const FAKE_KEY: &str = "sk-FAKE-a2e-test-key-7f3c9d1e";

/// One scripted answer.
pub enum Scripted {
    /// A JSON (or any) body with a status and extra headers.
    Body {
        status: u16,
        body: String,
        headers: Vec<(&'static str, String)>,
    },
    /// A Server-Sent Events stream of these blocks.
    Sse(Vec<String>),
    /// Never answers.
    Hang,
    /// These blocks, then keep-alive comments until the client goes away, which sets the flag.
    SseThenWait(Vec<String>, Arc<AtomicBool>),
}

impl Scripted {
    pub fn json(body: Value) -> Self {
        Scripted::Body {
            status: 200,
            body: body.to_string(),
            headers: Vec::new(),
        }
    }

    pub fn status(status: u16, body: &str) -> Self {
        Scripted::Body {
            status,
            body: body.into(),
            headers: Vec::new(),
        }
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: BTreeMap<String, String>,
    pub body: Value,
}

#[derive(Clone, Default)]
struct Shared {
    script: Arc<Mutex<VecDeque<Scripted>>>,
    received: Arc<Mutex<Vec<Received>>>,
}

/// A running scripted server.
pub struct Server {
    pub base_url: String,
    shared: Shared,
}

impl Server {
    /// Starts a server answering `script` in order, one entry per request.
    pub fn start(script: Vec<Scripted>) -> Self {
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

    /// How many scripted answers are left.
    pub fn left(&self) -> usize {
        self.shared.script.lock().unwrap().len()
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
    shared.received.lock().unwrap().push(Received {
        path: uri.path().to_owned(),
        headers,
        body,
    });
    let next = shared.script.lock().unwrap().pop_front();
    match next {
        None => Response::builder()
            .status(500)
            .body(Body::from("script exhausted"))
            .unwrap(),
        Some(Scripted::Body {
            status,
            body,
            headers,
        }) => {
            let mut b = Response::builder()
                .status(StatusCode::from_u16(status).unwrap())
                .header("content-type", "application/json");
            for (k, v) in headers {
                b = b.header(k, v);
            }
            b.body(Body::from(body)).unwrap()
        }
        Some(Scripted::Sse(blocks)) => Response::builder()
            .header("content-type", "text/event-stream")
            .body(Body::from(blocks.concat()))
            .unwrap(),
        Some(Scripted::Hang) => {
            std::future::pending::<()>().await;
            unreachable!()
        }
        Some(Scripted::SseThenWait(blocks, dropped)) => {
            struct SetOnDrop(Arc<AtomicBool>);
            impl Drop for SetOnDrop {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::SeqCst);
                }
            }
            let guard = SetOnDrop(dropped);
            let first = futures::stream::iter(
                blocks
                    .into_iter()
                    .map(|b| Ok::<_, Infallible>(Bytes::from(b))),
            );
            let pings = futures::stream::unfold(guard, |guard| async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                Some((Ok(Bytes::from_static(b": ping\n\n")), guard))
            });
            use futures::StreamExt;
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(first.chain(pings)))
                .unwrap()
        }
    }
}

/// A provider config for `server` with the fake key, no per-request timeout, and a
/// retry policy of two retries starting at one second.
pub fn config(kind: ProviderKind, server: &Server) -> ProviderConfig {
    let mut c = ProviderConfig::new("scripted", kind, &server.base_url, "test-model");
    c.api_key = Some(FAKE_KEY.into());
    c.timeout_seconds = Some(0);
    c.retry = RetryPolicy {
        max_retries: 2,
        initial_backoff_ms: 1_000,
        max_backoff_ms: 8_000,
        max_retry_after_ms: 30_000,
    };
    c
}

/// The default model of a one-provider registry.
pub fn model(config: ProviderConfig) -> ResolvedModel {
    Providers::new(vec![config])
        .unwrap()
        .resolve(None, None)
        .unwrap()
}

// --- OpenAI-shaped answers ---

pub fn openai_text(text: &str) -> Value {
    json!({"id": "c1", "object": "chat.completion", "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}})
}

pub fn openai_tools(calls: &[(&str, &str, &str)]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}))
        .collect();
    json!({"id": "c2", "object": "chat.completion", "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": calls}, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}})
}

pub fn sse(value: Value) -> String {
    format!("data: {value}\n\n")
}

pub fn sse_done() -> String {
    "data: [DONE]\n\n".into()
}

// --- Anthropic-shaped answers ---

pub fn anthropic_text(text: &str) -> Value {
    json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "test-model",
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 13, "output_tokens": 4}})
}

pub fn anthropic_tools(calls: &[(&str, &str, Value)]) -> Value {
    let mut content = vec![json!({"type": "text", "text": "Let me look."})];
    content.extend(calls.iter().map(
        |(id, name, input)| json!({"type": "tool_use", "id": id, "name": name, "input": input}),
    ));
    json!({"id": "msg_2", "type": "message", "role": "assistant", "model": "test-model",
        "content": content, "stop_reason": "tool_use",
        "usage": {"input_tokens": 30, "output_tokens": 9}})
}

pub fn anthropic_event(kind: &str, value: Value) -> String {
    format!("event: {kind}\ndata: {value}\n\n")
}

// --- A real tool executor: arithmetic and a small note store ---

pub struct Tools {
    pub notes: BTreeMap<String, String>,
    pub calls: Mutex<Vec<(String, Value)>>,
}

impl Tools {
    pub fn new() -> Self {
        let mut notes = BTreeMap::new();
        notes.insert(
            "todo.md".to_owned(),
            "- buy milk\n- TODO: write tests".to_owned(),
        );
        Tools {
            notes,
            calls: Mutex::new(Vec::new()),
        }
    }

    pub fn calls(&self) -> Vec<(String, Value)> {
        self.calls.lock().unwrap().clone()
    }
}

impl ToolExecutor for Tools {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![
            ToolSpec::new(
                "add",
                "Adds two numbers.",
                json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
            ),
            ToolSpec::new(
                "read_note",
                "Reads a note by name.",
                json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
            ),
        ]
    }

    async fn call_tool(&self, name: &str, arguments: Value) -> Result<Value, String> {
        self.calls
            .lock()
            .unwrap()
            .push((name.to_owned(), arguments.clone()));
        match name {
            "add" => {
                let a = arguments["a"].as_f64().ok_or("a is not a number")?;
                let b = arguments["b"].as_f64().ok_or("b is not a number")?;
                Ok(json!(a + b))
            }
            "read_note" => {
                let n = arguments["name"].as_str().ok_or("name is not a string")?;
                self.notes
                    .get(n)
                    .map(|t| Value::String(t.clone()))
                    .ok_or_else(|| format!("no note named {n}"))
            }
            other => Err(format!("unknown tool {other}")),
        }
    }
}

/// An event sink collecting events.
#[derive(Default)]
pub struct Collect(pub Mutex<Vec<LoopEvent>>);

impl a2e_llm::LoopEventSink for Collect {
    fn event(&self, event: LoopEvent) {
        self.0.lock().unwrap().push(event);
    }
}

impl Collect {
    pub fn events(&self) -> Vec<LoopEvent> {
        self.0.lock().unwrap().clone()
    }

    /// Every event as text: Debug and the skill/event payload.
    pub fn all_text(&self) -> String {
        self.events()
            .iter()
            .map(|e| format!("{e:?} {:?}", e.to_skill_event()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}
