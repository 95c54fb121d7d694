//! The scripted host's side of one client connection: what the client sends
//! (every message inspected against the rules of
//! [`conformance_harness::wire`]), what the script answers, every wait
//! bounded.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use conformance_harness::link::serve::Facts;
use conformance_harness::link::{Incoming, Link};
use conformance_harness::scenario::{Abort, Transport};
use conformance_harness::schemas::Schemas;
use conformance_harness::wire::{self, WireLog, s};

/// The session id the scripted host hands out.
pub const SESSION_ID: &str = "cf-session-1";

/// One client connection, seen from the host.
pub struct Peer {
    link: Link,
    transport: Transport,
    schemas: Schemas,
    /// What the client's messages broke.
    pub wire: WireLog,
    ids: HashSet<String>,
    /// What the transport showed (network transports).
    pub facts: Facts,
    /// How long to wait for one message.
    pub wait: Duration,
    deadline: Instant,
    next: u64,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer")
            .field("transport", &self.transport)
            .finish_non_exhaustive()
    }
}

impl Peer {
    /// The host side of `link`.
    pub fn new(
        link: Link,
        transport: Transport,
        facts: Facts,
        wait: Duration,
        deadline: Instant,
    ) -> Result<Self, String> {
        Ok(Self {
            link,
            transport,
            schemas: Schemas::build()?,
            wire: WireLog::default(),
            ids: HashSet::new(),
            facts,
            wait,
            deadline,
            next: 0,
        })
    }

    /// The transport.
    pub fn transport(&self) -> Transport {
        self.transport
    }

    fn left(&self, within: Duration) -> Duration {
        within.min(self.deadline.saturating_duration_since(Instant::now()))
    }

    /// The next message from the client within `within`: `Ok(None)` when
    /// nothing came, `Err` when the client closed.
    pub async fn next_within(&mut self, within: Duration) -> Result<Option<Value>, Abort> {
        let end = Instant::now() + self.left(within);
        loop {
            let wait = end.saturating_duration_since(Instant::now());
            match self.link.recv(wait).await {
                None => return Ok(None),
                Some(Incoming::Closed(why)) => {
                    return Err(Abort(format!("the client closed the connection: {why}")));
                }
                Some(Incoming::Garbage(what)) => self.wire.note(wire::Rule::Object, what),
                Some(Incoming::Text(text)) => {
                    if let Some(v) = wire::inspect(
                        &text,
                        self.transport,
                        &self.schemas,
                        &mut self.wire,
                        &mut self.ids,
                    ) {
                        return Ok(Some(v));
                    }
                }
            }
        }
    }

    /// The next message, or an abort naming what was awaited.
    pub async fn recv(&mut self, what: &str) -> Result<Value, Abort> {
        match self.next_within(self.wait).await? {
            Some(v) => Ok(v),
            None => Err(Abort(format!(
                "the client sent no {what} within {:?}",
                self.wait
            ))),
        }
    }

    /// The next message of type `ty`; pings on the way are answered, anything
    /// else is an abort.
    pub async fn expect(&mut self, ty: &str) -> Result<Value, Abort> {
        loop {
            let msg = self.recv(ty).await?;
            let got = wire::ty(&msg).to_owned();
            if got == ty {
                return Ok(msg);
            }
            if got == "ping" {
                self.pong(&msg).await?;
                continue;
            }
            return Err(Abort(format!(
                "expected `{ty}` from the client, got {}",
                wire::show(&msg)
            )));
        }
    }

    /// Sends `msg`, with `id`, `version` and `ts` filled in where missing.
    pub async fn send(&mut self, mut msg: Value) -> Result<(), Abort> {
        if let Some(obj) = msg.as_object_mut() {
            self.next += 1;
            obj.entry("id")
                .or_insert_with(|| json!(format!("cf-host-{}", self.next)));
            obj.entry("version").or_insert_with(|| json!("1.0"));
            obj.entry("ts").or_insert_with(|| json!(wire::now_secs()));
        }
        self.link
            .send(msg.to_string())
            .await
            .map_err(|e| Abort(format!("cannot send to the client: {e}")))
    }

    /// Answers `req` with a message of type `ty` and `fields`, `req_id` set.
    pub async fn answer(&mut self, req: &Value, ty: &str, fields: Value) -> Result<(), Abort> {
        let mut msg = json!({"type": ty, "req_id": s(req, "/id")});
        if let (Some(obj), Value::Object(extra)) = (msg.as_object_mut(), fields) {
            obj.extend(extra);
        }
        self.send(msg).await
    }

    /// Answers a ping.
    pub async fn pong(&mut self, ping: &Value) -> Result<(), Abort> {
        self.answer(ping, "pong", json!({"uptime_seconds": 1.0}))
            .await
    }

    /// Answers the handshake `req` as accepted.
    pub async fn accept(&mut self, req: &Value) -> Result<(), Abort> {
        let caps: Vec<Value> = req
            .get("agent_caps")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|c| json!({"capability": c, "enabled": true, "metadata": {}}))
            .collect();
        self.answer(
            req,
            "handshake/resp",
            json!({"session_id": SESSION_ID, "accepted_caps": caps, "max_parallel": 3, "ok": true, "reason": ""}),
        )
        .await
    }

    /// Waits up to `within` for the client to close; whether it did. Pings
    /// are answered; other messages are kept in `extra`.
    pub async fn closed_within(&mut self, within: Duration, extra: &mut Vec<Value>) -> bool {
        let end = Instant::now() + self.left(within);
        loop {
            match self
                .next_within(end.saturating_duration_since(Instant::now()))
                .await
            {
                Err(_) => return true,
                Ok(None) => return false,
                Ok(Some(msg)) if wire::ty(&msg) == "ping" => {
                    if self.pong(&msg).await.is_err() {
                        return true;
                    }
                }
                Ok(Some(msg)) => extra.push(msg),
            }
        }
    }

    /// Closes the host's side of the connection.
    pub fn close(&mut self) {
        self.link.close();
    }
}

/// A tool result as the host sends it.
pub fn result(tool: &str, data: Value) -> Value {
    json!({"success": true, "tool_name": tool, "data": data, "duration_ms": 1})
}

/// A tool definition with one string parameter `text`.
pub fn tool_def(name: &str) -> Value {
    json!({"name": name, "description": format!("The scripted host's {name}"),
           "input_parameters": [{"name": "text", "type": "string", "description": "Some text", "required": true}]})
}
