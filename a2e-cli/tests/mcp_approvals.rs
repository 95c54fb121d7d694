//! Approvals decided by the MCP client's user: a call over `a2e serve
//! --mcp-stdio` that an `[[approvals]]` rule holds back is asked of the
//! client (`elicitation/create`) — the official MCP Python SDK
//! (`.ci/install-mcp.sh`, `tests/mcp/client_approve.py`) — and runs once
//! approved, fails `denied` with the user's reason otherwise.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::mcp_client_model::python;

const RULE: &str = "[commands]\nallow = [\"sh\"]\n\n[[approvals]]\ntool = \"run_command\"\n\
    program = \"sh\"\ndeciders = [\"client\"]\ntimeout_secs = 60\n";

/// Calls `run_command` appending `word` to `effects` over MCP stdio, the
/// client's user answering as `mode` says; the client's report.
fn call(python: &Path, root: &Path, mode: &str, word: &str) -> Value {
    let config = root.join("a2e.toml");
    std::fs::write(&config, RULE).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client_approve.py");
    let args = serde_json::json!({"argv": ["sh", "-c", format!("echo {word} >> effects")]});
    let out = Command::new(python)
        .arg(script)
        .args([mode, "run_command", &args.to_string()])
        .arg(env!("CARGO_BIN_EXE_a2e"))
        .args(["serve", "--mcp-stdio", "--config"])
        .arg(&config)
        .arg("--root")
        .arg(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_mcp_clients_user_approves_or_denies_a_waiting_call() {
    let test = "the_mcp_clients_user_approves_or_denies_a_waiting_call";
    let Some(python) = python(test) else { return };
    let root = tempfile::tempdir().unwrap();
    let effects = || std::fs::read_to_string(root.path().join("effects")).unwrap_or_default();

    let approved = call(&python, root.path(), "approve", "yes");
    assert_eq!(approved["is_error"], false, "{approved}");
    assert_eq!(effects(), "yes\n", "the approved call ran once");
    let form = &approved["forms"][0];
    let message = form["message"].as_str().unwrap();
    assert!(
        message.contains("run_command") && message.contains("echo yes"),
        "{form}"
    );
    assert_eq!(
        form["requestedSchema"]["properties"]["approve"]["type"],
        "boolean"
    );

    let denied = call(&python, root.path(), "deny", "no");
    assert_eq!(denied["is_error"], true, "{denied}");
    let text = denied["text"].as_str().unwrap();
    assert!(text.contains("too risky"), "{denied}");
    let declined = call(&python, root.path(), "decline", "no");
    assert_eq!(declined["is_error"], true, "{declined}");
    assert_eq!(effects(), "yes\n", "the denied calls did not run");
}

/// An MCP 2026-07-28 client (the official Rust SDK, rmcp, stateless) whose
/// user approves every call it is asked about.
mod rounds {
    use std::sync::{Arc, Mutex};

    use rmcp::model::{
        CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
        ElicitationAction, ElicitationCapability, ErrorData, FormElicitationCapability,
        Implementation, ProtocolVersion,
    };
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext};
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::{ClientHandler, RoleClient};
    use serde_json::json;

    use crate::llm_support::Workspace;
    use crate::mcp_conformance_support::start;

    #[derive(Default, Clone)]
    struct Approver {
        asked: Arc<Mutex<Vec<String>>>,
    }

    impl ClientHandler for Approver {
        fn get_info(&self) -> ClientConfig {
            let mut caps = ClientCapabilities::default();
            let mut elicitation = ElicitationCapability::default();
            elicitation.form = Some(FormElicitationCapability::default());
            caps.elicitation = Some(elicitation);
            ClientConfig::new(caps, Implementation::new("approver", "1.0.0"))
                .with_protocol_version(ProtocolVersion::V_2026_07_28)
        }

        async fn create_elicitation(
            &self,
            request: ElicitRequestParams,
            _context: RequestContext<RoleClient>,
        ) -> Result<ElicitResult, ErrorData> {
            let ElicitRequestParams::FormElicitationParams { message, .. } = request else {
                return Err(ErrorData::invalid_params("a form was expected", None));
            };
            self.asked.lock().unwrap().push(message);
            Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": true})))
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stateless_clients_user_approves_in_input_required_rounds() {
        let ws = Workspace::new();
        let config = ws.config(super::RULE);
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_a2e"));
        cmd.args(["serve", "--mcp-http", "127.0.0.1:0", "--config"])
            .arg(config);
        let server = start(cmd);
        let approver = Approver::default();
        let http = a2e_http::ClientOptions::default().build().unwrap();
        let transport = StreamableHttpClientTransport::with_client(
            http,
            StreamableHttpClientTransportConfig::with_uri(server.url.clone()),
        );
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        let client = approver
            .clone()
            .serve_with_lifecycle(transport, lifecycle)
            .await
            .expect("server/discover");
        let args = json!({"argv": ["sh", "-c", "echo rounds >> effects"]});
        let params = CallToolRequestParams::new("run_command")
            .with_arguments(args.as_object().unwrap().clone());
        let result = client.call_tool(params).await.unwrap();
        assert_ne!(result.is_error, Some(true), "{result:?}");
        let effects = std::fs::read_to_string(ws.root().join("effects")).unwrap();
        assert_eq!(effects, "rounds\n", "the approved call ran once");
        let asked = approver.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1, "{asked:?}");
        assert!(asked[0].contains("run_command"), "{asked:?}");
        client.cancel().await.unwrap();
    }
}
