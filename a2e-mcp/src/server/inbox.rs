//! The questions a task asks its client (the tasks extension with SEP-2322's
//! input requests): a question the task's call puts through its
//! [`ClientLink`](super::ClientLink) waits, open, until `tasks/update`
//! brings its answer; `tasks/get` shows the task `input_required` with the
//! open questions meanwhile.
//!
//! Invariants: a question's key is the caller's or the n-th of its kind
//! (`elicitation-1`, …), unique in the task; an answer to a key that is not
//! open is ignored; an answer not of its question's result shape leaves the
//! question open; a question answered leaves the open set at once (a
//! partial answer keeps the others open).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, PoisonError};

use rmcp::model::{ClientCapabilities, InputRequest, InputRequests, InputResponses};
use serde_json::Value;
use tokio::sync::{oneshot, watch};

use super::rounds::{QuestionKeys, answers};

#[derive(Default)]
struct Open {
    questions: InputRequests,
    waiting: HashMap<String, oneshot::Sender<Value>>,
    keys: QuestionKeys,
    /// The answers taken, by key.
    answered: InputResponses,
}

/// How long a task's question waits for its answer: as long as a client is
/// told a task stays readable.
pub const QUESTION_LIMIT: std::time::Duration = std::time::Duration::from_secs(3600);

/// One task's questions to its client.
pub struct TaskInbox {
    capabilities: ClientCapabilities,
    /// Answers the task was started with (the rounds that gathered them
    /// before it became a task), by key.
    given: BTreeMap<String, Value>,
    open: Mutex<Open>,
    /// Counts the changes of the open questions (one asked, one answered).
    changes: watch::Sender<u64>,
}

impl std::fmt::Debug for TaskInbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskInbox")
            .field("open", &self.lock().questions.len())
            .finish()
    }
}

impl TaskInbox {
    /// The inbox of a task whose client declared `capabilities`.
    pub fn new(capabilities: ClientCapabilities) -> Self {
        Self::with_answers(capabilities, BTreeMap::new())
    }

    /// The inbox of a task started with `given` answers (gathered in
    /// `input_required` rounds before it became a task): a question under
    /// one of their keys that the answer fits is answered at once.
    pub fn with_answers(capabilities: ClientCapabilities, given: BTreeMap<String, Value>) -> Self {
        Self {
            capabilities,
            given,
            open: Mutex::default(),
            changes: watch::Sender::new(0),
        }
    }

    /// Wakes on each change of the open questions (for a status
    /// notification: the task is `input_required`, or working again).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The capabilities the client declared.
    pub(crate) fn capabilities(&self) -> &ClientCapabilities {
        &self.capabilities
    }

    /// The key of the next question of `request`'s kind.
    pub(crate) fn next_key(&self, request: &InputRequest) -> String {
        self.lock().keys.next(request)
    }

    /// Asks `request` under `key` and waits for its answer, at most
    /// [`QUESTION_LIMIT`] (`None`: no answer came in that time, or the inbox
    /// went away).
    pub(crate) async fn ask(&self, key: String, request: InputRequest) -> Option<Value> {
        if let Some(answer) = self.given.get(&key).filter(|a| answers(&request, a)) {
            return Some(answer.clone());
        }
        let (tx, rx) = oneshot::channel();
        {
            let mut open = self.lock();
            open.questions.insert(key.clone(), request);
            open.waiting.insert(key.clone(), tx);
        }
        self.changed();
        match tokio::time::timeout(QUESTION_LIMIT, rx).await {
            Ok(answer) => answer.ok(),
            Err(_) => {
                let mut open = self.lock();
                open.questions.remove(&key);
                open.waiting.remove(&key);
                drop(open);
                self.changed();
                None
            }
        }
    }

    /// The questions without an answer yet.
    pub fn questions(&self) -> InputRequests {
        self.lock().questions.clone()
    }

    /// The answers taken so far (`tasks/update`), by key.
    pub fn answered(&self) -> InputResponses {
        self.lock().answered.clone()
    }

