//! The two kinds of call: `tool/call` and `skill/call` — how each finds its
//! entry, checks its arguments, runs, and shapes its events and result.

use a2e_proto::{
    ErrorCode, EventKind, SkillCallRequest, SkillEvent, SkillResult, SkillStatus, ToolCallRequest,
    ToolEvent, ToolResult,
};
use futures::future::BoxFuture;
use serde_json::{Map, Value};

use std::sync::Arc;

use super::{CallKind, CallSpec, effective_timeout};
use crate::error::{HostError, HostResult};
use crate::host::Host;
use crate::plugin::{CallContext, SkillCall, SkillOutput, ToolOutput};
use crate::registry::{ArgsValidator, SkillEntry, ToolEntry};

/// An event of type `$t` numbered `seq` for request `req_id`.
macro_rules! numbered_event {
    ($t:ident, $kind:expr, $data:expr, $seq:expr, $req_id:expr) => {
        $t {
            kind: $kind,
            data: $data,
            seq: $seq,
            req_id: $req_id,
            ..$t::default()
        }
    };
}

/// `tool/call`.
pub(crate) struct ToolCallKind;

impl CallKind for ToolCallKind {
    type Req = ToolCallRequest;
    type Entry = ToolEntry;
    type Output = ToolOutput;
    type Event = ToolEvent;
    type Result = ToolResult;
    const WHAT: &'static str = "tool";
    const TARGET: super::CallTarget = super::CallTarget::Tool;
    const METRIC: a2e_telemetry::CallKind = a2e_telemetry::CallKind::Tool;

    fn span<'t>(
        telemetry: &'t a2e_telemetry::Telemetry,
        entry: &'t ToolEntry,
    ) -> a2e_telemetry::SpanBuilder<'t> {
        telemetry.tool(&entry.def.name)
    }

    fn name(entry: &ToolEntry) -> &str {
        &entry.def.name
    }

    fn data(out: &ToolOutput) -> &Value {
        &out.data
    }

    fn find(host: &Host, req: &ToolCallRequest) -> HostResult<ToolEntry> {
        host.registry
            .tool(&req.tool_name)
            .ok_or_else(|| HostError::UnknownTool(req.tool_name.clone()))
    }

    fn validator(entry: &ToolEntry) -> &ArgsValidator {
        &entry.validator
    }

    fn spec<'a>(host: &Host, req: &'a ToolCallRequest, _entry: &ToolEntry) -> CallSpec<'a> {
        CallSpec {
            req_id: &req.id,
            correlation_id: &req.correlation_id,
            timeout_secs: effective_timeout(req.timeout, host.config.timeouts.tool_secs, None),
            streaming: req.streaming,
        }
    }

    fn invoke<'a>(
        _host: &Arc<Host>,
        _req: &ToolCallRequest,
        args: Map<String, Value>,
        entry: &'a ToolEntry,
        ctx: CallContext,
    ) -> BoxFuture<'a, HostResult<ToolOutput>> {
        entry.plugin.call_dyn(&entry.def.name, args, ctx)
    }

    fn event(kind: EventKind, data: Map<String, Value>, seq: u64, req_id: String) -> ToolEvent {
        numbered_event!(ToolEvent, kind, data, seq, req_id)
    }

    const FAILED: ErrorCode = ErrorCode::TOOL_ERROR;

    fn into_data(out: ToolOutput) -> Value {
        out.data
    }

    fn success(
        req: &ToolCallRequest,
        out: ToolOutput,
        duration_ms: u64,
        events: Vec<ToolEvent>,
    ) -> ToolResult {
        ToolResult {
            success: true,
            tool_name: req.tool_name.clone(),
            data: out.data,
            summary: out.summary,
            truncated: out.truncated,
            exit_code: out.exit_code,
            error: None,
            error_code: None,
            duration_ms,
            events,
        }
    }

    fn failure(
        req: &ToolCallRequest,
        code: ErrorCode,
        message: String,
        duration_ms: u64,
        events: Vec<ToolEvent>,
    ) -> ToolResult {
        let mut result = ToolResult::failed(&req.tool_name, code, message);
        result.duration_ms = duration_ms;
        result.events = events;
        result
    }
}

