//! Calls that wait for a person's decision, as a run's records
//! (docs/approvals.md): two node records beside the node they hold back,
//! so that the wait survives its host and any process that reaches the
//! journal can decide.
//!
//! - `@approval/NODE` (attempt of the node's call): started when the call
//!   starts waiting, its start's input the [`Waiting`] (what the call is,
//!   its arguments redacted, who may decide, until when); finished by the
//!   waiting host with the [`Decision`] it applied. **Invariant:** while it
//!   has no outcome, the call has not run — a resumed run may run it again
//!   whatever its tool's idempotency.
//! - `@decision/NODE` (same attempt): journaled by whoever decides, result
//!   only; the journal keeps the first result of a key, so the first
//!   decision wins and a second is told it came late.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::model::{NodeOutcome, NodeRecord, RunState};

/// The prefix of the record of a waiting call.
pub const APPROVAL_PREFIX: &str = "@approval/";
/// The prefix of the record of a decision.
pub const DECISION_PREFIX: &str = "@decision/";

/// The id of the record of node `wire_id`'s waiting call.
pub fn approval_node(wire_id: &str) -> String {
    format!("{APPROVAL_PREFIX}{wire_id}")
}

/// The id of the record of the decision on node `wire_id`'s call.
pub fn decision_node(wire_id: &str) -> String {
    format!("{DECISION_PREFIX}{wire_id}")
}

/// Whether `node_id` is an approval's or a decision's record, not a node's.
pub fn is_approval_record(node_id: &str) -> bool {
    node_id.starts_with(APPROVAL_PREFIX) || node_id.starts_with(DECISION_PREFIX)
}

/// What waits: journaled as the input of the `@approval/NODE` record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Waiting {
    /// `tool` or `skill`.
    pub target: String,
    /// The tool's or skill's name.
    pub name: String,
    /// Its arguments, credentials redacted.
    pub args: Map<String, Value>,
    /// Who asked (the agent the call's session acts for).
    #[serde(default)]
    pub agent: String,
    /// Why it waits: the rule it matched (`[[approvals]] #N`) or the node's
    /// own `"approval": "required"`.
    #[serde(default)]
    pub reason: String,
    /// Who may decide (`operator`, `client`).
    pub deciders: Vec<String>,
    /// When the wait ends undecided (ms since the Unix epoch).
    pub deadline_ms: u64,
    /// What it then comes to: `deny` or `approve`.
    pub on_timeout: String,
}

/// A decision on a waiting call: journaled as the output of the
/// `@decision/NODE` record (by whoever decided) and of the `@approval/NODE`
/// record (by the host that applied it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// Whether the call may run.
    pub approved: bool,
    /// The arguments it runs with instead of its own (an approval that
    /// edits them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Map<String, Value>>,
    /// Why (a denial's reason, shown in the call's answer).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Who decided: `operator:NAME` (`a2e runs`), `ui` (the live view),
    /// `client` (the caller's user), `timeout` (the rule's `on_timeout`).
    pub by: String,
    /// When (ms since the Unix epoch).
    pub at_ms: u64,
}

impl Decision {
    /// The decision as a record's outcome.
    pub fn outcome(&self) -> NodeOutcome {
        NodeOutcome::output(serde_json::to_value(self).unwrap_or_default())
    }

    /// The decision a record's outcome holds, if it is one.
    pub fn of(outcome: &NodeOutcome) -> Option<Self> {
        match outcome {
            NodeOutcome::Output { output } => serde_json::from_value(output.clone()).ok(),
            NodeOutcome::Error { .. } => None,
        }
    }
}

/// One call of a run as its approval records tell it.
#[derive(Debug, Clone, PartialEq)]
pub struct Approval<'a> {
    /// The node (its wire id).
    pub node_id: &'a str,
    /// The attempt of its call.
    pub attempt: u32,
    /// What waits (`None` when the record's input does not load).
    pub waiting: Option<Waiting>,
    /// When it started waiting.
    pub since_ms: u64,
    /// The decision somebody journaled, if any.
    pub decided: Option<Decision>,
    /// The decision its host applied (the call went on, or failed), if any.
    pub applied: Option<Decision>,
}

