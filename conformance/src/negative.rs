//! Negative fixtures: malformed lines from `fixtures/negative.json`, each
//! with the exact error code, JSON path and `req_id` the decoder must report.

use a2e_proto::decode::{DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH};
use a2e_proto::{DecodeOptions, ErrorCode, Message};
use serde::Deserialize;
use serde_json::Value;

use crate::json;
use crate::schemas::Schemas;

/// Where a case's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// The line, as text.
    Line(String),
    /// The line as hex digits (for bytes that are not UTF-8).
    Hex(String),
    /// Built in code by the named generator (see [`GENERATORS`]).
    Generator(String),
}

/// The generators a case may name, with what each builds.
pub const GENERATORS: &[(&str, &str)] = &[
    (
        "nested_10000_deep_arrays",
        "a tool/call/req whose argument nests 10,000 arrays",
    ),
    (
        "nested_10000_deep_objects",
        "a tool/call/req whose arguments nest 10,000 objects",
    ),
    (
        "nested_one_over_the_limit",
        "a tool/call/req nesting one level deeper than the default limit",
    ),
    (
        "line_20_mib",
        "a 20 MiB tool/call/req (one long string argument)",
    ),
    (
        "one_byte_over_the_limit",
        "a tool/call/req one byte longer than the default size limit",
    ),
];

/// One malformed line and what decoding it must report.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// Unique name.
    pub name: String,
    /// The bytes.
    pub input: Input,
    /// Decoder options (defaults unless the case says otherwise).
    pub options: DecodeOptions,
    /// The expected wire error code.
    pub code: ErrorCode,
    /// The expected JSON path (`None` unless the code is `schema_violation`).
    pub path: Option<String>,
    /// The expected `req_id` of the error (the message's id when it could be read).
    pub req_id: String,
    /// The same line under default options is kept as `Message::Unknown`.
    pub kept_by_default: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    name: String,
    #[serde(default)]
    line: Option<String>,
    #[serde(default)]
    hex: Option<String>,
    #[serde(default)]
    generator: Option<String>,
    #[serde(default)]
    allow_unknown: Option<bool>,
    code: String,
    path: Option<String>,
    #[serde(default)]
    req_id: String,
    #[serde(default)]
    kept_by_default: bool,
    #[serde(default, rename = "why")]
    _why: Option<String>,
}

#[derive(Deserialize)]
struct RawFile {
    cases: Vec<RawCase>,
}

/// Reads `fixtures/negative.json`.
pub fn load() -> Result<Vec<Case>, String> {
    parse(&crate::fixtures::load_json("negative.json")?)
}

/// Parses the JSON form of `negative.json`.
pub fn parse(value: &Value) -> Result<Vec<Case>, String> {
    let file: RawFile =
        serde_json::from_value(value.clone()).map_err(|e| format!("negative.json: {e}"))?;
    let mut names = std::collections::BTreeSet::new();
    file.cases
        .into_iter()
        .map(|raw| {
            if !names.insert(raw.name.clone()) {
                return Err(format!("negative.json: duplicate case `{}`", raw.name));
            }
            let input = match (raw.line, raw.hex, raw.generator) {
                (Some(line), None, None) => Input::Line(line),
                (None, Some(hex), None) => Input::Hex(hex),
                (None, None, Some(g)) if GENERATORS.iter().any(|(n, _)| *n == g) => {
                    Input::Generator(g)
                }
                (None, None, Some(g)) => {
                    return Err(format!(
                        "negative.json: {}: unknown generator `{g}`",
                        raw.name
                    ));
                }
                _ => {
                    return Err(format!(
                        "negative.json: {}: give exactly one of line, hex, generator",
                        raw.name
                    ));
                }
            };
            let code = ErrorCode::new(raw.code);
            if !code.is_known() {
                return Err(format!(
                    "negative.json: {}: unknown code `{code}`",
                    raw.name
                ));
            }
            Ok(Case {
                name: raw.name,
                input,
                options: DecodeOptions {
                    allow_unknown: raw.allow_unknown.unwrap_or(true),
                    ..DecodeOptions::default()
                },
                code,
                path: raw.path,
                req_id: raw.req_id,
                kept_by_default: raw.kept_by_default,
            })
        })
        .collect()
}

impl Case {
    /// The bytes of the line.
    pub fn bytes(&self) -> Result<Vec<u8>, String> {
        match &self.input {
            Input::Line(line) => Ok(line.as_bytes().to_vec()),
            Input::Hex(hex) => from_hex(hex),
            Input::Generator(name) => generate(name),
        }
    }
}

fn from_hex(hex: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<u8> = hex.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return Err("odd number of hex digits".into());
    }
    digits
        .chunks(2)
        .map(|pair| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|p| u8::from_str_radix(p, 16).ok())
                .ok_or_else(|| format!("bad hex digits {:?}", String::from_utf8_lossy(pair)))
        })
        .collect()
}

