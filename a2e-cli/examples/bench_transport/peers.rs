//! The children (`--serve a2e|raw|rmcp`) and the in-process chain runs.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use a2e_chain::{Engine, Event, NodeCall, runner_fn};
use a2e_host::plugin::{self, CallContext, ToolOutput, ToolPlugin};
use a2e_host::{Host, HostConfig};
use a2e_proto::{ChainRequest, Message, ToolDefinition};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::CHAIN_NODES;

type Error = Box<dyn std::error::Error>;

/// `echo` returns its arguments; `sleep10` does after 10 ms.
struct Tools;

impl ToolPlugin for Tools {
    fn name(&self) -> &str {
        "bench"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        vec![
            ToolDefinition::new("echo", "Returns its arguments"),
            ToolDefinition::new("sleep10", "Returns its arguments after 10 ms"),
        ]
    }

    async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
        _: CallContext,
    ) -> Result<ToolOutput, plugin::Error> {
        if tool == "sleep10" {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(Value::Object(args).into())
    }
}

fn host() -> Result<Arc<Host>, Error> {
    let config = HostConfig {
        root: std::env::temp_dir(),
        max_parallel: 64,
        builtins: Vec::new(),
        ..HostConfig::default()
    };
    Ok(Host::builder(config).with_tool_plugin(Tools).build()?)
}

/// The runtime the `a2e` binary runs on.
fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// Runs this process as the child `kind`.
pub fn serve(kind: &str) -> Result<(), Error> {
    match kind {
        "a2e" => {
            let rt = runtime()?;
            rt.block_on(a2e_host::transport::stdio::serve_stdio(host()?));
            rt.shutdown_timeout(Duration::from_millis(200));
            Ok(())
        }
        "raw" => raw_echo(),
        "rmcp" => runtime()?.block_on(async {
            let running = RmcpEcho.serve(rmcp::transport::stdio()).await?;
            running.waiting().await?;
            Ok(())
        }),
        other => Err(format!("unknown peer `{other}`").into()),
    }
}

/// The limit: each line parsed with `serde_json` and answered, std I/O,
/// output flushed whenever no more input is buffered. A `chain/req` is
/// answered with prebuilt lines instead (see [`RawChain`]).
fn raw_echo() -> Result<(), Error> {
    let mut input = BufReader::with_capacity(1 << 16, std::io::stdin().lock());
    let mut output = BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let chain = RawChain::new(CHAIN_NODES);
    let mut line = String::new();
    let mut n = 0u64;
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return Ok(());
        }
        if line.starts_with(r#"{"type":"chain/req""#) {
            if line.contains(r#""streaming":true"#) {
                output.write_all(&chain.events)?;
            }
            output.write_all(&chain.response)?;
            output.flush()?;
            continue;
        }
        let req: Value = serde_json::from_str(&line)?;
        n += 1;
        let resp = json!({
            "type": "tool/call/resp", "id": format!("r{n}"), "version": "1.0",
            "ts": 1716123457.2, "req_id": req["id"],
            "data": {"success": true, "tool_name": "echo", "data": req["arguments"], "duration_ms": 0},
        });
        serde_json::to_writer(&mut output, &resp)?;
        output.write_all(b"\n")?;
        if input.buffer().is_empty() {
            output.flush()?;
        }
    }
}

/// The 1000-node chain's answer, made once, for the raw peer to carry: the
/// limit of carrying its events. The lines are the `chain/event`s the host
/// sends (a `start` and a `done` with `{"x":0}` per node), and the response
/// has every node's output.
struct RawChain {
    events: Vec<u8>,
    response: Vec<u8>,
}

impl RawChain {
    fn new(nodes: usize) -> Self {
        let output = json!({"x": 0});
        let mut events = Vec::new();
        let mut response = a2e_proto::ChainResponse {
            req_id: "chain-linear1000".into(),
            chain_id: "linear1000".into(),
            success: true,
            ..a2e_proto::ChainResponse::default()
        };
        for i in 0..nodes {
            let node_id = format!("n{i}");
            for (phase, output, seq) in [
                (a2e_proto::ChainPhase::START, &Value::Null, 2 * i),
                (a2e_proto::ChainPhase::DONE, &output, 2 * i + 1),
            ] {
                let event = a2e_proto::ChainEvent {
                    req_id: "chain-linear1000".into(),
                    node_id: node_id.clone(),
                    phase,
                    output: output.clone(),
                    seq: seq as u64,
                    ..a2e_proto::ChainEvent::default()
                };
                events.extend(Message::from(event).to_line());
            }
            response.outputs.push(node_id, output.clone());
        }
        let response = Message::from(response).to_line();
        Self { events, response }
    }
}

/// An rmcp stdio server with an `echo` tool.
struct RmcpEcho;

impl ServerHandler for RmcpEcho {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        Ok(CallToolResponse::Complete(CallToolResult::structured(
            Value::Object(args),
        )))
    }
}

