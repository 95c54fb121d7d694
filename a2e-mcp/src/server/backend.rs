//! What a host implements to be served over MCP.

use std::future::Future;
use std::sync::Arc;

use a2e_proto::{ToolDefinition, ToolResult};
use rmcp::model::{
    CompleteRequestParams, CompletionInfo, DetailedTask, ErrorData, GetPromptResult,
    InputResponses, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ReadResourceResult, Task, Tool, ToolAnnotations,
};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::client::ClientLink;
use super::progress::ProgressSink;
use super::updates::ResourceUpdates;
use crate::schema::schema_from_params;

/// A tool offered to MCP clients: its definition and, when the backend has
/// one, the full JSON Schema of its input (otherwise it is derived from the
/// definition's parameters); a title, annotations and an output schema when
/// the backend knows them.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendTool {
    /// The definition.
    pub definition: ToolDefinition,
    /// The full input schema, if known.
    pub input_schema: Option<Map<String, Value>>,
    /// A name for people (`title`).
    pub title: Option<String>,
    /// What the tool does to its world (`annotations`); the definition's
    /// `idempotent` is added to them.
    pub annotations: Option<ToolAnnotations>,
    /// The schema every successful result's `structuredContent` holds to
    /// (`outputSchema`): only for a tool whose every result is such an object.
    pub output_schema: Option<Map<String, Value>>,
}

impl From<ToolDefinition> for BackendTool {
    fn from(definition: ToolDefinition) -> Self {
        Self {
            definition,
            input_schema: None,
            title: None,
            annotations: None,
            output_schema: None,
        }
    }
}

impl BackendTool {
    /// The MCP form of this tool. The output parameters are no output schema:
    /// they describe a result's fields, but a result need not be an object
    /// (MCP clients hold a result to an advertised output schema); only
    /// [`output_schema`](Self::output_schema) is advertised.
    pub fn to_mcp(&self) -> Tool {
        let def = &self.definition;
        let schema = self
            .input_schema
            .clone()
            .unwrap_or_else(|| schema_from_params(&def.input_parameters));
        let mut tool = Tool::new(def.name.clone(), def.description.clone(), Arc::new(schema));
        tool.title = self.title.clone();
        tool.output_schema = self.output_schema.clone().map(Arc::new);
        let mut annotations = self.annotations.clone();
        if def.idempotent {
            annotations
                .get_or_insert_with(ToolAnnotations::new)
                .idempotent_hint = Some(true);
        }
        tool.annotations = annotations;
        tool
    }
}

/// Which of the optional MCP features a backend offers (each needs the
/// matching methods of [`ToolBackend`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Features {
    /// `resources/list`, `resources/read`, `resources/templates/list`.
    pub resources: bool,
    /// `resources/subscribe` and `resources/unsubscribe`.
    pub subscribe: bool,
    /// `prompts/list` and `prompts/get`.
    pub prompts: bool,
    /// `completion/complete`.
    pub completions: bool,
}

/// How a tool takes part in the tasks extension (`io.modelcontextprotocol/tasks`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TaskSupport {
    /// It runs as a plain call only.
    #[default]
    Forbidden,
    /// A client that declared the extension gets a task; another, a plain call.
    Optional,
    /// It runs only as a task: a client that did not declare the extension
    /// is refused (`-32021`).
    Required,
}

/// How a tool takes part in tasks: its support, and whether it gathers its
/// input before its work (then a 2026-07-28 client's call asks its questions
/// in `input_required` rounds, and the round that brings answers starts the
/// task with them: MRTR composed with tasks, SEP-2663).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskTerms {
    /// How it takes part.
    pub support: TaskSupport,
    /// Whether it asks for its input before its work.
    pub gathers_input: bool,
}

/// The JSON-RPC error of a task id the server does not know (`-32602`,
/// naming it).
pub fn unknown_task(task_id: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("no task `{task_id}` (params.taskId)"),
        Some(serde_json::json!({ "taskId": task_id })),
    )
}

