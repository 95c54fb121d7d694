//! The cluster as a decorator of a node runner: a durable run's tool and
//! skill nodes go to the work queue of their toolkit; every other node (a
//! process, a tool this host does not know) goes to the runner it wraps.

use std::sync::Arc;

use a2e_chain::{NodeCall, NodeResult, NodeRunner};

use super::{Cluster, WorkTrace, run_remote, toolkit_of};
use crate::chains::HostRunner;
use crate::host::Host;

/// Where a decorated runner's nodes sit: the run, who it runs for, and the
/// chain's span the coordinator's `send` spans hang under.
struct Route {
    host: Arc<Host>,
    run_id: Arc<str>,
    session_id: String,
    agent: Arc<str>,
    span: tracing::Span,
    chain_id: String,
    /// The nodes that ask for a person's decision (their work items say so).
    approvals: Vec<String>,
}

/// Runs the tool and skill nodes of durable run `run_id` on the cluster's
/// workers, and hands every other node to `R`.
pub struct ClusterRunner<R> {
    inner: R,
    cluster: Arc<Cluster>,
    route: Route,
}

impl ClusterRunner<HostRunner> {
    /// `runner`'s nodes of durable run `run_id`, decorated: those a worker
    /// can run go to the cluster.
    pub fn new(runner: HostRunner, cluster: Arc<Cluster>, run_id: &str) -> Self {
        let route = Route {
            approvals: runner.approval_nodes(),
            host: runner.host().clone(),
            run_id: Arc::from(run_id),
            session_id: runner.session_id().to_owned(),
            agent: runner.identity().agent_id.clone(),
            span: runner.span().clone(),
            chain_id: runner.chain_id().to_owned(),
        };
        Self {
            inner: runner,
            cluster,
            route,
        }
    }
}

impl<R: NodeRunner> NodeRunner for ClusterRunner<R> {
    async fn run(&self, call: NodeCall) -> NodeResult {
        let route = &self.route;
        let Some(toolkit) = toolkit_of(&route.host, &call.kind, &call.name) else {
            return self.inner.run(call).await;
        };
        let metrics = route.host.telemetry().metrics();
        let timer = metrics.is_enabled().then(|| metrics.timer());
        let kind = call.kind.clone();
        let result = Box::pin(self.send(toolkit, call)).await;
        if let Some(timer) = timer {
            let outcome = match &result {
                Ok(_) => a2e_telemetry::metrics::OK,
                Err(e) => e.code.as_str(),
            };
            timer.node(kind.as_str(), outcome);
        }
        result
    }
}

impl<R> ClusterRunner<R> {
    /// Runs `call` on a worker of `toolkit`, under a `send {toolkit}` span
    /// whose context goes with the node to the worker.
    async fn send(&self, toolkit: String, call: NodeCall) -> NodeResult {
        let route = &self.route;
        let op = if route.span.is_disabled() {
            a2e_telemetry::OpSpan::default()
        } else {
            route
                .host
                .telemetry()
                .send(&toolkit)
                .parent(a2e_telemetry::Parent::Span(&route.span))
                .session(&route.session_id)
                .chain(&route.chain_id)
                .node(&call.node_id)
                .start()
        };
        let trace = WorkTrace {
            context: op.trace_context(),
            chain_id: &route.chain_id,
        };
        let approval = route.approvals.iter().any(|n| **n == *call.node_id);
        let work = run_remote(
            &self.cluster,
            &route.run_id,
            toolkit,
            &route.agent,
            trace,
            call,
            approval,
        );
        let result = tracing::Instrument::instrument(work, op.span().clone()).await;
        if let Err(e) = &result {
            op.error(e.code.as_str(), &e.message);
        }
        result
    }
}
