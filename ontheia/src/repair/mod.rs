//! JSON extraction and repair of model output.
//!
//! [`extract_json`] does what the engine does with an answer: slice from the
//! first `{` or `[` to the last `}` or `]`, [`repair`] it, parse it.
//! [`repair`] turns "almost JSON" into JSON text, following the behaviour of
//! the npm `jsonrepair` package (the library the reference engine uses):
//! code fences, comments, single and curly quotes, unquoted keys and
//! strings, missing and trailing commas, missing colons, Python and
//! JavaScript literals, unescaped newlines and quotes, concatenated strings,
//! truncated output, newline-delimited values. It runs in linear time.

mod chars;
mod parser;
mod strings;

use serde_json::Value;

pub use parser::{MAX_DEPTH, RepairError};

/// Repairs `text` into valid JSON text.
pub fn repair(text: &str) -> Result<String, RepairError> {
    parser::repair(text)
}

/// The JSON inside a model's answer: first `{`/`[` to last `}`/`]`,
/// repaired and parsed. `None` when there is none or it cannot be repaired.
pub fn extract_json(text: &str) -> Option<Value> {
    let start = text.find(['{', '['])?;
    let end = text.rfind(['}', ']'])?;
    if end <= start {
        return None;
    }
    let candidate = text.get(start..=end)?;
    parse_repaired(candidate)
}

/// Parses `text` as JSON, repairing it if it is not valid as it stands.
pub fn parse_lenient(text: &str) -> Option<Value> {
    if let Ok(v) = serde_json::from_str(text) {
        return Some(v);
    }
    parse_repaired(text)
}

fn parse_repaired(text: &str) -> Option<Value> {
    let repaired = repair(text).ok()?;
    serde_json::from_str(&repaired).ok()
}
