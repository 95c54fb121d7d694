//! Plugin processes: A2E hosts of their own, mounted as toolkits.
//!
//! A plugin crate's binary serves its tools over stdio with
//! `a2e_plugin::serve` (see `a2e-plugin/examples/notes.rs`). Every
//! `[[plugins]]` entry of the configuration names such a program; the host
//! starts it on first use (the first `tool/list`, or a call of a name it does
//! not know yet), speaks A2E to it
//! over its pipes, and offers its tools under their own names with `toolkit`
//! set to the plugin's name ([`with_plugin_processes`] adds them to a host). A call becomes a `tool/call` to the plugin, its
//! events become the call's events, and the host's timeout and cancellation
//! end it: the plugin is asked for a call with the time that is left, and a
//! call dropped by the host is abandoned (the plugin winds it down at its own
//! deadline).
//!
//! The process runs in a process group of its own with the environment
//! `[commands] inherit_env` allows plus the entry's `env`, and the whole
//! group is killed when the plugin is dropped (the host ends) or when it
//! stops answering; a plugin that exited is started again at the next use.
//!
//! ```toml
//! [[plugins]]
//! name = "notes"
//! command = ["notes-plugin", "--verbose"]   # or: command = "notes-plugin" with args = ["--verbose"]
//! env = { NOTES_DIR = "/srv/notes" }
//! ```

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use a2e_client::{Client, ClientError, ToolCall};
use a2e_proto::{A2ECapability, ErrorCode, ToolDefinition};
use serde_json::{Map, Value};
use tokio::sync::Mutex;

use crate::config::PluginProcessConfig;
use crate::plugin::{CallContext, ToolOutput, ToolPlugin};
use crate::proc::GroupGuard;
use crate::{Cause, HostBuilder, HostError, HostResult};

/// Adds a [`PluginProcess`] for every `[[plugins]]` entry of the builder's
/// configuration (none starts before its first use).
pub fn with_plugin_processes(mut builder: HostBuilder) -> HostBuilder {
    let config = builder.config().clone();
    for entry in &config.plugins {
        builder = builder.with_tool_plugin(PluginProcess::new(
            entry.clone(),
            config.root.clone(),
            config.commands.inherit_env.clone(),
        ));
    }
    builder
}

/// A running plugin: the connection, the calls it takes at once (its
/// handshake's `max_parallel`) and the guard of its process group.
struct Running {
    client: Client,
    slots: Arc<tokio::sync::Semaphore>,
    // Dropped after the client: the group dies with the plugin.
    _group: GroupGuard,
}

/// A plugin process as a tool plugin of the host.
pub struct PluginProcess {
    config: PluginProcessConfig,
    root: PathBuf,
    inherit_env: Vec<String>,
    running: Mutex<Option<Arc<Running>>>,
    tools: RwLock<Vec<ToolDefinition>>,
}

impl PluginProcess {
    /// A plugin not yet started; `root` is its default working directory and
    /// `inherit_env` the host variables it may see.
    pub fn new(config: PluginProcessConfig, root: PathBuf, inherit_env: Vec<String>) -> Self {
        Self {
            config,
            root,
            inherit_env,
            running: Mutex::new(None),
            tools: RwLock::new(Vec::new()),
        }
    }

    /// The plugin's configuration.
    pub fn config(&self) -> &PluginProcessConfig {
        &self.config
    }

    /// Starts the process (if it is not running) and lists its tools; returns
    /// whether the list changed.
    pub async fn start(&self) -> HostResult<bool> {
        let running = self.running().await?;
        let mut listed = running
            .client
            .tools()
            .list()
            .await
            .map_err(|e| self.error("cannot list its tools", e))?
            .to_vec();
        for tool in &mut listed {
            tool.toolkit = Some(self.config.name.clone());
        }
        let mut tools = self
            .tools
            .write()
            .map_err(|_| HostError::Runtime("a plugin's tool list is poisoned".into()))?;
        let changed = *tools != listed;
        *tools = listed;
        Ok(changed)
    }

    /// The running process, started if it is not (or no longer) running.
    async fn running(&self) -> HostResult<Arc<Running>> {
        let mut slot = self.running.lock().await;
        if let Some(running) = slot.as_ref().filter(|r| !r.client.is_closed()) {
            return Ok(running.clone());
        }
        *slot = None;
        let limit = Duration::from_secs(self.config.start_timeout_secs.max(1));
        let running = tokio::time::timeout(limit, self.spawn())
            .await
            .map_err(|_| {
                HostError::Runtime(format!(
                    "plugin `{}` did not start within {} s",
                    self.config.name,
                    limit.as_secs()
                ))
            })??;
        let running = Arc::new(running);
        *slot = Some(running.clone());
        Ok(running)
    }

