//! The approval layer of the call pipeline: a call a rule matches (or whose
//! chain node asks for it) waits, journaled, for a decision before it runs.

use std::sync::Arc;
use std::time::Duration;

use a2e_host_core::config::{ApprovalRule, Decider, HostConfig, OnTimeout};
use a2e_host_core::plugin::{CallContext, Extensions};
use a2e_host_core::{
    ApprovalRequired, CallHead, CallLayer, CallTarget, HostError, HostResult, WaitWatch,
};
use a2e_journal::approval::{Decision, Waiting, approval_node, approvals, decision_node};
use a2e_journal::{Journal, NewRun, NodeKey, NodeStart, RunId, RunKind, RunStatus, now_ms};
use a2e_proto::{ChainPhase, EventKind};
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use crate::policy::Policy;

/// The phase of a chain node's event that says its call waits for a
/// decision (the node's `output` in it is what waits).
pub const WAITING: &str = "waiting";

/// How often a waiting call looks in the journal for a decision.
const POLL: Duration = Duration::from_millis(200);

/// The node of a call outside any run, in its own approval run.
const CALL_NODE: &str = "call";

/// Holds back the calls that need a person's decision (see the crate docs).
#[derive(Debug, Clone)]
pub struct ApprovalLayer {
    policy: Policy,
}

impl ApprovalLayer {
    /// The layer of `rules`.
    pub fn new(rules: &[ApprovalRule]) -> Result<Self, globset::Error> {
        Ok(Self {
            policy: Policy::new(rules)?,
        })
    }

    /// The layer of a configuration's `[[approvals]]`.
    pub fn from_config(config: &HostConfig) -> Result<Self, globset::Error> {
        Self::new(&config.approvals)
    }
}

impl CallLayer for ApprovalLayer {
    fn applies(&self, target: CallTarget, name: &str, extensions: &Extensions) -> bool {
        extensions.get::<ApprovalRequired>().is_some() || self.policy.may_match(target, name)
    }

    fn before<'a>(&'a self, call: CallHead<'a>) -> BoxFuture<'a, HostResult<()>> {
        Box::pin(self.hold(call))
    }
}

/// Where a waiting call's records go: its node's in the run it belongs to,
/// or `call` of an approval run of its own.
struct Place {
    journal: Arc<dyn Journal>,
    run: RunId,
    node: String,
    attempt: u32,
    /// The approval run is the call's own: it ends with the decision.
    own_run: bool,
}

impl Place {
    fn key(&self, node: String) -> HostResult<NodeKey> {
        NodeKey::new(self.run.clone(), &node, self.attempt).map_err(journal_error)
    }
}

fn journal_error(e: a2e_journal::JournalError) -> HostError {
    HostError::Runtime(format!("approval: run journal: {e}"))
}

/// Ends an approval run of its own that its call left undecided (the call
/// was cancelled or its caller went away): the write is queued as it drops.
struct EndOnDrop(Option<(Arc<dyn Journal>, RunId)>);

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        if let Some((journal, run)) = self.0.take() {
            let answer = json!({"error": {"code": "cancelled",
                "message": "the call was cancelled while it waited for approval"}});
            drop(journal.finish_run(&run, RunStatus::Cancelled, &answer));
        }
    }
}

