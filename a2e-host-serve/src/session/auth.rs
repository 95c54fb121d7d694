//! Handshake: token check and capability negotiation.

use a2e_proto::{A2ECapability, Capability};
use serde_json::{Map, Value};
use subtle::ConstantTimeEq;

use a2e_host_core::host::Host;

/// Compares a presented token with the configured one in constant time
/// (for equal lengths; the length itself is not secret-dependent here).
pub fn token_matches(expected: &str, presented: &str) -> bool {
    let a = expected.as_bytes();
    let b = presented.as_bytes();
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

/// The capabilities this host has loaded, each with its serving plugin's facts.
pub fn loaded_capabilities(host: &Host) -> Vec<Capability> {
    let mut caps = Vec::new();
    let registry = host.registry();
    let meta = |name: &str, kind: &str, priority: i32, exclusive: bool| {
        let mut m = Map::new();
        m.insert("name".into(), Value::from(name));
        m.insert("type".into(), Value::from(kind));
        m.insert("priority".into(), Value::from(priority));
        m.insert("exclusive".into(), Value::from(exclusive));
        m
    };
    if let Some(p) = registry.serving_tool_plugins().first() {
        let mut c = Capability::enabled(A2ECapability::TOOLS);
        c.metadata = meta(p.name(), "tools", p.priority(), p.exclusive());
        caps.push(c);
    }
    // The host can always run skills (chain skills, plugins' skills): with
    // none loaded, `skill/discover` answers an empty list and `skill/call`
    // `unknown_skill`, rather than the whole capability being refused.
    let mut skill = Capability::enabled(A2ECapability::SKILL);
    skill.metadata = match registry.serving_skill_plugins().first() {
        Some(p) => meta(p.name(), "skill", p.priority(), p.exclusive()),
        None => meta("skills", "skill", 0, false),
    };
    caps.push(skill);
    let mut chains = Capability::enabled(A2ECapability::CHAINS);
    chains.metadata = meta("chain", "chains", 10, false);
    caps.push(chains);
    let mut proc = Capability::enabled(A2ECapability::PROC);
    proc.metadata = meta("proc", "proc", 0, false);
    caps.push(proc);
    caps
}

/// `accepted_caps` for a request: requested ∩ loaded, and requested-but-missing
/// ones with `enabled: false`. An empty request asks for everything loaded.
pub fn negotiate(host: &Host, requested: &[A2ECapability]) -> Vec<Capability> {
    let loaded = loaded_capabilities(host);
    if requested.is_empty() {
        return loaded;
    }
    let mut out = Vec::new();
    for want in requested {
        if out.iter().any(|c: &Capability| &c.capability == want) {
            continue;
        }
        match loaded.iter().find(|c| &c.capability == want) {
            Some(c) => out.push(c.clone()),
            None => out.push(Capability::disabled(want.clone(), "no plugin loaded")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_exactly() {
        assert!(token_matches("s3cret", "s3cret"));
        assert!(!token_matches("s3cret", "s3cres"));
        assert!(!token_matches("s3cret", "s3cret "));
        assert!(!token_matches("s3cret", ""));
    }
}
