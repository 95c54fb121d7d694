//! The A2A TCK's agent profile (github `a2aproject/a2a-tck`, its
//! `scenarios/*.feature`) as an a2e host: one skill, `tck`, built into the
//! host, does what each scenario says for the message-id prefix of the
//! message it is for (`tck-complete-task`, `tck-artifact-*`,
//! `tck-message-response`, `tck-input-required`, `tck-reject-task`,
//! `tck-stream-*`), speaking A2A through its output (docs/a2a.md).
//!
//! ```text
//! cargo run -p a2e-cli --example a2a_tck -- --port 9999
//! ./run_tck.py --sut-host http://127.0.0.1:9999 --transport jsonrpc,http_json --level must
//! ```
//!
//! The host is built as `a2e serve` builds it (its run journal in a
//! temporary root), served on loopback until interrupted.

use std::time::Duration;

use a2e_host::a2a::{A2aAgent, IncomingMessage};
use a2e_host::{Compose, HostBuilder, HostConfig};
use a2e_plugin::{CallContext, Error, SkillCall, SkillOutput, SkillPlugin};
use a2e_proto::{EventKind, SkillDefinition};
use serde_json::{Map, Value, json};

type Failure = Box<dyn std::error::Error>;

/// The skill of the profile.
struct Tck;

/// A completed task's output saying `said` in A2A.
fn a2a(said: Value) -> SkillOutput {
    SkillOutput {
        data: json!({ "a2a": said }),
        ..SkillOutput::default()
    }
}

fn text_artifact(id: &str, text: &str) -> Value {
    json!({"artifactId": id, "parts": [{"text": text}]})
}

fn file_artifact() -> Value {
    // "TCK file content", base64.
    json!({"artifactId": "file-artifact", "parts": [{"raw": "VENLIGZpbGUgY29udGVudA==",
        "filename": "output.txt", "mediaType": "text/plain"}]})
}

/// An artifact chunk as the task's streamed artifact update.
async fn chunk(ctx: &CallContext, text: &str, append: bool, last: bool) {
    let data = json!({"artifact": text_artifact("chunked-artifact", text),
        "append": append, "lastChunk": last});
    if let Value::Object(map) = data {
        ctx.emit(EventKind::ARTIFACT, map).await;
    }
}

impl SkillPlugin for Tck {
    fn name(&self) -> &str {
        "tck"
    }

    fn skills(&self) -> Vec<SkillDefinition> {
        vec![SkillDefinition::new(
            "tck",
            "Behaves as the A2A TCK's scenarios say for a message's id",
        )]
    }

    async fn call(
        &self,
        _skill: &str,
        _args: Map<String, Value>,
        call: SkillCall,
    ) -> Result<SkillOutput, Error> {
        let id = call
            .ctx
            .extensions
            .get::<IncomingMessage>()
            .map(|m| m.0.message_id.clone())
            .unwrap_or_default();
        let said = |prefix: &str| id.starts_with(prefix);
        // Longer prefixes first: `tck-artifact-file-url` before `tck-artifact-file`.
        Ok(if said("tck-artifact-file-url") {
            a2a(
                json!({"artifacts": [{"artifactId": "url-artifact", "parts": [{
                "url": "https://example.com/output.txt", "filename": "output.txt",
                "mediaType": "text/plain"}]}]}),
            )
        } else if said("tck-artifact-file") || said("tck-stream-artifact-file") {
            a2a(json!({"artifacts": [file_artifact()]}))
        } else if said("tck-artifact-text") {
            a2a(json!({"artifacts": [text_artifact("text-artifact", "Generated text content")]}))
        } else if said("tck-artifact-data") {
            a2a(json!({"artifacts": [{"artifactId": "data-artifact",
                "parts": [{"data": {"key": "value", "count": 42}}]}]}))
        } else if said("tck-message-response") {
            a2a(json!({"direct": true, "message": [{"text": "Direct message response"}]}))
        } else if said("tck-input-required") {
            a2a(json!({"state": "input-required", "message": [{"text": "Please provide input"}]}))
        } else if said("tck-reject-task") {
            a2a(json!({"state": "rejected", "message": [{"text": "rejected"}]}))
        } else if said("tck-stream-artifact-chunked") {
            chunk(&call.ctx, "chunk-1 ", false, false).await;
            chunk(&call.ctx, "chunk-2", true, true).await;
            a2a(json!({}))
        } else if said("tck-stream-artifact-text") {
            a2a(json!({"artifacts": [text_artifact("stream-artifact", "Streamed text content")]}))
        } else if said("tck-stream-ordering-001") {
            a2a(json!({"artifacts": [text_artifact("ordered-artifact", "Ordered output")]}))
        } else if said("tck-stream-003") {
            a2a(
                json!({"artifacts": [text_artifact("lifecycle-artifact", "Stream task lifecycle")]}),
            )
        } else if said("tck-stream-001") {
            a2a(json!({"artifacts": [text_artifact("stream-artifact", "Stream hello from TCK")]}))
        } else if said("tck-stream-002") {
            a2a(json!({}))
        } else if said("test-resubscribe-message-id") {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_secs(10)) => {}
                () = call.ctx.cancel.cancelled() => return Err(Error::Cancelled),
            }
            a2a(json!({}))
        } else {
            a2a(json!({"message": [{"text": "Hello from TCK"}]}))
        })
    }
}

fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().collect();
    let port: u16 = args
        .iter()
        .position(|a| a == "--port")
        .and_then(|i| args.get(i + 1))
        .map(|p| p.parse())
        .transpose()?
        .unwrap_or(9999);
    let root = tempfile::tempdir()?;
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        // The TCK's webhooks: its own on loopback, and a placeholder host.
        let mut config = HostConfig::from_toml(
            "[a2a]\ndefault_skill = \"tck\"\n\n\
             [http]\nallow_hosts = [\"localhost\", \"127.0.0.1\", \"example.com\"]\n",
        )?;
        config.root = root.path().to_path_buf();
        let host = HostBuilder::from_config(config, a2e_telemetry::Telemetry::disabled())
            .with_skill_plugin(Tck)
            .start()
            .await?;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let base = format!("http://{}", listener.local_addr()?);
        eprintln!("a2a_tck: serving the TCK profile at {base}");
        let agent = A2aAgent::new(host, base);
        agent
            .serve(listener, async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        Ok(())
    })
}
