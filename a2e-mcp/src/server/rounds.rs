//! Input a request needs from the client, under MCP 2026-07-28 (multi-round
//! requests, SEP-2322).
//!
//! A 2026-07-28 client is not sent requests: a call that needs its user
//! (`elicitation/create`), its model (`sampling/createMessage`) or its roots
//! (`roots/list`) ends with an `input_required` result naming what it needs,
//! and the client retries the same request with the answers
//! (`inputResponses`) and the `requestState` it was given. The call runs
//! again from the start; each question it asks is answered from what the
//! retry brought, and a question without an answer ends the round again.
//!
//! Invariants:
//! - A question's key is the caller's or the n-th of its kind in the call
//!   (`elicitation-1`, `sampling-2`, …), so a call that asks the same
//!   questions in the same order finds its answers on every retry.
//! - `requestState` carries the answers of earlier rounds the call used and
//!   the round's number, sealed with an HMAC (rmcp's [`RequestStateCodec`])
//!   over the caller's credentials, the method, the name and the arguments:
//!   a state that was altered, is older than [`STATE_LIFETIME`], or comes
//!   back with another caller or request is refused (`-32602`).
//! - An answer that is not of its question's result shape is no answer: the
//!   question is asked again.
//! - Answers to questions the call did not ask are ignored and not sealed.
//! - A call that needs a capability the request's `_meta` does not declare
//!   ends with `-32021` naming it (`requiredCapabilities`).
#![allow(deprecated)] // sampling and roots: asked of clients of every version served

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, CreateMessageResult, ElicitResult, ErrorData, InputRequest, InputRequests,
    InputRequiredResult, InputResponses, ListRootsResult, RequestStateCodec, SealOptions,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::Notify;

/// How long a `requestState` stays valid: as long as a person may take to
/// answer a question put to them in a session.
pub const STATE_LIFETIME: Duration = super::client::CLIENT_REQUEST_LIMIT;

/// How long a round waits, after a question without an answer, for the call's
/// further questions asked at the same time (the parts of a form, the
/// branches of a join) to join the same `input_required` result.
const GATHER: Duration = Duration::from_millis(20);

/// The seal of `requestState`: one key per server (every connection's
/// handler shares it).
pub(crate) struct StateSeal {
    codec: RequestStateCodec,
}

impl std::fmt::Debug for StateSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateSeal")
    }
}

/// What `requestState` holds.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Sealed {
    /// The number of rounds so far.
    round: u32,
    /// The answers earlier rounds gave and the call used, by key.
    answers: BTreeMap<String, Value>,
}

/// What a request is, for the seal: a state is only good for the request and
/// the caller it was given to.
pub(crate) struct Binding(Vec<u8>);

impl Binding {
    /// The caller's credentials (`Authorization`, if any), the method, the
    /// name (tool, prompt) and the arguments (keys in order, at any depth).
    pub(crate) fn new(
        caller: Option<&str>,
        method: &str,
        name: &str,
        arguments: &Map<String, Value>,
    ) -> Self {
        let mut text = String::new();
        for part in [caller.unwrap_or(""), method, name] {
            text.push_str(&part.len().to_string());
            text.push(':');
            text.push_str(part);
        }
        canonical_object(arguments, &mut text);
        Self(text.into_bytes())
    }
}

/// `map` as a JSON object with its keys in order (and its values' too).
fn canonical_object(map: &Map<String, Value>, out: &mut String) {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    out.push('{');
    for (i, key) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&Value::from(key.as_str()).to_string());
        out.push(':');
        canonical(&map[key], out);
    }
    out.push('}');
}

/// `value` as JSON with every object's keys in order.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => canonical_object(map, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

impl StateSeal {
    /// A seal with `key` (shared by the servers that may get a retry), or
    /// with a key of its own when there is none or it is too short (which
    /// is logged).
    pub(crate) fn with_key(key: Option<Vec<u8>>) -> Self {
        let Some(key) = key else {
            return Self::random();
        };
        match RequestStateCodec::try_new(key) {
            Ok(codec) => Self { codec },
            Err(e) => {
                tracing::error!(
                    "requestState key refused ({e}); sealing with a key of this process"
                );
                Self::random()
            }
        }
    }

