//! The seam between the engine and whatever executes `tool`, `skill` and
//! `proc` nodes: the host implements [`NodeRunner`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use a2e_proto::NodeKind;
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::NodeError;
use crate::input::NodeInput;

/// What a runner gets for one execution of a node.
#[derive(Debug, Clone)]
pub struct NodeCall {
    /// The node's id (for a map item: the template node's id).
    pub node_id: Arc<str>,
    /// For a map item: its index in the list; `None` otherwise.
    pub item: Option<usize>,
    /// `tool`, `skill` or `proc`.
    pub kind: NodeKind,
    /// The tool or skill name (empty for `proc`).
    pub name: Arc<str>,
    /// The resolved input: static `input` merged with `input_map` results,
    /// a JSON object (see [`NodeInput`]).
    pub input: NodeInput,
    /// Fires when the work must stop: chain timeout, abort, external
    /// cancellation, the node's own timeout, or its map failing.
    ///
    /// Shared with the other calls under the same token: cloning the `Arc`
    /// is one atomic increment, where cloning and dropping a
    /// `CancellationToken` each take a lock. It derefs to the token
    /// (`call.cancel.cancelled().await`, `&call.cancel` where a
    /// `&CancellationToken` is wanted); `(*call.cancel).clone()` gives an
    /// owned one.
    pub cancel: Arc<CancellationToken>,
    /// When the engine stops waiting: the earlier of the chain deadline and the
    /// node's own timeout. `None` when neither is set.
    pub deadline: Option<Instant>,
    /// Which execution of the call this is, from 1: a call resumed after its
    /// host stopped while it ran keeps its attempt (see
    /// [`Resume::interrupted`](crate::Resume::interrupted)), so that
    /// `run_id/node_id/attempt` is the same idempotency key both times.
    pub attempt: u32,
    /// Its handle to the chain's events, when the engine gives calls one
    /// ([`ChainConfig::notices`](crate::ChainConfig::notices)).
    pub notices: Option<crate::Notices>,
}

impl NodeCall {
    /// The call's id on the wire: the node id, or `template[index]` for a
    /// map item.
    pub fn wire_id(&self) -> String {
        wire_id(&self.node_id, self.item)
    }

    /// The call's node, item and attempt.
    pub fn key(&self) -> CallKey {
        CallKey {
            node_id: self.node_id.clone(),
            item: self.item,
            attempt: self.attempt,
        }
    }

    /// The node's own timeout, from its input's `timeout` (seconds; `None`
    /// when absent, 0 or not a valid number — the engine refuses the last
    /// before any runner sees it). A runner tells from it whether
    /// [`deadline`](Self::deadline) is the node's own or only the chain's,
    /// under which a call keeps its host's default timeout.
    pub fn own_timeout(&self) -> Option<std::time::Duration> {
        crate::input::node_timeout(&self.input).ok().flatten()
    }
}

/// The id of a runner call on the wire: the node id, or `template[index]`
/// for a map item (as in its events).
pub fn wire_id(node_id: &str, item: Option<usize>) -> String {
    match item {
        Some(i) => format!("{node_id}[{i}]"),
        None => node_id.to_owned(),
    }
}

/// One runner call of a run, as an observer sees it after the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallKey {
    /// The node (for a map item: the template node).
    pub node_id: Arc<str>,
    /// For a map item: its index.
    pub item: Option<usize>,
    /// The attempt, from 1 (see [`NodeCall::attempt`]).
    pub attempt: u32,
}

impl CallKey {
    /// The call's id on the wire (see [`wire_id`]).
    pub fn wire_id(&self) -> String {
        wire_id(&self.node_id, self.item)
    }
}

/// What a runner returns: the node's output or its error.
pub type NodeResult = Result<Value, NodeError>;

/// Executes `tool`, `skill` and `proc` nodes. Implementors may write
/// `async fn run(&self, call: NodeCall) -> NodeResult`; the future must be
/// `Send`. A panic inside a runner becomes a node error (`runtime_error`).
///
/// The engine holds runners as `Arc<dyn DynNodeRunner>`; every `NodeRunner`
/// is one through a blanket impl.
pub trait NodeRunner: Send + Sync + 'static {
    /// Runs one node (or one map item) to completion.
    fn run(&self, call: NodeCall) -> impl Future<Output = NodeResult> + Send;
}

/// A boxed runner future.
pub type BoxNodeFuture = Pin<Box<dyn Future<Output = NodeResult> + Send + 'static>>;

/// The dyn-compatible twin of [`NodeRunner`], for `Arc<dyn DynNodeRunner>`.
/// Implemented for every `NodeRunner`; a host may also implement it directly.
pub trait DynNodeRunner: Send + Sync + 'static {
    /// Runs one node; the future owns its `Arc` of the runner.
    fn run_boxed(self: Arc<Self>, call: NodeCall) -> BoxNodeFuture;
}

impl<R: NodeRunner> DynNodeRunner for R {
    fn run_boxed(self: Arc<Self>, call: NodeCall) -> BoxNodeFuture {
        Box::pin(async move { self.run(call).await })
    }
}

/// A runner made of a closure returning a future; see [`runner_fn`].
pub struct FnRunner<F>(F);

impl<F, Fut> NodeRunner for FnRunner<F>
where
    F: Fn(NodeCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = NodeResult> + Send,
{
    fn run(&self, call: NodeCall) -> impl Future<Output = NodeResult> + Send {
        (self.0)(call)
    }
}

/// A runner from a closure, handy for tests and in-process hosts.
///
/// ```
/// use a2e_chain::{runner_fn, NodeCall};
/// let echo = runner_fn(|call: NodeCall| async move { Ok(call.input.into_value()) });
/// # let _ = echo;
/// ```
pub fn runner_fn<F, Fut>(f: F) -> FnRunner<F>
where
    F: Fn(NodeCall) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = NodeResult> + Send,
{
    FnRunner(f)
}
