//! Forks of a journaled chain run: a new run (a new id, its request naming
//! its parent in `forked_from`) of the same document, in which every node
//! that is not downstream of the node forked from takes the result its
//! parent journaled — the same bytes, its call not made again — and that
//! node and what depends on it run (docs/forks.md).

use std::sync::Arc;

use a2e_journal::approval::is_approval_record;
use a2e_journal::{Journal, JournalError, NewRun, NodeKey, NodeRecord, RunId, RunKind, RunState};
use a2e_proto::{ChainRequest, ChainResponse, ErrorCode};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::chains;
use crate::cluster::Coordination;
use crate::host::{CallOptions, Host};
use crate::journaled::{Scope, node_of, resume_of};

/// The key of a forked run's request that names its parent.
pub const FORKED_FROM: &str = "forked_from";

/// Why a fork did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ForkError {
    /// The host keeps no run journal.
    #[error("this host keeps no run journal: there is nothing to fork")]
    NoJournal,
    /// No run of that id.
    #[error("no run `{0}`")]
    UnknownRun(String),
    /// The run belongs to another agent.
    #[error("run `{0}` belongs to another agent")]
    NotYours(String),
    /// A run of a kind that is not forked.
    #[error(
        "run `{run}` is a run of kind `{kind}`; chains, ACMP DAGs and Ontheia skill runs are forked"
    )]
    Kind {
        /// The run.
        run: String,
        /// Its kind.
        kind: &'static str,
    },
    /// The document has no such node.
    #[error("run `{run}` has no node `{node}` (its nodes: {})", .known.join(", "))]
    UnknownNode {
        /// The run.
        run: String,
        /// The node named.
        node: String,
        /// Its nodes.
        known: Vec<String>,
    },
    /// The request no longer loads or validates (the host's catalog
    /// changed, an edited input is invalid).
    #[error("the forked request does not run: {0}")]
    Invalid(String),
    /// The edited input is not a JSON object.
    #[error("the node's new input must be a JSON object")]
    InputNotObject,
    /// The journal failed.
    #[error("run journal: {0}")]
    Journal(#[from] JournalError),
}

impl ForkError {
    /// The wire code of this error (a refusal: nothing ran).
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::UnknownRun(_) => ErrorCode::new("unknown_run"),
            Self::NotYours(_) => ErrorCode::UNAUTHORIZED,
            Self::Kind { .. }
            | Self::UnknownNode { .. }
            | Self::Invalid(_)
            | Self::InputNotObject => ErrorCode::SCHEMA_VIOLATION,
            Self::NoJournal | Self::Journal(_) => ErrorCode::UNAVAILABLE,
        }
    }
}

/// What to fork.
#[derive(Debug, Clone)]
pub struct Fork {
    /// The run forked.
    pub parent: RunId,
    /// The node it is forked from.
    pub from: String,
    /// Keys merged into that node's `input` (its static input), when given.
    pub input: Option<Map<String, Value>>,
    /// The request id the forked run answers (its `chain/resp`'s `req_id`).
    pub req_id: String,
    /// Whether its events go to the caller as they happen.
    pub streaming: bool,
    /// The agent asking: only the run's own agent may fork it (`None`: an
    /// operator, who may fork any).
    pub agent: Option<String>,
}

/// A fork journaled and ready to run: its id, and what [`run_fork`] runs.
pub struct Prepared {
    /// The forked run's id.
    pub run_id: RunId,
    /// The nodes that take their parent's results (map items included).
    pub copied: Vec<String>,
    document: Document,
    state: RunState,
    coordination: Option<Coordination>,
}

/// What a fork runs.
enum Document {
    Chain(Box<ChainRequest>),
    #[cfg(feature = "acmp")]
    Dag {
        dag: Box<acmp_dag::Dag>,
        req_id: String,
    },
    /// An Ontheia skill's document: its skill called again.
    Skill,
}

/// Which of the parent's calls a fork runs again.
enum Rerun {
    /// The nodes named, with their map items and what a chain skill they
    /// called journaled under them.
    Nodes(Vec<String>),
    /// A fork from a node of a chain skill's chain (`NODE/inner`): of the
    /// run's nodes those in `outer` (downstream of `node`), of the skill's
    /// chain under `node` those in `inner` (downstream of `inner`).
    Nested {
        node: String,
        outer: Vec<String>,
        inner: Vec<String>,
    },
    /// Every call that started at or after this time (ms since the Unix
    /// epoch): a step list's steps from the one forked from on.
    From(u64),
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("run_id", &self.run_id)
            .field("copied", &self.copied)
            .finish_non_exhaustive()
    }
}

