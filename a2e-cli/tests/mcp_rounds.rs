//! MCP 2026-07-28 clients and what the host asks of them: a skill called
//! without a required argument asks the client's user, an LLM skill with no
//! provider asks the client's model, and both reach a stateless client as
//! `input_required` rounds (no session, no request from the server). The
//! client is the official Rust SDK (rmcp), connected with `server/discover`,
//! whose handler answers the rounds as a person and a model would.
#![allow(deprecated)] // sampling: the skill asks the client's model

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientInfo,
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, ErrorData, FormElicitationCapability, Implementation,
    InputRequest, ProtocolVersion, SamplingCapability, SamplingMessage,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};

use crate::llm_support::Workspace;
use crate::mcp_conformance_support::{Server, start};

const WRITE_ABOUT: &str = "---\nname: write_about\nversion: 1.0.0\ndescription: Write about a topic\n\
    input_schema:\n  type: object\n  required: [topic]\n  properties:\n    \
    topic: { type: string, description: What to write about }\n---\nWrite about the topic.\n";

/// A client whose user gives the topic `tides` and whose model writes.
#[derive(Default, Clone)]
struct Person {
    forms: Arc<Mutex<Vec<String>>>,
    prompts: Arc<Mutex<Vec<Value>>>,
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientInfo {
        let mut caps = ClientCapabilities::default();
        caps.sampling = Some(SamplingCapability::default());
        let mut elicitation = ElicitationCapability::default();
        elicitation.form = Some(FormElicitationCapability::default());
        caps.elicitation = Some(elicitation);
        ClientInfo::new(caps, Implementation::new("rounds-test", "1.0.0"))
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
        self.forms.lock().unwrap().push(message);
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"topic": "tides"})))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.prompts
            .lock()
            .unwrap()
            .push(serde_json::to_value(&params.messages).unwrap());
        Ok(CreateMessageResult::new(
            SamplingMessage::assistant_text("The tides rise twice a day."),
            "client-model".into(),
        ))
    }
}

fn host(ws: &Workspace) -> Server {
    host_with_key(ws, None)
}

/// The variable the hosts of the shared-key test read their key from.
const KEY_VAR: &str = "A2E_TEST_REQUEST_STATE_KEY";

/// `a2e serve --mcp-http` on `ws`, sealing with `key` when given.
fn host_with_key(ws: &Workspace, key: Option<&str>) -> Server {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_a2e"));
    let extra = format!("[mcp]\nrequest_state_key_env = \"{KEY_VAR}\"\n");
    let config = ws.config(if key.is_some() { &extra } else { "" });
    cmd.args(["serve", "--mcp-http", "127.0.0.1:0", "--config"])
        .arg(config)
        .env_remove("A2E_LLM_BASE_URL")
        .env_remove("A2E_LLM_MODEL");
    if let Some(key) = key {
        cmd.env(KEY_VAR, key);
    }
    start(cmd)
}

/// A stateless rmcp client of `server`.
async fn connect(
    server: &Server,
    person: Person,
) -> rmcp::service::RunningService<RoleClient, Person> {
    // The host's own HTTP client (rustls on ring).
    let http = a2e_http::ClientOptions::default().build().unwrap();
    let config = StreamableHttpClientTransportConfig::with_uri(server.url.clone());
    let transport = StreamableHttpClientTransport::with_client(http, config);
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    person
        .serve_with_lifecycle(transport, lifecycle)
        .await
        .expect("server/discover")
}

