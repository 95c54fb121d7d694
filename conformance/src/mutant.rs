//! A host that breaks one rule: `a2e-conformance mutant --break RULE -- CMD…`
//! runs the host `CMD…` behind a proxy on stdio that changes the messages
//! one rule is about, and nothing else. The mutation tests run the suite
//! against it and expect exactly that rule's checks to fail (for the rules
//! of the fixture profile: its tools' definitions and results as declared).

use std::collections::HashMap;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Value, json};

use crate::link::{Incoming, Link, stdio};
use crate::profile::{ECHO, FAIL, SLEEP};
use crate::wire::{is_event_type, s, ty};

/// A rule to break.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutation {
    /// Events count from 1 instead of 0.
    SeqFromOne,
    /// A refused tool call is answered in-band (`tool/call/resp`, success
    /// false) instead of with an `error` message.
    RefusalInBand,
    /// `error`s with code `invalid_message` lose their `req_id`.
    ErrorWithoutReqId,
    /// `skill/call/req`'s `streaming` defaults to false.
    SkillStreamingOff,
    /// `chain/req`'s `streaming` defaults to false.
    ChainStreamingOff,
    /// The echo tool's output comes back wrapped: `{"result": …}`.
    EchoWrapsOutput,
    /// The echo tool's definition has its `idempotent` flag flipped.
    EchoFlagFlipped,
    /// The sleeping tool is left out of every tool list (calls still run):
    /// a declared fixture missing while `tools` is accepted.
    SleepUnlisted,
    /// The echo tool's results say `truncated: true`.
    EchoTruncated,
    /// Every tool result reports `duration_ms: 0`.
    DurationZero,
    /// The echo tool's parameter `text` is listed as not required.
    EchoTextOptional,
    /// The echo tool is listed without its tags.
    EchoTagsDropped,
    /// Every tool is listed with version `2.0.0`.
    VersionChanged,
    /// Every tool is listed in the toolkit `other`.
    ToolkitOther,
    /// Every tool's `streaming` flag is listed as the string `"true"`.
    StreamingAsString,
    /// Every tool result's `exit_code` is the string `"0"`.
    ExitCodeString,
    /// The failing tool's result loses its message.
    FailureMessageLost,
    /// Every tool list is refused with an `error`, though `tools` was
    /// accepted.
    ListRefused,
}

impl Mutation {
    /// Every mutation with its name.
    pub const ALL: &'static [(&'static str, Mutation)] = &[
        ("seq-from-1", Mutation::SeqFromOne),
        ("refusal-in-band", Mutation::RefusalInBand),
        ("error-without-req-id", Mutation::ErrorWithoutReqId),
        ("skill-streaming-default-off", Mutation::SkillStreamingOff),
        ("chain-streaming-default-off", Mutation::ChainStreamingOff),
        ("echo-wraps-output", Mutation::EchoWrapsOutput),
        ("echo-flag-flipped", Mutation::EchoFlagFlipped),
        ("sleep-unlisted", Mutation::SleepUnlisted),
        ("echo-truncated", Mutation::EchoTruncated),
        ("duration-zero", Mutation::DurationZero),
        ("echo-text-optional", Mutation::EchoTextOptional),
        ("echo-tags-dropped", Mutation::EchoTagsDropped),
        ("version-changed", Mutation::VersionChanged),
        ("toolkit-other", Mutation::ToolkitOther),
        ("streaming-as-string", Mutation::StreamingAsString),
        ("exit-code-string", Mutation::ExitCodeString),
        ("failure-message-lost", Mutation::FailureMessageLost),
        ("list-refused", Mutation::ListRefused),
    ];

    /// The mutation named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
    }
}

/// What the proxy remembers of the agent's requests.
#[derive(Debug, Default)]
struct Memory {
    /// Tool call id → tool name.
    calls: HashMap<String, String>,
}

impl Mutation {
    /// Changes a message from the agent on its way to the host.
    fn to_host(self, mut msg: Value, memory: &mut Memory) -> Value {
        let t = ty(&msg).to_owned();
        if t == "tool/call/req" {
            memory
                .calls
                .insert(s(&msg, "/id").to_owned(), s(&msg, "/tool_name").to_owned());
        }
        let default_off = match self {
            Self::SkillStreamingOff => t == "skill/call/req",
            Self::ChainStreamingOff => t == "chain/req",
            _ => false,
        };
        if default_off && let Some(obj) = msg.as_object_mut() {
            obj.entry("streaming").or_insert(json!(false));
        }
        msg
    }

