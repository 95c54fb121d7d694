//! The names tools and skills are offered under over MCP, and the way back.
//!
//! **The rule.** The tool APIs of Claude and OpenAI take names matching
//! `^[a-zA-Z0-9_-]{1,64}$`, and a client built on them (Claude Desktop) drops
//! a server's whole tool list when one name breaks it. So:
//!
//! 1. A tool whose name already matches keeps it: its MCP name is its A2E name.
//! 2. A skill is offered as `skill__NAME` (its A2E form `skill.NAME` with the
//!    dot written `__`). Any other name is mapped the same way: each `.`
//!    becomes `__` (a mounted tool's `server.tool` is `server__tool`), each
//!    other character outside `[a-zA-Z0-9_-]` becomes `_`.
//! 3. A mapped name longer than 64 characters is cut to 55 and ends in `_`
//!    and 8 hex digits of a hash (FNV-1a) of the A2E name, so it stays the same
//!    from run to run.
//! 4. A mapped name that is taken — by a tool that keeps its own (rule 1), or
//!    by another mapped name — is the hashed form of rule 3 instead, for every
//!    one of the colliding mapped names: a tool named `skill__x` keeps its
//!    name and the skill `x` is `skill__x_` and its hash. Which one is renamed
//!    never depends on the order tools were registered in.
//!
//! On `tools/call`, a listed name means what it was listed for; an unlisted
//! `skill__NAME`, or `skill.NAME` (the name skills had before), calls the
//! skill `NAME`; any other name is passed to the host as a tool name (a
//! mounted tool's `server.tool` works there too).

use std::collections::{BTreeMap, BTreeSet};

/// Skills are offered to MCP clients as tools named `skill__NAME`.
pub const SKILL_PREFIX: &str = "skill__";

/// The prefix skills were offered under before names had to match the tool
/// APIs' rule; `tools/call` still accepts it.
pub const LEGACY_SKILL_PREFIX: &str = "skill.";

/// The most characters of a tool name over MCP.
pub const MAX_NAME: usize = 64;

/// How many hex digits of the hash end a shortened or disambiguated name.
const HASH_DIGITS: usize = 8;

/// What an MCP tool name means on the host.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Target {
    /// The host's tool of this name.
    Tool(String),
    /// The host's skill of this name.
    Skill(String),
}

impl Target {
    /// The A2E form of the target: a tool's name, or `skill.NAME`.
    fn a2e_name(&self) -> String {
        match self {
            Target::Tool(name) => name.clone(),
            Target::Skill(name) => format!("{LEGACY_SKILL_PREFIX}{name}"),
        }
    }
}

/// Whether `name` may be a tool name in the Claude and OpenAI tool APIs.
pub fn is_valid(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `raw` with each `.` written `__` and each other character outside the
/// rule `_` (not yet cut to length).
fn mapped(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        match c {
            '.' => out.push_str("__"),
            c if c.is_ascii_alphanumeric() || c == '_' || c == '-' => out.push(c),
            _ => out.push('_'),
        }
    }
    if out.is_empty() {
        out.push('_');
    }
    out
}

/// FNV-1a (64 bits) of `text` then `salt`: fixed by its definition, so a
/// name derived from it is the same on every host and in every run.
fn fnv1a(text: &str, salt: u32) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let salt_bytes = if salt == 0 {
        Vec::new()
    } else {
        salt.to_le_bytes().to_vec()
    };
    for b in text.bytes().chain(salt_bytes) {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// `base` cut to leave room for `_` and the hash of `raw` (and `salt`), then
/// those. `base` is ASCII (it went through [`mapped`]).
fn hashed(base: &str, raw: &str, salt: u32) -> String {
    let keep = MAX_NAME - 1 - HASH_DIGITS;
    let head: String = base.chars().take(keep).collect();
    let digest = fnv1a(raw, salt) & 0xffff_ffff;
    format!("{head}_{digest:08x}")
}

/// The MCP name of every tool and skill, and the way back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpNames {
    by_name: BTreeMap<String, Target>,
    by_target: BTreeMap<Target, String>,
}

impl McpNames {
    /// The names of `tools` and `skills` by the rule of this module.
    pub fn build<T, S>(tools: T, skills: S) -> Self
    where
        T: IntoIterator<Item = String>,
        S: IntoIterator<Item = String>,
    {
        let targets: BTreeSet<Target> = tools
            .into_iter()
            .map(Target::Tool)
            .chain(skills.into_iter().map(Target::Skill))
            .collect();
        let mut names = Self::default();
        // Rule 1: valid tool names are kept.
        let mut wanting: BTreeMap<String, Vec<(Target, String)>> = BTreeMap::new();
        for target in targets {
            let raw = target.a2e_name();
            if matches!(target, Target::Tool(_)) && is_valid(&raw) {
                names.insert(raw, target);
                continue;
            }
            let want = mapped(&raw);
            let want = if want.len() > MAX_NAME {
                hashed(&want, &raw, 0)
            } else {
                want
            };
            wanting.entry(want).or_default().push((target, raw));
        }
        // Rules 2 and 3: a mapped name that no one else wants and no kept
        // name has.
        let mut colliding = Vec::new();
        for (want, group) in wanting {
            match <[_; 1]>::try_from(group) {
                Ok([(target, _)]) if !names.by_name.contains_key(&want) => {
                    names.insert(want, target);
                }
                Ok(one) => colliding.extend(one.into_iter().map(|t| (want.clone(), t))),
                Err(group) => colliding.extend(group.into_iter().map(|t| (want.clone(), t))),
            }
        }
        // Rule 4, in the order of the targets, so the result does not depend
        // on the order of registration.
        colliding.sort_by(|a, b| a.1.0.cmp(&b.1.0));
        for (want, (target, raw)) in colliding {
            let mut salt = 0;
            let mut name = hashed(&want, &raw, salt);
            while names.by_name.contains_key(&name) {
                salt += 1;
                name = hashed(&want, &raw, salt);
            }
            names.insert(name, target);
        }
        names
    }

