//! One session with a host under test: requests out, answers matched to them
//! by `req_id` (other messages wait in an inbox), every message inspected
//! against the rules of [`crate::wire`], every wait bounded.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use crate::link::{Incoming, Link};
use crate::scenario::{Abort, Transport};
use crate::schemas::Schemas;
use crate::wire::{self, Rule, WireLog, is_event_type, s, ty};

/// A request's final answer and the events that came for it before it.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The answer (a response or an `error`).
    pub msg: Value,
    /// Its events, in arrival order.
    pub events: Vec<Value>,
}

impl Reply {
    /// The answer's type.
    pub fn ty(&self) -> &str {
        ty(&self.msg)
    }

    /// Whether the answer is an `error` message.
    pub fn is_error(&self) -> bool {
        self.ty() == "error"
    }

    /// The error code of an `error` answer.
    pub fn code(&self) -> &str {
        s(&self.msg, "/code")
    }

    /// The string at `ptr`.
    pub fn s(&self, ptr: &str) -> &str {
        s(&self.msg, ptr)
    }

    /// The value at `ptr`.
    pub fn at(&self, ptr: &str) -> &Value {
        wire::at(&self.msg, ptr)
    }

    /// The answer, shown.
    pub fn show(&self) -> String {
        wire::show(&self.msg)
    }

    /// The events' `seq` values.
    pub fn seqs(&self) -> Vec<Value> {
        self.events
            .iter()
            .map(|e| e.get("seq").cloned().unwrap_or(Value::Null))
            .collect()
    }
}

/// What one read gave.
#[derive(Debug)]
enum Pulled {
    Message,
    Nothing,
    Closed(String),
}

/// A session with a host.
pub struct Session {
    link: Link,
    transport: Transport,
    schemas: Arc<Schemas>,
    wire: Arc<Mutex<WireLog>>,
    inbox: VecDeque<Value>,
    ids: HashSet<String>,
    /// req_id → whether a final answer came.
    answered: HashSet<String>,
    /// Events that came after their request's final answer.
    late: Vec<Value>,
    /// How long to wait for one answer.
    pub wait: Duration,
    deadline: Instant,
    tag: String,
    next: u64,
    /// The session id of the handshake (empty before it).
    pub session_id: String,
    /// `max_parallel` of the handshake.
    pub max_parallel: u64,
    /// The handshake's response.
    pub handshake: Value,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("tag", &self.tag)
            .field("session_id", &self.session_id)
            .finish_non_exhaustive()
    }
}

/// What a session is made with.
pub struct SessionParts {
    /// The connection.
    pub link: Link,
    /// Its transport.
    pub transport: Transport,
    /// The schemas messages are checked against.
    pub schemas: Arc<Schemas>,
    /// Where problems go.
    pub wire: Arc<Mutex<WireLog>>,
    /// How long to wait for one answer.
    pub wait: Duration,
    /// When the scenario's time runs out.
    pub deadline: Instant,
    /// A tag for request ids.
    pub tag: String,
}

impl Session {
    /// A session over a new connection.
    pub fn new(parts: SessionParts) -> Self {
        Self {
            link: parts.link,
            transport: parts.transport,
            schemas: parts.schemas,
            wire: parts.wire,
            inbox: VecDeque::new(),
            ids: HashSet::new(),
            answered: HashSet::new(),
            late: Vec::new(),
            wait: parts.wait,
            deadline: parts.deadline,
            tag: parts.tag,
            next: 0,
            session_id: String::new(),
            max_parallel: 0,
            handshake: Value::Null,
        }
    }

    /// A fresh request id naming `what`.
    pub fn id(&mut self, what: &str) -> String {
        self.next += 1;
        format!("cf-{}-{}-{what}", self.tag, self.next)
    }

    /// A request of type `ty` with a fresh id and `fields`.
    pub fn req(&mut self, ty: &str, fields: Value) -> Value {
        let what = ty.split('/').next().unwrap_or("req");
        let mut msg = json!({"type": ty, "id": self.id(what)});
        if let (Some(obj), Value::Object(extra)) = (msg.as_object_mut(), fields) {
            obj.extend(extra);
        }
        msg
    }

