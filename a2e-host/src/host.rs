//! [`Host`]: the registry, configuration, process table and audit log, and the
//! operations every transport and session shares (list, call, discover, run).

use std::sync::{Arc, Mutex};
use std::time::Instant as StdInstant;

use a2e_proto::{
    ErrorCode, EventKind, Message, SkillCallRequest, SkillDefinition, SkillDiscoverRequest,
    SkillEvent, SkillResult, SkillStatus, ToolCallRequest, ToolDefinition, ToolEvent,
    ToolListRequest, ToolResult,
};
use futures::FutureExt;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

use crate::audit::Audit;
use crate::config::HostConfig;
use crate::error::{HostError, HostResult};
use crate::plugin::{CallContext, EventSink, SkillCall, SkillPlugin, ToolPlugin};
use crate::proc::ProcManager;
use crate::registry::{Registry, RegistryError};

/// Most events kept in a result's `events` list; later ones are still streamed.
pub const MAX_COLLECTED_EVENTS: usize = 1000;

/// The host runtime shared by every session.
pub struct Host {
    config: Arc<HostConfig>,
    registry: Registry,
    started: StdInstant,
    procs: ProcManager,
    audit: Audit,
}

/// Why a host could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A plugin clashed with another.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The audit log could not be opened.
    #[error("cannot open audit log: {0}")]
    Audit(#[from] std::io::Error),
    /// A skill file could not be loaded.
    #[error("{0}")]
    Skill(String),
}

/// Builds a [`Host`].
pub struct HostBuilder {
    config: HostConfig,
    registry: Registry,
    errors: Vec<BuildError>,
}

impl HostBuilder {
    /// Adds the built-in tools the configuration enables.
    pub fn with_builtins(self) -> Self {
        let config = Arc::new(self.config.clone());
        self.with_tool_plugin(crate::builtins::BuiltinTools::new(config))
    }

    /// Adds a tool plugin.
    pub fn with_tool_plugin(mut self, plugin: impl ToolPlugin) -> Self {
        if let Err(e) = self.registry.add_tool_plugin(Arc::new(plugin)) {
            self.errors.push(e.into());
        }
        self
    }

    /// Adds a skill plugin.
    pub fn with_skill_plugin(mut self, plugin: impl SkillPlugin) -> Self {
        if let Err(e) = self.registry.add_skill_plugin(Arc::new(plugin)) {
            self.errors.push(e.into());
        }
        self
    }

    /// Records a failure to report from [`HostBuilder::build`].
    pub fn with_error(mut self, error: BuildError) -> Self {
        self.errors.push(error);
        self
    }

    /// The configuration being built with.
    pub fn config(&self) -> &HostConfig {
        &self.config
    }

    /// The host, or the first registration error.
    pub fn build(mut self) -> Result<Arc<Host>, BuildError> {
        if !self.errors.is_empty() {
            return Err(self.errors.remove(0));
        }
        let audit = Audit::new(&self.config.audit)?;
        let config = Arc::new(self.config);
        Ok(Arc::new(Host {
            procs: ProcManager::new(config.clone()),
            config,
            registry: self.registry,
            started: StdInstant::now(),
            audit,
        }))
    }
}

type Collected<E> = Arc<Mutex<Vec<E>>>;

/// An event sink that numbers events, keeps up to [`MAX_COLLECTED_EVENTS`], and
/// forwards them to `stream` when given.
fn collecting_sink<E>(
    req_id: &str,
    stream: Option<mpsc::Sender<Message>>,
    make: fn(EventKind, Map<String, Value>, u64, String) -> E,
) -> (EventSink, Collected<E>)
where
    E: Clone + Into<Message> + Send + 'static,
{
    let collected: Collected<E> = Arc::new(Mutex::new(Vec::new()));
    let seq = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let keep = collected.clone();
    let req_id = req_id.to_owned();
    let sink = EventSink::new(move |kind, data| {
        let n = seq.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let event = make(kind, data, n, req_id.clone());
        if let Ok(mut list) = keep.lock()
            && list.len() < MAX_COLLECTED_EVENTS
        {
            list.push(event.clone());
        }
        let stream = stream.clone();
        async move {
            if let Some(tx) = stream {
                let _ = tx.send(event.into()).await;
            }
        }
        .boxed()
    });
    (sink, collected)
}

fn take<E>(collected: &Collected<E>) -> Vec<E> {
    collected
        .lock()
        .map(|mut l| std::mem::take(&mut *l))
        .unwrap_or_default()
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_owned()
    }
}

/// How long a cancelled call may take to wind down before its task is aborted.
pub const CANCEL_GRACE: Duration = Duration::from_millis(200);

