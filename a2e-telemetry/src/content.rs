//! Content on spans (only with `capture_content`): secret-named fields
//! redacted, known secrets cut out, the text bounded.

use serde_json::{Map, Value};

/// What a redacted value reads.
pub const REDACTED: &str = "[REDACTED]";

/// The most bytes of one content attribute; longer text is cut (at a character
/// boundary) and ends with `…[truncated]`.
pub const MAX_CONTENT_BYTES: usize = 64 * 1024;

/// Key fragments that mark a secret (case-insensitive), as the host's audit uses.
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
    let lower = key.to_ascii_lowercase();
    SECRET_KEYS.iter().any(|s| lower.contains(s))
}

/// `value` as JSON text for a span attribute: secret-named fields read
/// [`REDACTED`], every known secret (4 bytes or longer) is replaced, the text
/// is at most [`MAX_CONTENT_BYTES`].
pub(crate) fn render(value: &Value, secrets: &[String]) -> String {
    let text = serde_json::to_string(&redact(value)).unwrap_or_default();
    bound(scrub(text, secrets))
}

/// Plain text (a prompt, a completion) for a span attribute: known secrets
/// replaced, bounded.
pub(crate) fn render_text(text: &str, secrets: &[String]) -> String {
    bound(scrub(text.to_owned(), secrets))
}

fn redact(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(redact_map(map)),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        other => other.clone(),
    }
}

fn redact_map(map: &Map<String, Value>) -> Map<String, Value> {
    map.iter()
        .map(|(k, v)| {
            let v = if is_secret_key(k) && !v.is_null() {
                Value::String(REDACTED.into())
            } else {
                redact(v)
            };
            (k.clone(), v)
        })
        .collect()
}

fn scrub(mut text: String, secrets: &[String]) -> String {
    for secret in secrets.iter().filter(|s| s.len() >= 4) {
        if text.contains(secret.as_str()) {
            text = text.replace(secret.as_str(), REDACTED);
        }
    }
    text
}

fn bound(mut text: String) -> String {
    if text.len() > MAX_CONTENT_BYTES {
        let mut cut = MAX_CONTENT_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("…[truncated]");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_redacted_by_name_and_by_value() {
        let secrets = vec!["sk-fake-1234".to_owned()];
        let value = json!({"city": "Paris", "api_key": "x", "nested": [{"Authorization": "Bearer y"}],
            "note": "my key is sk-fake-1234"});
        let text = render(&value, &secrets);
        assert!(text.contains("Paris"));
        assert!(!text.contains("sk-fake-1234"), "{text}");
        assert!(!text.contains("Bearer y"), "{text}");
        assert_eq!(text.matches(REDACTED).count(), 3, "{text}");
        assert_eq!(
            render_text("echo sk-fake-1234", &secrets),
            "echo [REDACTED]"
        );
    }

    #[test]
    fn long_content_is_cut_at_a_character_boundary() {
        let long = "é".repeat(MAX_CONTENT_BYTES);
        let text = render_text(&long, &[]);
        assert!(text.len() <= MAX_CONTENT_BYTES + "…[truncated]".len());
        assert!(text.ends_with("…[truncated]"));
    }
}
