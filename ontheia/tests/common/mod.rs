//! A real in-test host: a backend that records every call, keeps memory in
//! a list, answers tools, talks HTTP to a real local axum server, and
//! resolves agents from a table.

#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ontheia::{
    AgentPlan, AgentRequest, Backend, BackendError, Document, Engine, EngineConfig, Event,
    FixedClock, Globals, LlmReply, LlmRequest, MemorySearch, MemoryWrite, RestRequest,
    RestResponse, RunOutcome, ToolStepCall,
};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

/// One recorded backend call.
#[derive(Debug, Clone)]
pub enum Call {
    Llm(LlmRequest),
    Tool(ToolStepCall),
    Search(MemorySearch),
    Write(MemoryWrite),
    Rest(RestRequest),
    Agent(AgentRequest),
}

/// A memory record: (namespace, content, metadata).
pub type Record = (String, String, Map<String, Value>);

type LlmFn = Box<dyn Fn(&LlmRequest) -> Result<LlmReply, BackendError> + Send + Sync>;

pub struct Host {
    pub calls: Mutex<Vec<Call>>,
    pub memory: Mutex<Vec<Record>>,
    pub llm: LlmFn,
    pub agents: HashMap<String, AgentPlan>,
    /// The `flaky` tool fails while this is above zero.
    pub flaky_failures: AtomicUsize,
    pub counter: AtomicUsize,
}

impl Default for Host {
    fn default() -> Self {
        Host {
            calls: Mutex::new(Vec::new()),
            memory: Mutex::new(Vec::new()),
            llm: Box::new(|req| Ok(LlmReply::text(format!("echo: {}", req.prompt)))),
            agents: HashMap::new(),
            flaky_failures: AtomicUsize::new(0),
            counter: AtomicUsize::new(0),
        }
    }
}

impl Host {
    pub fn with_llm(
        f: impl Fn(&LlmRequest) -> Result<LlmReply, BackendError> + Send + Sync + 'static,
    ) -> Host {
        Host {
            llm: Box::new(f),
            ..Host::default()
        }
    }

    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    pub fn llm_calls(&self) -> Vec<LlmRequest> {
        self.calls()
            .into_iter()
            .filter_map(|c| if let Call::Llm(r) = c { Some(r) } else { None })
            .collect()
    }

    pub fn tool_calls(&self) -> Vec<ToolStepCall> {
        self.calls()
            .into_iter()
            .filter_map(|c| if let Call::Tool(r) = c { Some(r) } else { None })
            .collect()
    }

    fn record(&self, call: Call) {
        self.calls.lock().unwrap().push(call);
    }
}

fn text_result(text: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}], "isError": false})
}

impl Backend for Host {
    async fn llm(
        &self,
        req: LlmRequest,
        _cancel: CancellationToken,
    ) -> Result<LlmReply, BackendError> {
        self.record(Call::Llm(req.clone()));
        (self.llm)(&req)
    }

    async fn tool(
        &self,
        call: ToolStepCall,
        cancel: CancellationToken,
    ) -> Result<Value, BackendError> {
        self.record(Call::Tool(call.clone()));
        match (call.server.as_str(), call.tool.as_str()) {
            (_, "echo") => Ok(text_result(Value::Object(call.args).to_string())),
            (_, "upper") => Ok(text_result(
                call.args
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_uppercase(),
            )),
            (_, "counter") => {
                let n = self.counter.fetch_add(1, Ordering::SeqCst) + 1;
                Ok(text_result(json!({ "n": n }).to_string()))
            }
            (_, "flaky") => {
                let left = self.flaky_failures.load(Ordering::SeqCst);
                if left > 0 {
                    self.flaky_failures.store(left - 1, Ordering::SeqCst);
                    Err(BackendError::failed("flaky tool failed"))
                } else {
                    Ok(text_result("{\"ok\": true}"))
                }
            }
            (_, "warn") => {
                Ok(json!({"content": [{"type": "text", "text": "quota low"}], "isError": true}))
            }
            (_, "multi") => Ok(json!({"content": [
                {"type": "text", "text": "{\"a\": 1}"},
                {"type": "image", "data": "AAAA"},
                {"type": "text", "text": "plain"}
            ]})),
            (_, "slow") => {
                tokio::select! {
                    _ = cancel.cancelled() => Err(BackendError::failed("cancelled")),
                    _ = tokio::time::sleep(Duration::from_secs(3600)) => Ok(text_result("late")),
                }
            }
            ("time", "now") => Ok(text_result(
                r#"{"datetime": "2026-12-01T14:05:00+01:00", "timezone": "Europe/Berlin"}"#,
            )),
            (server, tool) => Err(BackendError::Denied(format!("no tool {server}/{tool}"))),
        }
    }

