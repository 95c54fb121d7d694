//! The rmcp handler around a backend: one per MCP connection.
#![allow(deprecated)] // logging/setLevel and resources/subscribe: served for the protocol versions before 2026-07-28

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
    CompleteResult, CreateTaskResult, CustomNotification, CustomRequest, CustomResult, ErrorData,
    GetPromptRequestParams, GetPromptResponse, GetTaskParams, GetTaskResult, Implementation,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, PromptsCapability, ReadResourceRequestParams, ReadResourceResponse,
    ResourcesCapability, ServerCapabilities, ServerConfig, SetLevelRequestParams,
    SubscribeRequestParams, SubscriptionFilter, ToolsCapability, UnsubscribeRequestParams,
    UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{RoleServer, ServerHandler};
use serde_json::{Map, Value};

use super::backend::{BackendTool, TaskSupport, TaskTerms, ToolBackend};
use super::client::{ClientLink, LogLevel};
use super::progress::ProgressSink;
use super::rounds::{Binding, Round, Rounds, StateSeal};
use super::updates::ResourceUpdates;
use crate::output::to_mcp_result;

/// The rmcp handler around a backend. Each connection has its own (and its
/// own logging level); the seal of multi-round requests is the server's.
pub(crate) struct Handler<B> {
    backend: Arc<B>,
    name: Arc<str>,
    level: LogLevel,
    seal: Arc<StateSeal>,
}

impl<B> Clone for Handler<B> {
    fn clone(&self) -> Self {
        Self {
            backend: self.backend.clone(),
            name: self.name.clone(),
            level: self.level.clone(),
            seal: self.seal.clone(),
        }
    }
}

/// A 2026-07-28 request's rounds and what its state is bound to.
struct Stateless {
    binding: Binding,
    rounds: Arc<Rounds>,
}

impl<B: ToolBackend> Handler<B> {
    pub(crate) fn new(backend: Arc<B>, name: &str, seal: Arc<StateSeal>) -> Self {
        Self {
            backend,
            name: name.into(),
            level: LogLevel::default(),
            seal,
        }
    }

    fn link(&self, context: &RequestContext<RoleServer>) -> ClientLink {
        if is_stateless(context) {
            let capabilities = context.client_capabilities().unwrap_or_default();
            return ClientLink::for_rounds(context, Rounds::declared(capabilities));
        }
        ClientLink::new(context.peer.clone(), self.level.clone())
    }

    /// How the tool `name` takes part in tasks (none when the backend
    /// serves no tasks).
    fn task_terms(&self, name: &str) -> TaskTerms {
        if self.backend.serves_tasks() {
            self.backend.task_terms(name)
        } else {
            TaskTerms::default()
        }
    }

    /// The call of `name` started as a task (with the answers `given` to it
    /// in earlier rounds), when the tool takes tasks (`support`) and the
    /// client declared the extension (in the request's `_meta` or at
    /// `initialize`); `-32021` for a tool that runs only as a task, to a
    /// client that did not; `None`: a plain call.
    async fn as_task(
        &self,
        context: &RequestContext<RoleServer>,
        (name, args): (&str, &Map<String, Value>),
        support: TaskSupport,
        given: BTreeMap<String, Value>,
    ) -> Result<Option<CreateTaskResult>, ErrorData> {
        match (support, declares_tasks(context)) {
            (TaskSupport::Forbidden, _) | (TaskSupport::Optional, false) => Ok(None),
            (TaskSupport::Required, false) => Err(ErrorData::missing_required_client_capability(
                rmcp::model::ClientCapabilities::builder()
                    .enable_tasks()
                    .build(),
            )),
            (_, true) => {
                let meta = request_meta(context);
                let capabilities = context.client_capabilities().unwrap_or_default();
                let inbox = Arc::new(super::inbox::TaskInbox::with_answers(capabilities, given));
                let client = ClientLink::for_task(context, inbox);
                let task = self
                    .backend
                    .create_task(name.to_owned(), args.clone(), client, meta)
                    .await?;
                Ok(Some(CreateTaskResult::new(task)))
            }
        }
    }

    /// The rounds of a request of a 2026-07-28 client (`None` for a
    /// session's request): the answers it brings, checked against the state
    /// it echoes.
    fn stateless(
        &self,
        context: &RequestContext<RoleServer>,
        (method, name, arguments): (&str, &str, &Map<String, Value>),
        state: Option<&str>,
        responses: Option<rmcp::model::InputResponses>,
    ) -> Result<Option<Stateless>, ErrorData> {
        if !is_stateless(context) {
            return Ok(None);
        }
        let caller = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.headers.get(axum::http::header::AUTHORIZATION))
            .and_then(|v| v.to_str().ok());
        let binding = Binding::new(caller, method, name, arguments);
        let capabilities = context.client_capabilities().unwrap_or_default();
        let rounds = self.seal.open(&binding, state, responses, capabilities)?;
        Ok(Some(Stateless { binding, rounds }))
    }
}

/// Whether the request's client declared the tasks extension (in the
/// request's `_meta` or at `initialize`).
fn declares_tasks(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|c| c.supports_tasks())
}

