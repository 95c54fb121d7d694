//! The MCP task tests' client: the official Rust SDK (rmcp) as a stateless
//! 2026-07-28 client that declares the tasks extension and form elicitation,
//! and polling a task to its end.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitationCapability, FormElicitationCapability,
    GetTaskParams, Implementation, ProtocolVersion, TaskPayload,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient};

/// A client that takes tasks and whose user can be asked.
#[derive(Clone, Default)]
pub struct TaskClient;

impl ClientHandler for TaskClient {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::builder().enable_tasks().build();
        let mut elicitation = ElicitationCapability::default();
        elicitation.form = Some(FormElicitationCapability::default());
        caps.elicitation = Some(elicitation);
        ClientConfig::new(caps, Implementation::new("tasks-test", "1.0.0"))
            .with_protocol_version(ProtocolVersion::V_2026_07_28)
    }
}

/// A connected client of the MCP server at `url` (`server/discover`).
pub async fn connect(url: &str) -> RunningService<RoleClient, TaskClient> {
    let http = a2e_http::ClientOptions::default().build().unwrap();
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    let transport = StreamableHttpClientTransport::with_client(http, config);
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    TaskClient
        .serve_with_lifecycle(transport, lifecycle)
        .await
        .expect("server/discover")
}

/// Polls task `id` until it ends (at most `within`): its payload.
pub async fn settled(
    client: &RunningService<RoleClient, TaskClient>,
    id: &str,
    within: Duration,
) -> TaskPayload {
    let deadline = Instant::now() + within;
    loop {
        let got = client.get_task(GetTaskParams::new(id)).await.unwrap();
        if got.task.status().is_terminal() {
            return got.task.payload;
        }
        assert!(Instant::now() < deadline, "task {id} did not end");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A chain skill tagged `task` that writes its required `topic` to `note.md`.
pub const WRITE_NOTE: &str = "---\nname: write_note\ndescription: Writes a note about a topic\n\
    tags: [task]\ninput_schema:\n  type: object\n  required: [topic]\n  properties:\n    \
    topic: { type: string, description: What the note is about }\n---\nWrites a note.\n\n\
    ```chain\n{\"entry_node\": \"write\", \"nodes\": [{\"node_id\": \"write\", \
    \"kind\": \"tool\", \"name\": \"write_file\", \"input_map\": \
    {\"path\": \"'note.md'\", \"content\": \"input.topic\"}}]}\n```\n";
