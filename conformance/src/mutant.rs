//! A host that breaks one rule: `a2e-conformance mutant --break RULE -- CMD…`
//! runs the host `CMD…` behind a proxy on stdio that changes the messages
//! one rule is about, and nothing else. The mutation tests run the suite
//! against it and expect exactly that rule's checks to fail.

use std::collections::HashMap;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Value, json};

use crate::link::{Incoming, Link, stdio};
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
}

impl Mutation {
    /// Every mutation with its name.
    pub const ALL: &'static [(&'static str, Mutation)] = &[
        ("seq-from-1", Mutation::SeqFromOne),
        ("refusal-in-band", Mutation::RefusalInBand),
        ("error-without-req-id", Mutation::ErrorWithoutReqId),
        ("skill-streaming-default-off", Mutation::SkillStreamingOff),
        ("chain-streaming-default-off", Mutation::ChainStreamingOff),
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
                    msg["seq"] = json!(seq + 1);
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
            _ => msg,
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

        let e = json!({"type": "error", "req_id": "r", "code": "invalid_message"});
        assert!(
            Mutation::ErrorWithoutReqId
                .to_agent(e, &memory)
                .get("req_id")
                .is_none()
        );
    }
}
