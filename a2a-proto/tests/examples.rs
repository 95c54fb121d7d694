//! Examples of the specification, decoded and encoded again. Each comes from
//! `docs/specification.md` of a2aproject/A2A (v1.0.1, or the main branch
//! where it corrects a v0.3 leftover), section noted at each.

use a2a_proto::{
    AgentCard, ListTasksResponse, PartContent, Role, SecurityScheme, SendMessageRequest,
    SendMessageResponse, StreamResponse, TaskState, Validate,
};

use crate::common::{exact, stable};

/// §8.5 "Sample Agent Card", as on the main branch after v1.0.1, where
/// `security` became `securityRequirements` with `StringList`s.
pub const SAMPLE_CARD: &str = r#"{
  "name": "GeoSpatial Route Planner Agent",
  "description": "Provides advanced route planning, traffic analysis, and custom map generation services. This agent can calculate optimal routes, estimate travel times considering real-time traffic, and create personalized maps with points of interest.",
  "supportedInterfaces": [
    {"url": "https://georoute-agent.example.com/a2a/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
    {"url": "https://georoute-agent.example.com/a2a/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
    {"url": "https://georoute-agent.example.com/a2a/json", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
  ],
  "provider": {
    "organization": "Example Geo Services Inc.",
    "url": "https://www.examplegeoservices.com"
  },
  "iconUrl": "https://georoute-agent.example.com/icon.png",
  "version": "1.2.0",
  "documentationUrl": "https://docs.examplegeoservices.com/georoute-agent/api",
  "capabilities": {
    "streaming": true,
    "pushNotifications": true,
    "extendedAgentCard": true
  },
  "securitySchemes": {
    "google": {
      "openIdConnectSecurityScheme": {
        "openIdConnectUrl": "https://accounts.google.com/.well-known/openid-configuration"
      }
    }
  },
  "securityRequirements": [{ "schemes": { "google": { "list": ["openid", "profile", "email"] } } }],
  "defaultInputModes": ["application/json", "text/plain"],
  "defaultOutputModes": ["application/json", "image/png"],
  "skills": [
    {
      "id": "route-optimizer-traffic",
      "name": "Traffic-Aware Route Optimizer",
      "description": "Calculates the optimal driving route between two or more locations, taking into account real-time traffic conditions, road closures, and user preferences (e.g., avoid tolls, prefer highways).",
      "tags": ["maps", "routing", "navigation", "directions", "traffic"],
      "examples": [
        "Plan a route from '1600 Amphitheatre Parkway, Mountain View, CA' to 'San Francisco International Airport' avoiding tolls.",
        "{\"origin\": {\"lat\": 37.422, \"lng\": -122.084}, \"destination\": {\"lat\": 37.7749, \"lng\": -122.4194}, \"preferences\": [\"avoid_ferries\"]}"
      ],
      "inputModes": ["application/json", "text/plain"],
      "outputModes": ["application/json", "application/vnd.geo+json", "text/html"]
    },
    {
      "id": "custom-map-generator",
      "name": "Personalized Map Generator",
      "description": "Creates custom map images or interactive map views based on user-defined points of interest, routes, and style preferences. Can overlay data layers.",
      "tags": ["maps", "customization", "visualization", "cartography"],
      "examples": [
        "Generate a map of my upcoming road trip with all planned stops highlighted.",
        "Show me a map visualizing all coffee shops within a 1-mile radius of my current location."
      ],
      "inputModes": ["application/json"],
      "outputModes": ["image/png", "image/jpeg", "application/json", "text/html"]
    }
  ],
  "signatures": [
    {
      "protected": "eyJhbGciOiJFUzI1NiIsInR5cCI6IkpPU0UiLCJraWQiOiJrZXktMSIsImprdSI6Imh0dHBzOi8vZXhhbXBsZS5jb20vYWdlbnQvandrcy5qc29uIn0",
      "signature": "QFdkNLNszlGj3z3u0YQGt_T9LixY3qtdQpZmsTdDHDe3fXV9y9-B3m2-XgCpzuhiLt8E0tV6HXoZKHv4GtHgKQ"
    }
  ]
}"#;

#[test]
fn the_sample_agent_card_round_trips_and_is_valid() {
    let card: AgentCard = exact(SAMPLE_CARD);
    assert_eq!(card.supported_interfaces.len(), 3);
    assert_eq!(card.supported_interfaces[2].protocol_binding, "HTTP+JSON");
    assert_eq!(card.capabilities.extended_agent_card, Some(true));
    let Some(SecurityScheme::OpenIdConnect(oidc)) = card.security_schemes.get("google") else {
        panic!(
            "google is an OpenID Connect scheme: {:?}",
            card.security_schemes
        );
    };
    assert!(oidc.open_id_connect_url.ends_with("openid-configuration"));
    assert_eq!(
        card.security_requirements[0].schemes["google"].list.len(),
        3
    );
    assert_eq!(card.validate(), Ok(()));
}

#[test]
fn v1_0_1s_sample_card_with_the_v0_3_security_field_still_decodes() {
    // v1.0.1's §8.5 kept `"security": [{"google": [...]}]`, a v0.3 name: an
    // unknown field now, ignored (spec §5.7), so the card still reads.
    let old = SAMPLE_CARD.replace(
        r#""securityRequirements": [{ "schemes": { "google": { "list": ["openid", "profile", "email"] } } }]"#,
        r#""security": [{ "google": ["openid", "profile", "email"] }]"#,
    );
    let card: AgentCard = stable(&old);
    assert!(card.security_requirements.is_empty());
    assert_eq!(card.skills.len(), 2);
}

#[test]
fn basic_task_execution_section_6_1() {
    let request: SendMessageRequest = stable(
        r#"{"message": {"role": "ROLE_USER", "parts": [{"text": "What is the weather today?"}], "messageId": "msg-uuid"}}"#,
    );
    assert_eq!(request.message.role, Role::User);
    assert_eq!(
        request.message.parts[0].as_text(),
        Some("What is the weather today?")
    );
    let response: SendMessageResponse = exact(
        r#"{
          "task": {
            "id": "task-uuid",
            "contextId": "context-uuid",
            "status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [{
              "artifactId": "artifact-uuid",
              "name": "Weather Report",
              "parts": [{"text": "Today will be sunny with a high of 75°F"}]
            }]
          }
        }"#,
    );
    let SendMessageResponse::Task(task) = response else {
        panic!("a task")
    };
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(task.artifacts[0].name, "Weather Report");
}

