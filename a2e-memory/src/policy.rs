//! Which namespaces a session may touch.
//!
//! A [`NamespacePolicy`] is a list of patterns in the namespace grammar where
//! a segment may also be
//! - a template mixing literal characters with `${agent_id}` and `${user_id}`
//!   (`vector.user.${user_id}.memory`, `agent-${agent_id}`),
//! - `*`: exactly one segment of any name,
//! - `**` as the last segment: one or more segments of any names.
//!
//! A session ([`Principal`]) may touch a namespace when any pattern matches
//! it after substitution. A placeholder whose value is missing, empty or not
//! itself a valid segment (`a.b`, `*`, `..`) makes its pattern match nothing,
//! so an odd user id can never widen access.

use crate::namespace::{MAX_SEGMENTS, is_segment, is_segment_char, validate_namespace};

/// Who is asking: the session's agent and user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Principal {
    /// The agent the session runs for.
    pub agent_id: Option<String>,
    /// The user the session acts for.
    pub user_id: Option<String>,
}

impl Principal {
    /// A principal with both ids.
    pub fn new(agent_id: impl Into<String>, user_id: impl Into<String>) -> Self {
        Self {
            agent_id: Some(agent_id.into()),
            user_id: Some(user_id.into()),
        }
    }
}

/// Why a policy pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("namespace pattern {pattern:?}: {reason}")]
pub struct PolicyError {
    /// The pattern as written.
    pub pattern: String,
    /// What is wrong with it.
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Agent,
    User,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Template(Vec<Part>),
    Any,
    Rest,
}

/// A compiled list of namespace patterns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamespacePolicy {
    patterns: Vec<(String, Vec<Segment>)>,
}

impl NamespacePolicy {
    /// Compiles `patterns`; an empty list allows nothing.
    ///
    /// ```
    /// use a2e_memory::{NamespacePolicy, Principal};
    /// let policy = NamespacePolicy::new(["vector.user.${user_id}.*", "shared.${agent_id}"]).unwrap();
    /// let me = Principal::new("planner", "u42");
    /// assert!(policy.allows(&me, "vector.user.u42.memory"));
    /// assert!(policy.allows(&me, "shared.planner"));
    /// assert!(!policy.allows(&me, "vector.user.u43.memory"));
    /// ```
    pub fn new<S: AsRef<str>>(patterns: impl IntoIterator<Item = S>) -> Result<Self, PolicyError> {
        let patterns = patterns
            .into_iter()
            .map(|p| {
                let p = p.as_ref();
                compile(p).map(|segs| (p.to_owned(), segs))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { patterns })
    }

    /// A policy that allows every valid namespace (`**`), for tools run by a
    /// person, such as a command line.
    pub fn allow_all() -> Self {
        Self {
            patterns: vec![("**".to_owned(), vec![Segment::Rest])],
        }
    }

    /// The patterns as written.
    pub fn patterns(&self) -> impl Iterator<Item = &str> {
        self.patterns.iter().map(|(p, _)| p.as_str())
    }

    /// Whether `principal` may read and write `namespace` (which must also be
    /// valid: an invalid namespace is never allowed).
    pub fn allows(&self, principal: &Principal, namespace: &str) -> bool {
        if validate_namespace(namespace).is_err() {
            return false;
        }
        let names: Vec<&str> = namespace.split('.').collect();
        self.patterns
            .iter()
            .any(|(_, segs)| matches(segs, &names, principal))
    }
}

fn compile(pattern: &str) -> Result<Vec<Segment>, PolicyError> {
    let fail = |reason: String| PolicyError {
        pattern: pattern.to_owned(),
        reason,
    };
    if pattern.is_empty() {
        return Err(fail("empty".into()));
    }
    let raw: Vec<&str> = pattern.split('.').collect();
    if raw.len() > MAX_SEGMENTS {
        return Err(fail(format!("more than {MAX_SEGMENTS} segments")));
    }
    let last = raw.len().saturating_sub(1);
    raw.iter()
        .enumerate()
        .map(|(i, seg)| match *seg {
            "*" => Ok(Segment::Any),
            "**" if i == last => Ok(Segment::Rest),
            "**" => Err(fail("`**` may only be the last segment".into())),
            "" => Err(fail("empty segment".into())),
            text => template(text).map(Segment::Template).map_err(fail),
        })
        .collect()
}

fn template(text: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("${") {
            let end = after
                .find('}')
                .ok_or_else(|| format!("unclosed placeholder in segment {text:?}"))?;
            let (name, tail) = after.split_at(end);
            parts.push(match name {
                "agent_id" => Part::Agent,
                "user_id" => Part::User,
                other => {
                    return Err(format!(
                        "unknown placeholder ${{{other}}} (use ${{agent_id}} or ${{user_id}})"
                    ));
                }
            });
            rest = tail.get(1..).unwrap_or("");
        } else {
            let end = rest.find("${").unwrap_or(rest.len());
            let (lit, tail) = rest.split_at(end);
            if let Some(c) = lit.chars().find(|&c| !is_segment_char(c)) {
                return Err(format!("segment {text:?} contains {c:?}"));
            }
            parts.push(Part::Text(lit.to_owned()));
            rest = tail;
        }
    }
    Ok(parts)
}

