//! The client side of one connection: progress routed to calls, tool list
//! changes noted, and the server's requests back to the host answered —
//! `sampling/createMessage` by the host's [`Sampler`] when the server's
//! config allows it, `elicitation/create` by the server's
//! [`ElicitationPolicy`].
#![allow(deprecated)] // sampling: deprecated only for protocol versions after the ones spoken here

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as SyncMutex, RwLock};

use futures::future::BoxFuture;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability, ErrorData,
    FormElicitationCapability, Implementation, ProgressNotificationParam, ProgressToken,
    SamplingCapability,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::call::McpProgress;
use crate::config::{ElicitationPolicy, SamplingConfig};
use crate::protocol::PROTOCOL_VERSION;

/// Where a running call's progress goes: its progress token's channel,
/// added when the call starts and removed when it ends.
pub(super) type Routes = Arc<SyncMutex<HashMap<ProgressToken, mpsc::UnboundedSender<McpProgress>>>>;

/// Answers a mounted server's `sampling/createMessage` with one of the
/// host's model providers.
pub trait Sampler: Send + Sync + 'static {
    /// Answers `request` of server `server` under its `config` (the provider,
    /// the model, the token limit). An error is sent to the server as a
    /// JSON-RPC error.
    fn sample<'a>(
        &'a self,
        server: &'a str,
        config: &'a SamplingConfig,
        request: CreateMessageRequestParams,
    ) -> BoxFuture<'a, Result<CreateMessageResult, ErrorData>>;
}

/// The shared slot of a toolkit's sampler.
pub(crate) type SamplerSlot = Arc<RwLock<Option<Arc<dyn Sampler>>>>;

#[derive(Clone)]
pub(super) struct ClientSide {
    pub(super) server: Arc<str>,
    pub(super) routes: Routes,
    pub(super) tools_stale: Arc<AtomicBool>,
    pub(super) elicitation: ElicitationPolicy,
    pub(super) sampling: Option<SamplingConfig>,
    pub(super) sampler: SamplerSlot,
}

/// The answer to a form elicitation under the `defaults` policy: every
/// property's default; `None` when a required property has none.
pub fn defaults_of(schema: &Value) -> Option<Map<String, Value>> {
    let props = schema.get("properties").and_then(Value::as_object);
    let mut out = Map::new();
    for (name, prop) in props.into_iter().flatten() {
        if let Some(default) = prop.get("default") {
            out.insert(name.clone(), default.clone());
        }
    }
    let required = schema.get("required").and_then(Value::as_array);
    let all_there = required
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .all(|r| out.contains_key(r));
    all_there.then_some(out)
}

impl ClientHandler for ClientSide {
    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tx) = routes.get(&params.progress_token) {
            let _ = tx.send(McpProgress {
                progress: params.progress,
                total: params.total,
                message: params.message,
            });
        }
        std::future::ready(())
    }

    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.tools_stale.store(true, Ordering::SeqCst);
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        if self.sampling.is_some() {
            caps.sampling = Some(SamplingCapability::default());
        }
        if self.elicitation == ElicitationPolicy::Defaults {
            let mut elicitation = ElicitationCapability::default();
            elicitation.form = Some(FormElicitationCapability::default());
            caps.elicitation = Some(elicitation);
        }
        ClientConfig::new(
            caps,
            Implementation::new("a2e-mcp", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(PROTOCOL_VERSION)
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let Some(config) = &self.sampling else {
            tracing::info!(server = %self.server, "sampling request refused: the server's config has no `sampling`");
            return Err(ErrorData::invalid_request(
                "this client does not sample for this server (no `sampling` in its config)",
                None,
            ));
        };
        let sampler = self
            .sampler
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let Some(sampler) = sampler else {
            return Err(ErrorData::internal_error(
                "no model provider is available for sampling",
                None,
            ));
        };
        sampler.sample(&self.server, config, params).await
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let decline = |reason: &str| {
            tracing::info!(server = %self.server, "elicitation declined: {reason}");
            Ok(ElicitResult::new(ElicitationAction::Decline))
        };
        if self.elicitation == ElicitationPolicy::Decline {
            return decline("A2E has no channel back to a person (policy `decline`)");
        }
        let ElicitRequestParams::FormElicitationParams {
            requested_schema, ..
        } = request
        else {
            return decline("only form elicitation can be answered with defaults");
        };
        let schema = serde_json::to_value(&requested_schema).unwrap_or(Value::Null);
        match defaults_of(&schema) {
            Some(values) => Ok(
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(values))
            ),
            None => decline("a required field has no default (policy `defaults`)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_answer_only_when_every_required_field_has_one() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "note": {"type": "string"}}, "required": ["name"]});
        let got = defaults_of(&schema).unwrap();
        assert_eq!(Value::Object(got), json!({"name": "John Doe", "age": 30}));
        let needs = json!({"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]});
        assert!(defaults_of(&needs).is_none());
    }
}
