//! What every message a peer sends must be, whatever it answers: a compact
//! JSON object with a known `type`, a fresh `id`, `version` 1.x, a `ts` of
//! now, valid against its schema. Every message a session reads is inspected;
//! the problems are kept per rule in a [`WireLog`] that the `core/wire`
//! (and `client/wire`) checks report.

use std::collections::{BTreeMap, HashSet};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::scenario::Transport;
use crate::schemas::Schemas;

/// The rules every message is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Rule {
    /// A JSON object.
    Object,
    /// On a byte stream: compact (no whitespace outside strings).
    Compact,
    /// A non-empty string `type`.
    Type,
    /// A type the specs define.
    KnownType,
    /// A non-empty string `id`.
    Id,
    /// No `id` twice in one session.
    IdUnique,
    /// `version` `1.x`.
    Version,
    /// `ts`: Unix seconds, about now.
    Ts,
    /// Valid against its type's schema.
    Schema,
    /// At most one final answer per request.
    AnswerOnce,
    /// A request's events come before its final answer.
    EventsFirst,
}

/// Problems kept per rule (the first few), and how many messages were seen.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireLog {
    /// Messages inspected.
    pub messages: u64,
    problems: BTreeMap<Rule, (u64, Vec<String>)>,
}

/// Problems kept per rule.
const KEPT: usize = 3;

impl WireLog {
    /// Notes a problem with `rule`.
    pub fn note(&mut self, rule: Rule, what: impl Into<String>) {
        let entry = self.problems.entry(rule).or_default();
        entry.0 += 1;
        if entry.1.len() < KEPT {
            entry.1.push(crate::check::clip(&what.into()));
        }
    }

    /// Adds what `other` saw.
    pub fn merge(&mut self, other: &WireLog) {
        self.messages += other.messages;
        for (rule, (n, first)) in &other.problems {
            let entry = self.problems.entry(*rule).or_default();
            entry.0 += n;
            for what in first {
                if entry.1.len() < KEPT {
                    entry.1.push(what.clone());
                }
            }
        }
    }

    /// `None` when `rule` held for every message; else how often it broke
    /// and the first few cases.
    pub fn broken(&self, rule: Rule) -> Option<String> {
        self.problems
            .get(&rule)
            .map(|(n, first)| format!("{n} message(s), e.g. {}", first.join(" | ")))
    }
}

/// Records, for each `(check id, rule)`, whether every message of `log` kept
/// the rule (failing when there were no messages to look at).
pub fn report_rules(rec: &mut crate::check::Recorder, log: &WireLog, rules: &[(&str, Rule)]) {
    for (id, rule) in rules {
        match log.broken(*rule) {
            None => rec.check(id, log.messages > 0, "messages to inspect", "none"),
            Some(what) => rec.fail(id, format!("every one of {} messages", log.messages), what),
        }
    }
}

/// Whether `text` has whitespace outside JSON strings.
pub fn has_loose_whitespace(text: &str) -> bool {
    let mut in_string = false;
    let mut escaped = false;
    for c in text.chars() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
        } else if c.is_whitespace() {
            return true;
        }
    }
    false
}

/// The time now in Unix seconds.
pub fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}

