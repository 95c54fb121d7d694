//! Durable skill runs: an Ontheia skill's document and an LLM skill's
//! agentic loop, called with `skill/call`, are journaled as runs of kind
//! `ontheia` and `llm_skill` when the host has a run journal, and resumed
//! when the host starts again — in a cluster, by another host once this
//! one's lease on the run expired (the skill then runs on that host; a
//! host that lost the lease stops its execution and answers its caller
//! with what the other host journals).
//!
//! - The run's request is `{"id", "skill", "arguments", "timeout",
//!   "llm_override", "digest"}`: the `skill/call` that started it (`digest`
//!   names the skill's document or definition as it was).
//! - Its nodes are what leaves the skill's engine: an Ontheia document's
//!   journaled steps (keyed by the step's place in the run,
//!   [`ontheia::StepCall::key`]), an LLM skill's model turns (`turn-N`) and
//!   tool calls (`turn-N/<call id>`). Each node's start is journaled before it
//!   runs, its result before the skill's engine uses it.
//! - Its events are `chain/event`s with their own `seq` (a node's `start`,
//!   `done`, `error`, `skip`), its answer a `chain/resp` whose `chain_id` is
//!   the skill's name and whose `final_output` is the skill's result
//!   (`{data, summary}`): `chain/attach` (by `run_id`, or by the `skill/call`
//!   id as `chain_req_id`), `a2e runs` and `/ui` serve them as they serve
//!   chains.
//! - On resume, the host calls the skill again in a session of the run's
//!   agent (`resume_run`); the skill finds the run ([`begin_call`])
//!   and answers finished nodes from the journal (see the skills' docs).

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use a2e_journal::{
    Journal, JournalError, NewRun, NodeKey, NodeOutcome, NodeRecord, RunId, RunKind, RunState,
};
use a2e_proto::{ChainEvent, ChainPhase, ChainResponse, ErrorCode, SkillCallRequest};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::cluster::Coordination;
use super::{failed_answer, finish, resumed_session, watch_cancel};
use crate::error::{HostError, HostResult};
use crate::host::{CallOptions, Host};
use crate::plugin::{CallContext, SkillCall, SkillOutput};

/// The run a resuming `skill/call` takes over: it travels in the call's
/// context, and the skill takes it out when it begins (what is left in it
/// afterwards was not taken over).
#[derive(Clone, Default)]
struct Resuming(Arc<Mutex<Option<Arc<SkillRun>>>>);