/// A tool/call/req carrying `arguments` (raw JSON text).
fn call_with_arguments(id: &str, arguments: &str) -> Vec<u8> {
    format!(r#"{{"type":"tool/call/req","id":"{id}","version":"1.0","ts":1716123457.1,"tool_name":"echo","arguments":{arguments}}}"#)
        .into_bytes()
}

/// A tool/call/req of exactly `size` bytes (one long string argument).
fn call_of_size(id: &str, size: usize) -> Vec<u8> {
    let empty = call_with_arguments(id, r#"{"content":""}"#);
    let fill = size.saturating_sub(empty.len());
    call_with_arguments(id, &format!(r#"{{"content":"{}"}}"#, "x".repeat(fill)))
}

/// Builds the bytes of a generated case.
pub fn generate(name: &str) -> Result<Vec<u8>, String> {
    let nested_arrays =
        |depth: usize| format!("{{\"v\":{}{}}}", "[".repeat(depth), "]".repeat(depth));
    match name {
        "nested_10000_deep_arrays" => Ok(call_with_arguments("deep1", &nested_arrays(10_000))),
        "nested_10000_deep_objects" => Ok(call_with_arguments(
            "deep2",
            &format!("{}null{}", "{\"a\":".repeat(10_000), "}".repeat(10_000)),
        )),
        // The message object and `arguments` take two levels.
        "nested_one_over_the_limit" => Ok(call_with_arguments(
            "deep3",
            &nested_arrays(DEFAULT_MAX_DEPTH - 1),
        )),
        "line_20_mib" => Ok(call_of_size("big1", 20 * 1024 * 1024)),
        "one_byte_over_the_limit" => Ok(call_of_size("big2", DEFAULT_MAX_BYTES + 1)),
        other => Err(format!("unknown generator `{other}`")),
    }
}

/// Checks one case; `Err` lists what did not match.
pub fn check(case: &Case, schemas: &Schemas) -> Result<(), Vec<String>> {
    let bytes = case.bytes().map_err(|e| vec![e])?;
    let mut problems = Vec::new();
    let err = match a2e_proto::decode_with(&bytes, &case.options) {
        Ok(msg) => {
            return Err(vec![format!(
                "decoded as `{}` instead of failing with {}",
                msg.type_str(),
                case.code
            )]);
        }
        Err(err) => err,
    };
    if err.code() != case.code {
        problems.push(format!(
            "code {} instead of {} ({err})",
            err.code(),
            case.code
        ));
    }
    if err.path() != case.path.as_deref() {
        problems.push(format!(
            "path {:?} instead of {:?} ({err})",
            err.path(),
            case.path
        ));
    }
    if err.req_id != case.req_id {
        problems.push(format!(
            "req_id {:?} instead of {:?}",
            err.req_id, case.req_id
        ));
    }

    // The `error` message that answers the line says the same, and is itself a valid message.
    let answer = err.to_error_message();
    if answer.code != err.code() || answer.req_id != err.req_id {
        problems.push("the error message does not carry the code and req_id".into());
    }
    if answer.retryable {
        problems.push(format!("the error message calls {} retryable", answer.code));
    }
    if let Some(path) = &case.path
        && answer.detail.get("path").and_then(Value::as_str) != Some(path.as_str())
    {
        problems.push(format!("the error message's detail.path is not {path:?}"));
    }
    let answer = Message::from(answer);
    match a2e_proto::decode(&answer.to_json()) {
        Ok(again) if again == answer => {}
        _ => problems.push("the error message does not round-trip".into()),
    }

    // A schema violation of a known type must violate the type's schema too.
    if case.code == ErrorCode::SCHEMA_VIOLATION
        && let Ok(value) = serde_json::from_slice::<Value>(&bytes)
    {
        let wire_type = value.get("type").and_then(Value::as_str).unwrap_or("");
        if schemas.validate(wire_type, &value).is_ok() {
            problems.push(format!(
                "the decoder refuses it but the `{wire_type}` schema accepts it"
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// For a case with `kept_by_default`: under default options the line is kept
/// whole as `Message::Unknown`, and re-encodes to the same JSON.
pub fn check_kept(case: &Case) -> Result<(), Vec<String>> {
    let bytes = case.bytes().map_err(|e| vec![e])?;
    let original: Value = serde_json::from_slice(&bytes).map_err(|e| vec![e.to_string()])?;
    let msg = a2e_proto::decode(&bytes).map_err(|e| vec![format!("refused: {e}")])?;
    let Message::Unknown(map) = &msg else {
        return Err(vec![format!(
            "decoded as `{}`, not kept as unknown",
            msg.type_str()
        )]);
    };
    let mut problems = Vec::new();
    json::diff(&original, &Value::Object(map.clone()), "$", &mut problems);
    let compact = serde_json::to_vec(&original).unwrap_or_default();
    if msg.to_json() != compact {
        problems.push(format!(
            "re-encoded as {}, not as it came",
            String::from_utf8_lossy(&msg.to_json())
        ));
    }
    if Some(msg.type_str()) != original.get("type").and_then(Value::as_str) {
        problems.push(format!("type_str() is {:?}", msg.type_str()));
    }
    if Some(msg.id()) != original.get("id").and_then(Value::as_str) {
        problems.push(format!("id() is {:?}", msg.id()));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}