    /// Takes `responses` (`tasks/update`): each one that answers an open
    /// question closes it and resumes its asker.
    pub fn answer(&self, responses: InputResponses) {
        let mut open = self.lock();
        let mut closed = false;
        for (key, answer) in responses {
            let fits = open
                .questions
                .get(&key)
                .is_some_and(|q| answers(q, &answer));
            if !fits {
                continue;
            }
            open.questions.remove(&key);
            if let Some(asker) = open.waiting.remove(&key) {
                let _ = asker.send(answer.clone());
            }
            open.answered.insert(key, answer);
            closed = true;
        }
        drop(open);
        if closed {
            self.changed();
        }
    }
}

/// Whether `answer` has the shape of an answer to `question` (what an
/// answer to a task's question must have to close it).
pub fn answer_fits(question: &InputRequest, answer: &Value) -> bool {
    answers(question, answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ElicitRequest, ElicitRequestParams, ElicitationSchema};
    use serde_json::json;
    use std::sync::Arc;

    fn question() -> InputRequest {
        let schema: ElicitationSchema = serde_json::from_value(
            json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}),
        )
        .unwrap();
        InputRequest::Elicitation(ElicitRequest::new(
            ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: "sure?".into(),
                requested_schema: schema,
            },
        ))
    }

    #[tokio::test]
    async fn questions_wait_for_their_answers_one_by_one() {
        let inbox = Arc::new(TaskInbox::new(ClientCapabilities::default()));
        let changes = inbox.changes();
        let asking = inbox.clone();
        let both = tokio::spawn(async move {
            tokio::join!(
                asking.ask("a".into(), question()),
                asking.ask("b".into(), question())
            )
        });
        while inbox.questions().len() < 2 {
            tokio::task::yield_now().await;
        }
        let yes = json!({"action": "accept", "content": {"ok": true}});
        inbox.answer(
            [
                ("a".to_owned(), yes.clone()),
                ("zzz".to_owned(), yes.clone()),
            ]
            .into(),
        );
        assert_eq!(inbox.questions().keys().collect::<Vec<_>>(), ["b"]);
        inbox.answer([("b".to_owned(), json!(42))].into());
        assert_eq!(inbox.questions().len(), 1, "a number is no answer");
        inbox.answer([("b".to_owned(), yes.clone())].into());
        let (a, b) = both.await.unwrap();
        assert_eq!((a, b), (Some(yes.clone()), Some(yes.clone())));
        assert!(inbox.questions().is_empty());
        assert_eq!(inbox.answered().keys().collect::<Vec<_>>(), ["a", "b"]);
        assert!(answer_fits(&question(), &yes) && !answer_fits(&question(), &json!(42)));
        // Two asked, "a" answered, "b" answered: the rejected answers changed nothing.
        assert_eq!(*changes.borrow(), 4);
    }

    #[tokio::test]
    async fn answers_given_at_the_start_are_taken_and_others_asked() {
        let yes = json!({"action": "accept", "content": {"ok": true}});
        let given = BTreeMap::from([
            ("elicitation-1".to_owned(), yes.clone()),
            ("bad".to_owned(), json!(7)),
        ]);
        let inbox = Arc::new(TaskInbox::with_answers(
            ClientCapabilities::default(),
            given,
        ));
        let key = inbox.next_key(&question());
        assert_eq!(key, "elicitation-1");
        assert_eq!(inbox.ask(key, question()).await, Some(yes.clone()));
        assert!(inbox.questions().is_empty(), "nothing was left open");
        // A given answer that does not fit its question is no answer.
        let asking = inbox.clone();
        let waiting = tokio::spawn(async move { asking.ask("bad".into(), question()).await });
        while inbox.questions().is_empty() {
            tokio::task::yield_now().await;
        }
        inbox.answer([("bad".to_owned(), yes.clone())].into());
        assert_eq!(waiting.await.unwrap(), Some(yes));
    }
}