/// `skill/call`.
pub(crate) struct SkillCallKind;

impl CallKind for SkillCallKind {
    type Req = SkillCallRequest;
    type Entry = SkillEntry;
    type Output = SkillOutput;
    type Event = SkillEvent;
    type Result = SkillResult;
    const WHAT: &'static str = "skill";
    const TARGET: super::CallTarget = super::CallTarget::Skill;
    const METRIC: a2e_telemetry::CallKind = a2e_telemetry::CallKind::Skill;

    fn span<'t>(
        telemetry: &'t a2e_telemetry::Telemetry,
        entry: &'t SkillEntry,
    ) -> a2e_telemetry::SpanBuilder<'t> {
        telemetry.agent(&entry.def.name)
    }

    fn name(entry: &SkillEntry) -> &str {
        &entry.def.name
    }

    fn data(out: &SkillOutput) -> &Value {
        &out.data
    }

    fn find(host: &Host, req: &SkillCallRequest) -> HostResult<SkillEntry> {
        let entry = host
            .registry
            .skill(&req.name)
            .ok_or_else(|| HostError::UnknownSkill(req.name.clone()))?;
        let effective = host.effective_skill(&entry.def);
        if effective.status != SkillStatus::PUBLISHED {
            let missing = host.missing_tools(&entry.def);
            let why = if missing.is_empty() {
                String::new()
            } else {
                format!(" (missing tools: {})", missing.join(", "))
            };
            return Err(HostError::SkillUnavailable(format!(
                "skill `{}` is {}{why}; only Published skills can be called",
                req.name, effective.status
            )));
        }
        Ok(entry)
    }

    fn validator(entry: &SkillEntry) -> &ArgsValidator {
        &entry.validator
    }

    fn spec<'a>(host: &Host, req: &'a SkillCallRequest, entry: &SkillEntry) -> CallSpec<'a> {
        let own = entry.def.timeout_seconds;
        // A request that leaves `timeout` at the spec's default (60 s) asks for
        // nothing in particular: the skill's own `timeout_seconds` then applies.
        let asked = if req.timeout == a2e_proto::skills::DEFAULT_SKILL_TIMEOUT_SECS && own.is_some()
        {
            0
        } else {
            req.timeout
        };
        CallSpec {
            req_id: &req.id,
            correlation_id: &req.correlation_id,
            timeout_secs: effective_timeout(asked, host.config.timeouts.skill_secs, own),
            streaming: req.streaming,
        }
    }

    fn invoke<'a>(
        host: &Arc<Host>,
        req: &SkillCallRequest,
        args: Map<String, Value>,
        entry: &'a SkillEntry,
        mut ctx: CallContext,
    ) -> BoxFuture<'a, HostResult<SkillOutput>> {
        // The skills that are part of the host (chains, documents, the
        // model loop) reach it through their context (`Host::of`).
        ctx.extensions.insert(host.clone());
        let call = SkillCall {
            ctx,
            host: host.clone() as Arc<dyn crate::plugin::HostHandle<HostError>>,
            llm_override: req.llm_override.clone(),
            metadata: req.metadata.clone(),
        };
        entry.plugin.call_dyn(&entry.def.name, args, call)
    }

    fn event(kind: EventKind, data: Map<String, Value>, seq: u64, req_id: String) -> SkillEvent {
        numbered_event!(SkillEvent, kind, data, seq, req_id)
    }

    const FAILED: ErrorCode = ErrorCode::SKILL_ERROR;

    fn into_data(out: SkillOutput) -> Value {
        out.data
    }

    fn success(
        _req: &SkillCallRequest,
        out: SkillOutput,
        duration_ms: u64,
        events: Vec<SkillEvent>,
    ) -> SkillResult {
        SkillResult {
            success: true,
            data: out.data,
            summary: out.summary,
            truncated: out.truncated,
            error: None,
            error_code: None,
            duration_ms,
            events,
        }
    }

    fn failure(
        _req: &SkillCallRequest,
        code: ErrorCode,
        message: String,
        duration_ms: u64,
        events: Vec<SkillEvent>,
    ) -> SkillResult {
        let mut result = SkillResult::failed(code, message);
        result.duration_ms = duration_ms;
        result.events = events;
        result
    }
}