    /// The transport.
    pub fn transport(&self) -> Transport {
        self.transport
    }

    fn left(&self, within: Duration) -> Duration {
        within.min(self.deadline.saturating_duration_since(Instant::now()))
    }

    /// Sends a message.
    pub async fn send(&mut self, msg: &Value) -> Result<(), Abort> {
        self.send_raw(msg.to_string()).await
    }

    /// Sends a text as it is.
    pub async fn send_raw(&mut self, text: impl Into<String>) -> Result<(), Abort> {
        self.link
            .send(text.into())
            .await
            .map_err(|e| Abort(format!("cannot send to the host: {e}")))
    }

    async fn pull(&mut self, within: Duration) -> Pulled {
        let wait = self.left(within);
        match self.link.recv(wait).await {
            None => Pulled::Nothing,
            Some(Incoming::Closed(why)) => Pulled::Closed(why),
            Some(Incoming::Garbage(what)) => {
                self.log().note(Rule::Object, what);
                Pulled::Message
            }
            Some(Incoming::Text(text)) => {
                let value = {
                    let mut log = self.wire.lock().unwrap_or_else(PoisonError::into_inner);
                    wire::inspect(
                        &text,
                        self.transport,
                        &self.schemas,
                        &mut log,
                        &mut self.ids,
                    )
                };
                if let Some(value) = value {
                    self.note_answer(&value);
                    self.inbox.push_back(value);
                }
                Pulled::Message
            }
        }
    }

    fn log(&self) -> std::sync::MutexGuard<'_, WireLog> {
        self.wire.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn note_answer(&mut self, msg: &Value) {
        let req_id = s(msg, "/req_id");
        let t = ty(msg);
        if req_id.is_empty() {
            return;
        }
        if is_event_type(t) {
            if t != "proc/read/event" && self.answered.contains(req_id) {
                self.late.push(msg.clone());
                self.log().note(
                    Rule::EventsFirst,
                    format!("a `{t}` for `{req_id}` after its answer"),
                );
            }
        } else if !self.answered.insert(req_id.to_owned()) && t != "pong" {
            self.log().note(
                Rule::AnswerOnce,
                format!("a second answer (`{t}`) to `{req_id}`"),
            );
        }
    }

    /// The next message (first what waits in the inbox), within `within`;
    /// `Ok(None)` when nothing came, `Err` when the host closed.
    pub async fn next(&mut self, within: Duration) -> Result<Option<Value>, Abort> {
        let end = Instant::now() + self.left(within);
        loop {
            if let Some(msg) = self.inbox.pop_front() {
                return Ok(Some(msg));
            }
            match self
                .pull(end.saturating_duration_since(Instant::now()))
                .await
            {
                Pulled::Message => {}
                Pulled::Nothing => return Ok(None),
                Pulled::Closed(why) => {
                    return Err(Abort(format!("the host closed the connection: {why}")));
                }
            }
        }
    }

    /// Waits for the final answer to request `id` (a message with `req_id`
    /// = `id` that is no event), with the events for it that came before.
    pub async fn answer(&mut self, id: &str) -> Result<Reply, Abort> {
        self.answer_within(id, self.wait).await
    }

    /// [`Session::answer`] with another wait.
    pub async fn answer_within(&mut self, id: &str, within: Duration) -> Result<Reply, Abort> {
        let end = Instant::now() + self.left(within);
        loop {
            if let Some(at) = self
                .inbox
                .iter()
                .position(|m| s(m, "/req_id") == id && !is_event_type(ty(m)))
            {
                let mut events = Vec::new();
                let mut rest = VecDeque::new();
                for (i, m) in std::mem::take(&mut self.inbox).into_iter().enumerate() {
                    if i < at && s(&m, "/req_id") == id && is_event_type(ty(&m)) {
                        events.push(m);
                    } else {
                        rest.push_back(m);
                    }
                }
                let msg = rest.remove(at - events.len()).unwrap_or_default();
                self.inbox = rest;
                return Ok(Reply { msg, events });
            }
            match self
                .pull(end.saturating_duration_since(Instant::now()))
                .await
            {
                Pulled::Message => {}
                Pulled::Nothing => {
                    return Err(Abort(format!("no answer to `{id}` within {within:?}")));
                }
                Pulled::Closed(why) => {
                    return Err(Abort(format!(
                        "the host closed the connection before answering `{id}`: {why}"
                    )));
                }
            }
        }
    }

