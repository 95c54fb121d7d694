//! A task's questions in its run, so that any host with the journal — in a
//! cluster, any host — shows them (`tasks/get`) and takes their answers
//! (`tasks/update`), not only the host that runs the task.
//!
//! The host running the task journals each question its call asks as node
//! `question/KEY` of the task's run (started, its input the question) and
//! each answer it took as that node's output; it takes into the task's inbox
//! the answers other hosts journaled there. Another host reads the open
//! questions from the run (the nodes started without an output) and
//! journals an answer that fits its question; the first answer of a key
//! stands.
//!
//! Invariant: a `question/KEY` node has an output only if that output is an
//! answer of the question's shape (checked by whoever journals it).

use std::collections::HashSet;
use std::time::Duration;

use a2e_journal::{Journal, NodeKey, NodeOutcome, NodeStart, RunId, RunState};
use a2e_mcp::rmcp::model::{InputRequest, InputRequests, InputResponses};
use a2e_mcp::server::{TaskInbox, answer_fits};
use serde_json::Value;

/// The prefix of a question's node in a task's run.
const NODE_PREFIX: &str = "question/";

/// How often the host running a task that waits for an answer looks for
/// answers other hosts journaled.
pub(crate) const WATCH_EVERY: Duration = Duration::from_millis(500);

fn node(run: &RunId, key: &str) -> Option<NodeKey> {
    NodeKey::new(run.clone(), &format!("{NODE_PREFIX}{key}"), 1).ok()
}

/// What the host running a task has journaled of its questions.
#[derive(Debug, Default)]
pub(crate) struct Mirror {
    asked: HashSet<String>,
    closed: HashSet<String>,
}

impl Mirror {
    /// Whether a question waits for its answer.
    pub(crate) fn waiting(&self) -> bool {
        self.asked.len() > self.closed.len()
    }

    /// Journals the questions asked and answered here since the last look.
    pub(crate) async fn sync(&mut self, journal: &dyn Journal, run: &RunId, inbox: &TaskInbox) {
        let open = inbox.questions();
        for (key, question) in &open {
            if self.asked.contains(key) {
                continue;
            }
            let start = NodeStart {
                input: serde_json::to_value(question).ok(),
                ..NodeStart::default()
            };
            let Some(node) = node(run, key) else { continue };
            // A question not journaled is tried again at the next look.
            match journal.node_started_with(&node, &start).await {
                Ok(()) => {
                    self.asked.insert(key.clone());
                }
                Err(e) => tracing::warn!(run = %run, key, "task question not journaled: {e}"),
            }
        }
        let answered = inbox.answered();
        let done: Vec<String> = self
            .asked
            .iter()
            .filter(|k| !open.contains_key(*k) && !self.closed.contains(*k))
            .cloned()
            .collect();
        for key in done {
            self.closed.insert(key.clone());
            let answer = answered.get(&key).cloned().unwrap_or(Value::Null);
            if let Some(node) = node(run, &key)
                && let Err(e) = journal
                    .node_finished(&node, &NodeOutcome::output(answer))
                    .await
            {
                tracing::warn!(run = %run, key, "task answer not journaled: {e}");
            }
        }
    }

    /// Takes into `inbox` the answers other hosts journaled.
    pub(crate) async fn take_answers(
        &mut self,
        journal: &dyn Journal,
        run: &RunId,
        inbox: &TaskInbox,
    ) {
        let Ok(Some(state)) = journal.show_run(run).await else {
            return;
        };
        let mut responses = InputResponses::new();
        for record in &state.nodes {
            let Some(key) = record.node_id.strip_prefix(NODE_PREFIX) else {
                continue;
            };
            if let Some(NodeOutcome::Output { output }) = &record.outcome
                && !self.closed.contains(key)
            {
                responses.insert(key.to_owned(), output.clone());
            }
        }
        if responses.is_empty() {
            return;
        }
        self.closed.extend(responses.keys().cloned());
        inbox.answer(responses);
    }
}

/// The open questions of task run `state`, as journaled.
pub(crate) fn open_in(state: &RunState) -> InputRequests {
    state
        .nodes
        .iter()
        .filter(|r| r.outcome.is_none())
        .filter_map(|r| {
            let key = r.node_id.strip_prefix(NODE_PREFIX)?;
            let input = r.start.as_ref()?.input.clone()?;
            let question: InputRequest = serde_json::from_value(input).ok()?;
            Some((key.to_owned(), question))
        })
        .collect()
}

/// The answers among `responses` to questions `inbox` waits on that the
/// journal takes as the first answer of their question (on the host running
/// the task; an answer another host journaled first stands, and reaches the
/// task from there). An answer the journal cannot take is taken all the
/// same: the task goes on.
pub(crate) async fn answer_here(
    journal: &dyn Journal,
    state: &RunState,
    inbox: &TaskInbox,
    responses: InputResponses,
) -> InputResponses {
    let open = inbox.questions();
    let run = &state.summary.run_id;
    let mut taken = InputResponses::new();
    for (key, answer) in responses {
        let Some(question) = open.get(&key) else {
            continue;
        };
        if !answer_fits(question, &answer) {
            continue;
        }
        let first = match node(run, &key) {
            Some(node) => journal
                .node_finished(&node, &NodeOutcome::output(answer.clone()))
                .await
                .unwrap_or(true),
            None => true,
        };
        if first {
            taken.insert(key, answer);
        }
    }
    taken
}

/// Journals `responses` to the open questions of task run `state` that
/// they answer (the host running the task takes them from there).
pub(crate) async fn answer_in(journal: &dyn Journal, state: &RunState, responses: InputResponses) {
    let open = open_in(state);
    let run = &state.summary.run_id;
    for (key, answer) in responses {
        let Some(question) = open.get(&key) else {
            continue;
        };
        if !answer_fits(question, &answer) {
            continue;
        }
        if let Some(node) = node(run, &key)
            && let Err(e) = journal
                .node_finished(&node, &NodeOutcome::output(answer))
                .await
        {
            tracing::warn!(run = %run, key, "task answer not journaled: {e}");
        }
    }
}
