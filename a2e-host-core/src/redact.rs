//! Redaction of secrets before anything leaves the host or reaches a log.
//!
//! One list of secret-named keys serves the whole workspace: it and the
//! functions that apply it live in `a2e-telemetry` (whose span content is
//! redacted the same way) and are re-exported here under the host's paths.

pub use a2e_telemetry::{
    REDACTED, SECRET_KEYS, is_secret_key, redact, redact_entry, redact_map, scrub,
};

/// Redacts, for showing a run, what the host's own records of it hold
/// under secret names (an A2A push webhook's token, say): the inputs of the
/// nodes whose id starts with `@`. The nodes of the run's document are
/// journaled redacted already.
#[cfg(feature = "journal")]
pub fn redact_records(state: &mut a2e_journal::RunState) {
    for node in state
        .nodes
        .iter_mut()
        .filter(|n| n.node_id.starts_with('@'))
    {
        if let Some(input) = node.start.as_mut().and_then(|s| s.input.as_mut()) {
            *input = redact(input);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_host_redacts_with_the_wire_marker() {
        // Credentials redacted in discover responses (`SkillDefinition::redacted`)
        // and fields redacted here read the same.
        assert_eq!(REDACTED, a2e_proto::skills::REDACTED);
    }

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
