//! Shared by the network transport tests: test plugins, an in-process server,
//! and the test kit's process lookups.
#![allow(dead_code, unused_imports)] // each test binary uses a part

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use a2e_host::plugin::{
    CallContext, SkillCall as HostSkillCall, SkillOutput, SkillPlugin, ToolOutput, ToolPlugin,
};
use a2e_host::transport::net::{self, NetOptions, NetState, Protocols};
use a2e_host::{Host, HostConfig, HostError, HostResult};
use a2e_proto::{SkillDefinition, ToolDefinition, ToolParameter};
use serde_json::{Map, Value, json};

pub use a2e_test_kit::process::{alive, eventually, pids_running};

/// Counters the test tools keep.
#[derive(Default)]
pub struct Counters {
    pub calls: AtomicUsize,
    pub cancelled: AtomicUsize,
    pub running: AtomicUsize,
}

/// Tools for the tests: echo, slow, hang, chatty.
pub struct TestTools(pub Arc<Counters>);

impl ToolPlugin<HostError> for TestTools {
    fn name(&self) -> &str {
        "test"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        vec![
            ToolDefinition::new("echo", "Echo the arguments").tags(&["test"]),
            ToolDefinition::new("slow", "Sleep for ms milliseconds")
                .param(ToolParameter::new("ms", "integer", "milliseconds").required()),
            ToolDefinition::new("hang", "Wait until cancelled"),
            ToolDefinition::new("chatty", "Emit three progress events").tags(&["test"]),
            {
                let mut d = ToolDefinition::new("hidden_gem", "A deferred tool found by searching");
                d.defer_loading = true;
                d
            },
        ]
    }

    async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
        ctx: CallContext,
    ) -> HostResult<ToolOutput> {
        self.0.calls.fetch_add(1, Ordering::SeqCst);
        match tool {
            "echo" => Ok(Value::Object(args).into()),
            "slow" => {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(json!({"slept": ms}).into())
            }
            "hang" => {
                self.0.running.fetch_add(1, Ordering::SeqCst);
                ctx.cancel.cancelled().await;
                self.0.running.fetch_sub(1, Ordering::SeqCst);
                self.0.cancelled.fetch_add(1, Ordering::SeqCst);
                Err(HostError::Cancelled)
            }
            "chatty" => {
                for i in 0..3 {
                    ctx.progress(i * 50, format!("step {i}")).await;
                }
                Ok(json!("done").into())
            }
            "hidden_gem" => Ok(json!("found").into()),
            other => Err(HostError::UnknownTool(other.into())),
        }
    }
}

/// A skill that greets, with a progress event.
pub struct TestSkills;

impl SkillPlugin<HostError> for TestSkills {
    fn name(&self) -> &str {
        "test_skills"
    }

    fn skills(&self) -> Vec<SkillDefinition> {
        let mut greet = SkillDefinition::new("greet", "Greets someone");
        greet.tags = Some(vec!["social".into()]);
        greet.category = Some("demo".into());
        greet.input_schema = json!({
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"]
        })
        .as_object()
        .cloned()
        .unwrap_or_default();
        vec![greet]
    }

    async fn call(
        &self,
        _skill: &str,
        args: Map<String, Value>,
        call: HostSkillCall<HostError>,
    ) -> HostResult<SkillOutput> {
        call.ctx.progress(50, "thinking").await;
        let name = args.get("name").and_then(Value::as_str).unwrap_or("nobody");
        Ok(json!({"greeting": format!("hello, {name}")}).into())
    }
}

/// A host with the test plugins, the built-ins on `root`, and a few allowed commands.
/// A host over a fresh temporary root (kept alive by the returned dir), with
/// `token` and the test plugins counting into the returned counters.
pub fn setup(token: &str) -> (tempfile::TempDir, Arc<Counters>, Arc<Host>) {
    let dir = tempfile::tempdir().unwrap();
    let counters = Arc::new(Counters::default());
    let host = host(dir.path(), token, counters.clone());
    (dir, counters, host)
}

pub fn host(root: &std::path::Path, token: &str, counters: Arc<Counters>) -> Arc<Host> {
    traced_host(root, token, counters, a2e_telemetry::Telemetry::disabled())
}

/// [`host`], its spans and metrics going to `telemetry`.
pub fn traced_host(
    root: &std::path::Path,
    token: &str,
    counters: Arc<Counters>,
    telemetry: a2e_telemetry::Telemetry,
) -> Arc<Host> {
    let mut config = HostConfig {
        root: root.to_owned(),
        auth_token: token.to_owned(),
        ..HostConfig::default()
    };
    config.commands.allow = vec!["sleep".into(), "cat".into(), "echo".into()];
    Host::builder(config)
        .with_telemetry(telemetry)
        .with_builtins()
        .with_tool_plugin(TestTools(counters))
        .with_skill_plugin(TestSkills)
        .build()
        .unwrap()
}

