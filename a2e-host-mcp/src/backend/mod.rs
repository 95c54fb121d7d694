//! The host served to MCP clients: the backend, what a connection offers
//! ([`McpExtras`]), and the MCP methods it answers; its `tools/list` in
//! `listing.rs`, the names it offers under in `names.rs`, its `tools/call`
//! in `calls.rs`.

mod calls;
mod listing;
pub mod names;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2e_mcp::rmcp::model::{
    CompleteRequestParams, CompletionInfo, ErrorData, GetPromptResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Reference,
};
use a2e_mcp::server::ResourceUpdates;
use a2e_mcp::server::resource_not_found;
use a2e_mcp::{BackendTool, ClientLink, Features, ProgressSink, ToolBackend};
use a2e_proto::ToolResult;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use self::calls::json_size;
use super::prompts::{PromptProvider, SkillPrompts};
use super::resources::{PAGE_SIZE, ResourceProvider, WorkspaceResources};
use crate::host::Host;

pub use names::SKILL_PREFIX;
use names::{McpNames, Target};

/// Most bytes of one argument's JSON in an MCP call (a larger one is an
/// `invalid params` error naming it; the tool does not run).
pub const MAX_ARGUMENT_BYTES: usize = 4 * 1024 * 1024;

/// How often a subscribed resource is looked at for a change.
const WATCH_EVERY: Duration = Duration::from_millis(250);

/// What an MCP connection offers besides the host's tools and skills:
/// resource and prompt providers, asked in order.
#[derive(Clone, Default)]
pub struct McpExtras {
    /// Resource providers.
    pub resources: Vec<Arc<dyn ResourceProvider>>,
    /// Prompt providers.
    pub prompts: Vec<Arc<dyn PromptProvider>>,
}

impl McpExtras {
    /// What `a2e serve` offers: the workspace's files as resources and the
    /// Published skills as prompts.
    pub fn standard(host: &Arc<Host>) -> Self {
        let config = host.config();
        let mut extras = Self::default();
        match WorkspaceResources::new(&config.root, config.files.read_max_bytes) {
            Ok(files) => extras.resources.push(Arc::new(files)),
            Err(e) => tracing::warn!(root = %config.root.display(), "no workspace resources: {e}"),
        }
        extras
            .prompts
            .push(Arc::new(SkillPrompts::new(host.clone())));
        extras
    }

    /// These extras and `more` after them.
    pub fn with(mut self, more: McpExtras) -> Self {
        self.resources.extend(more.resources);
        self.prompts.extend(more.prompts);
        self
    }
}

/// The host served to MCP clients: one A2E session per MCP connection.
pub struct HostBackend {
    host: Arc<Host>,
    agent_id: String,
    session_id: String,
    extras: McpExtras,
    watches: Mutex<HashMap<String, CancellationToken>>,
    /// The names this connection was last listed, which its calls mean.
    listed: Mutex<McpNames>,
    /// ACMP served beside MCP (`acmp/*` methods, `experimental.acmp`).
    #[cfg(feature = "acmp")]
    acmp: Option<Arc<acmp_dag::serve::ProviderService>>,
    /// Counts the connection in `a2e.sessions.open` (transport `mcp`).
    _open: a2e_telemetry::Gauged,
    /// The connected client, once it has initialized: its calls carry it.
    client: Mutex<Option<ClientLink>>,
    /// The tasks running on this host (shared by its connections).
    #[cfg(feature = "tasks")]
    tasks: Arc<crate::tasks::Tasks>,
}

impl HostBackend {
    /// A backend for `host` with the standard extras
    /// ([`McpExtras::standard`]); its calls run in their own session, acting
    /// for agent `agent_id` (memory namespaces and the audit log see it).
    pub fn new(host: Arc<Host>, agent_id: &str) -> Self {
        let extras = McpExtras::standard(&host);
        Self::with_extras(host, agent_id, extras)
    }