impl Resuming {
    fn take(&self) -> Option<Arc<SkillRun>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

/// One durable skill run (see the module docs).
pub struct SkillRun {
    journal: Arc<dyn Journal>,
    run: RunId,
    req_id: String,
    skill: String,
    seq: AtomicU64,
    reported: Mutex<HashSet<String>>,
    /// What an earlier execution journaled, by node: its latest attempt.
    records: BTreeMap<String, NodeRecord>,
    /// The run's request.
    request: Value,
    done: CancellationToken,
    /// Whether this execution resumes an earlier one.
    resumed: bool,
    /// The run's lease, in a cluster.
    coordination: tokio::sync::Mutex<Option<Coordination>>,
    /// Set once the lease was lost: another host runs the run now.
    lost: Arc<AtomicBool>,
}

impl std::fmt::Debug for SkillRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillRun")
            .field("run", &self.run)
            .field("skill", &self.skill)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl SkillRun {
    /// The run of skill call `ctx` with `request`: the one being resumed
    /// under the call's id, else a new run of `kind` when the host journals
    /// runs, else `None` (the skill runs as before).
    async fn begin(
        host: &Host,
        kind: RunKind,
        ctx: &CallContext,
        skill: &str,
        request: Value,
    ) -> Option<Arc<Self>> {
        if let Some(run) = ctx.extensions.get::<Resuming>().and_then(Resuming::take) {
            return Some(run);
        }
        let journal = host.journal().cloned()?;
        let run = RunId::generate();
        // In a cluster the lease is taken before the run exists.
        let coordination = match host.cluster() {
            Some(cluster) => match Coordination::acquire(&cluster, &run).await {
                Ok(c) => Some(c),
                Err(e) => {
                    tracing::warn!(run = %run, "skill run not journaled: {e}");
                    return None;
                }
            },
            None => None,
        };
        let created = journal
            .create_run(NewRun {
                run_id: run.clone(),
                kind,
                agent: ctx.agent_id.to_string(),
                request: request.clone(),
            })
            .await;
        if let Err(e) = created {
            tracing::warn!(run = %run, "skill run not journaled: {e}");
            return None;
        }
        tracing::debug!(run = %run, skill, "durable skill run started");
        // A call that runs as an MCP task: this run backs the task.
        if let Some(link) = ctx.extensions.get::<crate::task_run::TaskLink>() {
            link.backed_by(skill, &run).await;
        }
        Some(Arc::new(Self {
            journal,
            run,
            req_id: ctx.req_id.to_string(),
            skill: skill.to_owned(),
            seq: AtomicU64::new(0),
            reported: Mutex::default(),
            records: BTreeMap::new(),
            request,
            done: CancellationToken::new(),
            resumed: false,
            coordination: tokio::sync::Mutex::new(coordination),
            lost: Arc::default(),
        }))
    }

    /// The run id.
    pub fn run_id(&self) -> &RunId {
        &self.run
    }

    /// The run's journaled request.
    pub fn request(&self) -> &Value {
        &self.request
    }

    /// Whether this execution resumes an earlier one.
    pub fn is_resumed(&self) -> bool {
        self.resumed
    }

    /// A token cancelled with `parent`, when a cancel of the run is
    /// journaled (`a2e runs cancel`), or when the run's lease is lost (in a
    /// cluster), until the run finishes.
    pub async fn cancel_token(&self, parent: &CancellationToken) -> CancellationToken {
        let token = parent.child_token();
        watch_cancel(
            self.journal.clone(),
            self.run.clone(),
            token.clone(),
            self.done.clone(),
        );
        if let Some(c) = self.coordination.lock().await.as_ref() {
            let (lost, flag, stop, done) = (
                c.lost_signal(),
                self.lost.clone(),
                token.clone(),
                self.done.clone(),
            );
            let run = self.run.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = done.cancelled() => {}
                    () = lost => {
                        if !done.is_cancelled() {
                            tracing::warn!(run = %run, "cluster: the run's lease was lost; another host runs it");
                            flag.store(true, Ordering::SeqCst);
                            stop.cancel();
                        }
                    }
                }
            });
        }
        token
    }

    /// The journal key of `node_id`'s `attempt`.
    fn key(&self, node_id: &str, attempt: u32) -> Result<NodeKey, JournalError> {
        NodeKey::new(self.run.clone(), node_id, attempt)
    }

    /// What an earlier execution journaled for `node_id` (its latest
    /// attempt), if anything.
    pub fn record(&self, node_id: &str) -> Option<&NodeRecord> {
        self.records.get(node_id)
    }

    /// The identities (`node_id:phase`) of the events journaled so far.
    pub fn reported(&self) -> Vec<String> {
        lock(&self.reported).iter().cloned().collect()
    }

    /// The journaled records of the earlier execution.
    pub fn records(&self) -> impl Iterator<Item = &NodeRecord> {
        self.records.values()
    }

    /// Journals that `node_id` starts (awaited: before it runs).
    pub async fn started(&self, node_id: &str, attempt: u32) -> Result<(), JournalError> {
        self.journal
            .node_started(&self.key(node_id, attempt)?)
            .await
    }

    /// Journals `node_id`'s outcome (awaited: before anything uses it).
    pub async fn finished(
        &self,
        node_id: &str,
        attempt: u32,
        outcome: &NodeOutcome,
    ) -> Result<(), JournalError> {
        self.journal
            .node_finished(&self.key(node_id, attempt)?, outcome)
            .await
            .map(drop)
    }

    /// Journals a `chain/event` of `node_id` (queued in `seq` order), unless
    /// an earlier execution journaled the same one.
    pub fn event(&self, node_id: &str, phase: ChainPhase, output: Value, error: &str) {
        let identity = format!("{node_id}:{}", phase.as_str());
        if !lock(&self.reported).insert(identity) {
            return;
        }
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let event = ChainEvent {
            req_id: self.req_id.clone(),
            node_id: node_id.to_owned(),
            phase,
            output,
            error: error.to_owned(),
            seq,
            ..ChainEvent::default()
        };
        match serde_json::to_value(&event) {
            Ok(v) => drop(self.journal.append_event(&self.run, seq, &v)),
            Err(e) => tracing::warn!(run = %self.run, "event not journaled: {e}"),
        }
    }

    /// Journals the run's end with the skill's result, and gives its lease
    /// up. A run whose lease was lost ends on another host: the result is
    /// then what that host journals (`None` when it cannot be read).
    pub async fn finish(&self, result: HostResult<SkillOutput>) -> HostResult<SkillOutput> {
        self.done.cancel();
        let coordination = self.coordination.lock().await.take();
        if self.lost.load(Ordering::SeqCst)
            || coordination.as_ref().is_some_and(Coordination::is_lost)
        {
            let answer = match coordination {
                Some(c) => c.answer_elsewhere(&*self.journal).await,
                None => None,
            };
            return match answer {
                Some(resp) if resp.success => Ok(SkillOutput {
                    data: resp
                        .final_output
                        .get("data")
                        .cloned()
                        .unwrap_or(Value::Null),
                    summary: resp
                        .final_output
                        .get("summary")
                        .cloned()
                        .unwrap_or(Value::Null),
                    truncated: false,
                }),
                Some(resp) => Err(HostError::Skill(
                    resp.error
                        .as_ref()
                        .and_then(|e| e.get("message"))
                        .and_then(Value::as_str)
                        .unwrap_or("the run failed on another host")
                        .to_owned(),
                )),
                None => Err(HostError::Skill(
                    "the run was taken over by another host and its answer could not be read"
                        .to_owned(),
                )),
            };
        }
        self.journal_end(&result).await;
        if let Some(c) = coordination {
            c.release().await;
        }
        result
    }

    /// Journals the run's end with `result`.
    async fn journal_end(&self, result: &HostResult<SkillOutput>) {
        let resp = match result {
            Ok(out) => ChainResponse {
                req_id: self.req_id.clone(),
                chain_id: self.skill.clone(),
                success: true,
                final_output: json!({"data": out.data, "summary": out.summary}),
                ..ChainResponse::default()
            },
            Err(e) => failed_answer(&self.req_id, &self.skill, e.code(), &e.to_string()),
        };
        finish(&*self.journal, &self.run, &resp).await;
    }
}