    /// A seal with a key of its own (a server process's).
    pub(crate) fn random() -> Self {
        let key: [u8; 32] = rand::random();
        match RequestStateCodec::try_new(key.to_vec()) {
            Ok(codec) => Self { codec },
            // 32 random bytes are a key of the least length the codec takes.
            Err(_) => unreachable!("a 32-byte key is long enough"),
        }
    }

    /// The rounds of one request: the answers of `state` (checked against
    /// `binding`) and of `responses`, for a client that declared
    /// `capabilities`.
    pub(crate) fn open(
        &self,
        binding: &Binding,
        state: Option<&str>,
        responses: Option<InputResponses>,
        capabilities: ClientCapabilities,
    ) -> Result<Arc<Rounds>, ErrorData> {
        let sealed = match state {
            None => Sealed::default(),
            Some(state) => self
                .codec
                .open_json_with::<Sealed>(state, &binding.0)
                .map_err(|e| {
                    tracing::debug!("requestState refused: {e}");
                    ErrorData::invalid_params(
                        "params.requestState: not a state this server gave for this request \
                         (altered, expired, or another caller's or request's)",
                        None,
                    )
                })?,
        };
        let mut answers = sealed.answers;
        answers.extend(responses.unwrap_or_default());
        Ok(Rounds::new(sealed.round, answers, capabilities))
    }

    /// The `input_required` result of a round that ended with questions.
    fn input_required(
        &self,
        binding: &Binding,
        rounds: &Rounds,
        requests: InputRequests,
    ) -> InputRequiredResult {
        let asked = rounds.lock();
        let sealed = Sealed {
            round: rounds.round.saturating_add(1),
            answers: asked
                .used
                .iter()
                .filter_map(|k| rounds.answers.get(k).map(|v| (k.clone(), v.clone())))
                .collect(),
        };
        drop(asked);
        let options = SealOptions::new()
            .associated_data(&binding.0)
            .ttl(STATE_LIFETIME);
        let state = self.codec.seal_json_with(&sealed, &options).ok();
        InputRequiredResult::new(Some(requests), state)
    }

    /// Runs `call` for one round of `rounds`: its output, the
    /// `input_required` result when it asked what it has no answer for, or
    /// `-32021` when it needed a capability the client did not declare.
    pub(crate) async fn run<T>(
        &self,
        binding: &Binding,
        rounds: &Arc<Rounds>,
        call: impl Future<Output = T>,
    ) -> Result<Round<T>, ErrorData> {
        let outcome = rounds.drive(call).await;
        if let Some(needed) = rounds.lock().missing.take() {
            return Err(ErrorData::missing_required_client_capability(needed));
        }
        Ok(match outcome {
            Ok(output) => Round::Done(output),
            Err(requests) => Round::Input(self.input_required(binding, rounds, requests)),
        })
    }
}

/// How one round of a request ended.
pub(crate) enum Round<T> {
    /// The call finished.
    Done(T),
    /// The call needs input: the result to answer with.
    Input(InputRequiredResult),
}

#[derive(Default)]
struct Asked {
    /// The questions without an answer.
    open: InputRequests,
    /// The keys whose answers the call took.
    used: BTreeSet<String>,
    /// The keys of the questions asked without one.
    keys: QuestionKeys,
    /// A capability the call needed that the client did not declare.
    missing: Option<ClientCapabilities>,
}

/// The questions and answers of one round of one request.
pub struct Rounds {
    round: u32,
    answers: BTreeMap<String, Value>,
    capabilities: ClientCapabilities,
    asked: Mutex<Asked>,
    signal: Notify,
}

impl std::fmt::Debug for Rounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rounds")
            .field("round", &self.round)
            .finish()
    }
}

/// How many questions of each kind a call asked: the keys of those asked
/// without one of the caller's (`elicitation-1`, `sampling-2`, …).
#[derive(Default)]
pub(crate) struct QuestionKeys(BTreeMap<&'static str, u32>);

impl QuestionKeys {
    /// The key of the next question of `request`'s kind.
    pub(crate) fn next(&mut self, request: &InputRequest) -> String {
        let kind = kind_of(request);
        let n = self.0.entry(kind).or_default();
        *n += 1;
        format!("{kind}-{n}")
    }
}

/// The kind of a question, for its key and its capability.
pub(crate) fn kind_of(request: &InputRequest) -> &'static str {
    match request {
        InputRequest::CreateMessage(_) => "sampling",
        InputRequest::Elicitation(_) => "elicitation",
        _ => "roots",
    }
}