/// Fires the call's token, lets it wind down for [`CANCEL_GRACE`], then aborts it.
async fn stop<T>(mut task: tokio::task::JoinHandle<T>, call_token: &CancellationToken) {
    call_token.cancel();
    if tokio::time::timeout(CANCEL_GRACE, &mut task).await.is_err() {
        task.abort();
    }
}

/// Runs `fut` on its own task under `deadline` and `cancel`, turning panics,
/// timeouts and cancellation into errors. On timeout the call's token fires and
/// the task is aborted (its drop guards kill what it started).
pub(crate) async fn supervise<T: Send + 'static>(
    fut: impl std::future::Future<Output = HostResult<T>> + Send + 'static,
    call_token: CancellationToken,
    outer: &CancellationToken,
    deadline: Instant,
    timeout_secs: u64,
    what: &str,
) -> HostResult<T> {
    let mut task = tokio::spawn(fut);
    tokio::select! {
        joined = &mut task => match joined {
            Ok(result) => result,
            Err(e) if e.is_panic() => Err(HostError::Runtime(format!("{what} panicked: {}", panic_message(e.into_panic())))),
            Err(_) => Err(HostError::Cancelled),
        },
        _ = tokio::time::sleep_until(deadline) => {
            stop(task, &call_token).await;
            Err(HostError::Timeout(timeout_secs))
        }
        _ = outer.cancelled() => {
            stop(task, &call_token).await;
            Err(HostError::Cancelled)
        }
    }
}

/// The longest any call may run, whatever its request asks: one day, the chain
/// engine's limit. A larger `timeout` on the wire is clamped to it
/// (docs/protocol-decisions.md).
pub const MAX_TIMEOUT_SECS: u64 = a2e_chain::MAX_TIMEOUT_SECS;

/// A call's timeout: the request's when given (non-zero), else the default;
/// never above a skill's own `timeout_seconds` when it has one, nor above
/// [`MAX_TIMEOUT_SECS`].
pub fn effective_timeout(requested: u64, default: u64, ceiling: Option<u64>) -> u64 {
    let ceiling = ceiling.filter(|c| *c > 0);
    let wanted = match (requested, ceiling) {
        (0, Some(own)) => own,
        (0, None) => default,
        (asked, Some(own)) => asked.min(own),
        (asked, None) => asked,
    };
    wanted.clamp(1, MAX_TIMEOUT_SECS)
}

/// What the call pipeline needs to know of a request.
struct CallSpec<'a> {
    session_id: &'a str,
    req_id: &'a str,
    correlation_id: &'a str,
    timeout_secs: u64,
    stream: Option<mpsc::Sender<Message>>,
    what: &'static str,
}

/// A call that ran: its outcome, duration and collected events.
struct Finished<O, E> {
    outcome: HostResult<O>,
    duration_ms: u64,
    events: Vec<E>,
}

fn tool_event(kind: EventKind, data: Map<String, Value>, seq: u64, req_id: String) -> ToolEvent {
    ToolEvent {
        kind,
        data,
        seq,
        req_id,
        ..ToolEvent::default()
    }
}

fn skill_event(kind: EventKind, data: Map<String, Value>, seq: u64, req_id: String) -> SkillEvent {
    SkillEvent {
        kind,
        data,
        seq,
        req_id,
        ..SkillEvent::default()
    }
}