/// Journals the fork of a chain run: the new run, its request naming its
/// parent, and the results it takes from its parent. Nothing runs yet.
pub async fn prepare(host: &Arc<Host>, fork: Fork) -> Result<Prepared, ForkError> {
    let journal = host.journal().cloned().ok_or(ForkError::NoJournal)?;
    let parent = journal
        .show_run(&fork.parent)
        .await?
        .ok_or_else(|| ForkError::UnknownRun(fork.parent.to_string()))?;
    if let Some(agent) = &fork.agent
        && *agent != parent.summary.agent
    {
        return Err(ForkError::NotYours(fork.parent.to_string()));
    }
    let (document, rerun, request) = match parent.summary.kind {
        RunKind::Chain => chain_document(host, &parent, &fork)?,
        #[cfg(feature = "acmp")]
        RunKind::AcmpDag => dag_document(&parent, &fork)?,
        RunKind::Ontheia => step_document(&parent, &fork)?,
        kind => {
            return Err(ForkError::Kind {
                run: fork.parent.to_string(),
                kind: kind.as_str(),
            });
        }
    };
    let run = RunId::generate();
    let coordination = match host.cluster() {
        Some(c) => Some(
            Coordination::acquire(&c, &run)
                .await
                .map_err(|e| ForkError::Invalid(format!("cluster: {e}")))?,
        ),
        None => None,
    };
    let mut request = request;
    if let Value::Object(fields) = &mut request {
        fields.insert(
            FORKED_FROM.into(),
            json!({"run_id": fork.parent.as_str(), "node_id": fork.from}),
        );
    }
    journal
        .create_run(NewRun {
            run_id: run.clone(),
            kind: parent.summary.kind,
            agent: parent.summary.agent.clone(),
            request,
        })
        .await?;
    let copied = copy_results(&*journal, &parent, &run, &rerun).await?;
    let state = journal
        .show_run(&run)
        .await?
        .ok_or_else(|| ForkError::UnknownRun(run.to_string()))?;
    tracing::info!(run = %run, parent = %fork.parent, from = %fork.from,
        copied = copied.len(), "forked run journaled");
    Ok(Prepared {
        run_id: run,
        copied,
        document,
        state,
        coordination,
    })
}

/// A chain run's request as forked (its node's input edited), the nodes
/// that run again, and the request to journal.
fn chain_document(
    host: &Arc<Host>,
    parent: &RunState,
    fork: &Fork,
) -> Result<(Document, Rerun, Value), ForkError> {
    let mut req: ChainRequest = serde_json::from_value(parent.request.clone())
        .map_err(|e| ForkError::Invalid(e.to_string()))?;
    req.id = fork.req_id.clone();
    req.streaming = fork.streaming;
    let known: Vec<String> = req.nodes.iter().map(|n| n.node_id.clone()).collect();
    if !known.contains(&fork.from)
        && let Some((outer, inner)) = fork.from.split_once('/')
        && known.iter().any(|k| k == outer)
    {
        return nested_document(host, parent, fork, req, outer, inner);
    }
    let Some(node) = req.nodes.iter_mut().find(|n| n.node_id == fork.from) else {
        return Err(ForkError::UnknownNode {
            run: fork.parent.to_string(),
            node: fork.from.clone(),
            known,
        });
    };
    if let Some(input) = &fork.input {
        node.input.extend(input.clone());
    }
    let rerun: Vec<String> = {
        let plan = chains::plan(host, &req).map_err(|e| ForkError::Invalid(e.to_string()))?;
        plan.downstream(&fork.from)
            .unwrap_or_default()
            .into_iter()
            .map(str::to_owned)
            .collect()
    };
    let request = serde_json::to_value(&req).map_err(|e| ForkError::Invalid(e.to_string()))?;
    Ok((Document::Chain(Box::new(req)), Rerun::Nodes(rerun), request))
}