/// One chain run in this process, trial by trial: through the host's chain
/// runner without a transport, and through the engine alone with a runner
/// that returns its input. Each trial runs on a runtime task, as a session
/// runs a request (not on the thread that blocks on the runtime).
pub struct InProcess {
    rt: tokio::runtime::Runtime,
    host: Arc<Host>,
    engine: Arc<Engine>,
    req: ChainRequest,
    line: String,
}

impl InProcess {
    /// For the chain `line` (a `chain/req`).
    pub fn new(line: &str) -> Result<Self, Error> {
        let Message::ChainRequest(req) = a2e_proto::decode(line.as_bytes())? else {
            return Err("not a chain".into());
        };
        let host = host()?;
        host.register_session("bench", "bench");
        let engine = Arc::new(Engine::new(runner_fn(|call: NodeCall| async move {
            Ok(call.input.into_value())
        })));
        Ok(Self {
            rt: runtime()?,
            host,
            engine,
            req,
            // As the host's codec hands it on: without its newline.
            line: line.trim_end().to_owned(),
        })
    }

    /// One run through the host from the request's line: decoded, then run
    /// as [`InProcess::host_trial`] runs it (the stdio chain without the
    /// transport).
    pub fn line_trial(&self) -> Result<Duration, Error> {
        let host = self.host.clone();
        let line = self.line.clone();
        let run = async move {
            let started = Instant::now();
            let Ok(Message::ChainRequest(req)) = a2e_proto::decode(line.as_bytes()) else {
                return Err("not a chain".to_owned());
            };
            host_run(&host, &req, started).await
        };
        Ok(self.rt.block_on(self.rt.spawn(run))??)
    }

    /// One run through the host.
    pub fn host_trial(&self) -> Result<Duration, Error> {
        let host = self.host.clone();
        let req = self.req.clone();
        let run = async move { host_run(&host, &req, Instant::now()).await };
        Ok(self.rt.block_on(self.rt.spawn(run))??)
    }

    /// One run through the host, streaming its events into a channel that
    /// a task drains (what a session's writer would take).
    pub fn host_events_trial(&self) -> Result<Duration, Error> {
        let host = self.host.clone();
        let mut req = self.req.clone();
        req.streaming = true;
        let run = async move {
            let (tx, mut rx) = a2e_host::EventStream::channel(256);
            let drain = tokio::spawn(async move {
                let mut bytes = 0;
                while let Some(out) = rx.recv().await {
                    if let a2e_host::Outbound::Lines(l) = out {
                        bytes += l.len();
                    }
                }
                bytes
            });
            let cancel = CancellationToken::new();
            let started = Instant::now();
            let plan = a2e_host::chains::plan(&host, &req).map_err(|e| e.to_string())?;
            let options = a2e_host::CallOptions::new()
                .session("bench")
                .events(tx)
                .cancel(&cancel);
            let resp = a2e_host::chains::run_plan(&host, &plan, options).await;
            let elapsed = started.elapsed();
            // Freed after the answer, as a session frees it.
            drop(plan);
            let bytes = drain.await.map_err(|e| e.to_string())?;
            if !resp.success || bytes == 0 {
                return Err(format!("chain failed: {:?}", resp.error));
            }
            Ok::<_, String>(elapsed)
        };
        Ok(self.rt.block_on(self.rt.spawn(run))??)
    }

    /// One run through the engine alone.
    pub fn engine_trial(&self) -> Result<Duration, Error> {
        let engine = self.engine.clone();
        let req = self.req.clone();
        let run = async move {
            let started = Instant::now();
            let plan = engine.validate(&req).map_err(|e| e.to_string())?;
            let resp = engine
                .run_plan(&plan, |_: &Event<'_>| {}, CancellationToken::new())
                .await;
            let elapsed = started.elapsed();
            drop(plan);
            if !resp.success {
                return Err(format!("chain failed: {:?}", resp.error));
            }
            Ok::<_, String>(elapsed)
        };
        Ok(self.rt.block_on(self.rt.spawn(run))??)
    }
}

/// Runs `req` through the host without streaming; the time since `started`
/// once it has answered, with success. Timed as a session answers: the
/// plan is freed after the answer (`chains::run_request` would free it
/// before returning, time that the stdio figure does not count either).
async fn host_run(
    host: &Arc<Host>,
    req: &ChainRequest,
    started: Instant,
) -> Result<Duration, String> {
    let cancel = CancellationToken::new();
    let plan = a2e_host::chains::plan(host, req).map_err(|e| e.to_string())?;
    let options = a2e_host::CallOptions::new()
        .session("bench")
        .cancel(&cancel);
    let resp = a2e_host::chains::run_plan(host, &plan, options).await;
    let elapsed = started.elapsed();
    drop(plan);
    if !resp.success {
        return Err(format!("chain failed: {:?}", resp.error));
    }
    Ok(elapsed)
}

impl Drop for InProcess {
    fn drop(&mut self) {
        self.host.end_session("bench");
    }
}
