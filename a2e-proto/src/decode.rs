//! Decoding a message from bytes, with errors that map to wire codes.

use serde::Deserialize;
use serde_json::Value;

use crate::codes::ErrorCode;
use crate::core::ErrorMessage;
use crate::message::Message;

/// Default largest message: 16 MiB.
pub const DEFAULT_MAX_BYTES: usize = 16 * 1024 * 1024;
/// Default deepest nesting of arrays and objects. The JSON parser itself stops at 128.
pub const DEFAULT_MAX_DEPTH: usize = 64;

/// Limits applied by [`decode_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Largest message in bytes.
    pub max_bytes: usize,
    /// Deepest nesting of arrays and objects (at most 128).
    pub max_depth: usize,
    /// Keep messages of unknown `type` as [`Message::Unknown`] (true) or refuse them.
    pub allow_unknown: bool,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        Self {
            max_bytes: DEFAULT_MAX_BYTES,
            max_depth: DEFAULT_MAX_DEPTH,
            allow_unknown: true,
        }
    }
}

/// What was wrong with the bytes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// Over the size limit.
    #[error("message of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// Size of the message.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// Nested deeper than the limit.
    #[error("message nests deeper than {limit} levels")]
    TooDeep {
        /// The limit.
        limit: usize,
    },
    /// Not UTF-8.
    #[error("not valid UTF-8: invalid byte at offset {offset}")]
    NotUtf8 {
        /// Offset of the first invalid byte.
        offset: usize,
    },
    /// Not JSON.
    #[error("not valid JSON: {0}")]
    NotJson(String),
    /// JSON, but not a message (not an object, no string `type`).
    #[error("not a message: {0}")]
    NotMessage(String),
    /// A `type` this crate does not know (only when unknown types are refused).
    #[error("unknown message type `{0}`")]
    UnknownType(String),
    /// A major version other than 1.
    #[error("unsupported protocol version `{0}`: this side speaks 1.x")]
    VersionMismatch(String),
    /// A known type with a wrong shape.
    #[error("{path}: {message}")]
    Schema {
        /// The message type.
        msg_type: String,
        /// JSON path of the offending field, e.g. `nodes[2].kind` (`.` for the message itself).
        path: String,
        /// What was expected.
        message: String,
    },
}

/// A message that could not be decoded, with the id of the message when it could be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{kind}")]
pub struct DecodeError {
    /// What went wrong.
    pub kind: DecodeErrorKind,
    /// The offending message's `id`, or empty.
    pub req_id: String,
}

impl DecodeError {
    fn new(kind: DecodeErrorKind) -> Self {
        Self {
            kind,
            req_id: String::new(),
        }
    }

    /// The wire error code.
    pub fn code(&self) -> ErrorCode {
        match self.kind {
            DecodeErrorKind::NotUtf8 { .. } | DecodeErrorKind::NotJson(_) => ErrorCode::PARSE_ERROR,
            DecodeErrorKind::TooLarge { .. }
            | DecodeErrorKind::TooDeep { .. }
            | DecodeErrorKind::NotMessage(_)
            | DecodeErrorKind::UnknownType(_) => ErrorCode::INVALID_MESSAGE,
            DecodeErrorKind::VersionMismatch(_) => ErrorCode::VERSION_MISMATCH,
            DecodeErrorKind::Schema { .. } => ErrorCode::SCHEMA_VIOLATION,
        }
    }

    /// The JSON path of a schema violation.
    pub fn path(&self) -> Option<&str> {
        match &self.kind {
            DecodeErrorKind::Schema { path, .. } => Some(path),
            _ => None,
        }
    }

    /// The `error` message that answers the offending line.
    pub fn to_error_message(&self) -> ErrorMessage {
        let mut msg = ErrorMessage::new(self.req_id.clone(), self.code(), self.to_string());
        if let DecodeErrorKind::Schema { msg_type, path, .. } = &self.kind {
            msg.detail
                .insert("type".into(), Value::String(msg_type.clone()));
            msg.detail
                .insert("path".into(), Value::String(path.clone()));
        }
        msg
    }
}

