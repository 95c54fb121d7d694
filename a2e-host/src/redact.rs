//! Redaction of secrets before anything leaves the host or reaches a log.

use serde_json::{Map, Value};

/// What a redacted value reads.
pub const REDACTED: &str = a2e_proto::skills::REDACTED;

/// Key fragments that mark a secret (case-insensitive).
const SECRET_KEYS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "token",
    "api_key",
    "apikey",
    "authorization",
    "credential",
    "private_key",
];

/// Whether a key names a secret.
pub fn is_secret_key(key: &str) -> bool {
    let lower = key.to_lowercase();
    SECRET_KEYS.iter().any(|s| lower.contains(s))
}

/// A copy of `value` whose secret-named fields read [`REDACTED`], recursively.
pub fn redact(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(redact_map(map)),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        other => other.clone(),
    }
}

/// [`redact`] for an object.
pub fn redact_map(map: &Map<String, Value>) -> Map<String, Value> {
    map.iter()
        .map(|(k, v)| (k.clone(), redact_entry(k, v)))
        .collect()
}

/// The value of field `key` of an object, redacted: [`REDACTED`] when the
/// key names a secret (and the value is not null), else [`redact`]ed.
pub fn redact_entry(key: &str, value: &Value) -> Value {
    if is_secret_key(key) && !value.is_null() {
        Value::String(REDACTED.into())
    } else {
        redact(value)
    }
}

/// Replaces every occurrence of each secret in `text` (secrets shorter than 4 bytes are left).
pub fn scrub(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_owned();
    for s in secrets.iter().filter(|s| s.len() >= 4) {
        out = out.replace(s.as_str(), REDACTED);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_fields_are_redacted_recursively() {
        let v =
            json!({"user": "a", "api_key": "sk-1", "nested": [{"Password": "x"}], "token": null});
        assert_eq!(
            redact(&v),
            json!({"user": "a", "api_key": REDACTED, "nested": [{"Password": REDACTED}], "token": null})
        );
    }

    #[test]
    fn scrub_replaces_known_secrets() {
        assert_eq!(
            scrub("key=sk-12345 ok", &["sk-12345".into()]),
            format!("key={REDACTED} ok")
        );
    }
}
