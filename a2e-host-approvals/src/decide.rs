//! Deciding on waiting calls from anywhere the journal reaches (`a2e runs
//! approve | deny`, the live view), and listing what waits.

use a2e_host_core::config::Decider;
use a2e_journal::approval::{Decision, Waiting, approvals, decision_node};
use a2e_journal::{Journal, JournalError, NodeKey, RunFilter, RunId, RunKind, RunStatus, now_ms};
use serde_json::{Map, Value};

/// Why a decision was not journaled.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecideError {
    /// No run of that id.
    #[error("no run `{0}`")]
    UnknownRun(String),
    /// Nothing of the run waits for a decision.
    #[error("nothing of run `{0}` waits for a decision")]
    NothingWaits(String),
    /// Several calls wait: the decision must name one.
    #[error("several calls of run `{run}` wait ({}): name one with --node", .waiting.join(", "))]
    Ambiguous {
        /// The run.
        run: String,
        /// The nodes that wait.
        waiting: Vec<String>,
    },
    /// The node named does not wait.
    #[error("node `{node}` of run `{run}` does not wait for a decision (waiting: {})", .waiting.join(", "))]
    NotWaiting {
        /// The run.
        run: String,
        /// The node named.
        node: String,
        /// The nodes that wait.
        waiting: Vec<String>,
    },
    /// This kind of decider may not decide on the call.
    #[error("the call of `{node}` is decided by {} only, not by the {decider}", .allowed.join(" or "))]
    NotAllowed {
        /// The node.
        node: String,
        /// Who tried (`operator`, `client`).
        decider: &'static str,
        /// Who may.
        allowed: Vec<String>,
    },
    /// Somebody decided first.
    #[error("the call of `{node}` was decided already, by {by}")]
    AlreadyDecided {
        /// The node.
        node: String,
        /// Who decided.
        by: String,
    },
    /// The edited arguments are not a JSON object.
    #[error("the edited arguments must be a JSON object")]
    ArgsNotObject,
    /// The journal failed.
    #[error("run journal: {0}")]
    Journal(#[from] JournalError),
}

/// A decision to journal.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// Approve (`true`) or deny.
    pub approved: bool,
    /// Arguments to run with instead (an approval only).
    pub args: Option<Map<String, Value>>,
    /// Why (a denial's reason).
    pub reason: String,
    /// Who decides: `operator:NAME`, `ui`, `client`.
    pub by: String,
    /// In which role.
    pub decider: Decider,
}

/// What was decided: the run and node, and the decision as journaled.
#[derive(Debug, Clone)]
pub struct Decided {
    /// The run.
    pub run_id: RunId,
    /// The node (its wire id).
    pub node_id: String,
    /// The decision.
    pub decision: Decision,
}

/// Journals `verdict` on the call of run `run` that waits — the one of
/// `node` when given, else the only one. The first decision on a call
/// wins; a later one is [`DecideError::AlreadyDecided`].
pub async fn decide(
    journal: &dyn Journal,
    run: &RunId,
    node: Option<&str>,
    verdict: Verdict,
) -> Result<Decided, DecideError> {
    let state = journal
        .show_run(run)
        .await?
        .ok_or_else(|| DecideError::UnknownRun(run.to_string()))?;
    let all = approvals(&state);
    let waiting: Vec<_> = all.iter().filter(|a| a.open()).collect();
    let names = || waiting.iter().map(|a| a.node_id.to_owned()).collect();
    let target = match node {
        Some(node) => match waiting.iter().find(|a| a.node_id == node) {
            Some(found) => *found,
            None => {
                // Decided already, or never waited.
                if let Some(done) = all.iter().find(|a| a.node_id == node && !a.open()) {
                    let by = done
                        .decided
                        .as_ref()
                        .or(done.applied.as_ref())
                        .map(|d| d.by.clone())
                        .unwrap_or_default();
                    return Err(DecideError::AlreadyDecided {
                        node: node.to_owned(),
                        by,
                    });
                }
                return Err(DecideError::NotWaiting {
                    run: run.to_string(),
                    node: node.to_owned(),
                    waiting: names(),
                });
            }
        },
        None => match waiting.as_slice() {
            [] => return Err(DecideError::NothingWaits(run.to_string())),
            [one] => *one,
            _ => {
                return Err(DecideError::Ambiguous {
                    run: run.to_string(),
                    waiting: names(),
                });
            }
        },
    };
    if let Some(w) = &target.waiting
        && !w.deciders.iter().any(|d| d == verdict.decider.as_str())
    {
        return Err(DecideError::NotAllowed {
            node: target.node_id.to_owned(),
            decider: verdict.decider.as_str(),
            allowed: w.deciders.clone(),
        });
    }
    let decision = Decision {
        approved: verdict.approved,
        args: verdict.args.filter(|_| verdict.approved),
        reason: verdict.reason,
        by: verdict.by,
        at_ms: now_ms(),
    };
    let node_id = target.node_id.to_owned();
    let key = NodeKey::new(run.clone(), &decision_node(&node_id), target.attempt)?;
    if !journal.node_finished(&key, &decision.outcome()).await? {
        let by = journal
            .show_run(run)
            .await?
            .and_then(|s| {
                approvals(&s)
                    .into_iter()
                    .find(|a| a.node_id == node_id)
                    .and_then(|a| a.decided.map(|d| d.by))
            })
            .unwrap_or_default();
        return Err(DecideError::AlreadyDecided { node: node_id, by });
    }
    tracing::info!(run = %run, node = %node_id, approved = decision.approved, by = %decision.by,
        "approval decided");
    Ok(Decided {
        run_id: run.clone(),
        node_id,
        decision,
    })
}

/// A call that waits for a decision, as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    /// Its run.
    pub run_id: RunId,
    /// The run's kind.
    pub kind: RunKind,
    /// The node (its wire id; `call` for a call outside any run).
    pub node_id: String,
    /// The attempt.
    pub attempt: u32,
    /// What waits (its arguments redacted).
    pub waiting: Option<Waiting>,
    /// Since when (ms since the Unix epoch).
    pub since_ms: u64,
}

/// Most running runs [`pending`] looks through.
const MAX_RUNS_SCANNED: usize = 1000;

/// Every call that waits for a decision, across the runs that have not
/// finished, newest first.
pub async fn pending(journal: &dyn Journal) -> Result<Vec<Pending>, JournalError> {
    let filter = RunFilter {
        status: Some(RunStatus::Running),
        limit: MAX_RUNS_SCANNED,
        ..RunFilter::default()
    };
    let mut out = Vec::new();
    for summary in journal.list_runs(&filter).await?.items {
        let Some(state) = journal.show_run(&summary.run_id).await? else {
            continue;
        };
        out.extend(waiting_in(&state));
    }
    out.sort_by_key(|p| std::cmp::Reverse(p.since_ms));
    Ok(out)
}

/// The calls of `state` that wait for a decision, oldest first.
pub fn waiting_in(state: &a2e_journal::RunState) -> Vec<Pending> {
    approvals(state)
        .into_iter()
        .filter(|a| a.open())
        .map(|a| Pending {
            run_id: state.summary.run_id.clone(),
            kind: state.summary.kind,
            node_id: a.node_id.to_owned(),
            attempt: a.attempt,
            waiting: a.waiting,
            since_ms: a.since_ms,
        })
        .collect()
}