/// A server running in this process.
pub struct Server {
    pub state: Arc<NetState>,
    pub addr: std::net::SocketAddr,
    pub task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Server {
    pub async fn start(host: Arc<Host>, options: NetOptions) -> Self {
        let listener = net::bind("127.0.0.1:0", &host).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = NetState::new(host, options);
        let router = a2e_host::compose::router(
            state.clone(),
            Protocols {
                ws: true,
                http: true,
            },
        );
        let task = tokio::spawn(net::serve(listener, router, state.clone()));
        Self { state, addr, task }
    }

    pub fn ws_url(&self) -> String {
        format!("ws://{}/", self.addr)
    }

    pub fn http_url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Waits until no session is open (a generous liveness bound).
    pub async fn wait_no_sessions(&self) {
        eventually(Duration::from_secs(20), || {
            self.state.active_sessions() == 0
        })
        .await;
    }

    /// Shuts down gracefully and waits for the server to return.
    pub async fn shutdown(self) {
        self.state.shutdown_token().cancel();
        tokio::time::timeout(Duration::from_secs(30), self.task)
            .await
            .expect("the server stops")
            .unwrap()
            .unwrap();
    }
}

use a2e_client::{Client, ClientError, SkillCall, SkillQuery, ToolCall, ToolQuery};
use a2e_proto::{
    A2ECapability, ChainNode, ChainPhase, ChainRequest, ErrorCode, EventKind, NodeKind,
};
use futures::StreamExt;

/// The whole client API against a host built by [`host`]: tools, skills,
/// chains with events, proc, refusals, timeouts, concurrency.
pub async fn api_suite(client: &Client, counters: &Counters) {
    // Handshake.
    assert!(!client.session_id().is_empty());
    for cap in [
        A2ECapability::TOOLS,
        A2ECapability::SKILL,
        A2ECapability::CHAINS,
        A2ECapability::PROC,
    ] {
        assert!(client.has_capability(&cap), "{cap} not accepted");
    }
    client.ping().await.unwrap();

    // Tools: the list is cached.
    let tools = client.tools().list().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"echo") && names.contains(&"read_file"),
        "{names:?}"
    );
    assert!(
        !names.contains(&"hidden_gem"),
        "deferred tools are not listed"
    );
    let again = client.tools().list().await.unwrap();
    assert!(
        Arc::ptr_eq(&tools, &again),
        "the second list comes from the cache"
    );
    let found = client
        .tools()
        .list_with(ToolQuery::search("deferred gem searching").include_deferred(true))
        .await
        .unwrap();
    assert_eq!(found.first().map(|t| t.name.as_str()), Some("hidden_gem"));
    let tagged = client
        .tools()
        .list_with(ToolQuery::default().tags(["test"]))
        .await
        .unwrap();
    let mut tagged: Vec<String> = tagged.into_iter().map(|t| t.name).collect();
    tagged.sort();
    assert_eq!(tagged, ["chatty", "echo"]);

    // A call and its result.
    let result = client.tools().call("echo", json!({"x": 1})).await.unwrap();
    assert!(result.success);
    assert_eq!(result.data, json!({"x": 1}));

    // Streaming: events as a stream, in order, then the result.
    let mut call = client
        .tools()
        .start(ToolCall::new("chatty", json!({})).correlation_id("turn-1"))
        .await
        .unwrap();
    let mut seqs = Vec::new();
    while let Some(event) = call.next().await {
        assert_eq!(event.kind, EventKind::PROGRESS);
        assert_eq!(event.req_id, call.id());
        seqs.push(event.seq);
    }
    assert_eq!(seqs, [0, 1, 2]);
    let result = call.finish().await.unwrap();
    assert_eq!(result.data, json!("done"));
    // The callback form.
    let mut seen = 0;
    let result = client
        .tools()
        .call_with_events(ToolCall::new("chatty", json!({})), |_| seen += 1)
        .await
        .unwrap();
    assert!(result.success);
    assert_eq!(seen, 3);

    // Refused before running: an error with the wire code.
    let err = client
        .tools()
        .call("no_such_tool", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::UNKNOWN_TOOL), "{err}");
    let err = client
        .tools()
        .call("slow", json!({"ms": "soon"}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::SCHEMA_VIOLATION), "{err}");

    // Host-side timeout: the call ran and failed in-band.
    let before = counters.cancelled.load(Ordering::SeqCst);
    let result = client
        .tools()
        .call_with(ToolCall::new("hang", json!({})).timeout_secs(1))
        .await
        .unwrap();
    assert!(!result.success);
    assert_eq!(result.error_code, Some(ErrorCode::TIMEOUT));
    assert_eq!(counters.cancelled.load(Ordering::SeqCst), before + 1);

    // Client-side timeout: the client gives up; the connection goes on.
    let err = client
        .tools()
        .call_with(
            ToolCall::new("slow", json!({"ms": 3000})).client_timeout(Duration::from_millis(200)),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Timeout(_)), "{err}");
    assert_eq!(client.pending_requests(), 0);
    client.ping().await.unwrap();

    // Many requests in flight on one connection, each answered with its own result.
    let calls = (0..64).map(|n| {
        let client = client.clone();
        async move {
            let r = client.tools().call("echo", json!({"n": n})).await.unwrap();
            assert_eq!(r.data, json!({"n": n}));
        }
    });
    futures::future::join_all(calls).await;

    // Skills.
    let skills = client.skills().discover().await.unwrap();
    assert!(skills.iter().any(|s| s.name == "greet"));
    let social = client
        .skills()
        .discover_with(SkillQuery::default().tags(["social"]))
        .await
        .unwrap();
    assert_eq!(social.len(), 1);
    let none = client
        .skills()
        .discover_with(SkillQuery::default().categories(["nope"]))
        .await
        .unwrap();
    assert!(none.is_empty());
    let mut events = 0;
    let result = client
        .skills()
        .call_with_events(SkillCall::new("greet", json!({"name": "ada"})), |_| {
            events += 1
        })
        .await
        .unwrap();
    assert_eq!(result.data, json!({"greeting": "hello, ada"}));
    assert_eq!(events, 1);
    let err = client.skills().call("greet", json!({})).await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::SCHEMA_VIOLATION), "{err}");
    let err = client.skills().call("nobody", json!({})).await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::UNKNOWN_SKILL), "{err}");

    // Chains: events as they arrive, then the response.
    let mut first = ChainNode::new("first", NodeKind::TOOL, "echo");
    first.input.insert("word".into(), json!("hi"));
    first.next_node = "second".into();
    let mut second = ChainNode::new("second", NodeKind::TOOL, "echo");
    second
        .input_map
        .insert("said".into(), json!("first.output.word"));
    let req = ChainRequest {
        nodes: vec![first, second],
        entry_node: "first".into(),
        ..ChainRequest::default()
    };
    let mut run = client.chains().run(req).await.unwrap();
    let mut phases = Vec::new();
    while let Some(event) = run.next().await {
        phases.push(format!("{}:{}", event.node_id, event.phase));
    }
    assert_eq!(
        phases,
        ["first:start", "first:done", "second:start", "second:done"]
    );
    let resp = run.finish().await.unwrap();
    assert!(resp.success, "{resp:?}");
    assert_eq!(resp.final_output, json!({"said": "hi"}));
    let mut a = ChainNode::new("a", NodeKind::TOOL, "echo");
    a.input_map.insert("x".into(), json!("b.output"));
    let mut b = ChainNode::new("b", NodeKind::TOOL, "echo");
    b.input_map.insert("x".into(), json!("a.output"));
    let cyclic = ChainRequest {
        nodes: vec![a, b],
        entry_node: "a".into(),
        ..ChainRequest::default()
    };
    let err = client.chains().run_to_end(cyclic).await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::CHAIN_CYCLE), "{err}");
    let mut failing = ChainNode::new("f", NodeKind::TOOL, "slow");
    failing.input.insert("ms".into(), json!("bad"));
    let ran_and_failed = client
        .chains()
        .run_with_events(
            ChainRequest {
                nodes: vec![failing],
                entry_node: "f".into(),
                ..ChainRequest::default()
            },
            |e| assert!(e.phase == ChainPhase::START || e.phase == ChainPhase::ERROR),
        )
        .await
        .unwrap();
    assert!(!ran_and_failed.success);

    // Processes: output as a stream, stdin, kill, status.
    let mut cat = client.proc().spawn(["cat"]).await.unwrap();
    assert!(cat.pid() > 0);
    cat.write("hello\nworld\n").await.unwrap();
    cat.close_stdin().await.unwrap();
    let exit = cat.wait(Duration::from_secs(10)).await.unwrap();
    assert_eq!(exit.stdout, "hello\nworld");
    assert_eq!(exit.code, Some(0));
    let mut sleeper = client.proc().spawn(["sleep", "30"]).await.unwrap();
    assert_eq!(
        sleeper.status().await.unwrap(),
        a2e_proto::ProcState::RUNNING
    );
    let all = client.proc().status_all().await.unwrap();
    assert!(all.iter().any(|(id, _)| id == sleeper.id()));
    let killed = sleeper.kill("SIGKILL").await.unwrap();
    assert!(killed.ok);
    let exit = sleeper.wait(Duration::from_secs(10)).await.unwrap();
    assert_eq!(exit.code, None);
    assert!(!alive(sleeper.pid()));
    let err = client.proc().spawn(["rm", "-rf", "x"]).await.unwrap_err();
    assert!(
        matches!(
            err,
            ClientError::Protocol { .. } | ClientError::Failed { .. }
        ),
        "{err}"
    );
    let err = client.proc().status("p-nope").await.unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::UNKNOWN_PROC), "{err}");

    assert_eq!(client.pending_requests(), 0, "nothing left waiting");
}