    /// Sends `msg` (which has an id) and waits for its answer.
    pub async fn request(&mut self, msg: Value) -> Result<Reply, Abort> {
        let id = s(&msg, "/id").to_owned();
        self.send(&msg).await?;
        self.answer(&id).await
    }

    /// Sends `msg` and waits up to `within` for its answer.
    pub async fn request_within(&mut self, msg: Value, within: Duration) -> Result<Reply, Abort> {
        let id = s(&msg, "/id").to_owned();
        self.send(&msg).await?;
        self.answer_within(&id, within).await
    }

    /// Events with `req_id` = `id` until one `last` accepts (included), within `within`.
    pub async fn events_until(
        &mut self,
        id: &str,
        within: Duration,
        last: impl Fn(&Value) -> bool,
    ) -> Result<Vec<Value>, Abort> {
        self.events_where(|m| s(m, "/req_id") == id, within, last)
            .await
    }

    /// Events `mine` accepts until one `last` accepts (included), within `within`.
    pub async fn events_where(
        &mut self,
        mine: impl Fn(&Value) -> bool,
        within: Duration,
        last: impl Fn(&Value) -> bool,
    ) -> Result<Vec<Value>, Abort> {
        let end = Instant::now() + self.left(within);
        let mut out = Vec::new();
        loop {
            while let Some(at) = self
                .inbox
                .iter()
                .position(|m| is_event_type(ty(m)) && mine(m))
            {
                let Some(m) = self.inbox.remove(at) else {
                    break;
                };
                let done = last(&m);
                out.push(m);
                if done {
                    return Ok(out);
                }
            }
            match self
                .pull(end.saturating_duration_since(Instant::now()))
                .await
            {
                Pulled::Message => {}
                Pulled::Nothing => return Ok(out),
                Pulled::Closed(why) => {
                    return Err(Abort(format!("the host closed the connection: {why}")));
                }
            }
        }
    }

    /// A `ping` round trip: everything the host sent before its `pong` is in
    /// the inbox afterwards.
    pub async fn settle(&mut self) -> Result<(), Abort> {
        let ping = self.req("ping", json!({}));
        self.request(ping).await.map(drop)
    }

    /// Events for `id` that came after its final answer.
    pub fn late(&self, id: &str) -> Vec<&Value> {
        self.late.iter().filter(|m| s(m, "/req_id") == id).collect()
    }

    /// Messages waiting in the inbox for `req_id`, taken out.
    pub fn take_waiting(&mut self, req_id: &str) -> Vec<Value> {
        let (mine, rest): (VecDeque<Value>, VecDeque<Value>) = std::mem::take(&mut self.inbox)
            .into_iter()
            .partition(|m| s(m, "/req_id") == req_id);
        self.inbox = rest;
        mine.into()
    }

    /// Waits up to `within` for the host to close the connection (reading and
    /// keeping what comes before); the reason when it did.
    pub async fn closed_within(&mut self, within: Duration) -> Option<String> {
        let end = Instant::now() + self.left(within);
        loop {
            match self
                .pull(end.saturating_duration_since(Instant::now()))
                .await
            {
                Pulled::Message => {}
                Pulled::Nothing => return None,
                Pulled::Closed(why) => return Some(why),
            }
        }
    }

    /// Whether the host has closed the connection.
    pub fn is_closed(&self) -> bool {
        self.link.is_closed()
    }

    /// Closes the suite's side of the connection.
    pub fn close(&mut self) {
        self.link.close();
    }

    /// For a host started as a child: whether it exited within `within`.
    pub async fn exited_within(&mut self, within: Duration) -> Option<bool> {
        let wait = self.left(within);
        self.link.wait_exit(wait).await
    }

    /// The link's child process id (stdio).
    pub fn pid(&self) -> Option<u32> {
        self.link.pid()
    }
}
