//! The host as skills see it: [`HostHandle`], the narrow trait of the plugin API.

use std::sync::Arc;

use a2e_proto::{SkillCallRequest, SkillResult, ToolCallRequest, ToolDefinition, ToolResult};
use futures::future::BoxFuture;

use super::{Host, calls};
use crate::error::{HostError, HostResult};
use crate::plugin::{CallContext, HostHandle};

/// Fills what a nested request leaves open from the call it is part of: an id,
/// the correlation id, and a timeout no longer than what the call has left.
fn nested(id: &mut String, correlation_id: &mut String, timeout: &mut u64, ctx: &CallContext) {
    if id.is_empty() {
        *id = uuid::Uuid::new_v4().to_string();
    }
    if correlation_id.is_empty() {
        *correlation_id = ctx.correlation_id.to_string();
    }
    if let Some(left) = ctx.remaining() {
        let left = left.as_secs().max(1);
        *timeout = if *timeout == 0 {
            left
        } else {
            (*timeout).min(left)
        };
    }
}

impl HostHandle<HostError> for Host {
    fn tools(&self) -> Vec<ToolDefinition> {
        self.registry
            .tools()
            .into_iter()
            .map(|e| (*e.def).clone())
            .collect()
    }

    fn call_tool<'a>(
        &'a self,
        mut req: ToolCallRequest,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, HostResult<ToolResult>> {
        Box::pin(async move {
            let host = self.arc()?;
            nested(&mut req.id, &mut req.correlation_id, &mut req.timeout, ctx);
            let args = std::mem::take(&mut req.arguments);
            let mut caller = calls::Caller::session(&ctx.session_id, None, &ctx.cancel);
            caller.extensions = ctx.extensions.clone();
            let finished = host.call::<calls::ToolCallKind>(caller, &req, args).await?;
            Ok(finished.answer(&req))
        })
    }

    fn call_skill<'a>(
        &'a self,
        mut req: SkillCallRequest,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, HostResult<SkillResult>> {
        Box::pin(async move {
            let host = self.arc()?;
            nested(&mut req.id, &mut req.correlation_id, &mut req.timeout, ctx);
            let args = std::mem::take(&mut req.arguments);
            let mut caller = calls::Caller::session(&ctx.session_id, None, &ctx.cancel);
            caller.extensions = ctx.extensions.clone();
            let finished = host
                .call::<calls::SkillCallKind>(caller, &req, args)
                .await?;
            Ok(finished.answer(&req))
        })
    }
}

impl Host {
    /// The host a skill call runs on, for the skills that are part of the
    /// host (chains, documents, the model loop): the pipeline hands it to
    /// every skill call in its context's extensions. A context without one
    /// (a skill called by something else than an a2e host) is a runtime error.
    pub fn of(ctx: &CallContext) -> HostResult<Arc<Host>> {
        ctx.extensions
            .get::<Arc<Host>>()
            .cloned()
            .ok_or_else(|| HostError::Runtime("this skill runs only inside an a2e host".into()))
    }
}
