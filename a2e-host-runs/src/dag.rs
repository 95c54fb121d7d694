//! Durable ACMP DAG runs: a DAG a session sends (`dag/req`) is journaled as
//! a run of kind `acmp_dag` with the same records and guarantees as a chain
//! run, and resumed when its host starts again.
//!
//! - The run's request is `{"id": <dag/req id>, "dag": <the DAG>}`, its agent
//!   the session's.
//! - Each task's provider call is observed ([`TaskObserver`]): its start is
//!   journaled (key `run_id/task_id/attempt`) before the provider is
//!   invoked, its result (the whole `acmp/result`, or the error's code and
//!   message) before the run, and so any dependent, sees it. The host's
//!   calls carry the same key as their idempotency key.
//! - Each task's transitions are journaled as `chain/event`s with their own
//!   `seq` (0, 1, 2, …), and the answer as a `chain/resp` (see
//!   [`crate::acmp::answer_of`]): `chain/attach` and `a2e runs` serve DAG
//!   runs as they serve chains.
//! - On resume, a task with a journaled result takes it and is not invoked;
//!   a task that started and left none is invoked again with the same
//!   attempt when its capability is an `idempotent` tool, and otherwise
//!   fails with `interrupted` (journaled), its dependents then cancelled as
//!   after any failure. Events already journaled are not emitted again.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use a2e_journal::{
    Journal, JournalError, NewRun, NodeKey, NodeOutcome, NodeRecord, RunId, RunKind, RunState,
};
use a2e_proto::{ChainEvent, ChainResponse, ErrorCode};
use acmp_dag::{
    AcmpError, Dag, DagResume, DagRunOptions, InvokeParams, InvokeResult, ObserveFuture, TaskCall,
    TaskObserver,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::cluster::Coordination;
use super::{conclude, failed_answer, finish, resumed_session, watch_cancel};
use crate::acmp::{self, DagRunMode};
use crate::host::{CallOptions, Host};

/// Journals each provider call of one DAG run (see the module docs).
struct DagObserver {
    journal: Arc<dyn Journal>,
    run: RunId,
}

fn journal_failed(task_id: &str, e: &JournalError) -> AcmpError {
    AcmpError::internal(task_id, format!("run journal: {e}"))
        .with_data("code", ErrorCode::RUNTIME_ERROR.as_str())
}

impl DagObserver {
    fn key(&self, call: &TaskCall) -> Result<NodeKey, AcmpError> {
        NodeKey::new(self.run.clone(), &call.task_id, call.attempt)
            .map_err(|e| journal_failed(&call.task_id, &e))
    }
}

/// The journaled outcome of a task's answer: the `acmp/result` whole, or
/// the error's A2E code (`data.code`, else the ACMP code's name) and
/// message.
fn outcome_of(result: &Result<InvokeResult, AcmpError>) -> NodeOutcome {
    match result {
        Ok(r) => NodeOutcome::output(serde_json::to_value(r).unwrap_or(Value::Null)),
        Err(e) => {
            let code = e
                .data
                .as_ref()
                .and_then(|d| d.extra.get("code"))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| e.code.name().map(str::to_owned))
                .unwrap_or_else(|| e.code.0.to_string());
            NodeOutcome::error(code, e.message.clone())
        }
    }
}

/// The answer a journaled outcome stands for (the inverse of
/// [`outcome_of`]).
fn answer_from(task_id: &str, outcome: &NodeOutcome) -> Result<InvokeResult, AcmpError> {
    match outcome {
        NodeOutcome::Output { output } => serde_json::from_value(output.clone()).map_err(|e| {
            AcmpError::internal(
                task_id,
                format!("run journal: the result does not load: {e}"),
            )
        }),
        NodeOutcome::Error { code, message } => Err(match code.as_str() {
            "timeout" => AcmpError::timeout(task_id, message.clone()),
            "cancelled" => AcmpError::cancelled(task_id),
            _ => AcmpError::internal(task_id, message.clone()).with_data("code", code.as_str()),
        }),
    }
}

impl TaskObserver for DagObserver {
    fn started(&self, call: &TaskCall, params: &InvokeParams) -> ObserveFuture {
        let task_id = call.task_id.clone();
        // The task's resolved input (its payload), as the provider gets it.
        let input = params.input.as_ref().map_or(
            Value::Null,
            |p| json!({"type": p.kind, "data": crate::redact::redact(&p.data)}),
        );
        let ack = self.key(call).map(|key| {
            self.journal
                .node_started_with(&key, &super::journaled::node_start(input))
        });
        Box::pin(async move { ack?.await.map_err(|e| journal_failed(&task_id, &e)) })
    }