    /// A backend for `host` offering `extras` as resources and prompts.
    pub fn with_extras(host: Arc<Host>, agent_id: &str, extras: McpExtras) -> Self {
        let session_id = format!("mcp-{}", uuid::Uuid::new_v4().simple());
        host.register_session(&session_id, agent_id);
        let open = host.telemetry().metrics().session_opened("mcp");
        Self {
            _open: open,
            host,
            agent_id: agent_id.to_owned(),
            session_id,
            extras,
            watches: Mutex::new(HashMap::new()),
            listed: Mutex::new(McpNames::default()),
            client: Mutex::new(None),
            #[cfg(feature = "tasks")]
            tasks: Arc::default(),
            #[cfg(feature = "acmp")]
            acmp: None,
        }
    }

    /// Serves ACMP too: `acmp/invoke`, `acmp/cancel`, `acmp/inputChunk`.
    #[cfg(feature = "acmp")]
    #[must_use]
    pub fn with_acmp(mut self, service: Arc<acmp_dag::serve::ProviderService>) -> Self {
        self.acmp = Some(service);
        self
    }

    /// The A2E session this connection's calls run in.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    fn resource_owner(&self, uri: &str) -> Option<&Arc<dyn ResourceProvider>> {
        self.extras.resources.iter().find(|p| p.owns(uri))
    }

    fn watches(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.watches
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn listed(&self) -> std::sync::MutexGuard<'_, McpNames> {
        self.listed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the connected client can answer `sampling/createMessage` (a
    /// client not yet known is taken to).
    fn client_samples(&self) -> bool {
        self.client().is_none_or(|c| c.supports_sampling())
    }

    /// The connected client, while its connection lasts.
    fn client(&self) -> Option<ClientLink> {
        self.client
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
            .filter(|link| !link.is_closed())
    }

    /// The connected client is `client` (its calls carry it from now on).
    fn set_client(&self, client: ClientLink) {
        *self
            .client
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(client);
    }

    /// What the tool name `name` of a call means: a name this connection was
    /// listed, else the name of a tool or skill now, else as
    /// [`McpNames::resolve`] reads it.
    fn resolve(&self, name: &str) -> Target {
        if let Some(target) = self.listed().get(name) {
            return target.clone();
        }
        listing::current_names(&self.host).resolve(name)
    }
}

impl Drop for HostBackend {
    fn drop(&mut self) {
        for (_, stop) in self.watches().drain() {
            stop.cancel();
        }
        self.host.end_session(&self.session_id);
    }
}

fn cursor_offset(cursor: Option<String>) -> Result<usize, ErrorData> {
    match cursor {
        None => Ok(0),
        Some(c) => c.parse().map_err(|_| {
            ErrorData::invalid_params(
                format!("cursor `{c}` (params.cursor) is not one of ours"),
                None,
            )
        }),
    }
}

impl ToolBackend for HostBackend {
    fn for_connection(self: &Arc<Self>) -> Arc<Self> {
        #[allow(unused_mut)]
        let mut fresh = Self::with_extras(self.host.clone(), &self.agent_id, self.extras.clone());
        #[cfg(feature = "acmp")]
        {
            fresh.acmp = self.acmp.clone();
        }
        #[cfg(feature = "tasks")]
        {
            fresh.tasks = self.tasks.clone();
        }
        Arc::new(fresh)
    }

    #[cfg(feature = "tasks")]
    fn serves_tasks(&self) -> bool {
        self.host.journal().is_some()
    }

    #[cfg(feature = "tasks")]
    fn task_terms(&self, name: &str) -> a2e_mcp::server::TaskTerms {
        use a2e_mcp::server::{TaskSupport, TaskTerms};
        let terms = |tags: &[String]| {
            let tagged = |tag: &str| tags.iter().any(|t| t == tag);
            let support = if tagged(crate::tasks::TASK_REQUIRED_TAG) {
                TaskSupport::Required
            } else if tagged(crate::tasks::TASK_TAG) {
                TaskSupport::Optional
            } else {
                TaskSupport::Forbidden
            };
            TaskTerms {
                support,
                gathers_input: tagged(crate::tasks::TASK_GATHER_TAG),
            }
        };
        let registry = self.host.registry();
        let found = match self.resolve(name) {
            Target::Tool(tool) => registry.tool(&tool).map(|e| terms(&e.def.tags)),
            Target::Skill(skill) => registry
                .skill(&skill)
                .map(|e| terms(e.def.tags.as_deref().unwrap_or_default())),
        };
        found.unwrap_or_default()
    }

    #[cfg(feature = "tasks")]
    async fn create_task(
        &self,
        name: String,
        arguments: Map<String, Value>,
        client: ClientLink,
        _meta: Map<String, Value>,
    ) -> Result<a2e_mcp::rmcp::model::Task, ErrorData> {
        use crate::tasks;
        let whole = Value::Object(arguments.clone());
        let run = tasks::begin(&self.host, &self.agent_id, &name, &whole).await?;
        let id = run.run_id().to_string();
        self.tasks
            .started(&id, run.cancelled(), client.task_inbox().cloned());
        // The task runs on in a session of its own, past this request.
        let worker = Self::with_extras(self.host.clone(), &self.agent_id, self.extras.clone());
        let (host, registry) = (self.host.clone(), self.tasks.clone());
        let cancel = run.cancelled();
        // A skill that journals a durable run of its own backs the task with it.
        let mut extra = crate::plugin::Extensions::new();
        if let Target::Skill(skill) = self.resolve(&name) {
            extra.insert(run.link(&skill));
        }
        let sink = ProgressSink::for_client(client.clone());
        // The call runs as a task of its own, so that nothing the driver
        // waits on (the journal, a slow client) holds it up.
        let tool = name.clone();
        let call =
            tokio::spawn(
                async move { worker.run_tool(name, arguments, sink, cancel, extra).await },
            );
        tokio::spawn(async move {
            let call = async move {
                call.await.unwrap_or_else(|e| {
                    // Only a panic ends it so (it is never aborted): named as
                    // the call pipeline names one, a failed task.
                    let message = format!("the task's call panicked: {e}");
                    a2e_proto::ToolResult::failed(&tool, a2e_proto::ErrorCode::TOOL_ERROR, message)
                })
            };
            tasks::drive(&host, &registry, run, &client, call).await;
        });
        let now = tasks::now_ms();
        Ok(tasks::task(
            &id,
            a2e_mcp::rmcp::model::TaskStatus::Working,
            now,
            now,
        ))
    }

    #[cfg(feature = "tasks")]
    async fn ended_task(
        &self,
        name: String,
        arguments: Map<String, Value>,
        result: a2e_proto::ToolResult,
    ) -> Result<a2e_mcp::rmcp::model::Task, ErrorData> {
        let who = (self.agent_id.as_str(), name.as_str());
        let whole = Value::Object(arguments);
        crate::tasks::ended(&self.host, &self.tasks, who, &whole, &result).await
    }

    #[cfg(feature = "tasks")]
    async fn get_task(
        &self,
        task_id: String,
    ) -> Result<a2e_mcp::rmcp::model::DetailedTask, ErrorData> {
        crate::tasks::get(&self.host, &self.tasks, &task_id).await
    }

    #[cfg(feature = "tasks")]
    async fn update_task(
        &self,
        task_id: String,
        responses: a2e_mcp::rmcp::model::InputResponses,
    ) -> Result<(), ErrorData> {
        crate::tasks::update(&self.host, &self.tasks, &task_id, responses).await
    }

    #[cfg(feature = "tasks")]
    async fn cancel_task(&self, task_id: String) -> Result<(), ErrorData> {
        crate::tasks::cancel(&self.host, &self.tasks, &task_id).await
    }

    #[cfg(feature = "acmp")]
    fn experimental(&self) -> Map<String, Value> {
        crate::acmp::mcp::experimental(self.acmp.as_deref())
    }

    #[cfg(feature = "acmp")]
    fn custom_request(
        &self,
        method: &str,
        params: Value,
        peer: a2e_mcp::rmcp::Peer<a2e_mcp::rmcp::RoleServer>,
    ) -> Option<futures::future::BoxFuture<'static, Result<Value, ErrorData>>> {
        crate::acmp::mcp::request(self.acmp.as_ref()?, method, params, peer)
    }

    #[cfg(feature = "acmp")]
    fn custom_notification(
        &self,
        method: &str,
        params: Value,
        peer: a2e_mcp::rmcp::Peer<a2e_mcp::rmcp::RoleServer>,
    ) {
        if let Some(service) = &self.acmp {
            crate::acmp::mcp::notification(service, method, params, peer);
        }
    }

    fn features(&self) -> Features {
        Features {
            resources: true,
            subscribe: true,
            prompts: true,
            completions: true,
        }
    }

    fn check_call(&self, _name: &str, arguments: &Map<String, Value>) -> Result<(), ErrorData> {
        let mut total: usize = 0;
        let limit = self.host.config().max_message_bytes;
        for (field, value) in arguments {
            let bytes = json_size(value);
            if bytes > MAX_ARGUMENT_BYTES {
                return Err(ErrorData::invalid_params(
                    format!(
                        "argument `{field}` (params.arguments.{field}) has {bytes} bytes of JSON, more than the {MAX_ARGUMENT_BYTES} an argument may have"
                    ),
                    Some(serde_json::json!({ "field": field, "bytes": bytes })),
                ));
            }
            total = total.saturating_add(bytes);
        }
        if total > limit {
            return Err(ErrorData::invalid_params(
                format!(
                    "the arguments (params.arguments) have {total} bytes of JSON, more than the host's {limit}"
                ),
                None,
            ));
        }
        Ok(())
    }

    fn attach(&self, client: ClientLink) {
        self.set_client(client);
    }

    fn request_state_key(&self) -> Option<Vec<u8>> {
        self.host
            .config()
            .mcp
            .request_state_key()
            .unwrap_or_else(|e| {
                tracing::error!("{e}");
                None
            })
    }

    fn input_schema_of(&self, name: &str) -> Option<Map<String, Value>> {
        listing::input_schema_of(&self.host, name)
    }

    async fn list_tools(&self) -> Vec<BackendTool> {
        let (tools, names) = listing::list(&self.host, self.client_samples()).await;
        *self.listed() = names;
        tools
    }

    async fn call_tool(
        &self,
        name: String,
        arguments: Map<String, Value>,
        progress: ProgressSink,
        cancel: CancellationToken,
        meta: Map<String, Value>,
    ) -> ToolResult {
        // A server span per `tools/call`, under the client's trace when its
        // `_meta` (or the HTTP request's headers) carry a usable `traceparent`.
        let op = self.request_span(&name, &meta);
        let work = self.run_tool(
            name,
            arguments,
            progress,
            cancel,
            crate::plugin::Extensions::new(),
        );
        let result = if op.is_recording() {
            tracing::Instrument::instrument(work, op.span().clone()).await
        } else {
            work.await
        };
        let outcome = if result.success {
            a2e_telemetry::metrics::OK
        } else {
            result
                .error_code
                .as_ref()
                .map_or("tool_error", |c| c.as_str())
        };
        if !result.success {
            op.error(outcome, "");
        }
        self.host
            .telemetry()
            .metrics()
            .request("tools/call", outcome);
        result
    }

    async fn list_resources(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let from = cursor_offset(cursor)?;
        let mut all = Vec::new();
        for provider in &self.extras.resources {
            all.extend(provider.list().await);
        }
        let end = from.saturating_add(PAGE_SIZE).min(all.len());
        let page = all.get(from..end).map(<[_]>::to_vec).unwrap_or_default();
        let mut out = ListResourcesResult::with_all_items(page);
        out.next_cursor = (end < all.len()).then(|| end.to_string());
        Ok(out)
    }

    async fn list_resource_templates(&self) -> Result<ListResourceTemplatesResult, ErrorData> {
        let templates = self
            .extras
            .resources
            .iter()
            .flat_map(|p| p.templates())
            .collect();
        Ok(ListResourceTemplatesResult::with_all_items(templates))
    }

    async fn read_resource(&self, uri: String) -> Result<ReadResourceResult, ErrorData> {
        let provider = self
            .resource_owner(&uri)
            .ok_or_else(|| resource_not_found(&uri))?;
        Ok(ReadResourceResult::new(provider.read(&uri).await?))
    }

    async fn subscribe(&self, uri: String, updates: ResourceUpdates) -> Result<(), ErrorData> {
        let provider = self
            .resource_owner(&uri)
            .ok_or_else(|| resource_not_found(&uri))?
            .clone();
        // The resource must be readable now (an escaping URI is refused here).
        provider.read(&uri).await?;
        let stop = CancellationToken::new();
        if let Some(old) = self.watches().insert(uri.clone(), stop.clone()) {
            old.cancel();
        }
        tokio::spawn(async move {
            let mut last = provider.fingerprint(&uri).await;
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = updates.ended() => return,
                    () = tokio::time::sleep(WATCH_EVERY) => {}
                }
                if updates.is_closed() {
                    return;
                }
                let now = provider.fingerprint(&uri).await;
                if now != last {
                    last = now;
                    if !updates.updated(&uri).await {
                        return;
                    }
                }
            }
        });
        Ok(())
    }

    async fn unsubscribe(&self, uri: String, _client: ClientLink) -> Result<(), ErrorData> {
        if let Some(stop) = self.watches().remove(&uri) {
            stop.cancel();
        }
        Ok(())
    }

    async fn list_prompts(&self, cursor: Option<String>) -> Result<ListPromptsResult, ErrorData> {
        let from = cursor_offset(cursor)?;
        let all: Vec<_> = self.extras.prompts.iter().flat_map(|p| p.list()).collect();
        let end = from.saturating_add(PAGE_SIZE).min(all.len());
        let page = all.get(from..end).map(<[_]>::to_vec).unwrap_or_default();
        let mut out = ListPromptsResult::with_all_items(page);
        out.next_cursor = (end < all.len()).then(|| end.to_string());
        Ok(out)
    }

    async fn get_prompt(
        &self,
        name: String,
        arguments: Map<String, Value>,
        client: ClientLink,
    ) -> Result<GetPromptResult, ErrorData> {
        for provider in &self.extras.prompts {
            if let Some(result) = provider.get(&name, &arguments, &client).await {
                return result;
            }
        }
        Err(ErrorData::invalid_params(
            format!("no prompt `{name}` (params.name)"),
            None,
        ))
    }

    async fn complete(&self, request: CompleteRequestParams) -> Result<CompletionInfo, ErrorData> {
        let typed = &request.argument.value;
        let mut values: Vec<String> = match &request.r#ref {
            Reference::Prompt(p) => self
                .extras
                .prompts
                .iter()
                .flat_map(|provider| provider.complete(&p.name, &request.argument.name, typed))
                .collect(),
            Reference::Resource(r) => {
                let mut out = Vec::new();
                for provider in &self.extras.resources {
                    if provider.templates().iter().any(|t| t.uri_template == r.uri) {
                        out.extend(provider.complete(&request.argument.name, typed).await);
                    }
                }
                out
            }
            _ => Vec::new(),
        };
        let total = values.len();
        values.truncate(CompletionInfo::MAX_VALUES);
        let mut info = CompletionInfo::default();
        info.has_more = Some(total > values.len());
        info.total = u32::try_from(total).ok();
        info.values = values;
        Ok(info)
    }
}