#[test]
fn the_streamed_events_of_section_6_2() {
    // The main branch's version, where every event carries its contextId.
    let items = [
        r#"{"task": {"id": "task-uuid", "contextId": "context-uuid", "status": {"state": "TASK_STATE_WORKING"}}}"#,
        r##"{"artifactUpdate": {"taskId": "task-uuid", "contextId": "context-uuid", "artifact": {"parts": [{"text": "# Climate Change Report\n\n"}]}}}"##,
        r#"{"statusUpdate": {"taskId": "task-uuid", "contextId": "context-uuid", "status": {"state": "TASK_STATE_COMPLETED"}}}"#,
    ];
    let events: Vec<StreamResponse> = items.iter().map(|item| stable(item)).collect();
    assert!(matches!(&events[0], StreamResponse::Task(t) if t.status.state == TaskState::Working));
    assert!(matches!(&events[1], StreamResponse::ArtifactUpdate(e) if !e.append));
    assert!(matches!(&events[2], StreamResponse::StatusUpdate(e) if e.status.state.is_terminal()));
    assert!(events.iter().all(|e| e.task_id() == Some("task-uuid")));
    // The example's artifact has no artifactId, which the proto requires.
    let violations = events[1].violations();
    assert_eq!(violations[0].field, "artifactUpdate.artifact.artifactId");
}

#[test]
fn an_input_required_task_of_section_6_3() {
    let response: SendMessageResponse = stable(
        r#"{
          "task": {
            "id": "task-uuid",
            "status": {
              "state": "TASK_STATE_INPUT_REQUIRED",
              "message": {
                "role": "ROLE_AGENT",
                "parts": [{"text": "I need more details. Where would you like to fly from and to?"}]
              }
            }
          }
        }"#,
    );
    let SendMessageResponse::Task(task) = response else {
        panic!("a task")
    };
    assert!(task.status.state.is_interrupted());
    let follow_up: SendMessageRequest = stable(
        r#"{"message": {"taskId": "task-uuid", "role": "ROLE_USER", "parts": [{"text": "From San Francisco to New York"}], "messageId": "msg-2"}}"#,
    );
    assert_eq!(follow_up.message.task_id, "task-uuid");
    assert_eq!(follow_up.validate(), Ok(()));
}

#[test]
fn list_tasks_responses_of_section_6_5() {
    let page: ListTasksResponse = exact(
        r#"{
          "tasks": [
            {
              "id": "789abc-def0-1234-5678-9abcdef01234",
              "contextId": "another-context-id",
              "status": {
                "state": "TASK_STATE_WORKING",
                "message": {
                  "role": "ROLE_AGENT",
                  "parts": [{"text": "Processing your document analysis..."}],
                  "messageId": "msg-status-update"
                },
                "timestamp": "2024-03-15T10:20:00Z"
              }
            }
          ],
          "totalSize": 1,
          "pageSize": 20,
          "nextPageToken": ""
        }"#,
    );
    assert_eq!((page.total_size, page.page_size), (1, 20));
    assert_eq!(
        page.tasks[0].status.timestamp.as_deref(),
        Some("2024-03-15T10:20:00Z")
    );
    let next: ListTasksResponse = exact(
        r#"{"tasks": [], "totalSize": 15, "pageSize": 10, "nextPageToken": "base64-encoded-next-cursor-token"}"#,
    );
    assert_eq!(next.next_page_token, "base64-encoded-next-cursor-token");
}

