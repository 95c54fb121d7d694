//! Layers of the call pipeline that an embedder (or a later part of the
//! host: approvals, quotas) adds: each sees every call before its plugin
//! runs — tool and skill calls of agents, chain nodes, DAG tasks, the tool
//! calls a skill makes through its host — and lets it through, changes its
//! arguments, waits, or refuses it.
//!
//! A layer runs inside the call's supervision: its waiting counts against
//! the call's deadline and ends with the call's cancellation, and a panic in
//! it fails the call like a panic in the plugin.

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use crate::error::HostResult;
use crate::plugin::CallContext;

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
    /// extensions.
    pub ctx: &'a CallContext,
}

/// A concern of the call pipeline (see the module docs), added with
/// [`HostBuilder::with_layer`](crate::HostBuilder::with_layer). Layers run in
/// the order they were added.
pub trait CallLayer: Send + Sync + 'static {
    /// Lets the call through (`Ok`), or refuses it (`Err`: a refusal such
    /// as [`HostError::Denied`](crate::HostError::Denied) is answered as an
    /// error, as an unknown tool is; any other error fails the call).
    fn before<'a>(&'a self, call: CallHead<'a>) -> BoxFuture<'a, HostResult<()>>;
}

/// Runs `layers` over a call, in order; the first refusal ends it.
pub(crate) async fn run_layers(
    layers: &[std::sync::Arc<dyn CallLayer>],
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
            })
            .await?;
    }
    Ok(())
}