    fn finished(&self, call: &TaskCall, result: &Result<InvokeResult, AcmpError>) -> ObserveFuture {
        let task_id = call.task_id.clone();
        let outcome = outcome_of(result);
        let ack = self
            .key(call)
            .map(|key| self.journal.node_finished(&key, &outcome));
        Box::pin(async move {
            ack?.await
                .map(drop)
                .map_err(|e| journal_failed(&task_id, &e))
        })
    }

    fn failed(&self, call: &TaskCall, error: &acmp_dag::TaskError) {
        if let Ok(key) = self.key(call) {
            let outcome = NodeOutcome::error(error.code().to_string(), error.to_string());
            drop(self.journal.node_finished(&key, &outcome));
        }
    }
}

/// Runs `dag`, sent by a session as `dag/req` `req_id`, for agent `agent`:
/// journaled when the host has a run journal (in a cluster, under a lease
/// that another host takes the run over by when this one dies), as
/// [`acmp::run_dag_with`] otherwise.
/// `on_event` gets each task's transition as a `chain/event`. The answer
/// is a `chain/resp` ([`acmp::answer_of`]).
pub async fn run_dag(
    host: &Arc<Host>,
    dag: Dag,
    req_id: &str,
    options: CallOptions<'_>,
    agent: &str,
    on_event: impl Fn(&ChainEvent) + Send + Sync + 'static,
) -> ChainResponse {
    let (session, _, cancel) = options.into_parts();
    let token = cancel.map_or_else(CancellationToken::new, CancellationToken::child_token);
    let dag_id = dag.dag_id.clone();
    // An invalid DAG is answered without a run (as a chain is).
    if let Err(report) = acmp_dag::ValidatedDag::new(dag.clone(), &Default::default()) {
        return acmp::answer_of(req_id, &dag_id, &Err(acmp::DagRunError::Invalid(report)));
    }
    let request = json!({"id": req_id, "dag": &dag});
    let run = RunId::generate();
    // In a cluster the lease is taken before the run exists (as for chains).
    let mut coordination = None;
    let mut journal = host.journal().cloned();
    if let (Some(cluster), Some(_)) = (host.cluster(), &journal) {
        match Coordination::acquire(&cluster, &run).await {
            Ok(c) => coordination = Some(c),
            Err(e) => {
                tracing::warn!(run = %run, "DAG not journaled: {e}");
                journal = None;
            }
        }
    }
    let created = match &journal {
        Some(journal) => journal
            .create_run(NewRun {
                run_id: run.clone(),
                kind: RunKind::AcmpDag,
                agent: agent.to_owned(),
                request,
            })
            .await
            .map_err(|e| tracing::warn!(run = %run, "DAG not journaled: {e}"))
            .ok()
            .map(|()| journal.clone()),
        None => None,
    };
    let Some(journal) = created else {
        let owned = req_id.to_owned();
        let seq = AtomicU64::new(0);
        let sink = move |e: &acmp_dag::Event| {
            if let Some(event) = acmp::event_of(e, &owned, seq.load(Ordering::Relaxed)) {
                seq.fetch_add(1, Ordering::Relaxed);
                on_event(&event);
            }
        };
        let mode = DagRunMode {
            session,
            ..DagRunMode::default()
        };
        let result = acmp::run_dag_with(host, dag, sink, &token, mode).await;
        return acmp::answer_of(req_id, &dag_id, &result);
    };
    tracing::debug!(run = %run, dag = %dag_id, "durable DAG run started");
    let done = CancellationToken::new();
    watch_cancel(journal.clone(), run.clone(), token.clone(), done.clone());
    let durable = Durable {
        journal: &journal,
        run: &run,
        req_id,
        session,
        next_seq: 0,
        resume: None,
    };
    let running = durable.execute(host, dag, &token, on_event);
    let resp = match coordination.as_mut() {
        Some(c) => c.guard(running).await,
        None => Some(running.await),
    };
    done.cancel();
    let mut resp = conclude(&*journal, &run, resp, coordination)
        .await
        .unwrap_or_else(|| {
            failed_answer(
                req_id,
                &dag_id,
                ErrorCode::UNAVAILABLE,
                "the run was taken over by another host and its answer could not be read",
            )
        });
    resp.run_id = run.to_string();
    resp
}