/// The durable run of skill call `call` of `skill` with `arguments`, which
/// runs `definition` (its document or definition): a new run of `kind`, or
/// the one the host resumes under the call's id; `None` when the host
/// journals no runs. `Err` when a resumed run's skill has changed since it
/// started (its digest differs): the run ends with that error. With
/// `keep`, the definition is journaled with the request (the live view
/// draws an Ontheia run from its document).
pub async fn begin_call(
    host: &Host,
    kind: RunKind,
    call: &SkillCall<HostError>,
    skill: &str,
    arguments: &Map<String, Value>,
    definition: &impl serde::Serialize,
    keep: bool,
) -> HostResult<Option<Arc<SkillRun>>> {
    let definition = serde_json::to_value(definition).unwrap_or_default();
    let digest = digest_of(&definition);
    let ctx = &call.ctx;
    let mut request = json!({
        "id": ctx.req_id.as_ref(),
        "skill": skill,
        "arguments": arguments,
        "timeout": ctx.remaining().map_or(a2e_proto::skills::DEFAULT_SKILL_TIMEOUT_SECS, |d| d.as_secs().max(1)),
        "llm_override": call.llm_override,
        "digest": digest,
    });
    if keep && let Some(map) = request.as_object_mut() {
        map.insert("document".into(), definition);
    }
    let Some(run) = SkillRun::begin(host, kind, ctx, skill, request).await else {
        return Ok(None);
    };
    if run.request().get("digest").and_then(Value::as_str) != Some(digest.as_str()) {
        let changed = HostError::Skill(format!(
            "skill `{skill}` changed since its run started: the run is not resumed"
        ));
        return run.finish(Err(changed)).await.map(|_| None);
    }
    Ok(Some(run))
}

/// The hex SHA-256 of `value`'s compact JSON: the same in every process.
pub fn digest_of(value: &Value) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(value.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Resumes one journaled skill run: calls its skill again, in a session of
/// the run's agent, under a call id the skill finds the run by.
pub(super) async fn resume_run(
    host: &Arc<Host>,
    journal: Arc<dyn Journal>,
    state: RunState,
    token: CancellationToken,
    coordination: Option<Coordination>,
) {
    let run = state.summary.run_id.clone();
    let text = |key: &str| {
        state
            .request
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (req_id, skill) = (text("id"), text("skill"));
    if state.summary.cancel_requested {
        let resp = failed_answer(&req_id, &skill, ErrorCode::CANCELLED, "run cancelled");
        finish(&*journal, &run, &resp).await;
        return;
    }
    let events = match journal.events(&run, 0, usize::MAX).await {
        Ok(events) => events,
        Err(e) => {
            tracing::error!(run = %run, "run journal: not resumed: {e}");
            return;
        }
    };
    let mut reported = HashSet::new();
    for e in &events {
        let field = |key: &str| e.event.get(key).and_then(Value::as_str).unwrap_or("");
        reported.insert(format!("{}:{}", field("node_id"), field("phase")));
    }
    let mut records: BTreeMap<String, NodeRecord> = BTreeMap::new();
    for rec in state.nodes {
        match records.get(&rec.node_id) {
            Some(seen) if seen.attempt > rec.attempt => {}
            _ => {
                records.insert(rec.node_id.clone(), rec);
            }
        }
    }
    let call_id = format!("resume-{run}");
    let skill_run = Arc::new(SkillRun {
        journal: journal.clone(),
        run: run.clone(),
        req_id: req_id.clone(),
        skill: skill.clone(),
        seq: AtomicU64::new(state.summary.next_seq),
        reported: Mutex::new(reported),
        records,
        request: state.request.clone(),
        done: CancellationToken::new(),
        resumed: true,
        coordination: tokio::sync::Mutex::new(coordination),
        lost: Arc::default(),
    });
    let resuming = Resuming(Arc::new(Mutex::new(Some(skill_run))));
    tracing::info!(run = %run, skill = %skill, "resuming an unfinished skill run");
    let mut req = SkillCallRequest::new(
        &skill,
        state
            .request
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new())),
    );
    req.id = call_id.clone();
    req.timeout = state
        .request
        .get("timeout")
        .and_then(Value::as_u64)
        .unwrap_or(a2e_proto::skills::DEFAULT_SKILL_TIMEOUT_SECS);
    req.llm_override = state
        .request
        .get("llm_override")
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    let session = resumed_session(&run);
    host.register_session(&session, &state.summary.agent);
    let result = host
        .call_skill(
            req,
            CallOptions::new()
                .session(&session)
                .cancel(&token)
                .extension(resuming.clone()),
        )
        .await;
    host.end_session(&session);
    // A call refused before the skill ran (the skill is gone, …) leaves the
    // run here: it ends with the refusal.
    let unclaimed = resuming.take();
    if let Some(unclaimed) = unclaimed {
        let error = match result {
            Err(e) => e,
            Ok(_) => HostError::Skill(format!("skill `{skill}` did not take its run over")),
        };
        drop(unclaimed.finish(Err(error)).await);
    }
    tracing::info!(run = %run, "resumed skill run finished");
}