impl ApprovalLayer {
    async fn hold(&self, mut call: CallHead<'_>) -> HostResult<()> {
        let ctx = call.ctx;
        let marked = ctx.extensions.get::<ApprovalRequired>().is_some();
        let matched = self
            .policy
            .matching(call.target, call.name, call.args, &ctx.agent_id);
        let (reason, rule) = match (matched, marked) {
            (Some(m), _) => (format!("[[approvals]] #{}", m.number), m.rule.clone()),
            (None, true) => (
                "the node asks for approval".to_owned(),
                ApprovalRule::default(),
            ),
            (None, false) => return Ok(()),
        };
        let target = match call.target {
            CallTarget::Skill => "skill",
            _ => "tool",
        };
        let shown_args = a2e_host_core::redact::redact_map(call.args);
        let client = client_of(ctx, &rule);
        let Some(journal) = call.host.journal().cloned() else {
            return match client {
                Some(client) => {
                    let waiting = waiting(target, call.name, &shown_args, ctx, &reason, &rule);
                    let decision = client.decide(&waiting).await;
                    apply(&mut call, &rule, decision)
                }
                None => Err(HostError::ApprovalDenied {
                    by: "host".into(),
                    reason: format!(
                        "`{}` needs approval ({reason}), and nobody can give it: this host \
                         keeps no run journal (`[journal]`) and the caller cannot be asked",
                        call.name
                    ),
                }),
            };
        };
        let (place, mut guard) = place(&journal, ctx, target, call.name, &shown_args).await?;
        let state = journal.show_run(&place.run).await.map_err(journal_error)?;
        let before = state.as_ref().and_then(|s| {
            approvals(s)
                .into_iter()
                .find(|a| a.node_id == place.node && a.attempt == place.attempt)
                .map(|a| (a.waiting, a.decided, a.applied))
        });
        let waiting = match before {
            // Let through before (a resumed call that runs again): the same
            // decision holds.
            Some((_, _, Some(applied))) => {
                guard.0 = None;
                return apply(&mut call, &rule, applied);
            }
            Some((Some(waiting), _, None)) => waiting,
            _ => {
                let waiting = waiting(target, call.name, &shown_args, ctx, &reason, &rule);
                let start =
                    NodeStart::with_input(serde_json::to_value(&waiting).unwrap_or_default());
                journal
                    .node_started_with(&place.key(approval_node(&place.node))?, &start)
                    .await
                    .map_err(journal_error)?;
                waiting
            }
        };
        tracing::info!(run = %place.run, node = %place.node, name = call.name, reason = %reason,
            "a call waits for approval");
        let told = notice(&place, &waiting);
        // A chain's node says it in its chain's events (phase `waiting`);
        // a call of its own in its own events.
        if let Some(notices) = ctx.extensions.get::<a2e_chain::Notices>() {
            notices.notify(ChainPhase::new(WAITING), Value::Object(told.clone()));
        }
        ctx.emit(EventKind::STATUS, told.clone()).await;
        // A client that decides by its next message (an A2A client) is
        // told that the call waits, and later that the wait ended.
        let watch = ctx
            .extensions
            .get::<WaitWatch>()
            .filter(|_| rule.deciders.contains(&Decider::Client));
        if let Some(watch) = watch {
            watch.0.waiting(&told).await;
        }
        let decision = wait(&place, &waiting, client.as_ref()).await?;
        if let Some(watch) = watch {
            watch.0.ended(&told, decision.approved, &decision.by).await;
        }
        journal
            .node_finished(&place.key(approval_node(&place.node))?, &decision.outcome())
            .await
            .map_err(journal_error)?;
        audit(&call, &waiting, &decision);
        if place.own_run {
            let status = if decision.approved {
                RunStatus::Succeeded
            } else {
                RunStatus::Failed
            };
            let answer = json!({"decision": decision});
            journal
                .finish_run(&place.run, status, &answer)
                .await
                .map_err(journal_error)?;
        }
        guard.0 = None;
        apply(&mut call, &rule, decision)
    }
}

/// The call's record: its node's in the durable run it runs for (its
/// idempotency key), else an approval run of its own, created here (with
/// the guard that ends it if the call goes away undecided).
async fn place(
    journal: &Arc<dyn Journal>,
    ctx: &CallContext,
    target: &str,
    name: &str,
    shown_args: &Map<String, Value>,
) -> HostResult<(Place, EndOnDrop)> {
    if let Ok(key) = NodeKey::parse(&ctx.idempotency_key) {
        let place = Place {
            journal: journal.clone(),
            run: key.run_id().clone(),
            node: key.node_id().to_owned(),
            attempt: key.attempt(),
            own_run: false,
        };
        return Ok((place, EndOnDrop(None)));
    }
    let run = RunId::generate();
    let request = json!({
        "type": format!("{target}/call"),
        "id": &*ctx.req_id,
        "name": name,
        "arguments": shown_args,
    });
    journal
        .create_run(NewRun {
            run_id: run.clone(),
            kind: RunKind::Approval,
            agent: ctx.agent_id.to_string(),
            request,
        })
        .await
        .map_err(journal_error)?;
    let place = Place {
        journal: journal.clone(),
        run: run.clone(),
        node: CALL_NODE.to_owned(),
        attempt: 1,
        own_run: true,
    };
    Ok((place, EndOnDrop(Some((journal.clone(), run)))))
}

/// What waits, as journaled.
fn waiting(
    target: &str,
    name: &str,
    shown_args: &Map<String, Value>,
    ctx: &CallContext,
    reason: &str,
    rule: &ApprovalRule,
) -> Waiting {
    Waiting {
        target: target.to_owned(),
        name: name.to_owned(),
        args: shown_args.clone(),
        agent: ctx.agent_id.to_string(),
        reason: reason.to_owned(),
        deciders: rule
            .deciders
            .iter()
            .map(|d| d.as_str().to_owned())
            .collect(),
        deadline_ms: now_ms().saturating_add(rule.timeout_secs.saturating_mul(1000)),
        on_timeout: match rule.on_timeout {
            OnTimeout::Approve => "approve",
            OnTimeout::Deny => "deny",
        }
        .to_owned(),
    }
}