    async fn memory_search(
        &self,
        req: MemorySearch,
        _cancel: CancellationToken,
    ) -> Result<Vec<Value>, BackendError> {
        self.record(Call::Search(req.clone()));
        let words: Vec<String> = req
            .query
            .to_lowercase()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        let mem = self.memory.lock().unwrap();
        let hits = mem
            .iter()
            .filter(|(ns, content, _)| {
                req.namespaces.contains(ns)
                    && (words.is_empty()
                        || words.iter().any(|w| content.to_lowercase().contains(w)))
            })
            .take(req.top_k as usize)
            .map(|(ns, content, _)| json!({"namespace": ns, "content": content}))
            .collect();
        Ok(hits)
    }

    async fn memory_write(
        &self,
        req: MemoryWrite,
        _cancel: CancellationToken,
    ) -> Result<u64, BackendError> {
        self.record(Call::Write(req.clone()));
        self.memory
            .lock()
            .unwrap()
            .push((req.namespace, req.content, req.metadata));
        Ok(1)
    }

    async fn rest_call(
        &self,
        req: RestRequest,
        _cancel: CancellationToken,
    ) -> Result<RestResponse, BackendError> {
        self.record(Call::Rest(req.clone()));
        http_request(&req).await
    }

    async fn agent(
        &self,
        req: AgentRequest,
        _cancel: CancellationToken,
    ) -> Result<AgentPlan, BackendError> {
        self.record(Call::Agent(req.clone()));
        self.agents.get(&req.agent_id).cloned().ok_or_else(|| {
            BackendError::failed(format!("agent '{}' could not be found", req.agent_id))
        })
    }
}

/// A minimal HTTP/1.1 client over hyper, for 127.0.0.1 only.
pub async fn http_request(req: &RestRequest) -> Result<RestResponse, BackendError> {
    use http_body_util::{BodyExt, Full};
    use hyper::body::Bytes;

    let uri: hyper::Uri = req
        .url
        .parse()
        .map_err(|e| BackendError::failed(format!("bad url: {e}")))?;
    let host = uri.host().unwrap_or("").to_owned();
    if host != "127.0.0.1" {
        return Err(BackendError::Denied(format!(
            "outbound HTTP to {host} is not allowed"
        )));
    }
    let port = uri.port_u16().unwrap_or(80);
    let stream = tokio::net::TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| BackendError::failed(e.to_string()))?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| BackendError::failed(e.to_string()))?;
    tokio::spawn(conn);
    let mut builder = hyper::Request::builder()
        .method(req.method.as_str())
        .uri(uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"))
        .header("host", format!("{host}:{port}"));
    for (k, v) in &req.headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    let body = req.body_text().unwrap_or_default();
    let request = builder
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| BackendError::failed(e.to_string()))?;
    let resp = sender
        .send_request(request)
        .await
        .map_err(|e| BackendError::failed(e.to_string()))?;
    let status = resp.status().as_u16();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| BackendError::failed(e.to_string()))?
        .to_bytes();
    Ok(RestResponse {
        status,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    })
}

/// A real HTTP server on 127.0.0.1 (port 0); returns its base URL.
pub async fn start_server() -> String {
    use axum::Router;
    use axum::extract::Query;
    use axum::http::{HeaderMap, StatusCode};
    use axum::routing::{get, post};

    let app = Router::new()
        .route(
            "/weather",
            get(|Query(q): Query<HashMap<String, String>>| async move {
                axum::Json(
                    json!({"city": q.get("city").cloned().unwrap_or_default(), "temp": -3.5}),
                )
            }),
        )
        .route(
            "/echo",
            post(|headers: HeaderMap, body: String| async move {
                let ct = headers
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_owned();
                let auth = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_owned();
                axum::Json(json!({"content_type": ct, "authorization": auth, "body": body}))
            }),
        )
        .route("/messy", get(|| async { "{city: 'Berlin', temp: 3,}" }))
        .route(
            "/fail",
            get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "{\"error\": \"boom\"}") }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    format!("http://{addr}")
}

/// A fixed clock: Tuesday, 1 December 2026, 13:05 UTC.
pub fn config() -> EngineConfig {
    EngineConfig {
        clock: Arc::new(FixedClock::at_unix(1_796_130_300)),
        ..EngineConfig::default()
    }
}

pub fn doc(json: Value) -> Document {
    ontheia::parse_value(&json).unwrap_or_else(|e| panic!("invalid test document: {e}"))
}

/// Runs a document, collecting events as `id:kind`.
pub async fn run(
    engine: &Engine<Host>,
    d: &Document,
    globals: &Globals,
) -> (RunOutcome, Vec<String>) {
    let mut events = Vec::new();
    let outcome = engine
        .run(
            d,
            globals,
            |e: &Event<'_>| events.push(format!("{}:{}", e.step_id, e.kind.as_str())),
            CancellationToken::new(),
        )
        .await
        .expect("run");
    (outcome, events)
}

pub fn engine(host: Host) -> Engine<Host> {
    Engine::with_config(host, config())
}