/// What the host implements to be served over MCP.
///
/// The host applies its own confinement, allow-lists and audit inside
/// [`call_tool`](Self::call_tool), as it does for A2E calls. Every method but
/// the two tool methods has a default: a backend that offers only tools
/// implements only those. Errors are JSON-RPC errors ([`ErrorData`]); a
/// message should name the field that is wrong.
pub trait ToolBackend: Send + Sync + 'static {
    /// The tools to offer.
    fn list_tools(&self) -> impl Future<Output = Vec<BackendTool>> + Send;

    /// Runs a tool. `progress` forwards events to the client as
    /// `notifications/progress` (when it asked for them) and
    /// `notifications/message`, and reaches the client
    /// ([`ProgressSink::client`]); `cancel` fires when the client sends
    /// `notifications/cancelled` or goes away. `meta` is the request's
    /// `params._meta`: a W3C `traceparent` and `tracestate` among its entries
    /// when the client traces (over Streamable HTTP, taken from the request's
    /// headers when `_meta` has none), for the call's spans to join the
    /// client's trace.
    fn call_tool(
        &self,
        name: String,
        arguments: Map<String, Value>,
        progress: ProgressSink,
        cancel: CancellationToken,
        meta: Map<String, Value>,
    ) -> impl Future<Output = ToolResult> + Send;

    /// The backend for a new connection (a Streamable HTTP session): by
    /// default this one; a backend that keeps state per client returns a
    /// fresh one.
    fn for_connection(self: &Arc<Self>) -> Arc<Self>
    where
        Self: Sized,
    {
        self.clone()
    }

    /// The input schema of the tool `name` as it is offered (`None`: unknown,
    /// or derived from its parameters): a 2026-07-28 request's `Mcp-Param-*`
    /// headers are checked against the arguments its `x-mcp-header`
    /// properties name.
    fn input_schema_of(&self, name: &str) -> Option<Map<String, Value>> {
        let _ = name;
        None
    }

    /// Whether calls may run as tasks: the server then advertises the
    /// `io.modelcontextprotocol/tasks` extension and serves `tasks/get`,
    /// `tasks/update` and `tasks/cancel` (rmcp refuses them with -32021 to a
    /// client that did not declare the extension).
    fn serves_tasks(&self) -> bool {
        false
    }

    /// How the tool `name` takes part in tasks (only read when
    /// [`serves_tasks`](Self::serves_tasks)).
    fn task_terms(&self, name: &str) -> TaskTerms {
        let _ = name;
        TaskTerms::default()
    }

    /// Starts the `tools/call` of `name` as a task: its seed state, once a
    /// `tasks/get` of its id finds it. `client` is the task's link: its
    /// questions wait in its [`TaskInbox`](super::TaskInbox) for
    /// `tasks/update`. `meta` as for [`call_tool`](Self::call_tool).
    fn create_task(
        &self,
        name: String,
        arguments: Map<String, Value>,
        client: ClientLink,
        meta: Map<String, Value>,
    ) -> impl Future<Output = Result<Task, ErrorData>> + Send {
        let _ = (arguments, client, meta);
        async move {
            Err(ErrorData::invalid_params(
                format!("`{name}` does not run as a task (params.name)"),
                None,
            ))
        }
    }

    /// A task that ended in the request that would have started it: a
    /// task-only tool that gathers its input asked nothing and ended in its
    /// first round with `result`. Journaled as a task that ended, so the
    /// client gets the task it asked for.
    fn ended_task(
        &self,
        name: String,
        arguments: Map<String, Value>,
        result: ToolResult,
    ) -> impl Future<Output = Result<Task, ErrorData>> + Send {
        let _ = (arguments, result);
        async move {
            Err(ErrorData::invalid_params(
                format!("`{name}` does not run as a task (params.name)"),
                None,
            ))
        }
    }

    /// `tasks/get`: the task's state, its result or error inlined once it
    /// ended.
    fn get_task(
        &self,
        task_id: String,
    ) -> impl Future<Output = Result<DetailedTask, ErrorData>> + Send {
        async move { Err(unknown_task(&task_id)) }
    }

    /// `tasks/update`: answers to the questions a task asks.
    fn update_task(
        &self,
        task_id: String,
        responses: InputResponses,
    ) -> impl Future<Output = Result<(), ErrorData>> + Send {
        let _ = responses;
        async move { Err(unknown_task(&task_id)) }
    }

    /// `tasks/cancel`: asks the task to stop (a task that ended already is
    /// left as it is).
    fn cancel_task(&self, task_id: String) -> impl Future<Output = Result<(), ErrorData>> + Send {
        async move { Err(unknown_task(&task_id)) }
    }

    /// The key that seals the `requestState` of 2026-07-28 multi-round
    /// requests, shared by every server that may get a retry (`None`: a key
    /// of this server's own).
    fn request_state_key(&self) -> Option<Vec<u8>> {
        None
    }

    /// Checks a call before it runs: an `Err` is the call's JSON-RPC error
    /// (arguments too large, say), and the tool does not run.
    fn check_call(&self, name: &str, arguments: &Map<String, Value>) -> Result<(), ErrorData> {
        let _ = (name, arguments);
        Ok(())
    }

    /// The optional features offered.
    fn features(&self) -> Features {
        Features::default()
    }

    /// Entries of `capabilities.experimental` in the `initialize` result
    /// (an extension's advertisement, e.g. ACMP's `acmp`).
    fn experimental(&self) -> Map<String, Value> {
        Map::new()
    }

    /// A request of a method MCP does not define (an extension's, e.g.
    /// `acmp/invoke`): `None` when the backend does not serve `method`.
    /// `peer` reaches the client for the notifications that go with it;
    /// the response goes out when the future ends.
    fn custom_request(
        &self,
        method: &str,
        params: Value,
        peer: rmcp::Peer<rmcp::RoleServer>,
    ) -> Option<futures::future::BoxFuture<'static, Result<Value, ErrorData>>> {
        let _ = (method, params, peer);
        None
    }

    /// A notification of a method MCP does not define (e.g. `acmp/cancel`).
    fn custom_notification(&self, method: &str, params: Value, peer: rmcp::Peer<rmcp::RoleServer>) {
        let _ = (method, params, peer);
    }

    /// A client finished `initialize`, or asks for the tools: its link, for
    /// what the backend sends it outside of calls (log messages, resource
    /// updates); called again with the same client's link.
    fn attach(&self, client: ClientLink) {
        let _ = client;
    }

    /// `resources/list`, from `cursor` on.
    fn list_resources(
        &self,
        cursor: Option<String>,
    ) -> impl Future<Output = Result<ListResourcesResult, ErrorData>> + Send {
        let _ = cursor;
        async { Ok(ListResourcesResult::default()) }
    }

    /// `resources/templates/list`.
    fn list_resource_templates(
        &self,
    ) -> impl Future<Output = Result<ListResourceTemplatesResult, ErrorData>> + Send {
        async { Ok(ListResourceTemplatesResult::default()) }
    }

    /// `resources/read`.
    fn read_resource(
        &self,
        uri: String,
    ) -> impl Future<Output = Result<ReadResourceResult, ErrorData>> + Send {
        async move { Err(resource_not_found(&uri)) }
    }

    /// `resources/subscribe`, or a resource of a `subscriptions/listen`
    /// stream's filter: `updates` are to get
    /// `notifications/resources/updated` when `uri` changes, while they
    /// listen.
    fn subscribe(
        &self,
        uri: String,
        updates: ResourceUpdates,
    ) -> impl Future<Output = Result<(), ErrorData>> + Send {
        let _ = updates;
        async move { Err(resource_not_found(&uri)) }
    }

    /// `resources/unsubscribe`.
    fn unsubscribe(
        &self,
        uri: String,
        client: ClientLink,
    ) -> impl Future<Output = Result<(), ErrorData>> + Send {
        let _ = (uri, client);
        async { Ok(()) }
    }

    /// `prompts/list`, from `cursor` on.
    fn list_prompts(
        &self,
        cursor: Option<String>,
    ) -> impl Future<Output = Result<ListPromptsResult, ErrorData>> + Send {
        let _ = cursor;
        async { Ok(ListPromptsResult::default()) }
    }

    /// `prompts/get`; `client` reaches the client that asks (a prompt may
    /// need its user's input: [`ClientLink::elicit`]).
    fn get_prompt(
        &self,
        name: String,
        arguments: Map<String, Value>,
        client: ClientLink,
    ) -> impl Future<Output = Result<GetPromptResult, ErrorData>> + Send {
        let _ = (arguments, client);
        async move {
            Err(ErrorData::invalid_params(
                format!("unknown prompt `{name}` (params.name)"),
                None,
            ))
        }
    }

    /// `completion/complete`.
    fn complete(
        &self,
        request: CompleteRequestParams,
    ) -> impl Future<Output = Result<CompletionInfo, ErrorData>> + Send {
        let _ = request;
        async { Ok(CompletionInfo::default()) }
    }
}

/// The JSON-RPC error of an unknown resource (`-32002`, as the MCP spec
/// gives it), naming the URI.
pub fn resource_not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found(
        format!("no resource `{uri}` (params.uri)"),
        Some(serde_json::json!({ "uri": uri })),
    )
}