/// The event that tells the caller its call waits.
fn notice(place: &Place, waiting: &Waiting) -> Map<String, Value> {
    let value = json!({
        "status": "waiting_for_approval",
        "run_id": place.run.as_str(),
        "node_id": place.node,
        "target": waiting.target,
        "name": waiting.name,
        "arguments": waiting.args,
        "reason": waiting.reason,
        "deciders": waiting.deciders,
        "deadline_ms": waiting.deadline_ms,
    });
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// Waits for the decision: journaled by anyone (polled), given by the
/// caller's client, or the rule's `on_timeout` at the deadline. What the
/// client or the clock decide is journaled like any decision, so that the
/// first decision wins wherever it comes from.
async fn wait(place: &Place, waiting: &Waiting, client: Option<&Client>) -> HostResult<Decision> {
    let decision_key = place.key(decision_node(&place.node))?;
    let left = waiting.deadline_ms.saturating_sub(now_ms());
    let deadline = tokio::time::Instant::now() + Duration::from_millis(left);
    let asked = async {
        match client {
            Some(client) => client.decide(waiting).await,
            None => futures::future::pending().await,
        }
    };
    tokio::pin!(asked);
    let mut asked_done = false;
    loop {
        if let Some(decision) = journaled(place).await? {
            return Ok(decision);
        }
        let offered = tokio::select! {
            () = tokio::time::sleep(POLL) => None,
            decision = &mut asked, if !asked_done => {
                asked_done = true;
                Some(decision)
            }
            () = tokio::time::sleep_until(deadline) => Some(Decision {
                approved: waiting.on_timeout == "approve",
                args: None,
                reason: format!("no decision within its time (on_timeout = {})", waiting.on_timeout),
                by: "timeout".into(),
                at_ms: now_ms(),
            }),
        };
        if let Some(decision) = offered {
            // The first decision journaled wins: when another came first,
            // the next look finds it.
            place
                .journal
                .node_finished(&decision_key, &decision.outcome())
                .await
                .map_err(journal_error)?;
        }
    }
}

/// The decision journaled on `place`'s call, if any.
async fn journaled(place: &Place) -> HostResult<Option<Decision>> {
    let state = place
        .journal
        .show_run(&place.run)
        .await
        .map_err(journal_error)?;
    Ok(state.and_then(|s| {
        approvals(&s)
            .into_iter()
            .find(|a| a.node_id == place.node && a.attempt == place.attempt)
            .and_then(|a| a.decided)
    }))
}

/// The decision applied to the call: approved (with its edited arguments),
/// or the call's error.
fn apply(call: &mut CallHead<'_>, rule: &ApprovalRule, decision: Decision) -> HostResult<()> {
    if decision.approved {
        if let Some(args) = decision.args {
            // Edited arguments meet the callee's schema, as any call's.
            let validator = match call.target {
                CallTarget::Skill => call.host.registry().skill(call.name).map(|e| e.validator),
                _ => call.host.registry().tool(call.name).map(|e| e.validator),
            };
            if let Some(validator) = validator {
                validator.check(&args)?;
            }
            *call.args = args;
        }
        return Ok(());
    }
    if decision.by == "timeout" {
        return Err(HostError::ApprovalTimeout(rule.timeout_secs));
    }
    let reason = if decision.reason.is_empty() {
        "no reason given".to_owned()
    } else {
        decision.reason
    };
    Err(HostError::ApprovalDenied {
        by: decision.by,
        reason,
    })
}

/// The decision as an audit line: who, when, what, the arguments approved.
fn audit(call: &CallHead<'_>, waiting: &Waiting, decision: &Decision) {
    let audit = call.host.audit();
    if !audit.is_on() {
        return;
    }
    let args = decision.args.as_ref().unwrap_or(&waiting.args);
    audit.record(&a2e_host_core::audit::AuditRecord {
        ts: decision.at_ms as f64 / 1000.0,
        session: call.ctx.session_id.to_string(),
        agent: call.ctx.agent_id.to_string(),
        msg_type: "approval".into(),
        name: format!("{} by {}", call.name, decision.by),
        duration_ms: 0,
        success: decision.approved,
        error_code: if decision.approved {
            String::new()
        } else {
            "denied".into()
        },
        arguments: audit.arguments(args),
        correlation_id: call.ctx.correlation_id.to_string(),
    });
}

/// The caller's client, when it may decide and can be asked.
fn client_of(ctx: &CallContext, rule: &ApprovalRule) -> Option<Client> {
    if !rule.deciders.contains(&Decider::Client) {
        return None;
    }
    Client::of(ctx)
}

#[cfg(feature = "mcp")]
use crate::client::Client;

#[cfg(not(feature = "mcp"))]
/// Without MCP, no client is asked.
struct Client;

#[cfg(not(feature = "mcp"))]
impl Client {
    fn of(_: &CallContext) -> Option<Self> {
        None
    }

    async fn decide(&self, _: &Waiting) -> Decision {
        futures::future::pending().await
    }
}