    async fn spawn(&self) -> HostResult<Running> {
        let argv = self.config.argv();
        let Some((program, args)) = argv.split_first() else {
            return Err(HostError::Runtime(format!(
                "plugin `{}` has an empty command",
                self.config.name
            )));
        };
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args)
            .current_dir(self.config.cwd.as_ref().unwrap_or(&self.root))
            .env_clear()
            .process_group(0);
        for name in &self.inherit_env {
            if let Some(value) = std::env::var_os(name) {
                cmd.env(name, value);
            }
        }
        cmd.envs(&self.config.env);
        let client = Client::builder()
            .agent_id(format!("a2e-host/{}", self.config.name))
            .peer_name(format!("plugin `{}`", self.config.name))
            .capabilities([A2ECapability::TOOLS])
            .connect_stdio(cmd)
            .await
            .map_err(|e| self.error("cannot start", e))?;
        let pgid = client.child_id().ok_or_else(|| {
            HostError::Runtime(format!("plugin `{}` has no process id", self.config.name))
        })?;
        let parallel = usize::try_from(client.max_parallel().max(1)).unwrap_or(1);
        tracing::info!(plugin = %self.config.name, pid = pgid, parallel, "plugin started");
        Ok(Running {
            client,
            slots: Arc::new(tokio::sync::Semaphore::new(parallel)),
            _group: GroupGuard::new(pgid),
        })
    }

    fn error(&self, what: &str, e: ClientError) -> HostError {
        HostError::Io {
            context: format!("plugin `{}`: {what}", self.config.name),
            source: Cause::new(e),
        }
    }
}

impl ToolPlugin<HostError> for PluginProcess {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        self.tools.read().map(|t| t.clone()).unwrap_or_default()
    }

    async fn load_tools(&self, _include_deferred: bool) -> bool {
        match self.start().await {
            Ok(changed) => changed,
            Err(e) => {
                tracing::warn!(plugin = %self.config.name, error = %e, "plugin not available");
                false
            }
        }
    }

    async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
        ctx: CallContext,
    ) -> HostResult<ToolOutput> {
        let running = self.running().await?;
        // No more calls at once than the plugin said it takes: the others
        // wait their turn, within their own deadline.
        let _slot = tokio::select! {
            slot = running.slots.clone().acquire_owned() => slot.map_err(|_| {
                HostError::Runtime(format!("plugin `{}` stopped", self.config.name))
            })?,
            () = ctx.cancel.cancelled() => return Err(HostError::Cancelled),
        };
        let mut call = ToolCall::new(tool, Value::Object(args))
            .streaming(true)
            .correlation_id(ctx.correlation_id.to_string());
        if let Some(left) = ctx.remaining() {
            // Whole seconds, rounded up, never 0 (0 asks for the plugin's default).
            call = call.timeout_secs(left.as_secs().saturating_add(1));
        }
        let mut pending = running
            .client
            .tools()
            .start(call)
            .await
            .map_err(|e| self.remote_error(tool, e))?;
        // Events are handed on one by one, in their order, as they arrive.
        let relay = async {
            while let Some(event) = pending.next_event().await {
                ctx.emit(event.kind, event.data).await;
            }
            pending.finish().await
        };
        let result = tokio::select! {
            r = relay => r.map_err(|e| self.remote_error(tool, e))?,
            () = ctx.cancel.cancelled() => {
                if ctx.remaining().is_some_and(|left| left.is_zero()) {
                    tracing::warn!(plugin = %self.config.name, tool,
                        "the plugin did not answer within the call's timeout");
                }
                return Err(HostError::Cancelled);
            }
        };
        if result.success {
            Ok(ToolOutput {
                data: result.data,
                summary: result.summary,
                truncated: result.truncated,
                exit_code: result.exit_code,
            })
        } else {
            let message = result
                .error
                .unwrap_or_else(|| format!("the plugin tool `{tool}` failed"));
            Err(match result.error_code {
                Some(code) if code == ErrorCode::TIMEOUT => {
                    HostError::Timeout(ctx.remaining().map_or(0, |d| d.as_secs()))
                }
                _ => HostError::failed(message),
            })
        }
    }
}

impl PluginProcess {
    /// A refusal or a failure of the plugin's call of `tool`, as the host's
    /// error. What the plugin did wrong (an answer that does not decode, a
    /// line that is not JSON, its exit) fails the call at once and is said
    /// with the plugin's name.
    fn remote_error(&self, tool: &str, e: ClientError) -> HostError {
        match e.code() {
            Some(code) if *code == ErrorCode::UNKNOWN_TOOL => {
                HostError::UnknownTool(tool.to_owned())
            }
            Some(code) if *code == ErrorCode::SCHEMA_VIOLATION => {
                HostError::schema(vec![e.to_string()])
            }
            Some(code) if *code == ErrorCode::TOOL_DENIED => HostError::denied(e.to_string()),
            _ => {
                tracing::warn!(plugin = %self.config.name, tool, "the plugin's call failed: {e}");
                HostError::ToolFailed {
                    context: format!("tool `{tool}` of plugin `{}`", self.config.name),
                    source: Cause::new(e),
                }
            }
        }
    }
}