impl Approval<'_> {
    /// Whether it still waits: nobody decided, nothing was applied.
    pub fn open(&self) -> bool {
        self.decided.is_none() && self.applied.is_none()
    }
}

/// Every call of `state` that waited for approval, in the order their
/// waits started.
pub fn approvals(state: &RunState) -> Vec<Approval<'_>> {
    let decision = |wire_id: &str, attempt: u32| {
        state
            .nodes
            .iter()
            .find(|r| {
                r.attempt == attempt && r.node_id.strip_prefix(DECISION_PREFIX) == Some(wire_id)
            })
            .and_then(|r| r.outcome.as_ref())
            .and_then(Decision::of)
    };
    let mut out: Vec<Approval<'_>> = state
        .nodes
        .iter()
        .filter_map(|r: &NodeRecord| {
            let node_id = r.node_id.strip_prefix(APPROVAL_PREFIX)?;
            Some(Approval {
                node_id,
                attempt: r.attempt,
                waiting: r
                    .start
                    .as_ref()
                    .and_then(|s| s.input.clone())
                    .and_then(|v| serde_json::from_value(v).ok()),
                since_ms: r.started_ms,
                decided: decision(node_id, r.attempt),
                applied: r.outcome.as_ref().and_then(Decision::of),
            })
        })
        .collect();
    out.sort_by_key(|a| a.since_ms);
    out
}

/// Whether node `wire_id`'s call of `attempt` is held back waiting for a
/// decision that was never applied: it has not run (see the module docs).
pub fn held(state: &RunState, wire_id: &str, attempt: u32) -> bool {
    state.nodes.iter().any(|r| {
        r.attempt == attempt
            && r.outcome.is_none()
            && r.node_id.strip_prefix(APPROVAL_PREFIX) == Some(wire_id)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RunId;
    use crate::model::{NodeStart, RunKind, RunStatus, RunSummary};
    use serde_json::json;

    fn record(node_id: &str, input: Option<Value>, outcome: Option<NodeOutcome>) -> NodeRecord {
        NodeRecord {
            node_id: node_id.into(),
            attempt: 1,
            started_ms: 5,
            finished_ms: None,
            outcome,
            start: input.map(NodeStart::with_input),
        }
    }

    #[test]
    fn records_tell_waiting_decided_and_applied_calls() {
        let waiting = Waiting {
            target: "tool".into(),
            name: "run_command".into(),
            args: Map::new(),
            agent: "a".into(),
            reason: "[[approvals]] #1".into(),
            deciders: vec!["operator".into()],
            deadline_ms: 10,
            on_timeout: "deny".into(),
        };
        let yes = Decision {
            approved: true,
            args: None,
            reason: String::new(),
            by: "ui".into(),
            at_ms: 7,
        };
        let mut state = RunState {
            summary: RunSummary {
                run_id: RunId::parse("r").unwrap(),
                kind: RunKind::Chain,
                agent: "a".into(),
                status: RunStatus::Running,
                created_ms: 1,
                finished_ms: None,
                cancel_requested: false,
                next_seq: 0,
                coordinator: None,
            },
            request: json!({}),
            nodes: vec![
                record("x", None, None),
                record(
                    &approval_node("x"),
                    Some(serde_json::to_value(&waiting).unwrap()),
                    None,
                ),
            ],
            answer: None,
        };
        let found = approvals(&state);
        assert_eq!(found.len(), 1);
        assert!(found[0].open() && held(&state, "x", 1));
        assert_eq!(found[0].waiting.as_ref(), Some(&waiting));
        state
            .nodes
            .push(record(&decision_node("x"), None, Some(yes.outcome())));
        let found = approvals(&state);
        assert!(!found[0].open());
        assert_eq!(found[0].decided.as_ref(), Some(&yes));
        assert!(held(&state, "x", 1), "decided, not yet applied: not run");
        assert!(is_approval_record("@decision/x") && !is_approval_record("x"));
    }
}
