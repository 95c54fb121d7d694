//! Redaction, the one list of secret-named keys the workspace uses (the
//! host's audit log, run journal and live view redact with it too), and
//! content on spans (only with `capture_content`): secret-named fields
//! redacted, known secrets cut out, the text bounded.

use serde_json::{Map, Value};

/// What a redacted value reads.
pub const REDACTED: &str = "[REDACTED]";

/// The most bytes of one content attribute; longer text is cut (at a character
/// boundary) and ends with `…[truncated]`.
pub const MAX_CONTENT_BYTES: usize = 64 * 1024;

/// Key fragments that mark a secret, matched case-insensitively anywhere in
/// a key ([`is_secret_key`]).
pub const SECRET_KEYS: &[&str] = &[
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

/// Whether a key names a secret: it contains one of [`SECRET_KEYS`], in any case.
pub fn is_secret_key(key: &str) -> bool {
    // Full Unicode lowering: a non-ASCII letter that lowers to an ASCII one
    // (the Kelvin sign to `k`) cannot hide a fragment.
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

/// `text` with every occurrence of each secret replaced by [`REDACTED`];
/// secrets shorter than 4 bytes are left (they would cut ordinary words).
pub fn scrub(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_owned();
    for secret in secrets.iter().filter(|s| s.len() >= 4) {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), REDACTED);
        }
    }
    out
}

/// `value` as JSON text for a span attribute: secret-named fields read
/// [`REDACTED`], every known secret (4 bytes or longer) is replaced, the text
/// is at most [`MAX_CONTENT_BYTES`].
pub(crate) fn render(value: &Value, secrets: &[String]) -> String {
    let text = serde_json::to_string(&redact(value)).unwrap_or_default();
    bound(scrub(&text, secrets))
}

/// Plain text (a prompt, a completion) for a span attribute: known secrets
/// replaced, bounded.
pub(crate) fn render_text(text: &str, secrets: &[String]) -> String {
    bound(scrub(text, secrets))
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
    fn secret_fields_are_redacted_recursively_and_null_is_kept() {
        let v = json!({"user": "a", "api_key": "sk-1", "nested": [{"Password": "x"}],
            "token": null, "MyClientSecret": {"inner": 1}});
        assert_eq!(
            redact(&v),
            json!({"user": "a", "api_key": REDACTED, "nested": [{"Password": REDACTED}],
                "token": null, "MyClientSecret": REDACTED})
        );
        assert_eq!(
            redact_entry("user", &json!({"token": 1})),
            json!({"token": REDACTED})
        );
    }

    #[test]
    fn every_listed_fragment_marks_a_key_in_any_case() {
        for fragment in SECRET_KEYS {
            assert!(is_secret_key(fragment), "{fragment}");
            assert!(
                is_secret_key(&format!("X_{}_1", fragment.to_uppercase())),
                "{fragment}"
            );
        }
        // The Kelvin sign lowers to `k`: it does not hide `api_key`.
        assert!(is_secret_key("API_\u{212A}EY"));
        assert!(!is_secret_key("city"));
    }

    #[test]
    fn scrub_replaces_known_secrets_of_four_bytes_or_more() {
        assert_eq!(
            scrub("key=sk-12345 ok", &["sk-12345".into()]),
            format!("key={REDACTED} ok")
        );
        assert_eq!(scrub("a abc", &["abc".into()]), "a abc");
    }

    #[test]
    fn long_content_is_cut_at_a_character_boundary() {
        let long = "é".repeat(MAX_CONTENT_BYTES);
        let text = render_text(&long, &[]);
        assert!(text.len() <= MAX_CONTENT_BYTES + "…[truncated]".len());
        assert!(text.ends_with("…[truncated]"));
    }
}