/// Decodes one message with the default limits; unknown types are kept.
///
/// ```
/// use a2e_proto::{decode, ErrorCode, Message};
/// let msg = decode(br#"{"type":"ping","id":"p1"}"#).unwrap();
/// assert!(matches!(msg, Message::Ping(_)));
/// let err = decode(br#"{"type":"tool/call/req","tool_name":5,"arguments":{}}"#).unwrap_err();
/// assert_eq!(err.code(), ErrorCode::SCHEMA_VIOLATION);
/// assert_eq!(err.path(), Some("tool_name"));
/// ```
pub fn decode(bytes: &[u8]) -> Result<Message, DecodeError> {
    decode_with(bytes, &DecodeOptions::default())
}

/// The envelope fields read before the body.
#[derive(Deserialize)]
struct Peek {
    #[serde(rename = "type", default)]
    msg_type: Option<Value>,
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    version: Option<Value>,
    #[serde(default)]
    a2e: Option<Value>,
}

/// Decodes one message with explicit limits.
pub fn decode_with(bytes: &[u8], options: &DecodeOptions) -> Result<Message, DecodeError> {
    if bytes.len() > options.max_bytes {
        return Err(DecodeError::new(DecodeErrorKind::TooLarge {
            size: bytes.len(),
            limit: options.max_bytes,
        }));
    }
    // Checked once here: the parses below read a `&str`, which serde_json
    // does not validate again string by string.
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            return Err(DecodeError::new(DecodeErrorKind::NotUtf8 {
                offset: e.valid_up_to(),
            }));
        }
    };
    check_depth(bytes, options.max_depth)?;

    // Most messages name their `type` first: then the body is parsed once,
    // without the envelope pass, which would read the whole line a second
    // time. Anything else, or any failure, takes the full path below, which
    // gives the error.
    if let Some(msg) = leading_type(bytes).and_then(|t| Message::parse_known_fast(t, text))
        && msg.version().split('.').next() == Some("1")
    {
        return Ok(msg);
    }

    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first.is_some_and(|b| *b != b'{') {
        // Parse anyway so that broken JSON is still a parse error.
        return Err(DecodeError::new(
            match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                Ok(_) => DecodeErrorKind::NotMessage("expected a JSON object".into()),
                Err(e) => DecodeErrorKind::NotJson(e.to_string()),
            },
        ));
    }
    let peek: Peek = serde_json::from_str(text).map_err(|e| {
        DecodeError::new(match e.classify() {
            serde_json::error::Category::Data => {
                DecodeErrorKind::NotMessage(strip_position(&e.to_string()))
            }
            _ => DecodeErrorKind::NotJson(e.to_string()),
        })
    })?;
    let req_id = match &peek.id {
        Some(Value::String(id)) => id.clone(),
        _ => String::new(),
    };
    let fail = |kind| DecodeError {
        kind,
        req_id: req_id.clone(),
    };
    let msg_type = match peek.msg_type {
        Some(Value::String(t)) => t,
        Some(other) => {
            return Err(fail(DecodeErrorKind::NotMessage(format!(
                "`type` must be a string, not {}",
                json_kind(&other)
            ))));
        }
        None => return Err(fail(DecodeErrorKind::NotMessage("missing `type`".into()))),
    };
    if let Some(Value::String(version)) = peek.version.as_ref().or(peek.a2e.as_ref()) {
        let major = version.split('.').next().unwrap_or_default();
        if major != "1" {
            return Err(fail(DecodeErrorKind::VersionMismatch(version.clone())));
        }
    }
    match Message::parse_known(&msg_type, text) {
        Some(Ok(message)) => Ok(message),
        Some(Err(e)) => {
            let path = e.path().to_string();
            Err(fail(DecodeErrorKind::Schema {
                msg_type,
                path,
                message: strip_position(&e.into_inner().to_string()),
            }))
        }
        None if options.allow_unknown => match serde_json::from_str(text) {
            Ok(map) => Ok(Message::Unknown(map)),
            Err(e) => Err(fail(DecodeErrorKind::NotJson(e.to_string()))),
        },
        None => Err(fail(DecodeErrorKind::UnknownType(msg_type))),
    }
}

/// What kind of JSON value `value` is, for messages: `null`, `a boolean`,
/// `a number`, `a string`, `an array`, `an object`.
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Longest error message kept: serde quotes the offending value in full, and a
/// value may be megabytes long.
pub const MAX_ERROR_MESSAGE_BYTES: usize = 1024;

