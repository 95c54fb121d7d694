//! The black-box suite: drives any A2E host over stdio and checks what it
//! answers, knowing nothing of how the host is built.
//!
//! The host is started as a child process speaking NDJSON on its stdin and
//! stdout (e.g. `a2e serve --stdio`). Each check opens a fresh session (a
//! fresh process) where it needs one. What is checked:
//!
//! - every line the host writes decodes as an A2E message and validates
//!   against its JSON Schema;
//! - a request before the handshake is `unauthorized`; `ping` is answered any time;
//! - the handshake answers `ok` with a session id and `req_id`;
//! - each of the specs' request examples (tool list, tool call, skill
//!   discover, skill call, chain) is answered exactly once, by its response
//!   type or by an `error`, with `req_id` set to the request's id, and its
//!   events carry `seq` 0, 1, 2, …;
//! - malformed lines get `parse_error`, `invalid_message`, `version_mismatch`
//!   and `schema_violation`, and the session goes on;
//! - `shutdown` ends the process.

use std::time::Duration;

use a2e_proto::Message;
use serde_json::Value;

use crate::Outcome;
use crate::child::HostProcess;
use crate::schemas::Schemas;

/// How long a host may take to answer one request, by default.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);

/// A host process under test, with what its lines showed.
struct Peer {
    process: HostProcess,
    /// Problems seen on any line (undecodable, schema-invalid).
    problems: Vec<String>,
    /// How long to wait for one answer.
    timeout: Duration,
}

/// Checks one line the host wrote against the decoder and the schemas.
fn inspect(line: &str, schemas: &Schemas, problems: &mut Vec<String>) {
    match a2e_proto::decode(line.as_bytes()) {
        Ok(Message::Unknown(_)) => {
            problems.push(format!("the host sent an unknown message type: {line}"));
        }
        Ok(msg) => {
            let Ok(value) = serde_json::from_str::<Value>(line) else {
                return;
            };
            if let Err(errors) = schemas.validate(msg.type_str(), &value) {
                problems.push(format!(
                    "`{}` violates its schema: {}",
                    msg.type_str(),
                    errors.join("; ")
                ));
            }
        }
        Err(e) => problems.push(format!(
            "the host sent a line that does not decode ({e}): {line}"
        )),
    }
}

impl Peer {
    fn start(command: &[String], timeout: Duration) -> Result<Self, String> {
        Ok(Self {
            process: HostProcess::start(command)?,
            problems: Vec::new(),
            timeout,
        })
    }

    fn send(&mut self, line: &[u8]) -> Result<(), String> {
        self.process.send(line)
    }

    /// The next message, checked against the decoder and the schemas.
    fn recv(&mut self, schemas: &Schemas) -> Result<Value, String> {
        let line = self.process.recv_line(self.timeout)?;
        inspect(&line, schemas, &mut self.problems);
        serde_json::from_str(&line).map_err(|e| format!("not JSON: {e}"))
    }

    /// Reads until the non-event message answering `req_id`; returns it and its events.
    fn answer(&mut self, req_id: &str, schemas: &Schemas) -> Result<(Value, Vec<Value>), String> {
        let problems = &mut self.problems;
        self.process.answer(req_id, self.timeout, |line| {
            inspect(line, schemas, problems)
        })
    }