    /// Changes a message from the host on its way to the agent.
    fn to_agent(self, mut msg: Value, memory: &Memory) -> Value {
        let t = ty(&msg).to_owned();
        match self {
            Self::SeqFromOne if is_event_type(&t) => {
                if let Some(seq) = msg.get("seq").and_then(Value::as_u64) {
                    crate::wire::set(&mut msg, "seq", json!(seq + 1));
                }
                msg
            }
            Self::RefusalInBand if t == "error" => {
                let req_id = s(&msg, "/req_id").to_owned();
                match memory.calls.get(&req_id) {
                    Some(tool) => json!({
                        "type": "tool/call/resp", "id": s(&msg, "/id"), "version": "1.0",
                        "ts": msg.get("ts").cloned().unwrap_or(json!(0)), "req_id": req_id,
                        "data": {"success": false, "tool_name": tool, "error": s(&msg, "/message"),
                                 "error_code": s(&msg, "/code"), "duration_ms": 0}
                    }),
                    None => msg,
                }
            }
            Self::ErrorWithoutReqId if t == "error" && s(&msg, "/code") == "invalid_message" => {
                if let Some(obj) = msg.as_object_mut() {
                    obj.remove("req_id");
                }
                msg
            }
            Self::EchoWrapsOutput
            | Self::EchoTruncated
            | Self::DurationZero
            | Self::ExitCodeString
            | Self::FailureMessageLost
                if t == "tool/call/resp" =>
            {
                self.result(msg)
            }
            Self::ListRefused if t == "tool/list/resp" => json!({
                "type": "error", "id": s(&msg, "/id"), "version": "1.0",
                "ts": msg.get("ts").cloned().unwrap_or(json!(0)), "req_id": s(&msg, "/req_id"),
                "code": "runtime_error", "message": "the tool list is not available"
            }),
            Self::EchoFlagFlipped
            | Self::SleepUnlisted
            | Self::EchoTextOptional
            | Self::EchoTagsDropped
            | Self::VersionChanged
            | Self::ToolkitOther
            | Self::StreamingAsString
                if t == "tool/list/resp" =>
            {
                self.listing(msg)
            }
            _ => msg,
        }
    }

    /// Changes a `tool/call/resp`'s result.
    fn result(self, mut msg: Value) -> Value {
        let echo = s(&msg, "/data/tool_name") == ECHO;
        let failed = s(&msg, "/data/tool_name") == FAIL;
        let Some(data) = msg.get_mut("data").and_then(Value::as_object_mut) else {
            return msg;
        };
        match self {
            Self::EchoWrapsOutput if echo => {
                let out = data.remove("data").unwrap_or(Value::Null);
                data.insert("data".into(), json!({ "result": out }));
            }
            Self::EchoTruncated if echo => {
                data.insert("truncated".into(), json!(true));
            }
            Self::DurationZero => {
                data.insert("duration_ms".into(), json!(0));
            }
            Self::ExitCodeString => {
                data.insert("exit_code".into(), json!("0"));
            }
            Self::FailureMessageLost if failed => {
                data.insert("error".into(), json!("failed"));
            }
            _ => {}
        }
        msg
    }

    /// Changes a `tool/list/resp`'s definitions.
    fn listing(self, mut msg: Value) -> Value {
        let Some(tools) = msg.get_mut("tools").and_then(Value::as_array_mut) else {
            return msg;
        };
        if self == Self::SleepUnlisted {
            tools.retain(|t| t.get("name") != Some(&json!(SLEEP)));
        }
        for def in tools.iter_mut() {
            self.definition(def);
        }
        msg
    }

    /// Changes one tool definition.
    fn definition(self, def: &mut Value) {
        let echo = def.get("name") == Some(&json!(ECHO));
        match self {
            Self::EchoFlagFlipped if echo => {
                let was = def
                    .get("idempotent")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                crate::wire::set(def, "idempotent", json!(!was));
            }
            Self::EchoTextOptional if echo => {
                let params = def
                    .get_mut("input_parameters")
                    .and_then(Value::as_array_mut);
                for p in params.into_iter().flatten() {
                    if p.get("name") == Some(&json!("text")) {
                        crate::wire::set(p, "required", json!(false));
                    }
                }
            }
            Self::EchoTagsDropped if echo => crate::wire::set(def, "tags", json!([])),
            Self::VersionChanged => crate::wire::set(def, "version", json!("2.0.0")),
            Self::ToolkitOther => crate::wire::set(def, "toolkit", json!("other")),
            Self::StreamingAsString => crate::wire::set(def, "streaming", json!("true")),
            _ => {}
        }
    }
}

/// Forwards between this process's stdio and the host until either side ends.
async fn proxy(mutation: Mutation, mut agent: Link, mut host: Link) {
    let mut memory = Memory::default();
    loop {
        tokio::select! {
            got = agent.recv(Duration::from_secs(3600)) => match got {
                Some(Incoming::Text(text)) => {
                    let out = match serde_json::from_str::<Value>(&text) {
                        Ok(v) if v.is_object() => mutation.to_host(v, &mut memory).to_string(),
                        _ => text,
                    };
                    if host.send(out).await.is_err() {
                        break;
                    }
                }
                Some(Incoming::Garbage(_)) | None => {}
                Some(Incoming::Closed(_)) => {
                    host.close();
                    // The host drains and exits on end of input.
                    let _ = host.wait_exit(Duration::from_secs(35)).await;
                    break;
                }
            },
            got = host.recv(Duration::from_secs(3600)) => match got {
                Some(Incoming::Text(text)) => {
                    let out = match serde_json::from_str::<Value>(&text) {
                        Ok(v) if v.is_object() => mutation.to_agent(v, &memory).to_string(),
                        _ => text,
                    };
                    if agent.send(out).await.is_err() {
                        break;
                    }
                }
                Some(Incoming::Garbage(_)) | None => {}
                Some(Incoming::Closed(_)) => break,
            },
        }
    }
    agent.close();
    // Let the writer flush what is queued.
    tokio::time::sleep(Duration::from_millis(50)).await;
}