/// Runs the fork of a DAG run (journaled by [`crate::fork::prepare`]): its
/// tasks with a journaled result take it, the others run.
pub(crate) async fn run_fork(
    host: &Arc<Host>,
    run: RunId,
    dag: Dag,
    req_id: &str,
    state: RunState,
    mut coordination: Option<Coordination>,
    options: CallOptions<'_>,
) -> ChainResponse {
    let dag_id = dag.dag_id.clone();
    let Some(journal) = host.journal().cloned() else {
        return failed_answer(
            req_id,
            &dag_id,
            ErrorCode::UNAVAILABLE,
            "the run journal is gone",
        );
    };
    let resume = match resume_of(host, &*journal, &state, &dag).await {
        Ok(resume) => resume,
        Err(e) => {
            let resp = failed_answer(
                req_id,
                &dag_id,
                ErrorCode::RUNTIME_ERROR,
                &format!("run journal: {e}"),
            );
            return conclude(&*journal, &run, Some(resp), coordination)
                .await
                .unwrap_or_default();
        }
    };
    let (session, _, cancel) = options.into_parts();
    let token = cancel.map_or_else(CancellationToken::new, CancellationToken::child_token);
    let done = CancellationToken::new();
    watch_cancel(journal.clone(), run.clone(), token.clone(), done.clone());
    let durable = Durable {
        journal: &journal,
        run: &run,
        req_id,
        session,
        next_seq: 0,
        resume: Some(resume),
    };
    let running = durable.execute(host, dag, &token, |_| {});
    let resp = match coordination.as_mut() {
        Some(c) => c.guard(running).await,
        None => Some(running.await),
    };
    done.cancel();
    let mut resp = conclude(&*journal, &run, resp, coordination)
        .await
        .unwrap_or_else(|| {
            failed_answer(
                req_id,
                &dag_id,
                ErrorCode::UNAVAILABLE,
                "the forked run was taken over by another host and its answer could not be read",
            )
        });
    resp.run_id = run.to_string();
    resp
}

/// One durable execution of a DAG run: fresh or resumed.
struct Durable<'a> {
    journal: &'a Arc<dyn Journal>,
    run: &'a RunId,
    req_id: &'a str,
    session: &'a str,
    next_seq: u64,
    resume: Option<DagResume>,
}

impl Durable<'_> {
    async fn execute(
        self,
        host: &Arc<Host>,
        dag: Dag,
        token: &CancellationToken,
        on_event: impl Fn(&ChainEvent) + Send + Sync + 'static,
    ) -> ChainResponse {
        let dag_id = dag.dag_id.clone();
        let journal = self.journal.clone();
        let run = self.run.clone();
        let req_id = self.req_id.to_owned();
        let seq = AtomicU64::new(self.next_seq);
        let sink = move |e: &acmp_dag::Event| {
            let Some(mut event) = acmp::event_of(e, &req_id, seq.load(Ordering::Relaxed)) else {
                return;
            };
            seq.fetch_add(1, Ordering::Relaxed);
            // The run's first event names it (as a chain's does).
            if event.seq == 0 {
                event.run_id = run.to_string();
            }
            match serde_json::to_value(&event) {
                // Queued in `seq` order, not awaited: a result an event
                // reports was journaled before it.
                Ok(v) => drop(journal.append_event(&run, event.seq, &v)),
                Err(e) => tracing::warn!(run = %run, "event not journaled: {e}"),
            }
            on_event(&event);
        };
        let mode = DagRunMode {
            session: self.session,
            run_id: Some(self.run.as_str()),
            options: DagRunOptions {
                resume: self.resume,
                observer: Some(Arc::new(DagObserver {
                    journal: self.journal.clone(),
                    run: self.run.clone(),
                })),
            },
        };
        let result = acmp::run_dag_with(host, dag, sink, token, mode).await;
        let mut resp = acmp::answer_of(self.req_id, &dag_id, &result);
        resp.run_id = self.run.to_string();
        resp
    }
}

/// Whether an interrupted task of `dag` may run again: its capability is a
/// tool of the host whose definition says `idempotent`.
fn may_repeat(host: &Host, dag: &Dag, task_id: &str) -> bool {
    dag.tasks
        .iter()
        .find(|t| t.task_id == task_id)
        .and_then(|t| host.registry().tool(&t.capability))
        .is_some_and(|entry| entry.def.idempotent)
}