/// serde_json appends " at line L column C"; on a one-line message the path says
/// more. The rest is cut to [`MAX_ERROR_MESSAGE_BYTES`] (on a character boundary).
fn strip_position(message: &str) -> String {
    let message = match message.rfind(" at line ") {
        Some(at) => message.get(..at).unwrap_or(message),
        None => message,
    };
    if message.len() <= MAX_ERROR_MESSAGE_BYTES {
        return message.to_owned();
    }
    let mut cut = MAX_ERROR_MESSAGE_BYTES;
    while !message.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "{}… ({} bytes in all)",
        message.get(..cut).unwrap_or_default(),
        message.len()
    )
}

/// The `type` of an object whose first key is `type`, when its value is a
/// string without escapes.
fn leading_type(bytes: &[u8]) -> Option<&str> {
    fn skip_ws(b: &[u8]) -> &[u8] {
        let start = b
            .iter()
            .position(|c| !c.is_ascii_whitespace())
            .unwrap_or(b.len());
        b.get(start..).unwrap_or_default()
    }
    let rest = skip_ws(bytes).strip_prefix(b"{")?;
    let rest = skip_ws(rest).strip_prefix(b"\"type\"")?;
    let rest = skip_ws(rest).strip_prefix(b":")?;
    let rest = skip_ws(rest).strip_prefix(b"\"")?;
    let end = rest.iter().position(|c| *c == b'"' || *c == b'\\')?;
    if rest.get(end) != Some(&b'"') {
        return None;
    }
    std::str::from_utf8(rest.get(..end)?).ok()
}