/// Runs the fork of an Ontheia skill run (journaled by
/// [`crate::fork::prepare`], the steps before the one forked from copied):
/// calls its skill again in a session of the run's agent, the copied steps
/// answered from the journal as a resumed run's are; the run's answer.
pub(crate) async fn run_fork(
    host: &Arc<Host>,
    journal: Arc<dyn Journal>,
    state: RunState,
    coordination: Option<Coordination>,
    options: CallOptions<'_>,
) -> ChainResponse {
    let run = state.summary.run_id.clone();
    let text = |key: &str| {
        state
            .request
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (req_id, skill) = (text("id"), text("skill"));
    let mut records: BTreeMap<String, NodeRecord> = BTreeMap::new();
    for rec in state.nodes.iter().cloned() {
        match records.get(&rec.node_id) {
            Some(seen) if seen.attempt > rec.attempt => {}
            _ => {
                records.insert(rec.node_id.clone(), rec);
            }
        }
    }
    let skill_run = Arc::new(SkillRun {
        journal: journal.clone(),
        run: run.clone(),
        req_id: req_id.clone(),
        skill: skill.clone(),
        seq: AtomicU64::new(0),
        reported: Mutex::new(HashSet::new()),
        records,
        request: state.request.clone(),
        done: CancellationToken::new(),
        resumed: true,
        coordination: tokio::sync::Mutex::new(coordination),
        lost: Arc::default(),
    });
    let resuming = Resuming(Arc::new(Mutex::new(Some(skill_run))));
    let mut req = SkillCallRequest::new(
        &skill,
        state
            .request
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new())),
    );
    req.id = format!("fork-{run}");
    req.timeout = state
        .request
        .get("timeout")
        .and_then(Value::as_u64)
        .unwrap_or(a2e_proto::skills::DEFAULT_SKILL_TIMEOUT_SECS);
    req.llm_override = state
        .request
        .get("llm_override")
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    let session = resumed_session(&run);
    host.register_session(&session, &state.summary.agent);
    let (_, _, cancel) = options.into_parts();
    let token = cancel.map_or_else(CancellationToken::new, CancellationToken::child_token);
    let result = host
        .call_skill(
            req,
            CallOptions::new()
                .session(&session)
                .cancel(&token)
                .extension(resuming.clone()),
        )
        .await;
    host.end_session(&session);
    if let Some(unclaimed) = resuming.take() {
        let error = match result {
            Err(e) => e,
            Ok(_) => HostError::Skill(format!("skill `{skill}` did not take its run over")),
        };
        drop(unclaimed.finish(Err(error)).await);
    }
    let answer = journal
        .show_run(&run)
        .await
        .ok()
        .flatten()
        .and_then(|s| s.answer)
        .and_then(|a| serde_json::from_value::<ChainResponse>(a).ok());
    let mut resp = answer.unwrap_or_else(|| {
        failed_answer(
            &req_id,
            &skill,
            ErrorCode::UNAVAILABLE,
            "the forked run left no answer (taken over by another host?)",
        )
    });
    resp.run_id = run.to_string();
    resp
}

/// Kinds of skill runs this host resumes.
pub(super) fn resumes(kind: RunKind) -> bool {
    matches!(kind, RunKind::Ontheia | RunKind::LlmSkill)
}