/// A fork from node `inner` of the chain a chain skill ran for node
/// `outer`: `outer` and what is downstream of it run again, and inside it,
/// `inner` and what is downstream of it in the skill's chain.
fn nested_document(
    host: &Arc<Host>,
    parent: &RunState,
    fork: &Fork,
    req: ChainRequest,
    outer: &str,
    inner: &str,
) -> Result<(Document, Rerun, Value), ForkError> {
    if fork.input.is_some() {
        return Err(ForkError::Invalid(
            "a node inside a chain skill takes its input from the skill's chain: \
             --input is for the run's own nodes"
                .into(),
        ));
    }
    let Some(chain) = crate::nested::chain_of(parent, outer) else {
        return Err(ForkError::Invalid(format!(
            "node `{outer}` journaled no chain of its own: fork from `{outer}`"
        )));
    };
    let inner_nodes: Vec<String> = {
        let plan = chains::plan(host, &chain).map_err(|e| ForkError::Invalid(e.to_string()))?;
        match plan.downstream(inner) {
            Some(nodes) => nodes.into_iter().map(str::to_owned).collect(),
            None => {
                return Err(ForkError::UnknownNode {
                    run: fork.parent.to_string(),
                    node: fork.from.clone(),
                    known: chain
                        .nodes
                        .iter()
                        .map(|n| format!("{outer}/{}", n.node_id))
                        .collect(),
                });
            }
        }
    };
    let outer_nodes: Vec<String> = {
        let plan = chains::plan(host, &req).map_err(|e| ForkError::Invalid(e.to_string()))?;
        plan.downstream(outer)
            .unwrap_or_default()
            .into_iter()
            .map(str::to_owned)
            .collect()
    };
    let request = serde_json::to_value(&req).map_err(|e| ForkError::Invalid(e.to_string()))?;
    let rerun = Rerun::Nested {
        node: outer.to_owned(),
        outer: outer_nodes,
        inner: inner_nodes,
    };
    Ok((Document::Chain(Box::new(req)), rerun, request))
}

/// A DAG run's DAG, the tasks that run again (the task forked from and
/// every task its edges lead to), and the request to journal.
#[cfg(feature = "acmp")]
fn dag_document(parent: &RunState, fork: &Fork) -> Result<(Document, Rerun, Value), ForkError> {
    let dag: acmp_dag::Dag = parent
        .request
        .get("dag")
        .map(acmp_dag::decode::from_value)
        .transpose()
        .map_err(|e| ForkError::Invalid(e.to_string()))?
        .ok_or_else(|| ForkError::Invalid("the run has no DAG".into()))?;
    if !dag.tasks.iter().any(|t| t.task_id == fork.from) {
        return Err(ForkError::UnknownNode {
            run: fork.parent.to_string(),
            node: fork.from.clone(),
            known: dag.tasks.iter().map(|t| t.task_id.clone()).collect(),
        });
    }
    if fork.input.is_some() {
        return Err(ForkError::Invalid(
            "an ACMP task's input is its DAG's: a DAG is forked as it is".into(),
        ));
    }
    let mut rerun = vec![fork.from.clone()];
    let mut at = 0;
    while let Some(task) = rerun.get(at).cloned() {
        for edge in dag.edges.iter().filter(|e| e.from == task) {
            if !rerun.contains(&edge.to) {
                rerun.push(edge.to.clone());
            }
        }
        at += 1;
    }
    let request = json!({"id": fork.req_id, "dag": &dag});
    Ok((
        Document::Dag {
            dag: Box::new(dag),
            req_id: fork.req_id.clone(),
        },
        Rerun::Nodes(rerun),
        request,
    ))
}

/// An Ontheia skill run's request, and its calls from step `fork.from` on:
/// the step's first start (the step itself, or a step of that id in a loop
/// or a parallel block) and everything after it run again.
fn step_document(parent: &RunState, fork: &Fork) -> Result<(Document, Rerun, Value), ForkError> {
    if fork.input.is_some() {
        return Err(ForkError::Invalid(
            "an Ontheia step's input is its document's: a skill run is forked as it is".into(),
        ));
    }
    let is_step = |id: &str| {
        id == fork.from
            || id
                .strip_suffix(fork.from.as_str())
                .is_some_and(|path| path.ends_with('/'))
    };
    let from = parent
        .nodes
        .iter()
        .filter(|r| r.started_ms > 0 && is_step(&r.node_id))
        .map(|r| r.started_ms)
        .min()
        .ok_or_else(|| {
            let mut known: Vec<String> = parent
                .nodes
                .iter()
                .filter(|r| !is_approval_record(&r.node_id))
                .map(|r| r.node_id.clone())
                .collect();
            known.dedup();
            ForkError::UnknownNode {
                run: fork.parent.to_string(),
                node: fork.from.clone(),
                known,
            }
        })?;
    let mut request = parent.request.clone();
    if let Value::Object(fields) = &mut request {
        fields.insert("id".into(), Value::String(fork.req_id.clone()));
    }
    Ok((Document::Skill, Rerun::From(from), request))
}