    fn insert(&mut self, name: String, target: Target) {
        self.by_target.insert(target.clone(), name.clone());
        self.by_name.insert(name, target);
    }

    /// The MCP name of `target`, when it is one of these.
    pub fn name_of(&self, target: &Target) -> Option<&str> {
        self.by_target.get(target).map(String::as_str)
    }

    /// What the listed name `name` means, when it is one of these.
    pub fn get(&self, name: &str) -> Option<&Target> {
        self.by_name.get(name)
    }

    /// What `name` means on a call: one of these names, else `skill__NAME`
    /// or `skill.NAME` the skill `NAME`, else the tool `name`.
    pub fn resolve(&self, name: &str) -> Target {
        if let Some(target) = self.get(name) {
            return target.clone();
        }
        match name
            .strip_prefix(SKILL_PREFIX)
            .or_else(|| name.strip_prefix(LEGACY_SKILL_PREFIX))
        {
            Some(skill) => Target::Skill(skill.to_owned()),
            None => Target::Tool(name.to_owned()),
        }
    }

    /// Every name and what it means, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Target)> {
        self.by_name.iter().map(|(n, t)| (n.as_str(), t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(tools: &[&str], skills: &[&str]) -> McpNames {
        McpNames::build(
            tools.iter().map(|t| (*t).to_owned()),
            skills.iter().map(|s| (*s).to_owned()),
        )
    }

    fn tool(name: &str) -> Target {
        Target::Tool(name.to_owned())
    }

    fn skill(name: &str) -> Target {
        Target::Skill(name.to_owned())
    }

    #[test]
    fn every_name_matches_the_rule_and_maps_back() {
        let long = "x".repeat(80);
        let t = names(
            &["read_file", "time.now", "a b/c", "ünï", &long],
            &["find_todos", "dotted.skill", &long],
        );
        for (name, target) in t.iter() {
            assert!(is_valid(name), "{name}");
            assert_eq!(t.name_of(target), Some(name));
            assert_eq!(&t.resolve(name), target);
        }
        assert_eq!(t.name_of(&tool("read_file")), Some("read_file"));
        assert_eq!(t.name_of(&tool("time.now")), Some("time__now"));
        assert_eq!(t.name_of(&tool("a b/c")), Some("a_b_c"));
        assert_eq!(t.name_of(&skill("find_todos")), Some("skill__find_todos"));
        assert_eq!(
            t.name_of(&skill("dotted.skill")),
            Some("skill__dotted__skill")
        );
        assert_eq!(t.iter().count(), 8);
        // A long name is cut and ends in its hash, the same every time.
        let cut = t.name_of(&tool(&long)).unwrap();
        assert_eq!(cut.len(), MAX_NAME);
        assert!(cut.starts_with(&"x".repeat(55)), "{cut}");
        assert_eq!(cut, names(&[&long], &[]).name_of(&tool(&long)).unwrap());
        assert_ne!(cut, t.name_of(&skill(&long)).unwrap());
    }

    #[test]
    fn collisions_rename_the_mapped_names_whatever_the_order() {
        // A tool already named like the skill's mapped name keeps its name.
        let t = names(&["skill__x", "a.b", "a__b", "c.d", "c_d"], &["x"]);
        assert_eq!(t.name_of(&tool("skill__x")), Some("skill__x"));
        let x = t.name_of(&skill("x")).unwrap();
        assert!(
            x.starts_with("skill__x_") && x.len() == "skill__x_".len() + 8,
            "{x}"
        );
        assert_eq!(t.name_of(&tool("a__b")), Some("a__b"));
        assert_ne!(t.name_of(&tool("a.b")), Some("a__b"));
        // `c.d` maps to `c__d`, which nobody else has.
        assert_eq!(t.name_of(&tool("c.d")), Some("c__d"));
        assert_eq!(t.name_of(&tool("c_d")), Some("c_d"));
        // Two mapped names that meet are both renamed.
        let both = names(&["p q", "p/q"], &[]);
        let (pq, pslash) = (
            both.name_of(&tool("p q")).unwrap(),
            both.name_of(&tool("p/q")).unwrap(),
        );
        assert_ne!(pq, "p_q");
        assert_ne!(pslash, "p_q");
        assert_ne!(pq, pslash);
        let reversed = names(&["p/q", "p q"], &[]);
        assert_eq!(reversed, both);
    }

    #[test]
    fn calls_accept_the_old_skill_names_and_unlisted_tools() {
        let t = names(&["read_file"], &["find_todos"]);
        assert_eq!(t.resolve("skill__find_todos"), skill("find_todos"));
        assert_eq!(t.resolve("skill.find_todos"), skill("find_todos"));
        assert_eq!(t.resolve("skill__other"), skill("other"));
        assert_eq!(t.resolve("time.now"), tool("time.now"));
        assert_eq!(t.resolve("read_file"), tool("read_file"));
    }
}