fn expand(parts: &[Part], principal: &Principal) -> Option<String> {
    let mut out = String::new();
    for part in parts {
        let value = match part {
            Part::Text(t) => t.as_str(),
            Part::Agent => principal.agent_id.as_deref().filter(|v| is_segment(v))?,
            Part::User => principal.user_id.as_deref().filter(|v| is_segment(v))?,
        };
        out.push_str(value);
    }
    Some(out)
}

fn matches(segs: &[Segment], names: &[&str], principal: &Principal) -> bool {
    match (segs.split_first(), names.split_first()) {
        (None, None) => true,
        (Some((Segment::Rest, _)), Some(_)) => true,
        (Some((Segment::Any, more)), Some((_, rest))) => matches(more, rest, principal),
        (Some((Segment::Template(parts), more)), Some((name, rest))) => {
            expand(parts, principal).is_some_and(|want| want == *name)
                && matches(more, rest, principal)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(agent: &str, user: &str) -> Principal {
        Principal::new(agent, user)
    }

    #[test]
    fn placeholders_and_wildcards() {
        let pol = NamespacePolicy::new([
            "vector.user.${user_id}.memory",
            "agent-${agent_id}.*",
            "team.**",
        ])
        .unwrap();
        let me = p("a1", "u1");
        assert!(pol.allows(&me, "vector.user.u1.memory"));
        assert!(!pol.allows(&me, "vector.user.u2.memory"));
        assert!(!pol.allows(&me, "vector.user.u1.memory.x"));
        assert!(pol.allows(&me, "agent-a1.notes"));
        assert!(!pol.allows(&me, "agent-a1"));
        assert!(!pol.allows(&me, "agent-a1.notes.deep"));
        assert!(!pol.allows(&me, "agent-a2.notes"));
        assert!(pol.allows(&me, "team.x"));
        assert!(pol.allows(&me, "team.x.y.z"));
        assert!(!pol.allows(&me, "team"));
        assert!(!pol.allows(&me, "team.*"));
    }

    #[test]
    fn hostile_ids_match_nothing() {
        let pol = NamespacePolicy::new(["vector.user.${user_id}.memory"]).unwrap();
        for user in ["", "*", "a.b", "..", "u1.memory.x", "%"] {
            let who = p("a", user);
            assert!(
                !pol.allows(&who, &format!("vector.user.{user}.memory")),
                "{user:?}"
            );
            assert!(!pol.allows(&who, "vector.user.u1.memory"));
        }
        let nobody = Principal::default();
        assert!(!pol.allows(&nobody, "vector.user..memory"));
        assert!(!pol.allows(&nobody, "vector.user.u1.memory"));
    }

    #[test]
    fn bad_patterns_are_refused() {
        for bad in ["", "a..b", "a.${who}", "a.${user_id", "a/b", "**.a", "a.%"] {
            assert!(NamespacePolicy::new([bad]).is_err(), "{bad:?}");
        }
        assert!(
            NamespacePolicy::new(Vec::<String>::new())
                .unwrap()
                .patterns()
                .next()
                .is_none()
        );
        assert!(!NamespacePolicy::default().allows(&p("a", "u"), "a"));
        assert!(NamespacePolicy::allow_all().allows(&Principal::default(), "any.thing"));
        assert!(!NamespacePolicy::allow_all().allows(&Principal::default(), "bad..ns"));
    }
}
