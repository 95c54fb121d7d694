//! Decoding with errors that name the JSON path of the bad field
//! (`message.parts[0].raw`), for an `InvalidParams` answer a client can act
//! on.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// JSON that is not valid, or not of the expected shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct DecodeError {
    /// The path of the offending field, dotted with indices
    /// (`message.parts[0].raw`); empty for the whole document or a syntax error.
    pub path: String,
    /// What was wrong there.
    pub message: String,
    /// The input was not JSON at all (a parse error, not a shape error).
    pub syntax: bool,
}

impl DecodeError {
    fn describe(&self) -> String {
        if self.path.is_empty() || self.path == "." {
            self.message.clone()
        } else {
            format!("`{}`: {}", self.path, self.message)
        }
    }

    fn from_path(error: serde_path_to_error::Error<serde_json::Error>) -> Self {
        let path = error.path().to_string();
        let inner = error.into_inner();
        DecodeError {
            path: if path == "." { String::new() } else { path },
            message: strip_position(&inner),
            syntax: inner.is_syntax() || inner.is_eof(),
        }
    }
}

/// serde_json appends "at line L column C"; the path says where more usefully
/// for a shape error, so it is kept only for syntax errors.
fn strip_position(error: &serde_json::Error) -> String {
    let text = error.to_string();
    if error.is_syntax() || error.is_eof() {
        return text;
    }
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// Decodes a value of `T` from JSON bytes.
pub fn decode<T: DeserializeOwned>(json: &[u8]) -> Result<T, DecodeError> {
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    let value =
        serde_path_to_error::deserialize(&mut deserializer).map_err(DecodeError::from_path)?;
    deserializer.end().map_err(|e| DecodeError {
        path: String::new(),
        message: e.to_string(),
        syntax: true,
    })?;
    Ok(value)
}

/// Decodes a value of `T` from a parsed JSON value (e.g. JSON-RPC `params`).
pub fn decode_value<T: DeserializeOwned>(value: Value) -> Result<T, DecodeError> {
    serde_path_to_error::deserialize(value).map_err(DecodeError::from_path)
}
