//! MCP tasks for a session's client (2025-11-25, the tasks extension
//! declared at `initialize`), against the example plugin set: the client is
//! told each change of its task's state (`notifications/tasks`) — the task
//! asks its user (`input_required` with the question), works again once
//! `tasks/update` answers, and completes with its result — without polling.
//! The client is the official Rust SDK (rmcp).

use std::process::Command;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig,
    ElicitationCapability, FormElicitationCapability, Implementation, ProtocolVersion, TaskPayload,
    TaskStatus, TaskStatusNotificationParams, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, ServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient};
use serde_json::json;
use tokio::sync::mpsc;

use crate::mcp_conformance_support::{everything_example, start};

/// A session client that takes tasks and hands on what it is told of them.
#[derive(Clone)]
struct Told(mpsc::UnboundedSender<TaskStatusNotificationParams>);

impl ClientHandler for Told {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::builder().enable_tasks().build();
        let mut elicitation = ElicitationCapability::default();
        elicitation.form = Some(FormElicitationCapability::default());
        caps.elicitation = Some(elicitation);
        ClientConfig::new(caps, Implementation::new("tasks-session-test", "1.0.0"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn on_task_status(
        &self,
        params: TaskStatusNotificationParams,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(params);
    }
}

/// The next notification, within 20 s.
async fn next(told: &mut mpsc::UnboundedReceiver<TaskStatusNotificationParams>) -> TaskPayload {
    let said = tokio::time::timeout(Duration::from_secs(20), told.recv())
        .await
        .expect("a task status notification")
        .expect("the client is there");
    said.task.payload.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_client_is_told_each_change_of_its_task() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(everything_example());
    cmd.arg("--root").arg(dir.path());
    let server = start(cmd);
    let (tx, mut told) = mpsc::unbounded_channel();
    let http = a2e_http::ClientOptions::default().build().unwrap();
    let config = StreamableHttpClientTransportConfig::with_uri(server.url.clone());
    let client = Told(tx)
        .serve(StreamableHttpClientTransport::with_client(http, config))
        .await
        .expect("initialize");

    let args = json!({"filename": "y.txt", "delay_ms": 100});
    let params = CallToolRequestParams::new("confirm_delete")
        .with_arguments(args.as_object().cloned().unwrap());
    let id = match client.call_tool_once(params).await.unwrap() {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("confirm_delete is a task: {other:?}"),
    };

    let TaskPayload::InputRequired { input_requests } = next(&mut told).await else {
        panic!("told first that the task asks")
    };
    let (key, question) = input_requests.iter().next().unwrap();
    assert!(
        serde_json::to_string(question)
            .unwrap()
            .contains("Delete y.txt?")
    );
    let yes = json!({"action": "accept", "content": {"confirm": true}});
    client
        .update_task(UpdateTaskParams::new(&id, [(key.clone(), yes)].into()))
        .await
        .unwrap();

    // Working again once answered (unless it ended first), then completed.
    let mut last = next(&mut told).await;
    if last.status() == TaskStatus::Working {
        last = next(&mut told).await;
    }
    let TaskPayload::Completed { result } = last else {
        panic!("told that the task completed: {last:?}")
    };
    let text = serde_json::to_string(&result["content"]).unwrap();
    assert!(text.contains("deleted y.txt"), "{result:?}");
    client.cancel().await.unwrap();
}
