//! The suite's side of a plugin process: requests out, answers in, and every
//! line the plugin writes inspected against the wire rules.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use crate::link::stdio::{self, Stderr};
use crate::link::{Incoming, Link};
use crate::scenario::{Abort, Transport};
use crate::schemas::Schemas;
use crate::wire::{self, Rule, WireLog, s, set};

/// How long a plugin may take to exit once its stdin is closed (the host
/// then sends SIGTERM: a2e-core §7).
pub const EXIT_WAIT: Duration = Duration::from_secs(3);

/// A plugin process and what it wrote.
pub struct Probe {
    link: Link,
    schemas: Schemas,
    /// What the plugin's lines broke of the wire rules.
    pub wire: WireLog,
    ids: HashSet<String>,
    timeout: Duration,
    next: u64,
}

/// What came back for one request.
#[derive(Debug, Default)]
pub struct Reply {
    /// The final answer: the first message that is not an event and names
    /// the request in `req_id`.
    pub answer: Value,
    /// The request's events before the answer, in their order.
    pub events: Vec<Value>,
    /// Messages meanwhile that name no request of ours.
    pub others: Vec<Value>,
}

impl Probe {
    /// Starts `command` in a process group of its own; `timeout` bounds each
    /// answer.
    pub fn start(command: &[String], stderr: Stderr, timeout: Duration) -> Result<Self, String> {
        Ok(Self {
            link: stdio::spawn(command, &[], stderr)?,
            schemas: Schemas::build()?,
            wire: WireLog::default(),
            ids: HashSet::new(),
            timeout,
            next: 0,
        })
    }

    /// The compiled schemas of the wire types.
    pub fn schemas(&self) -> &Schemas {
        &self.schemas
    }

    /// A fresh request id naming `what`.
    pub fn id(&mut self, what: &str) -> String {
        self.next += 1;
        format!("cf-plugin-{what}-{}", self.next)
    }

    /// Sends `msg` with its envelope (`version`, `ts`) filled in.
    pub async fn send(&mut self, mut msg: Value) -> Result<(), Abort> {
        set(&mut msg, "version", Value::from("1.0"));
        set(&mut msg, "ts", Value::from(wire::now_secs()));
        self.send_line(&msg.to_string()).await
    }

    /// Sends one line as it is.
    pub async fn send_line(&mut self, line: &str) -> Result<(), Abort> {
        self.link
            .send(line.to_owned())
            .await
            .map_err(|why| Abort(format!("cannot write to the plugin: {why}")))
    }

    /// The next message within `within` (`None` on timeout); a line that is
    /// no JSON object is noted and skipped. Fails when the plugin closed its
    /// stdout.
    async fn next(&mut self, within: Duration) -> Result<Option<Value>, Abort> {
        let end = Instant::now() + within;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.link.recv(left).await {
                None => return Ok(None),
                Some(Incoming::Closed(why)) => {
                    return Err(Abort(format!("the plugin closed its stdout ({why})")));
                }
                Some(Incoming::Garbage(what)) => self.wire.note(Rule::Object, what),
                Some(Incoming::Text(text)) => {
                    let seen = wire::inspect(
                        &text,
                        Transport::Stdio,
                        &self.schemas,
                        &mut self.wire,
                        &mut self.ids,
                    );
                    if seen.is_some() {
                        return Ok(seen);
                    }
                }
            }
        }
    }

    /// Reads until the answer to request `id`, keeping its events and the
    /// messages that answer nothing of ours.
    pub async fn answer(&mut self, id: &str) -> Result<Reply, Abort> {
        let end = Instant::now() + self.timeout;
        let mut reply = Reply::default();
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let Some(msg) = self.next(left).await? else {
                return Err(Abort(format!(
                    "no answer to `{id}` within {} s",
                    self.timeout.as_secs()
                )));
            };
            if s(&msg, "/req_id") != id {
                reply.others.push(msg);
            } else if wire::is_event_type(wire::ty(&msg)) {
                reply.events.push(msg);
            } else {
                reply.answer = msg;
                return Ok(reply);
            }
        }
    }

    /// Closes the plugin's stdin; whether it exited within `within`. What it
    /// wrote until then is still inspected.
    pub async fn close_and_wait(&mut self, within: Duration) -> bool {
        self.link.close();
        let exited = self.link.wait_exit(within).await.unwrap_or(false);
        // The lines written before the exit (bounded: a plugin that goes on
        // writing is not read to its end).
        for _ in 0..1000 {
            if !matches!(self.next(Duration::from_millis(200)).await, Ok(Some(_))) {
                break;
            }
        }
        exited
    }
}