/// Refuses nesting deeper than `limit` without building anything.
///
/// A string is skipped to its closing quote in a loop of its own (most of a
/// line's bytes are in strings), without the state of the structure around it.
fn check_depth(bytes: &[u8], limit: usize) -> Result<(), DecodeError> {
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        i += 1;
        match b {
            b'"' => i = string_end(bytes, i),
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return Err(DecodeError::new(DecodeErrorKind::TooDeep { limit }));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// The index after the quote that closes the string whose body starts at
/// `start` (the line's length if it never closes).
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start;
    while let Some(&c) = bytes.get(i) {
        i += 1;
        match c {
            b'"' => return i,
            // An escape: skip the escaped byte (it may be a quote).
            b'\\' => i += 1,
            _ => {}
        }
    }
    bytes.len()
}

/// A message deserializes through [`decode`], so that a `Message` inside another
/// document gets the same checks and errors as one read from the wire.
impl<'de> serde::Deserialize<'de> for Message {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        let bytes = serde_json::to_vec(&value).map_err(serde::de::Error::custom)?;
        decode(&bytes).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_leading_type_is_read_only_when_it_is_plain_and_first() {
        assert_eq!(
            leading_type(br#" { "type" : "ping","id":"p"}"#),
            Some("ping")
        );
        assert_eq!(leading_type(br#"{"id":"p","type":"ping"}"#), None);
        assert_eq!(leading_type(br#"{"type":"pi\u006eg"}"#), None);
        assert_eq!(leading_type(br#"{"type":5}"#), None);
        assert_eq!(leading_type(br#"{"type":"ping"#), None);
        assert_eq!(leading_type(b"[]"), None);
    }

    #[test]
    fn depth_counts_brackets_outside_strings_only() {
        let deep = |limit| check_depth(br#"{"a":[{"b":[1]}]}"#, limit).is_ok();
        assert!(deep(4));
        assert!(!deep(3));
        // Brackets inside strings do not count, escaped quotes do not end a
        // string, an escaped backslash does not escape the closing quote.
        let tricky = br#"{"a":"[[[{{\"[[","b":"\\","c":"{\\\"[","d":[]}"#;
        assert!(check_depth(tricky, 2).is_ok());
        assert!(check_depth(tricky, 1).is_err());
        // An unclosed string hides the rest; a lone trailing backslash is fine.
        assert!(check_depth(br#"{"a":"[[[[\"#, 1).is_ok());
        assert!(check_depth(br#"[[["\\"[["#, 4).is_err());
        assert_eq!(string_end(br#""ab\"c"x"#, 1), 7);
        assert_eq!(string_end(br#""ab\\"x"#, 1), 6);
        assert_eq!(string_end(br#""ab"#, 1), 3);
    }

    #[test]
    fn the_one_pass_path_and_the_full_path_agree() {
        // Each line once with `type` first (one pass) and once with it last
        // (the envelope pass first): the same message or the same error.
        let bodies = [
            r#""id":"p1","chain_id":"c","version":"1.0","ts":1.5"#,
            r#""id":"p2","chain_id":"c","a2e":"1.2","ts":2"#,
            r#""id":"p3","chain_id":"c","version":"2.0","ts":3"#,
            r#""id":"p4","chain_id":"c","a2e":"1.0","version":"1.0","ts":4"#,
            r#""id":"p5","chain_id":"c","ts":"soon""#,
            r#""id":"p6","chain_id":"c","unknown_field":[1,{"x":null}],"ts":6"#,
        ];
        for t in [
            "ping",
            "tool/call/req",
            "chain/req",
            "chain/attach",
            "dag/req",
            "no/such/type",
        ] {
            for body in bodies {
                let first = format!(r#"{{"type":"{t}",{body}}}"#);
                let last = format!(r#"{{{body},"type":"{t}"}}"#);
                let (a, b) = (decode(first.as_bytes()), decode(last.as_bytes()));
                match (&a, &b) {
                    (Ok(x), Ok(y)) => assert_eq!(x, y, "{first}"),
                    (Err(x), Err(y)) => {
                        assert_eq!(
                            (x.code(), x.to_string()),
                            (y.code(), y.to_string()),
                            "{first}"
                        );
                        assert_eq!(x.req_id, y.req_id, "{first}");
                    }
                    _ => panic!("{first}: {a:?} but {last}: {b:?}"),
                }
            }
        }
        // A version 2 message is refused on either path, naming its id.
        let err = decode(br#"{"type":"ping","id":"v2","version":"2.0"}"#).unwrap_err();
        assert_eq!(err.code(), ErrorCode::VERSION_MISMATCH);
        assert_eq!(err.req_id, "v2");
    }

    #[test]
    fn schema_errors_name_the_path() {
        let line = br#"{"type":"chain/req","nodes":[{"node_id":"a","kind":"tool"},{"node_id":"b","kind":"tool"},{"node_id":"c","kind":5}]}"#;
        let err = decode(line).unwrap_err();
        assert_eq!(err.code(), ErrorCode::SCHEMA_VIOLATION);
        assert_eq!(err.path(), Some("nodes[2].kind"));
        assert!(
            err.to_string()
                .starts_with("nodes[2].kind: invalid type: integer `5`, expected a string"),
            "{err}"
        );
    }

    #[test]
    fn a_chain_requests_nodes_take_their_defaults_and_their_errors_name_the_node() {
        use crate::{ChainNode, NodeKind};
        let line = br#"{"type":"chain/req","id":"c","nodes":[{"node_id":"a","kind":"tool","extra":{"x":[1]}},{"kind":"branch","node_id":"b","on_error":"skip"}]}"#;
        let Message::ChainRequest(req) = decode(line).unwrap() else {
            panic!()
        };
        assert_eq!(req.nodes[0], ChainNode::new("a", NodeKind::TOOL, ""));
        assert_eq!(req.nodes[1].kind, NodeKind::BRANCH);
        assert_eq!(req.nodes[1].on_error, "skip");
        for (nodes, path, message) in [
            (
                r#"[{"kind":"tool"}]"#,
                "nodes[0]",
                "missing field `node_id`",
            ),
            (
                r#"[{"node_id":"a","kind":"tool"},{"node_id":"b"}]"#,
                "nodes[1]",
                "missing field `kind`",
            ),
            (
                r#"[{"node_id":"a","kind":"tool","name":"x","name":"y"}]"#,
                "nodes[0]",
                "duplicate field `name`",
            ),
            (
                r#"[{"node_id":"a","kind":"tool","input":[]}]"#,
                "nodes[0].input",
                "invalid type: sequence, expected a map",
            ),
            (r#"{}"#, "nodes", "invalid type: map, expected a sequence"),
        ] {
            let line = format!(r#"{{"type":"chain/req","id":"c","nodes":{nodes}}}"#);
            let err = decode(line.as_bytes()).unwrap_err();
            assert_eq!(err.code(), ErrorCode::SCHEMA_VIOLATION, "{line}");
            assert_eq!(err.req_id, "c");
            assert_eq!(err.path(), Some(path), "{line}");
            assert_eq!(err.to_string(), format!("{path}: {message}"), "{line}");
        }
        // A node's input nested past the limit is refused before it is read.
        let deep = |levels: usize| {
            let input = format!("{}1{}", r#"{"a":"#.repeat(levels), "}".repeat(levels));
            format!(
                r#"{{"type":"chain/req","nodes":[{{"node_id":"a","kind":"tool","input":{input}}}]}}"#
            )
        };
        let options = DecodeOptions {
            max_depth: 8,
            ..DecodeOptions::default()
        };
        assert!(decode_with(deep(5).as_bytes(), &options).is_ok());
        let err = decode_with(deep(6).as_bytes(), &options).unwrap_err();
        assert_eq!(err.code(), ErrorCode::INVALID_MESSAGE);
    }

    #[test]
    fn missing_required_field_is_a_schema_violation() {
        let err = decode(br#"{"type":"tool/call/req","id":"x","arguments":{}}"#).unwrap_err();
        assert_eq!(err.code(), ErrorCode::SCHEMA_VIOLATION);
        assert_eq!(err.req_id, "x");
        assert!(
            err.to_string().contains("missing field `tool_name`"),
            "{err}"
        );
    }

    #[test]
    fn version_alias_and_mismatch() {
        let msg = decode(br#"{"type":"ping","a2e":"1.2"}"#).unwrap();
        let Message::Ping(ping) = msg else { panic!() };
        assert_eq!(ping.version, "1.2");
        let err = decode(br#"{"type":"ping","version":"2.0"}"#).unwrap_err();
        assert_eq!(err.code(), ErrorCode::VERSION_MISMATCH);
    }

    #[test]
    fn depth_and_size_limits() {
        let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert_eq!(
            decode(deep.as_bytes()).unwrap_err().code(),
            ErrorCode::INVALID_MESSAGE
        );
        let opts = DecodeOptions {
            max_bytes: 10,
            ..DecodeOptions::default()
        };
        assert!(matches!(
            decode_with(br#"{"type":"ping","id":"abc"}"#, &opts)
                .unwrap_err()
                .kind,
            DecodeErrorKind::TooLarge { .. }
        ));
        // Brackets inside strings do not count.
        let stringy = format!(r#"{{"type":"ping","id":"{}"}}"#, "[".repeat(500));
        assert!(decode(stringy.as_bytes()).is_ok());
    }

    #[test]
    fn unknown_types_are_kept_or_refused() {
        let line = br#"{"type":"memory/store/req","id":"m1","key":"k"}"#;
        let Message::Unknown(map) = decode(line).unwrap() else {
            panic!()
        };
        assert_eq!(map["key"], "k");
        let strict = DecodeOptions {
            allow_unknown: false,
            ..DecodeOptions::default()
        };
        assert_eq!(
            decode_with(line, &strict).unwrap_err().code(),
            ErrorCode::INVALID_MESSAGE
        );
    }

    #[test]
    fn an_error_quoting_a_huge_value_is_cut() {
        let huge = "é".repeat(1 << 20);
        let line = format!(
            r#"{{"type":"tool/call/req","id":"x","tool_name":1,"arguments":{{}},"correlation_id":7,"x":"{huge}"}}"#
        );
        let err = decode(line.as_bytes()).unwrap_err();
        assert!(
            err.to_string().len() < 4 * MAX_ERROR_MESSAGE_BYTES,
            "{}",
            err.to_string().len()
        );
        let wrong = format!(
            r#"{{"type":"tool/call/req","id":"x","tool_name":"{huge}","arguments":"{huge}"}}"#
        );
        let err = decode(wrong.as_bytes()).unwrap_err();
        assert!(
            err.to_string().len() < 4 * MAX_ERROR_MESSAGE_BYTES,
            "{}",
            err.to_string().len()
        );
    }
}