/// Whether `context` is a request of a 2026-07-28 client (its version in
/// its `_meta`, no session behind it).
fn is_stateless(context: &RequestContext<RoleServer>) -> bool {
    context
        .meta
        .protocol_version()
        .is_some_and(|v| !v.has_initialize())
}

/// What is wrong with `params` as a `T` (`params.FIELD: …`).
fn decode<T: serde::de::DeserializeOwned>(params: Value) -> Option<String> {
    match serde_path_to_error::deserialize::<_, T>(params) {
        Ok(_) => None,
        Err(e) => {
            let path = e.path().to_string();
            let at = if path == "." {
                "params".to_owned()
            } else {
                format!("params.{path}")
            };
            Some(format!("{at}: {}", e.inner()))
        }
    }
}

trait MethodNotFound {
    fn method_not_found_named(method: &str) -> Self;
}

impl MethodNotFound for ErrorData {
    fn method_not_found_named(method: &str) -> Self {
        ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!("unknown method `{method}`"),
            None,
        )
    }
}

/// The W3C trace-context entries, in `_meta` and in HTTP headers.
const TRACE_FIELDS: [&str; 2] = ["traceparent", "tracestate"];

/// The request's `params._meta`. Over Streamable HTTP, a `traceparent`
/// header (and its `tracestate`) stands in when `_meta` carries none.
fn request_meta(context: &RequestContext<RoleServer>) -> Map<String, Value> {
    let mut meta = context.meta.0.0.clone();
    if !meta.contains_key(TRACE_FIELDS[0])
        && let Some(parts) = context.extensions.get::<axum::http::request::Parts>()
    {
        for name in TRACE_FIELDS {
            if let Some(value) = parts.headers.get(name).and_then(|v| v.to_str().ok()) {
                meta.insert(name.to_owned(), Value::from(value));
            }
        }
    }
    meta
}

fn cursor(request: Option<PaginatedRequestParams>) -> Option<String> {
    request.and_then(|r| r.cursor)
}

impl<B: ToolBackend> ServerHandler for Handler<B> {
    fn get_info(&self) -> ServerConfig {
        let features = self.backend.features();
        let mut caps = ServerCapabilities::default();
        caps.tools = Some(ToolsCapability::default());
        caps.logging = Some(Map::new());
        if features.completions {
            caps.completions = Some(Map::new());
        }
        if self.backend.serves_tasks() {
            caps.extensions
                .get_or_insert_with(Default::default)
                .insert(rmcp::model::TASKS_EXTENSION_ID.to_owned(), Map::new());
        }
        let experimental = self.backend.experimental();
        if !experimental.is_empty() {
            caps.experimental = Some(
                experimental
                    .into_iter()
                    .filter_map(|(k, v)| match v {
                        Value::Object(o) => Some((k, o)),
                        _ => None,
                    })
                    .collect(),
            );
        }
        if features.prompts {
            caps.prompts = Some(PromptsCapability::default());
        }
        if features.resources {
            let mut resources = ResourcesCapability::default();
            resources.subscribe = features.subscribe.then_some(true);
            caps.resources = Some(resources);
        }
        ServerConfig::new(caps).with_server_info(Implementation::new(
            self.name.to_string(),
            env!("CARGO_PKG_VERSION"),
        ))
    }