/// What a resumed DAG run starts from (as [`super::journaled::resume_of`]
/// for chains): each task's latest attempt with its answer; an interrupted
/// task again with the same attempt when `may_repeat`, else failed with
/// `interrupted` (journaled); the transitions already journaled.
async fn resume_of(
    host: &Host,
    journal: &dyn Journal,
    state: &RunState,
    dag: &Dag,
) -> Result<DagResume, JournalError> {
    let mut resume = DagResume::new();
    let mut latest: BTreeMap<&str, &NodeRecord> = BTreeMap::new();
    // A task's approval records are not tasks.
    for rec in state
        .nodes
        .iter()
        .filter(|r| !a2e_journal::approval::is_approval_record(&r.node_id))
    {
        let e = latest.entry(rec.node_id.as_str()).or_insert(rec);
        if rec.attempt > e.attempt {
            *e = rec;
        }
    }
    for (id, rec) in latest {
        match &rec.outcome {
            Some(outcome) => {
                resume.finished(id, rec.attempt, answer_from(id, outcome));
            }
            None if may_repeat(host, dag, id)
                || a2e_journal::approval::held(state, id, rec.attempt) =>
            {
                resume.interrupted(id, rec.attempt);
            }
            None => {
                let message = format!(
                    "`{id}` may have run when its host stopped, and it is not idempotent: \
                     it is not run again"
                );
                let key = NodeKey::new(state.summary.run_id.clone(), id, rec.attempt)?;
                let outcome = NodeOutcome::error(a2e_journal::INTERRUPTED, message.clone());
                journal.node_finished(&key, &outcome).await?;
                resume.finished(id, rec.attempt, answer_from(id, &outcome));
            }
        }
    }
    let events = journal.events(&state.summary.run_id, 0, usize::MAX).await?;
    for e in &events {
        let text = |key: &str| e.event.get(key).and_then(Value::as_str);
        if let (Some(task), Some(state)) = (text("node_id"), text("phase").and_then(acmp::state_of))
        {
            resume.reported(format!("task:{task}:{state}"));
        }
    }
    Ok(resume)
}

/// Resumes one journaled DAG run (see the module docs).
pub(super) async fn resume_run(
    host: &Arc<Host>,
    journal: Arc<dyn Journal>,
    state: RunState,
    token: CancellationToken,
    mut coordination: Option<Coordination>,
) {
    let run = state.summary.run_id.clone();
    let req_id = state
        .request
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let dag: Dag = match state.request.get("dag").map(acmp_dag::decode::from_value) {
        Some(Ok(dag)) => dag,
        other => {
            let why = match other {
                Some(Err(e)) => e.to_string(),
                _ => "no `dag`".to_owned(),
            };
            let message = format!("the journaled DAG does not load: {why}");
            tracing::error!(run = %run, "run journal: {message}");
            let resp = failed_answer(&req_id, "", ErrorCode::RUNTIME_ERROR, &message);
            finish(&*journal, &run, &resp).await;
            return;
        }
    };
    if state.summary.cancel_requested {
        let resp = failed_answer(&req_id, &dag.dag_id, ErrorCode::CANCELLED, "run cancelled");
        finish(&*journal, &run, &resp).await;
        return;
    }
    let resume = match resume_of(host, &*journal, &state, &dag).await {
        Ok(resume) => resume,
        Err(e) => {
            tracing::error!(run = %run, "run journal: not resumed: {e}");
            return;
        }
    };
    tracing::info!(run = %run, dag = %dag.dag_id, "resuming an unfinished DAG run");
    let session = resumed_session(&run);
    host.register_session(&session, &state.summary.agent);
    let done = CancellationToken::new();
    watch_cancel(journal.clone(), run.clone(), token.clone(), done.clone());
    let durable = Durable {
        journal: &journal,
        run: &run,
        req_id: &req_id,
        session: &session,
        next_seq: state.summary.next_seq,
        resume: Some(resume),
    };
    let running = durable.execute(host, dag, &token, |_| {});
    let resp = match coordination.as_mut() {
        Some(c) => c.guard(running).await,
        None => Some(running.await),
    };
    done.cancel();
    host.end_session(&session);
    let success = resp.as_ref().map(|r| r.success);
    if let Some(resp) = resp {
        conclude(&*journal, &run, Some(resp), coordination).await;
    }
    tracing::info!(run = %run, success = ?success, "resumed DAG run finished (or was taken over)");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_round_trip() {
        let ok = InvokeResult::new("t", acmp_dag::Payload::json(json!({"n": 1})));
        let back = answer_from("t", &outcome_of(&Ok(ok.clone()))).unwrap();
        assert_eq!(back, ok);
        let failed = AcmpError::internal("t", "boom").with_data("code", "tool_error");
        let outcome = outcome_of(&Err(failed));
        assert_eq!(outcome, NodeOutcome::error("tool_error", "boom"));
        let back = answer_from("t", &outcome).unwrap_err();
        assert_eq!(back.message, "boom");
        let timeout = outcome_of(&Err(AcmpError::timeout("t", "late")));
        assert_eq!(
            answer_from("t", &timeout).unwrap_err().code,
            acmp_dag::ErrorCode::TIMEOUT
        );
    }
}