impl Host {
    /// A builder over `config`.
    pub fn builder(config: HostConfig) -> HostBuilder {
        HostBuilder {
            config,
            registry: Registry::new(),
            errors: Vec::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Arc<HostConfig> {
        &self.config
    }

    /// The plugin registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The process table.
    pub fn procs(&self) -> &ProcManager {
        &self.procs
    }

    /// The audit log.
    pub fn audit(&self) -> &Audit {
        &self.audit
    }

    /// Seconds since the host started.
    pub fn uptime_seconds(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// `tool/list`: list mode hides deferred tools; `filter_tags` is AND and
    /// case-insensitive; a `query` ranks by BM25 and includes deferred tools
    /// when `include_deferred` is set.
    pub fn list_tools(&self, req: &ToolListRequest) -> Vec<ToolDefinition> {
        let wanted_tags: Vec<String> = req.filter_tags.iter().map(|t| t.to_lowercase()).collect();
        let kind = req.filter_kind.to_lowercase();
        let searching = !req.query.trim().is_empty();
        let candidates: Vec<ToolDefinition> = self
            .registry
            .tools()
            .into_iter()
            .map(|e| e.def)
            .filter(|t| !t.defer_loading || (searching && req.include_deferred))
            .filter(|t| {
                let tags: Vec<String> = t.tags.iter().map(|x| x.to_lowercase()).collect();
                wanted_tags.iter().all(|w| tags.contains(w))
            })
            .filter(|t| {
                kind.is_empty()
                    || t.toolkit.as_deref().map(str::to_lowercase).as_deref() == Some(kind.as_str())
                    || t.tags.iter().any(|x| x.to_lowercase() == kind)
            })
            .collect();
        if !searching {
            return candidates;
        }
        crate::search::rank(&req.query, &candidates)
            .into_iter()
            .filter_map(|(_, i)| candidates.get(i).cloned())
            .collect()
    }

    /// `tool/call`: validates, runs under the timeout, and returns the result.
    /// `Err` is a refusal (unknown tool, invalid arguments, denied) to answer
    /// with an `error` message; a call that ran and failed is `Ok` with
    /// `success: false`.
    pub async fn call_tool(
        self: &Arc<Self>,
        session_id: &str,
        req: &ToolCallRequest,
        stream: Option<mpsc::Sender<Message>>,
        cancel: &CancellationToken,
    ) -> HostResult<ToolResult> {
        let entry = self
            .registry
            .tool(&req.tool_name)
            .ok_or_else(|| HostError::UnknownTool(req.tool_name.clone()))?;
        entry.validator.check(&req.arguments)?;
        let spec = CallSpec {
            session_id,
            req_id: &req.id,
            correlation_id: &req.correlation_id,
            timeout_secs: effective_timeout(req.timeout, self.config.timeouts.tool_secs, None),
            stream: if req.streaming { stream } else { None },
            what: "tool",
        };
        let plugin = entry.plugin.clone();
        let name = req.tool_name.clone();
        let args = req.arguments.clone();
        let done = self
            .run_call(spec, cancel, tool_event, move |ctx| async move {
                plugin.call_dyn(&name, args, ctx).await
            })
            .await;
        match done.outcome {
            Ok(out) => Ok(ToolResult {
                success: true,
                tool_name: req.tool_name.clone(),
                data: out.data,
                summary: out.summary,
                truncated: out.truncated,
                exit_code: out.exit_code,
                error: None,
                error_code: None,
                duration_ms: done.duration_ms,
                events: done.events,
            }),
            Err(e) if e.is_refusal() => Err(e),
            Err(e) => {
                let code = match &e {
                    HostError::Runtime(_) | HostError::Io { .. } => ErrorCode::TOOL_ERROR,
                    other => other.code(),
                };
                let mut result = ToolResult::failed(&req.tool_name, code, e.to_string());
                result.duration_ms = done.duration_ms;
                result.events = done.events;
                Ok(result)
            }
        }
    }

    /// The one call pipeline of tools and skills: deadline, event sink, call
    /// context, supervision (panics, timeout, cancellation), duration and events.
    async fn run_call<O, E, F, Fut>(
        self: &Arc<Self>,
        spec: CallSpec<'_>,
        cancel: &CancellationToken,
        make_event: fn(EventKind, Map<String, Value>, u64, String) -> E,
        run: F,
    ) -> Finished<O, E>
    where
        O: Send + 'static,
        E: Clone + Into<Message> + Send + 'static,
        F: FnOnce(CallContext) -> Fut,
        Fut: std::future::Future<Output = HostResult<O>> + Send + 'static,
    {
        let started = Instant::now();
        let timeout = Duration::from_secs(spec.timeout_secs);
        // Checked: a deadline past the clock's range means "no deadline this century".
        let deadline = started
            .checked_add(timeout)
            .unwrap_or_else(|| started + Duration::from_secs(MAX_TIMEOUT_SECS));
        let (sink, collected) = collecting_sink(spec.req_id, spec.stream, make_event);
        let call_token = cancel.child_token();
        let ctx = CallContext::new(
            spec.session_id,
            spec.req_id,
            call_token.clone(),
            Some(deadline),
            sink,
        )
        .with_correlation_id(spec.correlation_id);
        let outcome = supervise(
            run(ctx),
            call_token,
            cancel,
            deadline,
            spec.timeout_secs,
            spec.what,
        )
        .await;
        Finished {
            outcome,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            events: take(&collected),
        }
    }

    /// A skill's definition as agents see it: `Blocked` when a declared tool is
    /// missing, credentials redacted.
    pub fn effective_skill(&self, def: &SkillDefinition) -> SkillDefinition {
        let mut out = def.redacted();
        if out.status == SkillStatus::PUBLISHED && !self.missing_tools(def).is_empty() {
            out.status = SkillStatus::BLOCKED;
        }
        out
    }

    fn missing_tools(&self, def: &SkillDefinition) -> Vec<String> {
        def.tool_names()
            .into_iter()
            .filter(|t| self.registry.tool(t).is_none())
            .collect()
    }

    /// `skill/discover`: `filter_tags` is OR, `filter_categories` matches the category;
    /// both case-insensitive.
    pub fn discover_skills(&self, req: &SkillDiscoverRequest) -> Vec<SkillDefinition> {
        let tags: Vec<String> = req.filter_tags.iter().map(|t| t.to_lowercase()).collect();
        let cats: Vec<String> = req
            .filter_categories
            .iter()
            .map(|t| t.to_lowercase())
            .collect();
        self.registry
            .skills()
            .into_iter()
            .map(|e| e.def)
            .filter(|s| {
                tags.is_empty()
                    || s.tags
                        .iter()
                        .flatten()
                        .any(|t| tags.contains(&t.to_lowercase()))
            })
            .filter(|s| {
                cats.is_empty()
                    || s.category
                        .as_ref()
                        .is_some_and(|c| cats.contains(&c.to_lowercase()))
            })
            .map(|s| self.effective_skill(&s))
            .collect()
    }

    /// `skill/call`: checks status and arguments, runs under the timeout.
    /// `Err` is a refusal; a skill that ran and failed is `Ok` with `success: false`.
    pub async fn call_skill(
        self: &Arc<Self>,
        session_id: &str,
        req: &SkillCallRequest,
        stream: Option<mpsc::Sender<Message>>,
        cancel: &CancellationToken,
    ) -> HostResult<SkillResult> {
        let entry = self
            .registry
            .skill(&req.name)
            .ok_or_else(|| HostError::UnknownSkill(req.name.clone()))?;
        let effective = self.effective_skill(&entry.def);
        if effective.status != SkillStatus::PUBLISHED {
            let missing = self.missing_tools(&entry.def);
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
        entry.validator.check(&req.arguments)?;
        let spec = CallSpec {
            session_id,
            req_id: &req.id,
            correlation_id: &req.correlation_id,
            // A request that leaves `timeout` at the spec's default (60 s) asks for
            // nothing in particular: the skill's own `timeout_seconds` then applies.
            timeout_secs: effective_timeout(
                if req.timeout == a2e_proto::skills::DEFAULT_SKILL_TIMEOUT_SECS
                    && entry.def.timeout_seconds.is_some()
                {
                    0
                } else {
                    req.timeout
                },
                self.config.timeouts.skill_secs,
                entry.def.timeout_seconds,
            ),
            stream: if req.streaming { stream } else { None },
            what: "skill",
        };
        let host = self.clone();
        let llm_override = req.llm_override.clone();
        let metadata = req.metadata.clone();
        let plugin = entry.plugin.clone();
        let name = req.name.clone();
        let args = req.arguments.clone();
        let done = self
            .run_call(spec, cancel, skill_event, move |ctx| async move {
                let call = SkillCall {
                    ctx,
                    host,
                    llm_override,
                    metadata,
                };
                plugin.call_dyn(&name, args, call).await
            })
            .await;
        match done.outcome {
            Ok(out) => Ok(SkillResult {
                success: true,
                data: out.data,
                summary: out.summary,
                truncated: out.truncated,
                error: None,
                error_code: None,
                duration_ms: done.duration_ms,
                events: done.events,
            }),
            Err(e) if e.is_refusal() => Err(e),
            Err(e) => {
                let code = match &e {
                    HostError::Runtime(_) | HostError::Io { .. } | HostError::Tool(_) => {
                        ErrorCode::SKILL_ERROR
                    }
                    other => other.code(),
                };
                let mut result = SkillResult::failed(code, e.to_string());
                result.duration_ms = done.duration_ms;
                result.events = done.events;
                Ok(result)
            }
        }
    }

    /// Ends a session's processes (every process group it started).
    pub fn end_session(&self, session_id: &str) {
        self.procs.end_session(session_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_default_respect_a_skill_ceiling_and_the_host_maximum() {
        assert_eq!(effective_timeout(0, 30, None), 30);
        assert_eq!(effective_timeout(5, 30, None), 5);
        assert_eq!(effective_timeout(0, 30, Some(120)), 120);
        assert_eq!(effective_timeout(600, 30, Some(120)), 120);
        assert_eq!(effective_timeout(u64::MAX, 30, None), MAX_TIMEOUT_SECS);
        assert_eq!(effective_timeout(0, 0, None), 1);
    }
}