/// Whether `answer` has the shape of `request`'s result.
pub(crate) fn answers(request: &InputRequest, answer: &Value) -> bool {
    let shape = answer.clone();
    match request {
        InputRequest::CreateMessage(_) => {
            serde_json::from_value::<CreateMessageResult>(shape).is_ok()
        }
        InputRequest::Elicitation(_) => serde_json::from_value::<ElicitResult>(shape).is_ok(),
        _ => serde_json::from_value::<ListRootsResult>(shape).is_ok(),
    }
}

impl Rounds {
    /// The first round of a request that brings no answers: what the client
    /// declared is all that is known of it.
    pub(crate) fn declared(capabilities: ClientCapabilities) -> Arc<Self> {
        Self::new(0, BTreeMap::new(), capabilities)
    }

    /// Round `round` of a request, with `answers` to its questions.
    fn new(
        round: u32,
        answers: BTreeMap<String, Value>,
        capabilities: ClientCapabilities,
    ) -> Arc<Self> {
        Arc::new(Self {
            round,
            answers,
            capabilities,
            asked: Mutex::default(),
            signal: Notify::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Asked> {
        self.asked.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The capabilities the request declared.
    pub(crate) fn capabilities(&self) -> &ClientCapabilities {
        &self.capabilities
    }

    /// The answers the request brings (its own and earlier rounds'), by key.
    pub(crate) fn answers(&self) -> &BTreeMap<String, Value> {
        &self.answers
    }

    /// The key of the next question of `request`'s kind.
    pub(crate) fn next_key(&self, request: &InputRequest) -> String {
        self.lock().keys.next(request)
    }

    /// Notes that the call needed `capability`, which the client did not
    /// declare: the request ends with `-32021`.
    pub(crate) fn needs(&self, capability: ClientCapabilities) {
        self.lock().missing.get_or_insert(capability);
    }

    /// The answer to `request` under `key`; without one, the question joins
    /// the round's result and the future never ends (the round drops it).
    pub(crate) async fn ask(&self, key: String, request: InputRequest) -> Value {
        if let Some(answer) = self.answers.get(&key).filter(|a| answers(&request, a)) {
            self.lock().used.insert(key);
            return answer.clone();
        }
        self.lock().open.insert(key, request);
        self.signal.notify_one();
        std::future::pending().await
    }

    /// Runs `call` until it ends or asks what it has no answer for; then
    /// gives it [`GATHER`] for more questions at a time and drops it.
    async fn drive<T>(&self, call: impl Future<Output = T>) -> Result<T, InputRequests> {
        let call = std::pin::pin!(call);
        let mut call = call;
        tokio::select! {
            biased;
            output = &mut call => return Ok(output),
            () = self.signal.notified() => {}
        }
        loop {
            let before = self.lock().open.len();
            tokio::select! {
                biased;
                output = &mut call => return Ok(output),
                () = tokio::time::sleep(GATHER) => {}
            }
            let open = &mut self.lock().open;
            if open.len() == before {
                return Err(std::mem::take(open));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ElicitRequest, ElicitRequestParams, ElicitationSchema};
    use serde_json::json;

    fn question(message: &str) -> InputRequest {
        let schema: ElicitationSchema = serde_json::from_value(json!({
            "type": "object", "properties": {"name": {"type": "string"}}}))
        .expect("schema");
        InputRequest::Elicitation(ElicitRequest::new(
            ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: message.into(),
                requested_schema: schema,
            },
        ))
    }

    fn accept(name: &str) -> Value {
        json!({"action": "accept", "content": {"name": name}})
    }

    /// A call that asks two questions one after the other.
    async fn two_steps(rounds: Arc<Rounds>) -> String {
        let first = rounds.ask("step1".into(), question("name?")).await;
        let second = rounds.ask("step2".into(), question("color?")).await;
        format!("{}/{}", first["content"]["name"], second["content"]["name"])
    }

    fn binding() -> Binding {
        Binding::new(
            Some("Bearer t"),
            "tools/call",
            "two",
            json!({"b": 1, "a": [2]}).as_object().unwrap(),
        )
    }

    #[tokio::test]
    async fn rounds_carry_earlier_answers_in_the_sealed_state() {
        let seal = StateSeal::random();
        let caps = ClientCapabilities::default();
        let rounds = seal.open(&binding(), None, None, caps.clone()).unwrap();
        let Round::Input(first) = seal
            .run(&binding(), &rounds, two_steps(rounds.clone()))
            .await
            .unwrap()
        else {
            panic!("the first round must ask")
        };
        assert_eq!(
            first
                .input_requests
                .as_ref()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["step1"]
        );
        let state = first.request_state.clone().unwrap();
        let answers = InputResponses::from([("step1".to_owned(), accept("Ada"))]);
        let rounds = seal
            .open(&binding(), Some(&state), Some(answers), caps.clone())
            .unwrap();
        let Round::Input(second) = seal
            .run(&binding(), &rounds, two_steps(rounds.clone()))
            .await
            .unwrap()
        else {
            panic!("the second round must ask again")
        };
        assert_eq!(
            second
                .input_requests
                .as_ref()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["step2"]
        );
        assert_ne!(second.request_state, first.request_state);
        // The third round brings only step2's answer: step1's is in the state.
        let answers = InputResponses::from([("step2".to_owned(), accept("blue"))]);
        let state = second.request_state.unwrap();
        let rounds = seal
            .open(&binding(), Some(&state), Some(answers), caps)
            .unwrap();
        let Round::Done(out) = seal
            .run(&binding(), &rounds, two_steps(rounds.clone()))
            .await
            .unwrap()
        else {
            panic!("the third round must finish")
        };
        assert_eq!(out, "\"Ada\"/\"blue\"");
    }

    #[tokio::test]
    async fn a_state_is_refused_when_altered_or_brought_to_another_request() {
        let seal = StateSeal::random();
        let caps = ClientCapabilities::default();
        let rounds = seal.open(&binding(), None, None, caps.clone()).unwrap();
        let Round::Input(first) = seal
            .run(&binding(), &rounds, two_steps(rounds.clone()))
            .await
            .unwrap()
        else {
            panic!("the first round must ask")
        };
        let state = first.request_state.unwrap();
        let tampered = format!("{state}-TAMPERED");
        let err = seal
            .open(&binding(), Some(&tampered), None, caps.clone())
            .unwrap_err();
        assert_eq!(err.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert!(err.message.contains("requestState"), "{}", err.message);
        let other = Binding::new(
            Some("Bearer u"),
            "tools/call",
            "two",
            json!({"a": [2], "b": 1}).as_object().unwrap(),
        );
        assert!(seal.open(&other, Some(&state), None, caps.clone()).is_err());
        // The same arguments in another order are the same request.
        let reordered = Binding::new(
            Some("Bearer t"),
            "tools/call",
            "two",
            json!({"a": [2], "b": 1}).as_object().unwrap(),
        );
        assert!(
            seal.open(&reordered, Some(&state), None, caps.clone())
                .is_ok()
        );
        assert!(
            StateSeal::random()
                .open(&binding(), Some(&state), None, caps)
                .is_err()
        );
    }

    #[tokio::test]
    async fn questions_asked_together_join_one_round_and_bad_answers_are_asked_again() {
        let seal = StateSeal::random();
        let caps = ClientCapabilities::default();
        let both = |rounds: Arc<Rounds>| async move {
            let (a, b) = tokio::join!(
                rounds.ask("a".into(), question("a?")),
                rounds.ask("b".into(), question("b?"))
            );
            (a, b)
        };
        let bad = InputResponses::from([
            ("a".to_owned(), json!(12345)),
            ("x".to_owned(), accept("?")),
        ]);
        let rounds = seal.open(&binding(), None, Some(bad), caps).unwrap();
        let Round::Input(result) = seal
            .run(&binding(), &rounds, both(rounds.clone()))
            .await
            .unwrap()
        else {
            panic!("a number is no answer")
        };
        assert_eq!(
            result.input_requests.unwrap().keys().collect::<Vec<_>>(),
            ["a", "b"]
        );
    }

    #[tokio::test]
    async fn a_missing_capability_ends_the_request_with_its_error() {
        let seal = StateSeal::random();
        let rounds = seal
            .open(&binding(), None, None, ClientCapabilities::default())
            .unwrap();
        let needs = rounds.clone();
        let call = async move {
            needs.needs(ClientCapabilities::builder().enable_sampling().build());
        };
        let err = seal.run(&binding(), &rounds, call).await.err().unwrap();
        assert_eq!(
            err.code,
            rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        );
        assert!(err.data.unwrap()["requiredCapabilities"]["sampling"].is_object());
    }
}