#[test]
fn push_notification_setup_of_section_6_6() {
    let request: SendMessageRequest = exact(
        r#"{
          "message": {
            "role": "ROLE_USER",
            "parts": [{"text": "Generate the Q1 sales report. This usually takes a while. Notify me when it's ready."}],
            "messageId": "6dbc13b5-bd57-4c2b-b503-24e381b6c8d6"
          },
          "configuration": {
            "taskPushNotificationConfig": {
              "url": "https://client.example.com/webhook/a2a-notifications",
              "authentication": {"scheme": "Bearer", "credentials": "secure-client-token-for-task-aaa"}
            }
          }
        }"#,
    );
    let push = request
        .configuration
        .and_then(|c| c.task_push_notification_config)
        .expect("a push config");
    assert_eq!(
        push.authentication.map(|a| a.scheme).as_deref(),
        Some("Bearer")
    );
    // The webhook's body is a StreamResponse.
    let notification: StreamResponse = exact(
        r#"{
          "statusUpdate": {
            "taskId": "43667960-d455-4453-b0cf-1bae4955270d",
            "contextId": "c295ea44-7543-4f78-b524-7a38915ad6e4",
            "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2024-03-15T18:30:00Z"}
          }
        }"#,
    );
    assert_eq!(notification.validate(), Ok(()));
}

#[test]
fn file_parts_of_section_6_7() {
    // The spec's example misses a comma and elides the base64 with "...";
    // here with the comma and the elided prefix as the bytes.
    let request: SendMessageRequest = exact(
        r#"{
          "message": {
            "role": "ROLE_USER",
            "parts": [
              {"text": "Analyze this image and highlight any faces."},
              {"raw": "iVBORw0KGgoAAAANSUhEUgAAAAUA", "filename": "input_image.png", "mediaType": "image/png"}
            ],
            "messageId": "6dbc13b5-bd57-4c2b-b503-24e381b6c8d6"
          }
        }"#,
    );
    let image = &request.message.parts[1];
    let PartContent::Raw(bytes) = &image.content else {
        panic!("raw bytes: {image:?}")
    };
    assert_eq!(&bytes[..4], b"\x89PNG");
    assert_eq!(
        (image.filename.as_str(), image.media_type.as_str()),
        ("input_image.png", "image/png")
    );
    let response: SendMessageResponse = exact(
        r#"{
          "task": {
            "id": "43667960-d455-4453-b0cf-1bae4955270d",
            "contextId": "c295ea44-7543-4f78-b524-7a38915ad6e4",
            "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2024-03-15T12:05:00Z"},
            "artifacts": [{
              "artifactId": "9b6934dd-37e3-4eb1-8766-962efaab63a1",
              "name": "processed_image_with_faces.png",
              "parts": [{
                "url": "https://storage.example.com/processed/task-bbb/output.png?token=xyz",
                "filename": "output.png",
                "mediaType": "image/png"
              }]
            }]
          }
        }"#,
    );
    let SendMessageResponse::Task(task) = response else {
        panic!("a task")
    };
    assert!(
        matches!(&task.artifacts[0].parts[0].content, PartContent::Url(u) if u.contains("output.png"))
    );
}

#[test]
fn structured_data_of_section_6_8() {
    let request: SendMessageRequest = exact(
        r#"{
          "message": {
            "role": "ROLE_USER",
            "parts": [{
              "text": "Show me a list of my open IT tickets",
              "metadata": {
                "mediaType": "application/json",
                "schema": {
                  "type": "array",
                  "items": {"type": "object", "properties": {"ticketNumber": {"type": "string"}, "description": {"type": "string"}}}
                }
              }
            }],
            "messageId": "85b26db5-ffbb-4278-a5da-a7b09dea1b47"
          }
        }"#,
    );
    let metadata = request.message.parts[0]
        .metadata
        .as_ref()
        .expect("metadata");
    assert_eq!(metadata["schema"]["type"], "array");
    // A data part holds any JSON value, null included (proto `Value`).
    let data: a2a_proto::Part =
        exact(r#"{"data": {"ticketNumber": "REQ12312"}, "mediaType": "application/json"}"#);
    assert!(matches!(data.content, PartContent::Data(_)));
    let null: a2a_proto::Part = exact(r#"{"data": null}"#);
    assert_eq!(null.content, PartContent::Data(serde_json::Value::Null));
}

#[test]
fn the_partial_card_of_section_6_9_decodes_and_fails_validation() {
    let card: AgentCard = stable(
        r#"{
          "capabilities": {"extendedAgentCard": true},
          "securitySchemes": {
            "google": {"openIdConnectSecurityScheme": {"openIdConnectUrl": "https://accounts.google.com/.well-known/openid-configuration"}}
          }
        }"#,
    );
    let fields: Vec<String> = card.violations().into_iter().map(|v| v.field).collect();
    assert_eq!(
        fields,
        [
            "name",
            "description",
            "supportedInterfaces",
            "version",
            "defaultInputModes",
            "defaultOutputModes",
            "skills"
        ]
    );
}