/// Inspects one message text: notes what breaks a rule in `log` (and its id
/// in `ids`), and gives the JSON object when it is one.
pub fn inspect(
    text: &str,
    transport: Transport,
    schemas: &Schemas,
    log: &mut WireLog,
    ids: &mut HashSet<String>,
) -> Option<Value> {
    log.messages += 1;
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            log.note(Rule::Object, format!("not JSON ({e}): {text}"));
            return None;
        }
    };
    if !value.is_object() {
        log.note(Rule::Object, format!("not an object: {text}"));
        return None;
    }
    if transport == Transport::Stdio && has_loose_whitespace(text) {
        log.note(Rule::Compact, text);
    }
    let ty = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if ty.is_empty() {
        log.note(Rule::Type, format!("no string `type`: {text}"));
    } else if !a2e_proto::Message::TYPES.contains(&ty) {
        log.note(Rule::KnownType, format!("`{ty}`"));
    } else if let Err(errors) = schemas.validate(ty, &value) {
        log.note(Rule::Schema, format!("`{ty}`: {}", errors.join("; ")));
    }
    match value.get("id").and_then(Value::as_str) {
        Some(id) if !id.is_empty() => {
            if !ids.insert(id.to_owned()) {
                log.note(Rule::IdUnique, format!("`{id}` in `{ty}`"));
            }
        }
        _ => log.note(Rule::Id, format!("`{ty}` without a string id: {text}")),
    }
    match value.get("version") {
        Some(Value::String(v)) if v == "1" || v.starts_with("1.") => {}
        Some(other) => log.note(Rule::Version, format!("`{ty}` has version {other}")),
        None => log.note(Rule::Version, format!("`{ty}` has no `version`")),
    }
    match value.get("ts").and_then(Value::as_f64) {
        Some(ts) if (ts - now_secs()).abs() < 86_400.0 => {}
        Some(ts) => log.note(Rule::Ts, format!("`{ty}` has ts {ts}, not about now")),
        None => log.note(Rule::Ts, format!("`{ty}` has no numeric `ts`")),
    }
    Some(value)
}

/// The string at JSON pointer `ptr` (`""` when absent or not a string).
pub fn s<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or_default()
}

/// The value at JSON pointer `ptr` (`null` when absent).
pub fn at<'a>(v: &'a Value, ptr: &str) -> &'a Value {
    static NULL: Value = Value::Null;
    v.pointer(ptr).unwrap_or(&NULL)
}

/// `v` compact, clipped for a report.
pub fn show(v: &Value) -> String {
    crate::check::clip(&v.to_string())
}

/// A message's type.
pub fn ty(v: &Value) -> &str {
    s(v, "/type")
}

/// Whether a message type is an event (`…/event`).
pub fn is_event_type(ty: &str) -> bool {
    ty == "invoke/event" || ty.ends_with("/event")
}

/// Reads of untrusted JSON that cannot panic: a missing key or index, or a
/// value of another kind, reads as `null` (as `value["key"]` does, without
/// the indexing the crate denies).
pub trait Field {
    /// The member `index` (a key or an array index), or `null`.
    fn field<I: serde_json::value::Index>(&self, index: I) -> &Value;
}

impl Field for Value {
    fn field<I: serde_json::value::Index>(&self, index: I) -> &Value {
        static NULL: Value = Value::Null;
        self.get(index).unwrap_or(&NULL)
    }
}

/// Sets `key` of the object `v` (nothing when `v` is no object).
pub fn set(v: &mut Value, key: &str, value: Value) {
    if let Some(map) = v.as_object_mut() {
        map.insert(key.to_owned(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loose_whitespace_outside_strings_only() {
        assert!(!has_loose_whitespace(r#"{"a":"x y","b":[1,2]}"#));
        assert!(has_loose_whitespace(r#"{"a": 1}"#));
        assert!(!has_loose_whitespace(r#"{"a":"\" x"}"#));
    }

    #[test]
    fn inspect_notes_each_broken_rule() {
        let schemas = Schemas::build().unwrap();
        let mut log = WireLog::default();
        let mut ids = HashSet::new();
        let good = format!(
            r#"{{"type":"pong","id":"a","version":"1.0","ts":{},"req_id":"p","uptime_seconds":1.0}}"#,
            now_secs()
        );
        assert!(inspect(&good, Transport::Stdio, &schemas, &mut log, &mut ids).is_some());
        assert_eq!(log.broken(Rule::Schema), None);
        inspect(&good, Transport::Stdio, &schemas, &mut log, &mut ids);
        assert!(log.broken(Rule::IdUnique).is_some());
        inspect(
            r#"{"type": "x/y", "id":"b","version":"2.0","ts":1}"#,
            Transport::Stdio,
            &schemas,
            &mut log,
            &mut ids,
        );
        for rule in [Rule::Compact, Rule::KnownType, Rule::Version, Rule::Ts] {
            assert!(log.broken(rule).is_some(), "{rule:?}");
        }
        assert!(inspect("[1]", Transport::Ws, &schemas, &mut log, &mut ids).is_none());
        assert!(log.broken(Rule::Object).is_some());
    }
}