/// `a2e-conformance mutant`.
pub async fn main(rule: &str, command: &[String]) -> ExitCode {
    let Some(mutation) = Mutation::parse(rule) else {
        let known: Vec<&str> = Mutation::ALL.iter().map(|(n, _)| *n).collect();
        eprintln!(
            "a2e-conformance: unknown rule `{rule}` (one of {})",
            known.join(", ")
        );
        return ExitCode::from(2);
    };
    let host = match stdio::spawn_in_group(command, stdio::Stderr::Inherit) {
        Ok(link) => link,
        Err(e) => {
            eprintln!("a2e-conformance: {e}");
            return ExitCode::from(2);
        }
    };
    proxy(mutation, stdio::own(), host).await;
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mutation_changes_only_its_messages() {
        let mut memory = Memory::default();
        let call = json!({"type": "tool/call/req", "id": "c1", "tool_name": "t", "arguments": {}});
        Mutation::RefusalInBand.to_host(call, &mut memory);
        let refused = json!({"type": "error", "id": "e", "req_id": "c1", "code": "unknown_tool", "message": "no"});
        let got = Mutation::RefusalInBand.to_agent(refused.clone(), &memory);
        assert_eq!(got["type"], "tool/call/resp");
        assert_eq!(got["data"]["error_code"], "unknown_tool");
        let other = json!({"type": "error", "id": "e", "req_id": "x", "code": "unknown_tool"});
        assert_eq!(
            Mutation::RefusalInBand.to_agent(other.clone(), &memory),
            other
        );

        let ev = json!({"type": "tool/event", "req_id": "c1", "seq": 0});
        assert_eq!(Mutation::SeqFromOne.to_agent(ev, &memory)["seq"], 1);

        let skill = json!({"type": "skill/call/req", "id": "s", "name": "k", "arguments": {}});
        assert_eq!(
            Mutation::SkillStreamingOff.to_host(skill, &mut memory)["streaming"],
            false
        );
        let explicit = json!({"type": "skill/call/req", "id": "s", "streaming": true});
        assert_eq!(
            Mutation::SkillStreamingOff.to_host(explicit, &mut memory)["streaming"],
            true
        );

        let echoed = json!({"type": "tool/call/resp", "req_id": "c1",
                            "data": {"success": true, "tool_name": ECHO, "data": {"text": "a"}, "duration_ms": 4}});
        let got = Mutation::EchoWrapsOutput.to_agent(echoed.clone(), &memory);
        assert_eq!(got["data"]["data"], json!({"result": {"text": "a"}}));
        let got = Mutation::EchoTruncated.to_agent(echoed.clone(), &memory);
        assert_eq!(got["data"]["truncated"], true);
        assert_eq!(
            Mutation::DurationZero.to_agent(echoed, &memory)["data"]["duration_ms"],
            0
        );
        let slept = json!({"type": "tool/call/resp", "data": {"tool_name": SLEEP, "data": {}}});
        assert_eq!(
            Mutation::EchoWrapsOutput.to_agent(slept.clone(), &memory),
            slept
        );

        let listed = json!({"type": "tool/list/resp", "tools": [
            {"name": ECHO, "idempotent": true}, {"name": SLEEP}]});
        let got = Mutation::EchoFlagFlipped.to_agent(listed.clone(), &memory);
        assert_eq!(got["tools"][0]["idempotent"], false);
        assert_eq!(got["tools"][1], listed["tools"][1]);
        let got = Mutation::SleepUnlisted.to_agent(listed, &memory);
        assert_eq!(got["tools"], json!([{"name": ECHO, "idempotent": true}]));

        let listed = json!({"type": "tool/list/resp", "tools": [{"name": ECHO, "tags": ["t"],
            "input_parameters": [{"name": "text", "required": true}]}]});
        let got = Mutation::EchoTextOptional.to_agent(listed.clone(), &memory);
        assert_eq!(got["tools"][0]["input_parameters"][0]["required"], false);
        let got = Mutation::EchoTagsDropped.to_agent(listed.clone(), &memory);
        assert_eq!(got["tools"][0]["tags"], json!([]));
        let got = Mutation::StreamingAsString.to_agent(listed, &memory);
        assert_eq!(got["tools"][0]["streaming"], "true");
        let failed = json!({"type": "tool/call/resp", "data": {"tool_name": FAIL, "error": "why"}});
        let got = Mutation::FailureMessageLost.to_agent(failed, &memory);
        assert_eq!(got["data"]["error"], "failed");

        let e = json!({"type": "error", "req_id": "r", "code": "invalid_message"});
        assert!(
            Mutation::ErrorWithoutReqId
                .to_agent(e, &memory)
                .get("req_id")
                .is_none()
        );
    }
}