/// Journals in `run` the latest result of every call of `parent` that
/// `rerun` does not run again, with what it started with; the calls copied.
async fn copy_results(
    journal: &dyn Journal,
    parent: &RunState,
    run: &RunId,
    rerun: &Rerun,
) -> Result<Vec<String>, ForkError> {
    let mut latest: std::collections::BTreeMap<&str, &NodeRecord> = Default::default();
    for rec in parent
        .nodes
        .iter()
        .filter(|r| !is_approval_record(&r.node_id))
    {
        let e = latest.entry(rec.node_id.as_str()).or_insert(rec);
        if rec.attempt > e.attempt {
            *e = rec;
        }
    }
    let mut copied = Vec::new();
    for (id, rec) in latest {
        let Some(outcome) = &rec.outcome else {
            continue;
        };
        let again = match rerun {
            Rerun::Nodes(nodes) => nodes.iter().any(|r| runs_under(id, r)),
            Rerun::Nested { node, outer, inner } => {
                match id
                    .strip_prefix(node.as_str())
                    .and_then(|r| r.strip_prefix('/'))
                {
                    Some(rest) => {
                        rest != crate::nested::CHAIN_RECORD
                            && inner.iter().any(|r| runs_under(rest, r))
                    }
                    None => outer.iter().any(|r| runs_under(id, r)),
                }
            }
            Rerun::From(at) => rec.started_ms >= *at || rec.started_ms == 0,
        };
        if again {
            continue;
        }
        let key = NodeKey::new(run.clone(), id, rec.attempt)?;
        if let Some(start) = &rec.start {
            journal.node_started_with(&key, start).await?;
        }
        journal.node_finished(&key, outcome).await?;
        copied.push(id.to_owned());
    }
    Ok(copied)
}

/// Whether record `id` is a call of node `node`: the node itself, one of
/// its map items (`node[3]`), or a call journaled under it by the chain
/// skill it called (`node/inner`).
fn runs_under(id: &str, node: &str) -> bool {
    node_of(id) == node
        || id
            .strip_prefix(node)
            .is_some_and(|rest| rest.starts_with('/') || rest.starts_with('['))
}

/// Runs a prepared fork to its end (its copied calls not made again) and
/// journals its answer, as a run of its parent's agent.
pub async fn run_fork(host: &Arc<Host>, fork: Prepared, options: CallOptions<'_>) -> ChainResponse {
    let Prepared {
        run_id: run,
        document,
        state,
        coordination,
        ..
    } = fork;
    match document {
        Document::Chain(req) => run_chain(host, run, *req, state, coordination, options).await,
        #[cfg(feature = "acmp")]
        Document::Dag { dag, req_id } => {
            crate::dag::run_fork(host, run, *dag, &req_id, state, coordination, options).await
        }
        Document::Skill => match host.journal().cloned() {
            Some(journal) => {
                crate::skill_run::run_fork(host, journal, state, coordination, options).await
            }
            None => crate::failed_answer("", "", ErrorCode::UNAVAILABLE, "no run journal"),
        },
    }
}

async fn run_chain(
    host: &Arc<Host>,
    run: RunId,
    req: ChainRequest,
    state: RunState,
    mut coordination: Option<Coordination>,
    options: CallOptions<'_>,
) -> ChainResponse {
    let fail = |code: ErrorCode, message: String| {
        crate::failed_answer(&req.id, &req.chain_id, code, &message)
    };
    let Some(journal) = host.journal().cloned() else {
        return fail(ErrorCode::UNAVAILABLE, "the run journal is gone".into());
    };
    // `None`: the lease was lost, the run ends on the host that took it.
    let resp: Option<ChainResponse> = match chains::plan(host, &req) {
        Err(e) => Some(fail(e.code(), e.to_string())),
        Ok(plan) => match resume_of(&*journal, &state, &Scope::of(&req), |_| false).await {
            Err(e) => Some(fail(ErrorCode::RUNTIME_ERROR, format!("run journal: {e}"))),
            Ok(resume) => {
                let (session, stream, cancel) = options.into_parts();
                let token =
                    cancel.map_or_else(CancellationToken::new, CancellationToken::child_token);
                let done = CancellationToken::new();
                crate::watch_cancel(journal.clone(), run.clone(), token.clone(), done.clone());
                let live = stream.is_some() && req.streaming;
                let mut options = CallOptions::new().session(session).cancel(&token);
                if let Some(stream) = stream {
                    options = options.events(stream);
                }
                let durable = crate::durable(host, &journal, &run, &req, Some(resume), live);
                let running = chains::run_plan_durable(host, &plan, options, durable);
                let resp = match coordination.as_mut() {
                    Some(c) => c.guard(running).await,
                    None => Some(running.await),
                };
                done.cancel();
                resp.map(|mut r| {
                    r.run_id = run.to_string();
                    r
                })
            }
        },
    };
    let mut resp = crate::conclude(&*journal, &run, resp, coordination)
        .await
        .unwrap_or_else(|| {
            fail(
                ErrorCode::UNAVAILABLE,
                "the forked run was taken over by another host and its answer could not be read"
                    .into(),
            )
        });
    resp.run_id = run.to_string();
    resp
}
