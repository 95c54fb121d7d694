//! Layers of the call pipeline that an embedder (or a later part of the
//! host: approvals, quotas) adds: each sees every call before its plugin
//! runs — tool and skill calls of agents, chain nodes, DAG tasks, the tool
//! calls a skill makes through its host — and lets it through, changes its
//! arguments, waits, or refuses it.
//!
//! A layer runs before the call's clock starts: it may wait (for a
//! person's decision) longer than the call itself may run, so its waiting
//! does not count against the call's own timeout. It ends with the caller's
//! cancellation — a chain's deadline, an agent's cancel, a session's end —
//! and a panic in it fails the call like a panic in the plugin. A layer that
//! does not apply to a call ([`CallLayer::applies`]) costs it nothing more.

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use crate::error::HostResult;
use crate::host::Host;
use crate::plugin::{CallContext, Extensions};

/// What a call targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallTarget {
    /// A tool (`tool/call`, a chain's tool node, a skill's tool call).
    Tool,
    /// A skill.
    Skill,
}

/// A call as a layer sees it, before its plugin runs.
#[non_exhaustive]
pub struct CallHead<'a> {
    /// Tool or skill.
    pub target: CallTarget,
    /// The tool's or skill's name.
    pub name: &'a str,
    /// The arguments, validated against the callee's schema; a layer that
    /// changes them is responsible for what it hands on.
    pub args: &'a mut Map<String, Value>,
    /// The call's context: who calls, its deadline and cancellation, its
    /// extensions, its idempotency key when it runs for a node of a durable
    /// run.
    pub ctx: &'a CallContext,
    /// The host the call runs on (its journal, its configuration).
    pub host: &'a std::sync::Arc<Host>,
}

/// Marks a call whose caller asked for a person's decision before it runs
/// (a chain node with `"approval": "required"`), in its context's
/// extensions; an approval layer reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApprovalRequired;

/// A client that decides on a waiting call by its next message rather than
/// in the middle of the call (an A2A client: its task waits for input), in
/// a call's extensions (they pass on to the calls the call makes). An
/// approval layer tells it when a call its client may decide starts to wait
/// and when the wait ends; the client's decision comes back through the run
/// journal, as an operator's does.
#[derive(Clone)]
pub struct WaitWatch(pub std::sync::Arc<dyn WatchWaits>);

impl std::fmt::Debug for WaitWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WaitWatch")
    }
}

/// What a [`WaitWatch`] is told.
pub trait WatchWaits: Send + Sync + 'static {
    /// A call waits for a decision; `notice` is the event that says so (its
    /// run and node, what it calls, its redacted arguments, who may decide,
    /// its deadline).
    fn waiting<'a>(&'a self, notice: &'a Map<String, Value>) -> BoxFuture<'a, ()>;

    /// The wait `notice` told of ended: the call was `approved` or not, by
    /// `by` (`client`, `operator:NAME`, `timeout`, …).
    fn ended<'a>(
        &'a self,
        notice: &'a Map<String, Value>,
        approved: bool,
        by: &'a str,
    ) -> BoxFuture<'a, ()>;
}

/// A concern of the call pipeline (see the module docs), added with
/// [`HostBuilder::with_layer`](crate::HostBuilder::with_layer). Layers run in
/// the order they were added.
pub trait CallLayer: Send + Sync + 'static {
    /// Whether the layer has anything to do with a call of `target` named
    /// `name` that carries `extensions`: a layer that answers `false` is
    /// not run, and the call builds nothing for it. The default: every
    /// call.
    fn applies(&self, target: CallTarget, name: &str, extensions: &Extensions) -> bool {
        let _ = (target, name, extensions);
        true
    }

    /// Lets the call through (`Ok`), or refuses it (`Err`: a refusal such
    /// as [`HostError::Denied`](crate::HostError::Denied) is answered as an
    /// error, as an unknown tool is; any other error fails the call).
    fn before<'a>(&'a self, call: CallHead<'a>) -> BoxFuture<'a, HostResult<()>>;
}

/// Runs `layers` over a call, in order; the first refusal ends it.
pub(crate) async fn run_layers(
    host: &std::sync::Arc<Host>,
    layers: &[&std::sync::Arc<dyn CallLayer>],
    target: CallTarget,
    name: &str,
    args: &mut Map<String, Value>,
    ctx: &CallContext,
) -> HostResult<()> {
    for layer in layers {
        layer
            .before(CallHead {
                target,
                name,
                args,
                ctx,
                host,
            })
            .await?;
    }
    Ok(())
}