    fn handshake(&mut self, schemas: &Schemas) -> Result<Value, String> {
        self.send(br#"{"type":"handshake/req","id":"bb-hs","agent_id":"conformance"}"#)?;
        Ok(self.answer("bb-hs", schemas)?.0)
    }
}

fn field<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn check(name: &str, result: Result<Vec<String>, String>) -> Outcome {
    let name = format!("blackbox/{name}");
    match result {
        Ok(problems) => Outcome::from_problems(name, &problems),
        Err(e) => Outcome::fail(name, e),
    }
}

fn handshake_and_authorization(
    command: &[String],
    schemas: &Schemas,
    timeout: Duration,
) -> Result<Vec<String>, String> {
    let mut peer = Peer::start(command, timeout)?;
    let mut problems = Vec::new();
    peer.send(br#"{"type":"tool/list/req","id":"bb-early"}"#)?;
    let (early, _) = peer.answer("bb-early", schemas)?;
    if field(&early, "type") != "error" || field(&early, "code") != "unauthorized" {
        problems.push(format!(
            "a request before the handshake got {early}, not `unauthorized`"
        ));
    }
    peer.send(br#"{"type":"ping","id":"bb-ping"}"#)?;
    let (pong, _) = peer.answer("bb-ping", schemas)?;
    if field(&pong, "type") != "pong" {
        problems.push(format!("ping got {pong}"));
    }
    let hs = peer.handshake(schemas)?;
    if field(&hs, "type") != "handshake/resp" || hs.get("ok") != Some(&Value::Bool(true)) {
        problems.push(format!("the handshake got {hs}"));
    }
    if field(&hs, "session_id").is_empty() {
        problems.push("the handshake response has no session_id".into());
    }
    problems.append(&mut peer.problems);
    Ok(problems)
}

/// The spec example requests and the response type each expects.
const EXAMPLES: &[(&str, &str)] = &[
    ("spec/tools/list_req", "tool/list/resp"),
    ("spec/tools/call_req", "tool/call/resp"),
    ("spec/skills/discover_req", "skill/discover/resp"),
    ("spec/skills/call_req", "skill/call/resp"),
    ("spec/chains/linear_chain_req", "chain/resp"),
];

fn spec_examples(command: &[String], schemas: &Schemas, timeout: Duration) -> Vec<Outcome> {
    let mut peer = match Peer::start(command, timeout) {
        Ok(p) => p,
        Err(e) => return vec![check("spec_examples", Err(e))],
    };
    if let Err(e) = peer.handshake(schemas) {
        return vec![check("spec_examples", Err(e))];
    }
    let mut out = Vec::new();
    for (fixture, expected) in EXAMPLES {
        let result = (|| {
            let path = crate::fixtures::fixtures_dir().join(format!("{fixture}.json"));
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let request: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
            let id = field(&request, "id").to_owned();
            peer.send(text.trim_end().as_bytes())?;
            let (answer, events) = peer.answer(&id, schemas)?;
            let mut problems = Vec::new();
            let kind = field(&answer, "type");
            if kind != *expected && kind != "error" {
                problems.push(format!(
                    "answered with `{kind}`, expected `{expected}` or `error`"
                ));
            }
            for (i, ev) in events.iter().enumerate() {
                if ev.get("seq").and_then(Value::as_u64) != Some(i as u64) {
                    problems.push(format!("event {i} has seq {:?}", ev.get("seq")));
                }
            }
            problems.append(&mut peer.problems);
            Ok(problems)
        })();
        out.push(check(&format!("answers/{fixture}"), result));
    }
    out
}

/// Malformed lines and the codes they must get.
const MALFORMED: &[(&str, &str, &str)] = &[
    ("truncated_json", "{\"type\":\"ping\"", "parse_error"),
    ("not_an_object", "[1,2,3]", "invalid_message"),
    ("no_type", "{\"id\":\"bb-m3\"}", "invalid_message"),
    (
        "unknown_type",
        "{\"type\":\"bb/nothing/req\",\"id\":\"bb-m4\"}",
        "invalid_message",
    ),
    (
        "version_2",
        "{\"type\":\"ping\",\"id\":\"bb-m5\",\"version\":\"2.0\"}",
        "version_mismatch",
    ),
    (
        "wrong_shape",
        "{\"type\":\"tool/call/req\",\"id\":\"bb-m6\",\"tool_name\":7,\"arguments\":{}}",
        "schema_violation",
    ),
];

fn malformed_lines(command: &[String], schemas: &Schemas, timeout: Duration) -> Vec<Outcome> {
    let mut peer = match Peer::start(command, timeout) {
        Ok(p) => p,
        Err(e) => return vec![check("malformed", Err(e))],
    };
    if let Err(e) = peer.handshake(schemas) {
        return vec![check("malformed", Err(e))];
    }
    let mut out = Vec::new();
    for (name, line, code) in MALFORMED {
        let result = (|| {
            peer.send(line.as_bytes())?;
            let msg = peer.recv(schemas)?;
            let mut problems = Vec::new();
            if field(&msg, "type") != "error" || field(&msg, "code") != *code {
                problems.push(format!("got {msg}, expected an `error` with code `{code}`"));
            }
            problems.append(&mut peer.problems);
            Ok(problems)
        })();
        out.push(check(&format!("malformed/{name}"), result));
    }
    let alive = (|| {
        peer.send(br#"{"type":"ping","id":"bb-alive"}"#)?;
        let (pong, _) = peer.answer("bb-alive", schemas)?;
        Ok(if field(&pong, "type") == "pong" {
            Vec::new()
        } else {
            vec![format!("after malformed lines, ping got {pong}")]
        })
    })();
    out.push(check("malformed/session_survives", alive));
    out
}

fn shutdown_ends_the_host(
    command: &[String],
    schemas: &Schemas,
    timeout: Duration,
) -> Result<Vec<String>, String> {
    let mut peer = Peer::start(command, timeout)?;
    peer.handshake(schemas)?;
    peer.send(br#"{"type":"shutdown","id":"bb-bye","timeout":2}"#)?;
    if peer.process.wait_exit(Duration::from_secs(15)).is_some() {
        return Ok(std::mem::take(&mut peer.problems));
    }
    Ok(vec![
        "the host was still running 15 s after `shutdown`".into(),
    ])
}

/// Runs the black-box suite against the host started by `command`
/// (program and arguments), one [`Outcome`] per check.
pub fn run(command: &[String]) -> Vec<Outcome> {
    run_with(command, ANSWER_TIMEOUT)
}

/// [`run`] with another per-answer timeout.
pub fn run_with(command: &[String], timeout: Duration) -> Vec<Outcome> {
    let schemas = match Schemas::build() {
        Ok(s) => s,
        Err(e) => return vec![Outcome::fail("blackbox/load", e)],
    };
    let mut out = vec![check(
        "handshake_and_authorization",
        handshake_and_authorization(command, &schemas, timeout),
    )];
    out.extend(spec_examples(command, &schemas, timeout));
    out.extend(malformed_lines(command, &schemas, timeout));
    out.push(check(
        "shutdown",
        shutdown_ends_the_host(command, &schemas, timeout),
    ));
    out
}