fn call(name: &str) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_owned()).with_arguments(serde_json::Map::new())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_client_answers_the_hosts_questions_in_rounds() {
    let ws = Workspace::new();
    ws.skill("write_about", WRITE_ABOUT);
    let server = host(&ws);
    let person = Person::default();
    let client = connect(&server, person.clone()).await;
    let tools = client.list_all_tools().await.unwrap();
    let name = tools
        .iter()
        .map(|t| t.name.to_string())
        .find(|n| n.contains("write_about"))
        .expect("the skill is offered");

    // One round by hand: the missing topic is a question to the user, with
    // a sealed state; nothing ran yet.
    let CallToolResponse::InputRequired(first) = client.call_tool_once(call(&name)).await.unwrap()
    else {
        panic!("a skill without its topic asks for it")
    };
    let asked = first.input_requests.clone().unwrap();
    let (key, question) = asked.iter().next().unwrap();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let InputRequest::Elicitation(form) = question else {
        panic!("the user is asked: {question:?}")
    };
    let form = serde_json::to_value(&form.params).unwrap();
    assert!(
        form["message"].as_str().unwrap().contains("topic"),
        "{form}"
    );
    assert_eq!(form["requestedSchema"]["required"], json!(["topic"]));
    let state = first.request_state.clone().expect("a sealed state");
    assert!(person.prompts.lock().unwrap().is_empty());

    // The retry with the user's answer: the skill runs, and its model call
    // is the next question (to the client's model); the state changed.
    let answer = serde_json::to_value(
        ElicitResult::new(ElicitationAction::Accept).with_content(json!({"topic": "tides"})),
    )
    .unwrap();
    let retry = call(&name)
        .with_input_responses([(key.clone(), answer)].into())
        .with_request_state(state.clone());
    let CallToolResponse::InputRequired(second) = client.call_tool_once(retry).await.unwrap()
    else {
        panic!("the skill's model call is the next question")
    };
    let asked = second.input_requests.clone().unwrap();
    assert!(
        asked
            .values()
            .all(|q| matches!(q, InputRequest::CreateMessage(_))),
        "{asked:?}"
    );
    let sampled = serde_json::to_value(asked.values().next().unwrap()).unwrap();
    assert!(
        sampled.to_string().contains("tides"),
        "the topic reached the skill: {sampled}"
    );
    assert_ne!(second.request_state.as_deref(), Some(state.as_str()));

    // A state altered by the client is refused.
    let tampered = call(&name).with_request_state(format!("{state}x"));
    let err = client.call_tool_once(tampered).await.unwrap_err();
    assert!(err.to_string().contains("requestState"), "{err}");

    // The SDK drives the rounds itself: the user, then the model, answer.
    let result = client.call_tool(call(&name)).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let text = serde_json::to_string(&result.content).unwrap();
    assert!(text.contains("The tides rise twice a day."), "{text}");
    assert_eq!(person.forms.lock().unwrap().len(), 1);
    assert_eq!(person.prompts.lock().unwrap().len(), 1);
    client.cancel().await.unwrap();
}

/// The skill's first answer (the user's topic) as an input response.
fn topic_answer() -> Value {
    serde_json::to_value(
        ElicitResult::new(ElicitationAction::Accept).with_content(json!({"topic": "tides"})),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_that_share_the_key_take_each_others_rounds() {
    let ws = Workspace::new();
    ws.skill("write_about", WRITE_ABOUT);
    let key = "a key of forty bytes for the two hosts!!";
    let (one, two) = (host_with_key(&ws, Some(key)), host_with_key(&ws, Some(key)));
    let other = host_with_key(&ws, Some("another key, of forty bytes, elsewhere!"));
    let (a, b) = (
        connect(&one, Person::default()).await,
        connect(&two, Person::default()).await,
    );
    let c = connect(&other, Person::default()).await;
    let tools = a.list_all_tools().await.unwrap();
    let name = tools
        .iter()
        .map(|t| t.name.to_string())
        .find(|n| n.contains("write_about"))
        .unwrap();

    // Round 1 on the first host, round 2 on the second, round 3 on the first.
    let CallToolResponse::InputRequired(first) = a.call_tool_once(call(&name)).await.unwrap()
    else {
        panic!("the topic is asked")
    };
    let key1 = first.input_requests.unwrap().into_keys().next().unwrap();
    let state = first.request_state.unwrap();
    let retry = call(&name)
        .with_input_responses([(key1.clone(), topic_answer())].into())
        .with_request_state(state.clone());
    let CallToolResponse::InputRequired(second) = b.call_tool_once(retry.clone()).await.unwrap()
    else {
        panic!("the second host takes the first one's state and asks the model")
    };
    let key2 = second.input_requests.unwrap().into_keys().next().unwrap();
    let said = CreateMessageResult::new(
        SamplingMessage::assistant_text("Tides follow the moon."),
        "client-model".into(),
    );
    let last = call(&name)
        .with_input_responses([(key2, serde_json::to_value(said).unwrap())].into())
        .with_request_state(second.request_state.unwrap());
    let CallToolResponse::Complete(result) = a.call_tool_once(last).await.unwrap() else {
        panic!("the first host finishes what the second asked")
    };
    let text = serde_json::to_string(&result.content).unwrap();
    assert!(text.contains("Tides follow the moon."), "{text}");

    // A host with another key refuses the state.
    let err = c.call_tool_once(retry).await.unwrap_err();
    assert!(err.to_string().contains("requestState"), "{err}");
    for client in [a, b, c] {
        client.cancel().await.unwrap();
    }
}

#[test]
fn a_key_too_short_stops_the_server_naming_the_variable() {
    let ws = Workspace::new();
    let extra = format!("[mcp]\nrequest_state_key_env = \"{KEY_VAR}\"\n");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(["serve", "--mcp-http", "127.0.0.1:0", "--config"])
        .arg(ws.config(&extra))
        .env(KEY_VAR, "short")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(KEY_VAR) && stderr.contains("at least 32"),
        "{stderr}"
    );
}