    /// The tool rmcp checks a 2026-07-28 request's `Mcp-Param-*` headers
    /// against (only its input schema is read).
    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        let schema = self.backend.input_schema_of(name)?;
        Some(rmcp::model::Tool::new(
            name.to_owned(),
            "",
            Arc::new(schema),
        ))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.backend
            .attach(ClientLink::new(context.peer, self.level.clone()));
    }

    /// A request of a known method whose params do not fit its shape reaches
    /// here (rmcp could not decode it): `invalid params` naming what is wrong,
    /// not `method not found`.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let params = request.params.unwrap_or(Value::Null);
        if let Some(answer) =
            self.backend
                .custom_request(&request.method, params.clone(), _context.peer.clone())
        {
            return answer.await.map(CustomResult::new);
        }
        let shape = match request.method.as_str() {
            "tools/call" => decode::<CallToolRequestParams>(params),
            "resources/read" => decode::<ReadResourceRequestParams>(params),
            "resources/subscribe" => decode::<SubscribeRequestParams>(params),
            "resources/unsubscribe" => decode::<UnsubscribeRequestParams>(params),
            "prompts/get" => decode::<GetPromptRequestParams>(params),
            "completion/complete" => decode::<CompleteRequestParams>(params),
            "logging/setLevel" => decode::<SetLevelRequestParams>(params),
            _ => return Err(ErrorData::method_not_found_named(&request.method)),
        };
        Err(ErrorData::invalid_params(
            format!(
                "{}: {}",
                request.method,
                shape.unwrap_or_else(|| "params do not fit".into())
            ),
            None,
        ))
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        context: NotificationContext<RoleServer>,
    ) {
        let params = notification.params.unwrap_or(Value::Null);
        self.backend
            .custom_notification(&notification.method, params, context.peer);
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.level.set(request.level);
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // A client may ask before its `notifications/initialized` is handled;
        // the backend learns who asks (what it may offer can depend on the
        // client's capabilities) before it lists.
        self.backend.attach(self.link(&context));
        let tools = self.backend.list_tools().await;
        Ok(ListToolsResult::with_all_items(
            tools.iter().map(BackendTool::to_mcp).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.into_owned();
        let args = request.arguments.unwrap_or_default();
        self.backend.check_call(&name, &args)?;
        let terms = self.task_terms(&name);
        let mut responses = request.input_responses;
        let rounds = |responses| {
            let state = request.request_state.as_deref();
            self.stateless(&context, ("tools/call", &name, &args), state, responses)
        };
        // A tool that gathers its input first asks in rounds while the
        // request brings no answers; the round that brings them starts the
        // task with them (its `requestState` stays out of the task).
        let gathering = terms.gathers_input
            && terms.support != TaskSupport::Forbidden
            && is_stateless(&context)
            && declares_tasks(&context);
        let (stateless, given) = if gathering {
            let stateless = rounds(responses.take())?;
            let given = stateless
                .as_ref()
                .map(|s| s.rounds.answers().clone())
                .unwrap_or_default();
            (Some(stateless), given)
        } else {
            (None, BTreeMap::new())
        };
        if !gathering || !given.is_empty() {
            let target = (name.as_str(), &args);
            if let Some(task) = self.as_task(&context, target, terms.support, given).await? {
                return Ok(CallToolResponse::Task(task));
            }
        }
        let stateless = match stateless {
            Some(gathered) => gathered,
            None => rounds(responses.take())?,
        };
        // A task-only tool whose first round asks nothing ends in it: still
        // a task (one that ended), as the tool requires.
        let task_only = gathering && terms.support == TaskSupport::Required;
        let kept = task_only.then(|| (name.clone(), args.clone()));
        let link = match &stateless {
            Some(s) => ClientLink::for_rounds(&context, s.rounds.clone()),
            None => self.link(&context),
        };
        let sink = ProgressSink::for_call(
            context.peer.clone(),
            context.meta.get_progress_token(),
            link,
        );
        let meta = request_meta(&context);
        let call = self
            .backend
            .call_tool(name, args, sink.clone(), context.ct.clone(), meta);
        let result = match stateless {
            None => call.await,
            Some(s) => match self.seal.run(&s.binding, &s.rounds, call).await? {
                Round::Done(result) => result,
                Round::Input(input) => return Ok(CallToolResponse::InputRequired(input)),
            },
        };
        sink.flush().await;
        if let Some((name, args)) = kept {
            let task = self.backend.ended_task(name, args, result).await?;
            return Ok(CallToolResponse::Task(CreateTaskResult::new(task)));
        }
        Ok(CallToolResponse::Complete(to_mcp_result(&result)))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.backend
            .get_task(request.task_id)
            .await
            .map(GetTaskResult::new)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.backend
            .update_task(request.task_id, request.input_responses)
            .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.backend.cancel_task(request.task_id).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.backend.list_resources(cursor(request)).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.backend.list_resource_templates().await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.backend
            .read_resource(request.uri)
            .await
            .map(ReadResourceResponse::Complete)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let updates = ResourceUpdates::Session(self.link(&context));
        self.backend.subscribe(request.uri, updates).await
    }

    /// `subscriptions/listen` (2026-07-28) is served when resources can be
    /// subscribed to: what it delivers is their updates (rmcp keeps to the
    /// filter, acknowledges it and tags each notification).
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let features = self.backend.features();
        (features.resources && features.subscribe).then(|| {
            let mut accepted = SubscriptionFilter::new();
            accepted
                .resource_subscriptions
                .clone_from(&requested.resource_subscriptions);
            accepted
        })
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let ends = context.request_context().ct.child_token();
        let _end = ends.clone().drop_guard();
        for uri in context.accepted().resource_subscriptions.iter().flatten() {
            let updates = ResourceUpdates::Listen {
                sink: context.sink().clone(),
                ends: ends.clone(),
            };
            self.backend.subscribe(uri.clone(), updates).await?;
        }
        context.cancelled().await;
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let link = self.link(&context);
        self.backend.unsubscribe(request.uri, link).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.backend.list_prompts(cursor(request)).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let args: Map<String, Value> = request.arguments.unwrap_or_default().into_iter().collect();
        let stateless = self.stateless(
            &context,
            ("prompts/get", &request.name, &args),
            request.request_state.as_deref(),
            request.input_responses,
        )?;
        let Some(s) = stateless else {
            let get = self
                .backend
                .get_prompt(request.name, args, self.link(&context));
            return get.await.map(GetPromptResponse::Complete);
        };
        let link = ClientLink::for_rounds(&context, s.rounds.clone());
        let get = self.backend.get_prompt(request.name, args, link);
        match self.seal.run(&s.binding, &s.rounds, get).await? {
            Round::Done(result) => result.map(GetPromptResponse::Complete),
            Round::Input(input) => Ok(GetPromptResponse::InputRequired(input)),
        }
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let info = self.backend.complete(request).await?;
        Ok(CompleteResult::new(info))
    }
}
